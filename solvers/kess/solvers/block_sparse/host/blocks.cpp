#include <kess/comm/agree.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/solvers/block_sparse/detail/blocks.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kess::detail::block_sparse {

void HostBlocks::push(int i, int j, const double* v, std::int64_t len) {
  rows.push_back(i);
  cols.push_back(j);
  values.insert(values.end(), v, v + len);
  offsets.push_back(static_cast<std::int64_t>(values.size()));
}

double block_norm(const double* v, std::int64_t len) {
  // LAPACK's dnrm2 scaling: scale * sqrt(ssq), no overflow or underflow of the squares.
  double scale = 0, ssq = 1;
  for (std::int64_t e = 0; e < len; ++e) {
    const double a = std::fabs(v[e]);
    if (a == 0) continue;
    if (scale < a) {
      ssq = 1 + ssq * (scale / a) * (scale / a);
      scale = a;
    } else {
      ssq += (a / scale) * (a / scale);
    }
  }
  return scale * std::sqrt(ssq);
}

double norm_of_norms(const std::vector<double>& norms) {
  return block_norm(norms.data(), static_cast<std::int64_t>(norms.size()));
}

std::string check_blocks(const BlockDistribution& dist, const HostBlocks& b) {
  const auto& rs = dist.row_sizes();
  const auto& cs = dist.col_sizes();
  if (b.cols.size() != b.rows.size() || b.offsets.size() != b.rows.size() + 1) {
    return "rows and cols have different lengths (" + std::to_string(b.rows.size()) + ", " +
           std::to_string(b.cols.size()) + ")";
  }
  for (std::int64_t k = 0; k < b.count(); ++k) {
    const int i = b.rows[k], j = b.cols[k];
    if (i < 0 || i >= dist.block_rows() || j < 0 || j >= dist.block_cols()) {
      return "block " + std::to_string(k) + " at (" + std::to_string(i) + ", " +
             std::to_string(j) + ") is outside the " + std::to_string(dist.block_rows()) + " x " +
             std::to_string(dist.block_cols()) + " blocks";
    }
    const std::int64_t len = std::int64_t(rs[i]) * cs[j];
    if (b.offsets[k + 1] - b.offsets[k] != len) {
      return "values: block " + std::to_string(k) + " (" + std::to_string(i) + ", " +
             std::to_string(j) + ") needs " + std::to_string(len) + " values";
    }
    for (std::int64_t e = b.offsets[k]; e < b.offsets[k + 1]; ++e) {
      if (!std::isfinite(b.values[e])) {
        return "block (" + std::to_string(i) + ", " + std::to_string(j) + ") holds " +
               (std::isnan(b.values[e]) ? "NaN" : "Inf") + " at entry " +
               std::to_string(e - b.offsets[k]);
      }
    }
  }
  return {};
}

namespace {

// Sends blocks by destination rank dest(b) over the grid's communicator.
template <class Dest>
HostBlocks exchange(const BlockDistribution& dist, const HostBlocks& b, Dest dest) {
  const auto& comm = dist.grid().comm();
  const int np = comm.size();
  std::vector<std::int64_t> nblk(np, 0), nval(np, 0);
  std::vector<int> to(b.rows.size());
  for (std::int64_t k = 0; k < b.count(); ++k) {
    to[k] = dest(k);
    nblk[to[k]] += 1;
    nval[to[k]] += b.offsets[k + 1] - b.offsets[k];
  }
  std::vector<std::int64_t> bstart(np + 1, 0), vstart(np + 1, 0);
  for (int r = 0; r < np; ++r) {
    bstart[r + 1] = bstart[r] + nblk[r];
    vstart[r + 1] = vstart[r] + nval[r];
  }
  std::vector<int> meta(2 * b.rows.size());
  std::vector<double> vals(b.values.size());
  for (std::int64_t k = 0; k < b.count(); ++k) {
    const int r = to[k];
    const std::int64_t slot = bstart[r]++;
    meta[2 * slot] = b.rows[k];
    meta[2 * slot + 1] = b.cols[k];
    const std::int64_t len = b.offsets[k + 1] - b.offsets[k];
    std::copy(b.values.begin() + b.offsets[k], b.values.begin() + b.offsets[k + 1],
              vals.begin() + vstart[r]);
    vstart[r] += len;
  }
  std::vector<std::int64_t> meta_counts(np);
  for (int r = 0; r < np; ++r) meta_counts[r] = 2 * nblk[r];
  const auto rmeta = comm::alltoallv(comm, meta, meta_counts);
  auto rvals = comm::alltoallv(comm, vals, nval);
  HostBlocks out;
  const std::size_t n = rmeta.size() / 2;
  out.rows.resize(n);
  out.cols.resize(n);
  out.offsets.resize(n + 1);
  const auto& rs = dist.row_sizes();
  const auto& cs = dist.col_sizes();
  for (std::size_t k = 0; k < n; ++k) {
    out.rows[k] = rmeta[2 * k];
    out.cols[k] = rmeta[2 * k + 1];
    out.offsets[k + 1] = out.offsets[k] + std::int64_t(rs[out.rows[k]]) * cs[out.cols[k]];
  }
  out.values = std::move(rvals);
  return out;
}

}  // namespace

HostBlocks route_to_owners(const BlockDistribution& dist, const HostBlocks& b) {
  const auto& g = dist.grid();
  return exchange(dist, b, [&](std::int64_t k) {
    return g.rank_of(dist.row_dist()[b.rows[k]], dist.col_dist()[b.cols[k]]);
  });
}

HostBlocks gather_to(const BlockDistribution& dist, const HostBlocks& b, int root) {
  return exchange(dist, b, [&](std::int64_t) { return root; });
}

HostBlocks gather_all(const BlockDistribution& dist, const HostBlocks& b) {
  return gather_over(dist.grid().comm(), dist, b);
}

HostBlocks gather_over(const comm::Communicator& comm, const BlockDistribution& dist,
                       const HostBlocks& b) {
  std::vector<int> meta(2 * b.rows.size());
  for (std::int64_t k = 0; k < b.count(); ++k) {
    meta[2 * k] = b.rows[k];
    meta[2 * k + 1] = b.cols[k];
  }
  const auto rmeta = comm::allgatherv(comm, meta);
  HostBlocks out;
  out.values = comm::allgatherv(comm, b.values);
  const std::size_t n = rmeta.size() / 2;
  out.rows.resize(n);
  out.cols.resize(n);
  out.offsets.resize(n + 1);
  for (std::size_t k = 0; k < n; ++k) {
    out.rows[k] = rmeta[2 * k];
    out.cols[k] = rmeta[2 * k + 1];
    out.offsets[k + 1] =
        out.offsets[k] + std::int64_t(dist.row_sizes()[out.rows[k]]) * dist.col_sizes()[out.cols[k]];
  }
  return out;
}

HostCsr assemble(const BlockDistribution& dist, const HostBlocks& b, const char* fn) {
  const std::int64_t n = b.count();
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return b.rows[x] != b.rows[y] ? b.rows[x] < b.rows[y] : b.cols[x] < b.cols[y];
  });
  std::string err;
  for (std::int64_t k = 1; k < n && err.empty(); ++k) {
    if (b.rows[order[k]] == b.rows[order[k - 1]] && b.cols[order[k]] == b.cols[order[k - 1]]) {
      err = "block (" + std::to_string(b.rows[order[k]]) + ", " +
            std::to_string(b.cols[order[k]]) + ") is listed twice";
    }
  }
  for (std::int64_t k = 0; k < n && err.empty(); ++k) {
    if (dist.local_row(b.rows[k]) < 0 || dist.local_col(b.cols[k]) < 0) {
      err = "block (" + std::to_string(b.rows[k]) + ", " + std::to_string(b.cols[k]) +
            ") is not this process's";
    }
  }
  comm::agree(dist.grid().comm(), err.empty(), std::string(fn) + ": " + err,
              ErrorKind::invalid_argument);
  HostCsr c;
  const auto& lrows = dist.local_rows();
  c.row_ptr.assign(lrows.size() + 1, 0);
  for (std::int64_t k = 0; k < n; ++k) c.row_ptr[dist.local_row(b.rows[k]) + 1] += 1;
  for (std::size_t l = 0; l < lrows.size(); ++l) c.row_ptr[l + 1] += c.row_ptr[l];
  c.cols.resize(n);
  c.offsets.resize(n + 1);
  c.norms.resize(n);
  c.values.resize(b.values.size());
  c.offsets[0] = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t src = order[k];
    const std::int64_t len = b.offsets[src + 1] - b.offsets[src];
    c.cols[k] = b.cols[src];
    c.offsets[k + 1] = c.offsets[k] + len;
    std::copy(b.values.begin() + b.offsets[src], b.values.begin() + b.offsets[src + 1],
              c.values.begin() + c.offsets[k]);
    c.norms[k] = block_norm(c.values.data() + c.offsets[k], len);
  }
  return c;
}

HostBlocks to_blocks(const BlockDistribution& dist, const std::vector<std::int64_t>& row_ptr,
                     const std::vector<int>& cols, const std::vector<std::int64_t>& offsets,
                     const double* values) {
  HostBlocks b;
  const auto& lrows = dist.local_rows();
  b.rows.reserve(cols.size());
  b.cols = cols;
  b.values.assign(values, values + offsets.back());
  b.offsets = offsets;
  for (std::size_t l = 0; l < lrows.size(); ++l) {
    for (std::int64_t k = row_ptr[l]; k < row_ptr[l + 1]; ++k) b.rows.push_back(lrows[l]);
  }
  return b;
}

}  // namespace kess::detail::block_sparse
