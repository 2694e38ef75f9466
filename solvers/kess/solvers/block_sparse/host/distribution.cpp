#include <kess/comm/agree.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/solvers/block_sparse.hpp>

#include <cstdint>
#include <string>

namespace kess {

struct BlockDistribution::Data {
  comm::ProcessGrid grid;
  std::vector<int> row_sizes, col_sizes, row_dist, col_dist;
  std::vector<std::int64_t> row_offsets, col_offsets;
  std::vector<int> local_rows, local_cols, local_row_of, local_col_of;
};

namespace {

constexpr const char* fn = "BlockDistribution";

std::string check_side(const std::vector<int>& sizes, const std::vector<int>& dist, int np,
                       const char* what) {
  if (dist.size() != sizes.size()) {
    return std::string(what) + "_dist has " + std::to_string(dist.size()) + " entries for " +
           std::to_string(sizes.size()) + " block " + what + "s";
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) {
      return std::string(what) + "_sizes[" + std::to_string(i) + "] = " +
             std::to_string(sizes[i]) + " (block sizes must be >= 1)";
    }
    if (dist[i] < 0 || dist[i] >= np) {
      return std::string(what) + "_dist[" + std::to_string(i) + "] = " + std::to_string(dist[i]) +
             " is not a process " + what + " of the grid (0.." + std::to_string(np - 1) + ")";
    }
  }
  return {};
}

// FNV-1a over the four vectors: equal on every rank when the arguments are.
std::uint64_t fingerprint(const std::vector<std::vector<int>*>& parts) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto* v : parts) {
    auto mix = [&](std::uint64_t x) {
      h ^= x;
      h *= 1099511628211ull;
    };
    mix(v->size());
    for (int x : *v) mix(static_cast<std::uint32_t>(x));
  }
  return h;
}

std::vector<int> round_robin(std::size_t n, int np) {
  std::vector<int> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<int>(i % static_cast<std::size_t>(np));
  return d;
}

}  // namespace

BlockDistribution::BlockDistribution(const comm::ProcessGrid& grid, std::vector<int> row_sizes,
                                     std::vector<int> col_sizes, std::vector<int> row_dist,
                                     std::vector<int> col_dist) {
  require_arg(grid.size() > 0, fn, "the process grid is empty");
  std::string err = check_side(row_sizes, row_dist, grid.nprow(), "row");
  if (err.empty()) err = check_side(col_sizes, col_dist, grid.npcol(), "col");
  comm::agree(grid.comm(), err.empty(), err, ErrorKind::invalid_argument);
  std::vector<int>* parts[] = {&row_sizes, &col_sizes, &row_dist, &col_dist};
  const std::uint64_t h = fingerprint({parts[0], parts[1], parts[2], parts[3]});
  const auto all = comm::allgatherv(grid.comm(), std::vector<std::uint64_t>{h});
  bool same = true;
  for (auto x : all) same = same && x == h;
  if (!same) {
    throw Error(ErrorKind::invalid_argument, fn,
                "the ranks passed different block sizes or distributions (each rank must pass the "
                "same row_sizes, col_sizes, row_dist and col_dist)");
  }

  auto d = std::make_shared<Data>();
  d->grid = grid;
  auto offsets = [](const std::vector<int>& s) {
    std::vector<std::int64_t> o(s.size() + 1, 0);
    for (std::size_t i = 0; i < s.size(); ++i) o[i + 1] = o[i] + s[i];
    return o;
  };
  d->row_offsets = offsets(row_sizes);
  d->col_offsets = offsets(col_sizes);
  d->local_row_of.assign(row_sizes.size(), -1);
  d->local_col_of.assign(col_sizes.size(), -1);
  for (std::size_t i = 0; i < row_sizes.size(); ++i) {
    if (row_dist[i] == grid.myrow()) {
      d->local_row_of[i] = static_cast<int>(d->local_rows.size());
      d->local_rows.push_back(static_cast<int>(i));
    }
  }
  for (std::size_t j = 0; j < col_sizes.size(); ++j) {
    if (col_dist[j] == grid.mycol()) {
      d->local_col_of[j] = static_cast<int>(d->local_cols.size());
      d->local_cols.push_back(static_cast<int>(j));
    }
  }
  d->row_sizes = std::move(row_sizes);
  d->col_sizes = std::move(col_sizes);
  d->row_dist = std::move(row_dist);
  d->col_dist = std::move(col_dist);
  d_ = std::move(d);
}

BlockDistribution::BlockDistribution(const comm::ProcessGrid& grid, std::vector<int> row_sizes,
                                     std::vector<int> col_sizes)
    : BlockDistribution(grid, row_sizes, col_sizes,
                        round_robin(row_sizes.size(), std::max(1, grid.nprow())),
                        round_robin(col_sizes.size(), std::max(1, grid.npcol()))) {}

BlockDistribution::BlockDistribution(std::vector<int> row_sizes, std::vector<int> col_sizes)
    : BlockDistribution(comm::ProcessGrid(comm::Communicator::self(), 1, 1), std::move(row_sizes),
                        std::move(col_sizes)) {}

namespace {
const BlockDistribution::Data& data_of(const std::shared_ptr<const BlockDistribution::Data>& d) {
  require_arg(d != nullptr, fn, "used an empty BlockDistribution (default-constructed)");
  return *d;
}
}  // namespace

const comm::ProcessGrid& BlockDistribution::grid() const { return data_of(d_).grid; }
int BlockDistribution::block_rows() const {
  return static_cast<int>(data_of(d_).row_sizes.size());
}
int BlockDistribution::block_cols() const {
  return static_cast<int>(data_of(d_).col_sizes.size());
}
std::int64_t BlockDistribution::rows() const { return data_of(d_).row_offsets.back(); }
std::int64_t BlockDistribution::cols() const { return data_of(d_).col_offsets.back(); }
const std::vector<int>& BlockDistribution::row_sizes() const { return data_of(d_).row_sizes; }
const std::vector<int>& BlockDistribution::col_sizes() const { return data_of(d_).col_sizes; }
const std::vector<int>& BlockDistribution::row_dist() const { return data_of(d_).row_dist; }
const std::vector<int>& BlockDistribution::col_dist() const { return data_of(d_).col_dist; }
const std::vector<std::int64_t>& BlockDistribution::row_offsets() const {
  return data_of(d_).row_offsets;
}
const std::vector<std::int64_t>& BlockDistribution::col_offsets() const {
  return data_of(d_).col_offsets;
}
const std::vector<int>& BlockDistribution::local_rows() const { return data_of(d_).local_rows; }
const std::vector<int>& BlockDistribution::local_cols() const { return data_of(d_).local_cols; }
int BlockDistribution::local_row(int i) const { return data_of(d_).local_row_of[i]; }
int BlockDistribution::local_col(int j) const { return data_of(d_).local_col_of[j]; }

bool BlockDistribution::operator==(const BlockDistribution& o) const {
  if (d_ == o.d_) return true;
  if (d_ == nullptr || o.d_ == nullptr) return false;
  const Data &a = *d_, &b = *o.d_;
  // Grids on the same ranks in the same shape (their communicators may be different handles).
  return a.grid.comm().size() == b.grid.comm().size() && a.grid.nprow() == b.grid.nprow() &&
         a.grid.myrow() == b.grid.myrow() && a.grid.mycol() == b.grid.mycol() &&
         a.row_sizes == b.row_sizes && a.col_sizes == b.col_sizes && a.row_dist == b.row_dist &&
         a.col_dist == b.col_dist;
}

}  // namespace kess
