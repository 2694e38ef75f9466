// Bodies of BlockSparseMatrix's members (no kernels: index work on the host, values moved with
// deep_copy). Included only by the instantiation files of libkess.
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/solvers/block_sparse.hpp>
#include <kess/solvers/block_sparse/detail/blocks.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace kess {
namespace detail::block_sparse {

/// A View of `Mem` holding a copy of host values.
template <class Mem>
Kokkos::View<double*, Mem> upload(const std::vector<double>& v, const char* label) {
  Kokkos::View<double*, Mem> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.size());
  Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(v.data(), v.size());
  Kokkos::deep_copy(d, h);
  return d;
}

/// The values of a View on the host.
template <class Mem>
std::vector<double> download(const Kokkos::View<double*, Mem>& d) {
  std::vector<double> v(d.size());
  Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(v.data(), v.size());
  Kokkos::deep_copy(h, d);
  return v;
}

template <class Mem>
BlockSparseMatrix<double, Mem> from_csr(const BlockDistribution& dist, HostCsr&& c) {
  BlockSparseMatrix<double, Mem> m(dist);
  auto values = upload<Mem>(c.values, "kess::BlockSparseMatrix::values");
  m.assign(std::move(c.row_ptr), std::move(c.cols), std::move(c.offsets), values,
           std::move(c.norms));
  return m;
}

/// The local part of `m` as a block list on the host.
template <class Mem>
HostBlocks local_blocks(const BlockSparseMatrix<double, Mem>& m) {
  const auto v = download(m.values());
  return to_blocks(m.distribution(), m.row_ptr(), m.col_index(), m.offsets(), v.data());
}

}  // namespace detail::block_sparse

template <class T, class Mem>
BlockSparseMatrix<T, Mem>::BlockSparseMatrix(const BlockDistribution& dist) : dist_(dist) {
  require_arg(!dist.empty(), "BlockSparseMatrix", "the distribution is empty");
  row_ptr_.assign(dist.local_rows().size() + 1, 0);
}

template <class T, class Mem>
BlockSparseMatrix<T, Mem> BlockSparseMatrix<T, Mem>::from_blocks(const BlockDistribution& dist,
                                                                 const std::vector<int>& rows,
                                                                 const std::vector<int>& cols,
                                                                 const std::vector<T>& values) {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "BlockSparseMatrix::from_blocks";
  require_arg(!dist.empty(), fn, "the distribution is empty");
  bs::HostBlocks b;
  std::string err;
  if (rows.size() != cols.size()) {
    err = "rows has " + std::to_string(rows.size()) + " entries and cols " +
          std::to_string(cols.size());
  } else {
    b.rows = rows;
    b.cols = cols;
    b.offsets.assign(rows.size() + 1, 0);
    for (std::size_t k = 0; k < rows.size() && err.empty(); ++k) {
      const bool in = rows[k] >= 0 && rows[k] < dist.block_rows() && cols[k] >= 0 &&
                      cols[k] < dist.block_cols();
      if (!in) {
        err = "block " + std::to_string(k) + " at (" + std::to_string(rows[k]) + ", " +
              std::to_string(cols[k]) + ") is outside the " + std::to_string(dist.block_rows()) +
              " x " + std::to_string(dist.block_cols()) + " blocks";
        break;
      }
      b.offsets[k + 1] =
          b.offsets[k] + std::int64_t(dist.row_sizes()[rows[k]]) * dist.col_sizes()[cols[k]];
    }
    if (err.empty() && b.offsets.back() != static_cast<std::int64_t>(values.size())) {
      err = "values has " + std::to_string(values.size()) + " entries; the listed blocks need " +
            std::to_string(b.offsets.back());
    }
    if (err.empty()) {
      b.values = values;
      err = bs::check_blocks(dist, b);
    }
  }
  comm::agree(dist.grid().comm(), err.empty(), std::string(fn) + ": " + err,
              ErrorKind::invalid_argument);
  auto owned = bs::route_to_owners(dist, b);
  return bs::from_csr<Mem>(dist, bs::assemble(dist, owned, fn));
}

template <class T, class Mem>
BlockSparseMatrix<T, Mem> BlockSparseMatrix<T, Mem>::from_dense(const BlockDistribution& dist,
                                                                const T* a, std::int64_t lda,
                                                                double drop) {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "BlockSparseMatrix::from_dense";
  require_arg(!dist.empty(), fn, "the distribution is empty");
  std::string err;
  if (lda < std::max<std::int64_t>(1, dist.rows())) {
    err = "lda = " + std::to_string(lda) + " < rows() = " + std::to_string(dist.rows());
  } else if (a == nullptr && dist.rows() * dist.cols() > 0) {
    err = "a is null";
  } else if (!(drop >= 0)) {
    err = "drop must be >= 0";
  }
  bs::HostBlocks b;
  std::vector<double> buf;
  const auto& ro = dist.row_offsets();
  const auto& co = dist.col_offsets();
  for (int i : dist.local_rows()) {
    if (!err.empty()) break;
    for (int j : dist.local_cols()) {
      const int m = dist.row_sizes()[i], n = dist.col_sizes()[j];
      buf.resize(std::size_t(m) * n);
      bool keep = false;
      for (int c = 0; c < n; ++c) {
        for (int r = 0; r < m; ++r) {
          const double x = a[(ro[i] + r) + (co[j] + c) * lda];
          if (!std::isfinite(x) && err.empty()) {
            err = "entry (" + std::to_string(ro[i] + r) + ", " + std::to_string(co[j] + c) +
                  ") is " + (std::isnan(x) ? "NaN" : "Inf");
          }
          keep = keep || std::fabs(x) > drop;
          buf[std::size_t(r) + std::size_t(c) * m] = x;
        }
      }
      if (keep) b.push(i, j, buf.data(), std::int64_t(m) * n);
    }
  }
  comm::agree(dist.grid().comm(), err.empty(), std::string(fn) + ": " + err,
              ErrorKind::invalid_argument);
  return bs::from_csr<Mem>(dist, bs::assemble(dist, b, fn));
}

template <class T, class Mem>
BlockSparseMatrix<T, Mem> BlockSparseMatrix<T, Mem>::read_matrix_market(
    const BlockDistribution& dist, const std::string& path) {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "BlockSparseMatrix::read_matrix_market";
  require_arg(!dist.empty(), fn, "the distribution is empty");
  const auto& comm = dist.grid().comm();
  bs::HostBlocks b;
  std::string err;
  ErrorKind kind = ErrorKind::io;
  if (comm.rank() == 0) {
    try {
      const mm::CooMatrix coo = mm::read_coordinate(path, /*expand_symmetric=*/true);
      if (coo.m != dist.rows() || coo.n != dist.cols()) {
        kind = ErrorKind::invalid_argument;
        err = path + " is " + std::to_string(coo.m) + " x " + std::to_string(coo.n) +
              " but the block sizes give " + std::to_string(dist.rows()) + " x " +
              std::to_string(dist.cols());
      } else {
        const auto& ro = dist.row_offsets();
        const auto& co = dist.col_offsets();
        auto block_of = [](const std::vector<std::int64_t>& off, std::int64_t x) {
          return static_cast<int>(std::upper_bound(off.begin(), off.end(), x) - off.begin() - 1);
        };
        std::map<std::pair<int, int>, std::int64_t> where;  // block -> index in b
        for (std::size_t e = 0; e < coo.nnz(); ++e) {
          const int i = block_of(ro, coo.rows[e]), j = block_of(co, coo.cols[e]);
          auto it = where.find({i, j});
          if (it == where.end()) {
            it = where.emplace(std::make_pair(i, j), static_cast<std::int64_t>(where.size())).first;
          }
        }
        b.rows.resize(where.size());
        b.cols.resize(where.size());
        b.offsets.assign(where.size() + 1, 0);
        std::vector<std::int64_t> len(where.size());
        for (const auto& [ij, k] : where) {
          b.rows[k] = ij.first;
          b.cols[k] = ij.second;
          len[k] = std::int64_t(dist.row_sizes()[ij.first]) * dist.col_sizes()[ij.second];
        }
        for (std::size_t k = 0; k < len.size(); ++k) b.offsets[k + 1] = b.offsets[k] + len[k];
        b.values.assign(b.offsets.back(), 0.0);
        for (std::size_t e = 0; e < coo.nnz(); ++e) {
          const int i = block_of(ro, coo.rows[e]), j = block_of(co, coo.cols[e]);
          const std::int64_t k = where[{i, j}];
          const int m = dist.row_sizes()[i];
          b.values[b.offsets[k] + (coo.rows[e] - ro[i]) + (coo.cols[e] - co[j]) * m] +=
              coo.vals[e];
        }
        err = bs::check_blocks(dist, b);
        if (!err.empty()) {
          kind = ErrorKind::invalid_argument;
          err = path + ": " + err;
        }
      }
    } catch (const Error& e) {
      err = e.what();
      kind = e.kind();
    } catch (const std::bad_alloc&) {
      err = path + ": out of memory while reading";
      kind = ErrorKind::out_of_memory;
    }
  }
  // Every rank learns the kind of rank 0's failure, then throws together.
  int k = static_cast<int>(kind);
  k = comm::allreduce(comm, comm.rank() == 0 ? k : -1, comm::ReduceOp::max);
  comm::agree(comm, err.empty(), std::string(fn) + ": " + err, static_cast<ErrorKind>(k));
  auto owned = bs::route_to_owners(dist, b);
  return bs::from_csr<Mem>(dist, bs::assemble(dist, owned, fn));
}

template <class T, class Mem>
std::vector<T> BlockSparseMatrix<T, Mem>::to_dense() const {
  namespace bs = detail::block_sparse;
  require_arg(!dist_.empty(), "BlockSparseMatrix::to_dense", "the matrix has no distribution");
  const auto all = bs::gather_all(dist_, bs::local_blocks(*this));
  const std::int64_t ld = dist_.rows();
  std::vector<T> a(static_cast<std::size_t>(ld * dist_.cols()), T(0));
  const auto& ro = dist_.row_offsets();
  const auto& co = dist_.col_offsets();
  for (std::int64_t k = 0; k < all.count(); ++k) {
    const int i = all.rows[k], j = all.cols[k];
    const int m = dist_.row_sizes()[i], n = dist_.col_sizes()[j];
    for (int c = 0; c < n; ++c) {
      for (int r = 0; r < m; ++r) {
        a[(ro[i] + r) + (co[j] + c) * ld] = all.values[all.offsets[k] + r + std::int64_t(c) * m];
      }
    }
  }
  return a;
}

template <class T, class Mem>
void BlockSparseMatrix<T, Mem>::write_matrix_market(const std::string& path) const {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "BlockSparseMatrix::write_matrix_market";
  require_arg(!dist_.empty(), fn, "the matrix has no distribution");
  const auto& comm = dist_.grid().comm();
  auto all = bs::gather_to(dist_, bs::local_blocks(*this), 0);
  std::string err;
  if (comm.rank() == 0) {
    try {
      std::vector<std::int64_t> order(all.rows.size());
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<std::int64_t>(k);
      std::sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
        return all.rows[x] != all.rows[y] ? all.rows[x] < all.rows[y] : all.cols[x] < all.cols[y];
      });
      mm::CooMatrix coo;
      coo.m = dist_.rows();
      coo.n = dist_.cols();
      const auto& ro = dist_.row_offsets();
      const auto& co = dist_.col_offsets();
      for (std::int64_t k : order) {
        const int i = all.rows[k], j = all.cols[k];
        const int m = dist_.row_sizes()[i], n = dist_.col_sizes()[j];
        for (int c = 0; c < n; ++c) {
          for (int r = 0; r < m; ++r) {
            coo.rows.push_back(ro[i] + r);
            coo.cols.push_back(co[j] + c);
            coo.vals.push_back(all.values[all.offsets[k] + r + std::int64_t(c) * m]);
          }
        }
      }
      mm::write_coordinate(path, coo);
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  comm::agree(comm, err.empty(), std::string(fn) + ": " + err, ErrorKind::io);
}

template <class T, class Mem>
std::int64_t BlockSparseMatrix<T, Mem>::blocks() const {
  require_arg(!dist_.empty(), "BlockSparseMatrix::blocks", "the matrix has no distribution");
  return comm::allreduce(dist_.grid().comm(), local_blocks(), comm::ReduceOp::sum);
}

template <class T, class Mem>
double BlockSparseMatrix<T, Mem>::occupancy() const {
  const double total = double(dist_.block_rows()) * double(dist_.block_cols());
  const auto nb = blocks();
  return total > 0 ? double(nb) / total : 0.0;
}

template <class T, class Mem>
std::int64_t BlockSparseMatrix<T, Mem>::find(int i, int j) const {
  if (dist_.empty() || i < 0 || i >= dist_.block_rows()) return -1;
  const int l = dist_.local_row(i);
  if (l < 0) return -1;
  const auto b = col_.begin() + row_ptr_[l], e = col_.begin() + row_ptr_[l + 1];
  const auto it = std::lower_bound(b, e, j);
  return it != e && *it == j ? static_cast<std::int64_t>(it - col_.begin()) : -1;
}

template <class T, class Mem>
void BlockSparseMatrix<T, Mem>::assign(std::vector<std::int64_t> row_ptr, std::vector<int> cols,
                                       std::vector<std::int64_t> offsets, values_view values,
                                       std::vector<double> norms) {
  row_ptr_ = std::move(row_ptr);
  col_ = std::move(cols);
  offset_ = std::move(offsets);
  values_ = std::move(values);
  norm_ = std::move(norms);
}

}  // namespace kess
