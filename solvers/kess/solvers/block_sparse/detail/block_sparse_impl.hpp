// Bodies of kess::multiply and the block-sparse operations for one execution space. The index
// work (stacks, patterns, placement) runs on the host; the values stay in the execution space's
// memory and every kernel over them is here. Included only by the instantiation files of libkess
// (one translation unit per execution space: these templates hold device lambdas).
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/comm/view_comm.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/solvers/block_sparse.hpp>
#include <kess/solvers/block_sparse/detail/blocks.hpp>
#include <kess/solvers/block_sparse/detail/matrix_impl.hpp>
#include <kess/solvers/block_sparse/detail/stack.hpp>
#include <kess/solvers/block_sparse/detail/stack_kernel.hpp>
#include <kess/solvers/block_sparse/cuda/stack_dmma.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

namespace kess::detail::block_sparse {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <class T>
Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host_view(
    const std::vector<T>& v) {
  return Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(v.data(), v.size());
}

/// A std::vector copied into a View of Mem.
template <class Mem, class T>
Kokkos::View<T*, Mem> to_device(const std::vector<T>& v, const char* label) {
  Kokkos::View<T*, Mem> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.size());
  Kokkos::deep_copy(d, host_view(v));
  return d;
}

/// dst[dst_off[b] + e] = scale * src[src_off[b] + e] for e < len[b] (src_off -1: zeros).
template <class Exec>
void copy_blocks(const Exec& exec, const Kokkos::View<double*, typename Exec::memory_space>& src,
                 const Kokkos::View<double*, typename Exec::memory_space>& dst,
                 const std::vector<std::int64_t>& src_off, const std::vector<std::int64_t>& dst_off,
                 const std::vector<std::int64_t>& len, double scale) {
  using Mem = typename Exec::memory_space;
  const std::int64_t n = static_cast<std::int64_t>(len.size());
  if (n == 0) return;
  if constexpr (core::detail::is_host_backend<Exec>()) {
    const double* s = src.data();
    double* d = dst.data();
    core::detail::host_backend_for<Exec>(n, 64, [&](std::int64_t b) {
      for (std::int64_t e = 0; e < len[b]; ++e) {
        d[dst_off[b] + e] = src_off[b] < 0 ? 0.0 : scale * s[src_off[b] + e];
      }
    });
  } else {
    auto so = to_device<Mem>(src_off, "kess::block_sparse::src_off");
    auto dof = to_device<Mem>(dst_off, "kess::block_sparse::dst_off");
    auto ln = to_device<Mem>(len, "kess::block_sparse::len");
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for(
        "kess::block_sparse::copy_blocks", Policy(exec, n, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Policy::member_type& t) {
          const std::int64_t b = t.league_rank();
          const std::int64_t s0 = so(b), d0 = dof(b);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, ln(b)), [&](std::int64_t e) {
            dst(d0 + e) = s0 < 0 ? 0.0 : scale * src(s0 + e);
          });
        });
  }
}

/// Frobenius norms of blocks (offsets: count + 1 entries), scaled by the block's largest entry.
template <class Exec>
std::vector<double> block_norms(const Exec& exec,
                                const Kokkos::View<double*, typename Exec::memory_space>& v,
                                const std::vector<std::int64_t>& offsets) {
  using Mem = typename Exec::memory_space;
  const std::int64_t n = static_cast<std::int64_t>(offsets.size()) - 1;
  std::vector<double> out(std::max<std::int64_t>(n, 0));
  if (n <= 0) return out;
  if constexpr (core::detail::is_host_backend<Exec>()) {
    core::detail::host_backend_for<Exec>(n, 64, [&](std::int64_t b) {
      out[b] = block_norm(v.data() + offsets[b], offsets[b + 1] - offsets[b]);
    });
  } else {
    auto off = to_device<Mem>(offsets, "kess::block_sparse::offsets");
    Kokkos::View<double*, Mem> nrm(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                      "kess::block_sparse::norms"),
                                   n);
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for(
        "kess::block_sparse::norms", Policy(exec, n, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Policy::member_type& t) {
          const std::int64_t b = t.league_rank();
          const std::int64_t o0 = off(b), o1 = off(b + 1);
          double mx = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, o0, o1),
              [&](std::int64_t e, double& m) { m = kx::max(m, kx::fabs(v(e))); },
              Kokkos::Max<double>(mx));
          double ss = 0;
          if (mx > 0) {
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(t, o0, o1),
                [&](std::int64_t e, double& s) {
                  const double x = v(e) / mx;
                  s += x * x;
                },
                ss);
          }
          Kokkos::single(Kokkos::PerTeam(t), [&]() { nrm(b) = mx * kx::sqrt(ss); });
        });
    Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(out.data(), out.size());
    Kokkos::deep_copy(exec, h, nrm);
    kx::fence(exec, "kess::block_sparse::norms");
  }
  return out;
}

/// The portable device stack kernel (any block sizes): one team per run, each thread some entries
/// of the run's C block summed over its products in k order.
template <class Exec>
void team_stack_multiply(const Exec& exec, std::int64_t nruns,
                         const Kokkos::View<std::int64_t*, typename Exec::memory_space>& run_c,
                         const Kokkos::View<std::int64_t*, typename Exec::memory_space>& run_begin,
                         const Kokkos::View<int*, typename Exec::memory_space>& run_m,
                         const Kokkos::View<int*, typename Exec::memory_space>& run_n,
                         const Kokkos::View<std::int64_t*, typename Exec::memory_space>& a_off,
                         const Kokkos::View<std::int64_t*, typename Exec::memory_space>& b_off,
                         const Kokkos::View<int*, typename Exec::memory_space>& kk,
                         const Kokkos::View<double*, typename Exec::memory_space>& a,
                         const Kokkos::View<double*, typename Exec::memory_space>& b,
                         const Kokkos::View<double*, typename Exec::memory_space>& c,
                         double alpha) {
  using Policy = Kokkos::TeamPolicy<Exec>;
  Kokkos::parallel_for(
      "kess::block_sparse::stack", Policy(exec, nruns, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        const std::int64_t r = t.league_rank();
        const int m = run_m(r), n = run_n(r);
        const std::int64_t p0 = run_begin(r), p1 = run_begin(r + 1), c0 = run_c(r);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, m * n), [&](int e) {
          const int i = e % m, j = e / m;
          double acc = 0;
          for (std::int64_t p = p0; p < p1; ++p) {
            const int k = kk(p);
            const std::int64_t ao = a_off(p) + i, bo = b_off(p) + std::int64_t(j) * k;
            for (int q = 0; q < k; ++q) acc += a(ao + std::int64_t(q) * m) * b(bo + q);
          }
          c(c0 + e) += alpha * acc;
        });
      });
}

template <class Exec>
DeviceStack<typename Exec::memory_space> upload_stack(const Exec& exec, const Stack& s) {
  using Mem = typename Exec::memory_space;
  DeviceStack<Mem> d;
  d.runs = s.runs();
  if constexpr (!core::detail::is_host_backend<Exec>()) {
    if (d.runs > 0) {
      d.max_m = *std::max_element(s.run_m.begin(), s.run_m.end());
      d.max_n = *std::max_element(s.run_n.begin(), s.run_n.end());
      d.max_k = s.k.empty() ? 0 : *std::max_element(s.k.begin(), s.k.end());
    }
    d.run_c = to_device<Mem>(s.run_c, "kess::block_sparse::run_c");
    d.run_begin = to_device<Mem>(s.run_begin, "kess::block_sparse::run_begin");
    d.run_m = to_device<Mem>(s.run_m, "kess::block_sparse::run_m");
    d.run_n = to_device<Mem>(s.run_n, "kess::block_sparse::run_n");
    d.a_off = to_device<Mem>(s.a_off, "kess::block_sparse::a_off");
    d.b_off = to_device<Mem>(s.b_off, "kess::block_sparse::b_off");
    d.k = to_device<Mem>(s.k, "kess::block_sparse::k");
  }
  (void)exec;
  return d;
}

template <class Exec>
void stack_multiply(const Exec& exec, const Stack& s,
                    const DeviceStack<typename Exec::memory_space>& d,
                    const Kokkos::View<double*, typename Exec::memory_space>& a,
                    const Kokkos::View<double*, typename Exec::memory_space>& b,
                    const Kokkos::View<double*, typename Exec::memory_space>& c, double alpha,
                    StackKernel kernel) {
  if (s.runs() == 0) return;
  if constexpr (core::detail::is_host_backend<Exec>()) {
    (void)kernel;
    (void)d;
    host_stack_multiply(s, a.data(), b.data(), c.data(), alpha, 0);
  } else {
    bool tensor = false;
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same<Exec, Kokkos::Cuda>::value) {
      tensor = kernel != StackKernel::generic && stack_dmma_supported(exec) &&
               d.max_m <= kBsTile && d.max_n <= kBsTile && d.max_k <= kBsTile;
      if (tensor) {
        stack_dmma_launch(exec, d.runs, d.run_c.data(), d.run_begin.data(), d.run_m.data(),
                          d.run_n.data(), d.a_off.data(), d.b_off.data(), d.k.data(), a.data(),
                          b.data(), c.data(), alpha);
      }
    }
#endif
    require(tensor || kernel != StackKernel::tensor_core, ErrorKind::invalid_argument, "multiply",
            "the tensor-core stack kernel needs CUDA on sm_80 or newer and blocks of at most 32");
    if (!tensor) {
      team_stack_multiply(exec, d.runs, d.run_c, d.run_begin, d.run_m, d.run_n, d.a_off, d.b_off,
                          d.k, a, b, c, alpha);
    }
  }
}

/// A panel: an index and the values it points into.
template <class Mem>
struct Panel {
  PanelIndex index;
  Kokkos::View<double*, Mem> values;
};

/// The local part of M as a panel (rows: M's local block rows).
template <class Mem>
Panel<Mem> panel_of(const BlockSparseMatrix<double, Mem>& M) {
  Panel<Mem> p;
  p.index.row_ids = M.distribution().local_rows();
  p.index.ptr = M.row_ptr();
  p.index.col = M.col_index();
  p.index.off.assign(M.offsets().begin(), M.offsets().end() - 1);
  p.index.norm = M.norms();
  p.values = M.values();
  return p;
}

/// A panel from host blocks: rows `row_ids` (ascending global rows), blocks sorted by (row, col).
template <class Mem>
Panel<Mem> panel_from(HostBlocks&& hb, std::vector<int> row_ids) {
  const std::int64_t n = hb.count();
  std::vector<std::int64_t> order(n);
  for (std::int64_t k = 0; k < n; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return hb.rows[x] != hb.rows[y] ? hb.rows[x] < hb.rows[y] : hb.cols[x] < hb.cols[y];
  });
  Panel<Mem> p;
  std::vector<int> pos_of_row;
  int maxrow = 0;
  for (int r : row_ids) maxrow = std::max(maxrow, r + 1);
  pos_of_row.assign(maxrow, -1);
  for (std::size_t r = 0; r < row_ids.size(); ++r) pos_of_row[row_ids[r]] = static_cast<int>(r);
  p.index.ptr.assign(row_ids.size() + 1, 0);
  for (std::int64_t k = 0; k < n; ++k) p.index.ptr[pos_of_row[hb.rows[k]] + 1] += 1;
  for (std::size_t r = 0; r < row_ids.size(); ++r) p.index.ptr[r + 1] += p.index.ptr[r];
  p.index.row_ids = std::move(row_ids);
  p.index.col.resize(n);
  p.index.off.resize(n);
  p.index.norm.resize(n);
  std::vector<double> vals(hb.values.size());
  std::int64_t at = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t src = order[k];
    const std::int64_t len = hb.offsets[src + 1] - hb.offsets[src];
    p.index.col[k] = hb.cols[src];
    p.index.off[k] = at;
    std::copy(hb.values.begin() + hb.offsets[src], hb.values.begin() + hb.offsets[src + 1],
              vals.begin() + at);
    p.index.norm[k] = block_norm(vals.data() + at, len);
    at += len;
  }
  p.values = upload<Mem>(vals, "kess::block_sparse::panel");
  return p;
}

/// Sends `p` to rank `dest` of `comm` and returns the panel from rank `source` (Cannon's shift).
template <class Exec>
Panel<typename Exec::memory_space> shift(const Exec& exec, const comm::Communicator& comm,
                                         const Panel<typename Exec::memory_space>& p, int dest,
                                         int source) {
  using Mem = typename Exec::memory_space;
  const PanelIndex& x = p.index;
  std::vector<std::int64_t> idx;
  idx.reserve(2 + x.row_ids.size() + x.ptr.size() + 2 * x.col.size());
  idx.push_back(static_cast<std::int64_t>(x.row_ids.size()));
  idx.push_back(x.blocks());
  for (int r : x.row_ids) idx.push_back(r);
  idx.insert(idx.end(), x.ptr.begin(), x.ptr.end());
  for (int c : x.col) idx.push_back(c);
  idx.insert(idx.end(), x.off.begin(), x.off.end());
  using HostI = Kokkos::View<std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using HostD = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  std::int64_t sizes[2] = {static_cast<std::int64_t>(idx.size()),
                           static_cast<std::int64_t>(p.values.size())};
  std::int64_t rsizes[2] = {0, 0};
  const Kokkos::DefaultHostExecutionSpace host;
  comm::sendrecv(host, comm, HostI(sizes, 2), dest, HostI(rsizes, 2), source, 71);
  std::vector<std::int64_t> ridx(static_cast<std::size_t>(rsizes[0]));
  comm::sendrecv(host, comm, HostI(idx.data(), idx.size()), dest, HostI(ridx.data(), ridx.size()),
                 source, 72);
  std::vector<double> norm = x.norm;
  const std::int64_t rblocks = ridx.size() >= 2 ? ridx[1] : 0;
  std::vector<double> rnorm(static_cast<std::size_t>(rblocks));
  comm::sendrecv(host, comm, HostD(norm.data(), norm.size()), dest, HostD(rnorm.data(), rnorm.size()),
                 source, 73);
  Panel<Mem> q;
  q.values = Kokkos::View<double*, Mem>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::block_sparse::panel"), rsizes[1]);
  comm::sendrecv(exec, comm, p.values, dest, q.values, source, 74);
  const std::int64_t nr = ridx[0];
  std::size_t at = 2;
  q.index.row_ids.resize(nr);
  for (std::int64_t r = 0; r < nr; ++r) q.index.row_ids[r] = static_cast<int>(ridx[at++]);
  q.index.ptr.assign(ridx.begin() + at, ridx.begin() + at + nr + 1);
  at += nr + 1;
  q.index.col.resize(rblocks);
  for (std::int64_t k = 0; k < rblocks; ++k) q.index.col[k] = static_cast<int>(ridx[at++]);
  q.index.off.assign(ridx.begin() + at, ridx.begin() + at + rblocks);
  q.index.norm = std::move(rnorm);
  return q;
}

/// C's blocks moved into the pattern of `st` (new blocks zero); the old values scaled by `scale`.
template <class Exec>
void grow(const Exec& exec, BlockSparseMatrix<double, typename Exec::memory_space>& C,
          const Stack& st) {
  using Mem = typename Exec::memory_space;
  Kokkos::View<double*, Mem> nv("kess::BlockSparseMatrix::values", st.c_offsets.back());
  std::vector<std::int64_t> so, dof, len;
  std::vector<double> norms(st.c_cols.size(), 0.0);
  for (std::size_t b = 0; b < st.c_cols.size(); ++b) {
    if (st.c_old[b] < 0) continue;
    so.push_back(C.offsets()[st.c_old[b]]);
    dof.push_back(st.c_offsets[b]);
    len.push_back(st.c_offsets[b + 1] - st.c_offsets[b]);
    norms[b] = C.norms()[st.c_old[b]];
  }
  copy_blocks(exec, C.values(), nv, so, dof, len, 1.0);
  C.assign(st.c_row_ptr, st.c_cols, st.c_offsets, nv, std::move(norms));
}

/// Keeps the blocks of C with norm >= eps (all when eps <= 0).
template <class Exec>
void drop_small(const Exec& exec, BlockSparseMatrix<double, typename Exec::memory_space>& C,
                double eps) {
  using Mem = typename Exec::memory_space;
  if (!(eps > 0)) return;
  const auto& rp = C.row_ptr();
  std::vector<std::int64_t> nrp(rp.size(), 0), so, dof, len, noff{0};
  std::vector<int> ncols;
  std::vector<double> nn;
  for (std::size_t l = 0; l + 1 < rp.size(); ++l) {
    for (std::int64_t b = rp[l]; b < rp[l + 1]; ++b) {
      if (C.norms()[b] < eps) continue;
      const std::int64_t ln = C.offsets()[b + 1] - C.offsets()[b];
      so.push_back(C.offsets()[b]);
      dof.push_back(noff.back());
      len.push_back(ln);
      noff.push_back(noff.back() + ln);
      ncols.push_back(C.col_index()[b]);
      nn.push_back(C.norms()[b]);
    }
    nrp[l + 1] = static_cast<std::int64_t>(ncols.size());
  }
  if (ncols.size() == C.col_index().size()) return;
  Kokkos::View<double*, Mem> nv(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                   "kess::BlockSparseMatrix::values"),
                                noff.back());
  copy_blocks(exec, C.values(), nv, so, dof, len, 1.0);
  C.assign(std::move(nrp), std::move(ncols), std::move(noff), nv, std::move(nn));
}

template <class Exec>
void scale_values(const Exec& exec, const Kokkos::View<double*, typename Exec::memory_space>& v,
                  double alpha) {
  if (alpha == 1) return;
  if constexpr (core::detail::is_host_backend<Exec>()) {
    double* d = v.data();
    core::detail::host_backend_for<Exec>(static_cast<std::int64_t>(v.size()), 1,
                                         [&](std::int64_t e) { d[e] *= alpha; });
  } else {
    Kokkos::parallel_for(
        "kess::block_sparse::scale",
        Kokkos::RangePolicy<Exec>(exec, 0, static_cast<std::int64_t>(v.size())),
        KOKKOS_LAMBDA(std::int64_t e) { v(e) *= alpha; });
  }
}

inline std::string sizes_differ(const char* what, const std::vector<int>& x,
                                const std::vector<int>& y) {
  if (x.size() != y.size()) {
    return std::string(what) + ": " + std::to_string(x.size()) + " blocks against " +
           std::to_string(y.size());
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i]) {
      return std::string(what) + ": block " + std::to_string(i) + " has size " +
             std::to_string(x[i]) + " against " + std::to_string(y[i]);
    }
  }
  return {};
}

inline bool same_grid(const BlockDistribution& a, const BlockDistribution& b) {
  return a.grid().nprow() == b.grid().nprow() && a.grid().npcol() == b.grid().npcol() &&
         a.grid().comm().size() == b.grid().comm().size() && a.grid().myrow() == b.grid().myrow() &&
         a.grid().mycol() == b.grid().mycol();
}

}  // namespace kess::detail::block_sparse

namespace kess {

template <class Exec>
BlockSparseMatrix<double, typename Exec::memory_space> redistribute(
    const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A,
    const BlockDistribution& dist) {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "redistribute";
  require_arg(!A.distribution().empty() && !dist.empty(), fn, "empty distribution");
  const auto& ad = A.distribution();
  std::string err = bs::sizes_differ("row sizes", ad.row_sizes(), dist.row_sizes());
  if (err.empty()) err = bs::sizes_differ("column sizes", ad.col_sizes(), dist.col_sizes());
  if (err.empty() && !bs::same_grid(ad, dist)) err = "the target is on another process grid";
  comm::agree(ad.grid().comm(), err.empty(), std::string(fn) + ": " + err,
              ErrorKind::invalid_argument);
  kx::fence(exec, "kess::redistribute");
  auto owned = bs::route_to_owners(dist, bs::local_blocks(A));
  return bs::from_csr<typename Exec::memory_space>(dist, bs::assemble(dist, owned, fn));
}

template <class Exec>
BlockSparseMatrix<double, typename Exec::memory_space> transpose(
    const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A,
    const BlockDistribution& dist_in) {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "transpose";
  const auto& ad = A.distribution();
  require_arg(!ad.empty(), fn, "the matrix has no distribution");
  BlockDistribution dist = dist_in;
  if (dist.empty()) {
    const auto& g = ad.grid();
    dist = g.nprow() == g.npcol()
               ? BlockDistribution(g, ad.col_sizes(), ad.row_sizes(), ad.col_dist(), ad.row_dist())
               : BlockDistribution(g, ad.col_sizes(), ad.row_sizes());
  }
  std::string err = bs::sizes_differ("row sizes of the transpose", dist.row_sizes(), ad.col_sizes());
  if (err.empty()) {
    err = bs::sizes_differ("column sizes of the transpose", dist.col_sizes(), ad.row_sizes());
  }
  if (err.empty() && !bs::same_grid(ad, dist)) err = "the target is on another process grid";
  comm::agree(ad.grid().comm(), err.empty(), std::string(fn) + ": " + err,
              ErrorKind::invalid_argument);
  kx::fence(exec, "kess::transpose");
  auto b = bs::local_blocks(A);
  bs::HostBlocks t;
  t.rows = b.cols;
  t.cols = b.rows;
  t.offsets = b.offsets;
  t.values.resize(b.values.size());
  for (std::int64_t k = 0; k < b.count(); ++k) {
    const int m = ad.row_sizes()[b.rows[k]], n = ad.col_sizes()[b.cols[k]];
    const double* s = b.values.data() + b.offsets[k];
    double* d = t.values.data() + b.offsets[k];
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r) d[c + std::int64_t(r) * n] = s[r + std::int64_t(c) * m];
  }
  auto owned = bs::route_to_owners(dist, t);
  return bs::from_csr<typename Exec::memory_space>(dist, bs::assemble(dist, owned, fn));
}

template <class Exec>
BlockSparseMatrix<double, typename Exec::memory_space> identity(const Exec& exec,
                                                                const BlockDistribution& dist,
                                                                double alpha) {
  namespace bs = detail::block_sparse;
  constexpr const char* fn = "identity";
  require_arg(!dist.empty(), fn, "the distribution is empty");
  const std::string err = bs::sizes_differ("row sizes against column sizes", dist.row_sizes(),
                                           dist.col_sizes());
  comm::agree(dist.grid().comm(), err.empty() && std::isfinite(alpha),
              std::string(fn) + ": " + (err.empty() ? "alpha is not finite" : err),
              ErrorKind::invalid_argument);
  bs::HostBlocks b;
  std::vector<double> blk;
  for (int i : dist.local_rows()) {
    if (dist.local_col(i) < 0) continue;
    const int m = dist.row_sizes()[i];
    blk.assign(std::size_t(m) * m, 0.0);
    for (int r = 0; r < m; ++r) blk[r + std::size_t(r) * m] = alpha;
    b.push(i, i, blk.data(), std::int64_t(m) * m);
  }
  (void)exec;
  return bs::from_csr<typename Exec::memory_space>(dist, bs::assemble(dist, b, fn));
}

template <class Exec>
void scale(const Exec& exec, BlockSparseMatrix<double, typename Exec::memory_space>& A,
           double alpha) {
  namespace bs = detail::block_sparse;
  require_arg(std::isfinite(alpha), "scale", "alpha is not finite");
  bs::scale_values(exec, A.values(), alpha);
  std::vector<double> n = A.norms();
  for (auto& x : n) x *= std::fabs(alpha);
  A.assign(A.row_ptr(), A.col_index(), A.offsets(), A.values(), std::move(n));
}

template <class Exec>
void add(const Exec& exec, double alpha,
         const BlockSparseMatrix<double, typename Exec::memory_space>& A, double beta,
         BlockSparseMatrix<double, typename Exec::memory_space>& B) {
  namespace bs = detail::block_sparse;
  using Mem = typename Exec::memory_space;
  constexpr const char* fn = "add";
  require_arg(!A.distribution().empty() && !B.distribution().empty(), fn,
              "a matrix has no distribution");
  require_arg(A.distribution() == B.distribution(), fn,
              "A and B must have the same block sizes and distribution");
  require_arg(std::isfinite(alpha) && std::isfinite(beta), fn, "alpha and beta must be finite");
  require_arg(&A != &B, fn, "A and B are the same matrix (use scale)");
  const auto& ar = A.row_ptr();
  const auto& br = B.row_ptr();
  std::vector<std::int64_t> rp(ar.size(), 0), noff{0}, a_src, b_src, len;
  std::vector<int> cols;
  const auto& dist = A.distribution();
  for (std::size_t l = 0; l + 1 < ar.size(); ++l) {
    std::int64_t x = ar[l], y = br[l];
    const int m = dist.row_sizes()[dist.local_rows()[l]];
    while (x < ar[l + 1] || y < br[l + 1]) {
      const int ca = x < ar[l + 1] ? A.col_index()[x] : INT32_MAX;
      const int cb = y < br[l + 1] ? B.col_index()[y] : INT32_MAX;
      const int c = std::min(ca, cb);
      a_src.push_back(ca == c ? A.offsets()[x++] : -1);
      b_src.push_back(cb == c ? B.offsets()[y++] : -1);
      const std::int64_t ln = std::int64_t(m) * dist.col_sizes()[c];
      len.push_back(ln);
      noff.push_back(noff.back() + ln);
      cols.push_back(c);
    }
    rp[l + 1] = static_cast<std::int64_t>(cols.size());
  }
  Kokkos::View<double*, Mem> nv(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                                   "kess::BlockSparseMatrix::values"),
                                noff.back());
  auto av = A.values();
  auto bv = B.values();
  const std::int64_t nb = static_cast<std::int64_t>(cols.size());
  if constexpr (core::detail::is_host_backend<Exec>()) {
    core::detail::host_backend_for<Exec>(nb, 64, [&](std::int64_t b) {
      for (std::int64_t e = 0; e < len[b]; ++e) {
        double v = 0;
        if (a_src[b] >= 0) v += alpha * av(a_src[b] + e);
        if (b_src[b] >= 0) v += beta * bv(b_src[b] + e);
        nv(noff[b] + e) = v;
      }
    });
  } else if (nb > 0) {
    auto das = bs::to_device<Mem>(a_src, "kess::block_sparse::a_src");
    auto dbs = bs::to_device<Mem>(b_src, "kess::block_sparse::b_src");
    auto doff = bs::to_device<Mem>(noff, "kess::block_sparse::offsets");
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for(
        "kess::block_sparse::add", Policy(exec, nb, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Policy::member_type& t) {
          const std::int64_t b = t.league_rank();
          const std::int64_t o = doff(b), ln = doff(b + 1) - o, sa = das(b), sb = dbs(b);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, ln), [&](std::int64_t e) {
            double v = 0;
            if (sa >= 0) v += alpha * av(sa + e);
            if (sb >= 0) v += beta * bv(sb + e);
            nv(o + e) = v;
          });
        });
  }
  auto norms = bs::block_norms(exec, nv, noff);
  B.assign(std::move(rp), std::move(cols), std::move(noff), nv, std::move(norms));
}

template <class Exec>
void add_identity(const Exec& exec, BlockSparseMatrix<double, typename Exec::memory_space>& A,
                  double alpha) {
  const auto I = identity(exec, A.distribution(), alpha);
  add(exec, 1.0, I, 1.0, A);
}

template <class Exec>
double trace(const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A) {
  namespace bs = detail::block_sparse;
  using Mem = typename Exec::memory_space;
  constexpr const char* fn = "trace";
  const auto& dist = A.distribution();
  require_arg(!dist.empty(), fn, "the matrix has no distribution");
  const std::string err =
      bs::sizes_differ("row sizes against column sizes", dist.row_sizes(), dist.col_sizes());
  comm::agree(dist.grid().comm(), err.empty(), std::string(fn) + ": " + err,
              ErrorKind::invalid_argument);
  std::vector<std::int64_t> off;
  std::vector<int> size;
  for (int i : dist.local_rows()) {
    const std::int64_t b = A.find(i, i);
    if (b < 0) continue;
    off.push_back(A.offsets()[b]);
    size.push_back(dist.row_sizes()[i]);
  }
  double sum = 0;
  const std::int64_t n = static_cast<std::int64_t>(off.size());
  if (n > 0) {
    auto doff = bs::to_device<Mem>(off, "kess::block_sparse::diag");
    auto dsz = bs::to_device<Mem>(size, "kess::block_sparse::diag_size");
    auto v = A.values();
    Kokkos::parallel_reduce(
        "kess::block_sparse::trace", Kokkos::RangePolicy<Exec>(exec, 0, n),
        KOKKOS_LAMBDA(std::int64_t b, double& s) {
          const int m = dsz(b);
          for (int r = 0; r < m; ++r) s += v(doff(b) + r + std::int64_t(r) * m);
        },
        sum);
  }
  return comm::allreduce(dist.grid().comm(), sum, comm::ReduceOp::sum);
}

template <class Exec>
double dot(const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A,
           const BlockSparseMatrix<double, typename Exec::memory_space>& B) {
  namespace bs = detail::block_sparse;
  using Mem = typename Exec::memory_space;
  constexpr const char* fn = "dot";
  require_arg(!A.distribution().empty() && A.distribution() == B.distribution(), fn,
              "A and B must have the same block sizes and distribution");
  std::vector<std::int64_t> ao, bo, len;
  const auto& ar = A.row_ptr();
  const auto& br = B.row_ptr();
  for (std::size_t l = 0; l + 1 < ar.size(); ++l) {
    std::int64_t x = ar[l], y = br[l];
    while (x < ar[l + 1] && y < br[l + 1]) {
      const int ca = A.col_index()[x], cb = B.col_index()[y];
      if (ca < cb) {
        ++x;
      } else if (cb < ca) {
        ++y;
      } else {
        ao.push_back(A.offsets()[x]);
        bo.push_back(B.offsets()[y]);
        len.push_back(A.offsets()[x + 1] - A.offsets()[x]);
        ++x;
        ++y;
      }
    }
  }
  double sum = 0;
  const std::int64_t n = static_cast<std::int64_t>(len.size());
  if (n > 0) {
    auto dao = bs::to_device<Mem>(ao, "kess::block_sparse::a_off");
    auto dbo = bs::to_device<Mem>(bo, "kess::block_sparse::b_off");
    auto dln = bs::to_device<Mem>(len, "kess::block_sparse::len");
    auto av = A.values();
    auto bv = B.values();
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_reduce(
        "kess::block_sparse::dot", Policy(exec, n, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Policy::member_type& t, double& s) {
          const std::int64_t b = t.league_rank();
          double part = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, dln(b)),
              [&](std::int64_t e, double& q) { q += av(dao(b) + e) * bv(dbo(b) + e); }, part);
          Kokkos::single(Kokkos::PerTeam(t), [&]() { s += part; });
        },
        sum);
  }
  return comm::allreduce(A.distribution().grid().comm(), sum, comm::ReduceOp::sum);
}

template <class Exec>
double norm(const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A) {
  namespace bs = detail::block_sparse;
  (void)exec;
  require_arg(!A.distribution().empty(), "norm", "the matrix has no distribution");
  const double mine = bs::norm_of_norms(A.norms());
  const auto all = comm::allgatherv(A.distribution().grid().comm(), std::vector<double>{mine});
  return bs::norm_of_norms(all);
}

template <class Exec>
void filter(const Exec& exec, BlockSparseMatrix<double, typename Exec::memory_space>& A,
            double eps) {
  require_arg(eps >= 0 && std::isfinite(eps), "filter",
              "eps must be finite and >= 0 (got " + std::to_string(eps) + ")");
  detail::block_sparse::drop_small(exec, A, eps);
}

template <class Exec>
std::int64_t multiply(const Exec& exec, double alpha,
                      const BlockSparseMatrix<double, typename Exec::memory_space>& A_in,
                      const BlockSparseMatrix<double, typename Exec::memory_space>& B_in,
                      double beta, BlockSparseMatrix<double, typename Exec::memory_space>& C,
                      const BlockMultiplyOptions& opts, BlockMultiplyStats* stats) {
  namespace bs = detail::block_sparse;
  using Mem = typename Exec::memory_space;
  using Matrix = BlockSparseMatrix<double, Mem>;
  constexpr const char* fn = "multiply";
  kx::ScopedRegion region("kess::multiply");
  require_arg(!A_in.distribution().empty(), fn, "A has no distribution");
  require_arg(!B_in.distribution().empty(), fn, "B has no distribution");
  require_arg(!C.distribution().empty(), fn, "C has no distribution");
  require_arg(&C != &A_in && &C != &B_in, fn, "C may not be A or B");
  const auto& cd = C.distribution();
  const auto& comm = cd.grid().comm();
  {
    std::string err;
    if (!(opts.filter_eps >= 0) || !std::isfinite(opts.filter_eps)) {
      err = "opts.filter_eps must be finite and >= 0 (got " + std::to_string(opts.filter_eps) + ")";
    } else if (!std::isfinite(alpha) || !std::isfinite(beta)) {
      err = "alpha and beta must be finite";
    } else if (!bs::same_grid(A_in.distribution(), cd) || !bs::same_grid(B_in.distribution(), cd)) {
      err = "A, B and C must be on the same process grid";
    } else {
      const auto& ad = A_in.distribution();
      const auto& bd = B_in.distribution();
      const auto& a_rows = opts.transpose_a ? ad.col_sizes() : ad.row_sizes();
      const auto& a_cols = opts.transpose_a ? ad.row_sizes() : ad.col_sizes();
      const auto& b_rows = opts.transpose_b ? bd.col_sizes() : bd.row_sizes();
      const auto& b_cols = opts.transpose_b ? bd.row_sizes() : bd.col_sizes();
      err = bs::sizes_differ("the inner block sizes (op(A)'s columns against op(B)'s rows)",
                             a_cols, b_rows);
      if (err.empty()) err = bs::sizes_differ("C's row blocks against op(A)'s", cd.row_sizes(), a_rows);
      if (err.empty()) {
        err = bs::sizes_differ("C's column blocks against op(B)'s", cd.col_sizes(), b_cols);
      }
    }
    comm::agree(comm, err.empty(), std::string(fn) + ": " + err, ErrorKind::invalid_argument);
  }
  BlockMultiplyStats st;

  // op(A) with C's row placement, op(B) with C's column placement.
  const Matrix* A = &A_in;
  const Matrix* B = &B_in;
  Matrix At, Bt;
  if (opts.transpose_a) {
    At = transpose(exec, A_in);
    A = &At;
  }
  if (opts.transpose_b) {
    Bt = transpose(exec, B_in);
    B = &Bt;
  }
  const auto& g = cd.grid();
  const bool cannon = g.nprow() == g.npcol() && g.nprow() > 1;
  {
    const auto& ad = A->distribution();
    std::vector<int> a_col_dist = ad.col_dist();
    if (ad.row_dist() != cd.row_dist()) {
      At = redistribute(exec, *A, BlockDistribution(g, ad.row_sizes(), ad.col_sizes(),
                                                    cd.row_dist(), ad.col_dist()));
      A = &At;
    }
    const auto& bd = B->distribution();
    // Cannon pairs A's column groups with B's row groups: B's rows are placed as A's columns.
    const std::vector<int>& b_row_dist = cannon ? A->distribution().col_dist() : bd.row_dist();
    if (bd.col_dist() != cd.col_dist() || bd.row_dist() != b_row_dist) {
      Bt = redistribute(exec, *B, BlockDistribution(g, bd.row_sizes(), bd.col_sizes(), b_row_dist,
                                                    cd.col_dist()));
      B = &Bt;
    }
  }

  // Thresholds: eps / n_i, n_i the blocks of row i of op(A) over its whole process row.
  const auto& lrows = cd.local_rows();
  std::vector<double> thr(lrows.size(), 0.0);
  if (opts.filter_eps > 0) {
    std::vector<std::int64_t> cnt(lrows.size());
    for (std::size_t l = 0; l < lrows.size(); ++l) cnt[l] = A->row_ptr()[l + 1] - A->row_ptr()[l];
    comm::allreduce(g.row_comm(), cnt, comm::ReduceOp::sum);
    for (std::size_t l = 0; l < lrows.size(); ++l) {
      // DBCSR's threshold in single precision: float(eps) / float(n_i).
      thr[l] = cnt[l] > 0 ? double(float(opts.filter_eps) / float(cnt[l])) : 0.0;
    }
  }

  // beta C.
  if (beta == 0 && !opts.retain_sparsity) {
    C = Matrix(cd);
  } else if (beta != 1) {
    scale(exec, C, beta);
  }

  // Local column map of C.
  std::vector<int> local_col_of(static_cast<std::size_t>(cd.block_cols()));
  for (int j = 0; j < cd.block_cols(); ++j) local_col_of[j] = cd.local_col(j);

  auto step = [&](const bs::Panel<Mem>& pa, const bs::Panel<Mem>& pb) {
    auto ti = bs::Clock::now();
    bs::StackInput in;
    in.a = &pa.index;
    in.b = &pb.index;
    in.inner_blocks = A->distribution().block_cols();
    in.row_sizes = cd.row_sizes().data();
    in.inner_sizes = A->distribution().col_sizes().data();
    in.col_sizes = cd.col_sizes().data();
    in.local_col_of = local_col_of.data();
    in.local_cols = static_cast<int>(cd.local_cols().size());
    in.c_row_ptr = &C.row_ptr();
    in.c_cols = &C.col_index();
    in.c_offsets = &C.offsets();
    in.threshold = &thr;
    in.retain_sparsity = opts.retain_sparsity;
    const bs::Stack s = bs::build_stack(in);
    if (s.grew) bs::grow(exec, C, s);
    st.seconds_index += bs::since(ti);
    auto tk = bs::Clock::now();
    bs::stack_multiply(exec, s, bs::upload_stack(exec, s), pa.values, pb.values, C.values(), alpha);
    kx::fence(exec, "kess::multiply");
    st.seconds_kernel += bs::since(tk);
    st.flops += s.flops;
    st.products += s.products;
    st.skipped += s.skipped;
    ++st.steps;
  };

  if (cannon) {
    // Cannon: at step s process (r, c) holds A's column group and B's row group (r + c + s) mod p.
    const int p = g.nprow(), r = g.myrow(), c = g.mycol();
    auto tc = bs::Clock::now();
    bs::Panel<Mem> pa = bs::panel_of(*A), pb = bs::panel_of(*B);
    // Skew: my A part (group c) goes to column (c - r) mod p of my row; B's (group r) to row
    // (r - c) mod p of my column.
    pa = bs::shift(exec, g.row_comm(), pa, ((c - r) % p + p) % p, (r + c) % p);
    pb = bs::shift(exec, g.col_comm(), pb, ((r - c) % p + p) % p, (r + c) % p);
    st.seconds_comm += bs::since(tc);
    for (int s = 0; s < p; ++s) {
      step(pa, pb);
      if (s + 1 < p) {
        tc = bs::Clock::now();
        pa = bs::shift(exec, g.row_comm(), pa, (c - 1 + p) % p, (c + 1) % p);
        pb = bs::shift(exec, g.col_comm(), pb, (r - 1 + p) % p, (r + 1) % p);
        st.seconds_comm += bs::since(tc);
      }
    }
  } else if (g.size() == 1) {
    step(bs::panel_of(*A), bs::panel_of(*B));
  } else {
    // Other grids: my block rows of A from my process row, my block columns of B from my process
    // column, then one local step.
    auto tc = bs::Clock::now();
    const auto& ad = A->distribution();
    const auto& bd = B->distribution();
    bs::HostBlocks ha = bs::local_blocks(*A), hb = bs::local_blocks(*B);
    auto pa = bs::panel_from<Mem>(bs::gather_over(g.row_comm(), ad, ha), lrows);
    std::vector<int> krows(static_cast<std::size_t>(bd.block_rows()));
    for (int k = 0; k < bd.block_rows(); ++k) krows[k] = k;
    auto pb = bs::panel_from<Mem>(bs::gather_over(g.col_comm(), bd, hb), krows);
    st.seconds_comm += bs::since(tc);
    step(pa, pb);
  }

  // Final norms and the filter.
  auto tn = bs::Clock::now();
  {
    auto norms = bs::block_norms(exec, C.values(), C.offsets());
    C.assign(C.row_ptr(), C.col_index(), C.offsets(), C.values(), std::move(norms));
  }
  if (!opts.retain_sparsity) bs::drop_small(exec, C, opts.filter_eps);
  kx::fence(exec, "kess::multiply");
  st.seconds_index += bs::since(tn);

  std::vector<std::int64_t> tot = {st.flops, st.products, st.skipped, C.local_blocks()};
  comm::allreduce(comm, tot, comm::ReduceOp::sum);
  st.flops = tot[0];
  st.products = tot[1];
  st.skipped = tot[2];
  st.c_blocks = tot[3];
  if (stats) *stats = st;
  return st.flops;
}

}  // namespace kess

/// Explicit instantiations of the block-sparse operations for one execution space.
#define KESS_BLOCK_SPARSE_TEMPLATES(EXEC)                                                        \
  template detail::block_sparse::DeviceStack<EXEC::memory_space>                                 \
      detail::block_sparse::upload_stack<EXEC>(const EXEC&, const detail::block_sparse::Stack&); \
  template void detail::block_sparse::stack_multiply<EXEC>(                                      \
      const EXEC&, const detail::block_sparse::Stack&,                                           \
      const detail::block_sparse::DeviceStack<EXEC::memory_space>&,                              \
      const Kokkos::View<double*, EXEC::memory_space>&,                                          \
      const Kokkos::View<double*, EXEC::memory_space>&,                                          \
      const Kokkos::View<double*, EXEC::memory_space>&, double,                                  \
      detail::block_sparse::StackKernel);                                                        \
  template std::int64_t multiply<EXEC>(                                                          \
      const EXEC&, double, const BlockSparseMatrix<double, EXEC::memory_space>&,                 \
      const BlockSparseMatrix<double, EXEC::memory_space>&, double,                              \
      BlockSparseMatrix<double, EXEC::memory_space>&, const BlockMultiplyOptions&,               \
      BlockMultiplyStats*);                                                                      \
  template void add<EXEC>(const EXEC&, double, const BlockSparseMatrix<double, EXEC::memory_space>&, \
                          double, BlockSparseMatrix<double, EXEC::memory_space>&);               \
  template void scale<EXEC>(const EXEC&, BlockSparseMatrix<double, EXEC::memory_space>&, double); \
  template void add_identity<EXEC>(const EXEC&, BlockSparseMatrix<double, EXEC::memory_space>&,  \
                                   double);                                                      \
  template double trace<EXEC>(const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&); \
  template double dot<EXEC>(const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&,   \
                            const BlockSparseMatrix<double, EXEC::memory_space>&);               \
  template double norm<EXEC>(const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&); \
  template void filter<EXEC>(const EXEC&, BlockSparseMatrix<double, EXEC::memory_space>&, double); \
  template BlockSparseMatrix<double, EXEC::memory_space> transpose<EXEC>(                        \
      const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&, const BlockDistribution&); \
  template BlockSparseMatrix<double, EXEC::memory_space> redistribute<EXEC>(                     \
      const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&, const BlockDistribution&); \
  template BlockSparseMatrix<double, EXEC::memory_space> identity<EXEC>(                         \
      const EXEC&, const BlockDistribution&, double);
