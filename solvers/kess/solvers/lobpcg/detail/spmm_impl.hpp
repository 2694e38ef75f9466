// Body of kess::spmm (CSB_Coo, both triangles from the stored one; Maris et al. 2022, §3.2) for
// one execution space, and spmm_local, the product of one rank's part that the distributed path
// calls with its own vector segments.
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/lobpcg/cuda/spmm_csb.hpp>
#include <kess/solvers/lobpcg/detail/spmm_dist.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kess::detail::lobpcg {

template <class Mem>
using ConstVectorBlock = Kokkos::View<const double**, Kokkos::LayoutRight, Mem>;

// y[0:K) += v x[0:K), the column count known at compile time for the common block sizes.
template <int K>
inline void spmm_axpy(double v, const double* __restrict x, double* __restrict y, int k) {
  const int kk = K > 0 ? K : k;
#if defined(_OPENMP)
#pragma omp simd
#endif
  for (int q = 0; q < kk; ++q) y[q] += v * x[q];
}

// Entries [e0, e1) of block b, both parts (row: Y[i] += v X[j]; transposed: Y[j] += v X[i]) or
// only one of them.
template <int K, bool Row, bool Trans>
inline void spmm_host_block(const SpmmCsbArgs& a, std::int64_t b) {
  const std::int64_t rbase = std::int64_t(a.block_row[b]) * a.beta;
  const std::int64_t cbase = std::int64_t(a.block_col[b]) * a.beta;
  const bool dblock = a.diagonal && rbase == cbase;
  for (std::int64_t e = a.block_start[b]; e < a.block_start[b + 1]; ++e) {
    const std::int64_t i = rbase + a.row[e], j = cbase + a.col[e];
    const double v = a.val[e];
    if (Row) spmm_axpy<K>(v, a.xc + j * a.ldxc, a.yr + i * a.ldyr, a.k);
    if (Trans && !(dblock && i == j)) spmm_axpy<K>(v, a.xr + i * a.ldxr, a.yc + j * a.ldyc, a.k);
  }
}

template <bool Row, bool Trans>
inline void spmm_host_block_k(const SpmmCsbArgs& a, std::int64_t b) {
  switch (a.k) {
    case 8:
      return spmm_host_block<8, Row, Trans>(a, b);
    case 16:
      return spmm_host_block<16, Row, Trans>(a, b);
    default:
      return spmm_host_block<0, Row, Trans>(a, b);
  }
}

template <class Mem>
SpmmCsbArgs host_args(const CsbMatrix<double, Mem>& H, const ConstVectorBlock<Mem>& Xc,
                      const ConstVectorBlock<Mem>& Xr, const VectorBlock<double, Mem>& Yr,
                      const VectorBlock<double, Mem>& Yc) {
  SpmmCsbArgs a = spmm_matrix_args(H);
  a.xc = Xc.data();
  a.xr = Xr.data();
  a.yr = Yr.data();
  a.yc = Yc.data();
  a.ldxc = std::int64_t(Xc.stride(0));
  a.ldxr = std::int64_t(Xr.stride(0));
  a.ldyr = std::int64_t(Yr.stride(0));
  a.ldyc = std::int64_t(Yc.stride(0));
  a.k = static_cast<int>(Xc.extent(1));
  return a;
}

/// Serial: one fused pass over the stored entries in storage order.
template <class ExecSpace>
void spmm_local_host(const ExecSpace& exec, const SpmmCsbArgs& a, std::int64_t blocks,
                     std::true_type /*serial*/) {
  Kokkos::parallel_for("kess::spmm_csb_serial", Kokkos::RangePolicy<ExecSpace>(exec, 0, 1),
                       [=](std::int64_t) {
                         for (std::int64_t b = 0; b < blocks; ++b)
                           spmm_host_block_k<true, true>(a, b);
                       });
}

/// Threads: two passes without atomics, the row part by block rows (each thread owns the Y rows
/// of its block rows), then the transposed part by block columns.
template <class ExecSpace>
void spmm_local_host(const ExecSpace& exec, const SpmmCsbArgs& a, std::int64_t blocks,
                     std::false_type /*threads*/, const std::vector<int>& brow,
                     const std::vector<int>& bcol) {
  // Blocks grouped by block row (by_row) and by block column (by_col), counting sort.
  auto group = [blocks](const std::vector<int>& key, std::vector<std::int64_t>& start,
                        std::vector<std::int64_t>& order) {
    const int groups = blocks > 0 ? *std::max_element(key.begin(), key.end()) + 1 : 0;
    start.assign(static_cast<std::size_t>(groups) + 1, 0);
    for (std::int64_t b = 0; b < blocks; ++b) ++start[static_cast<std::size_t>(key[b]) + 1];
    for (int g = 0; g < groups; ++g) start[g + 1] += start[g];
    order.resize(static_cast<std::size_t>(blocks));
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::int64_t b = 0; b < blocks; ++b) order[next[key[b]]++] = b;
  };
  std::vector<std::int64_t> rstart, rorder, cstart, corder;
  group(brow, rstart, rorder);
  group(bcol, cstart, corder);
  const std::int64_t* rs = rstart.data();
  const std::int64_t* ro = rorder.data();
  const std::int64_t* cs = cstart.data();
  const std::int64_t* co = corder.data();
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
  Kokkos::parallel_for("kess::spmm_csb_rows", Policy(exec, 0, std::int64_t(rstart.size()) - 1),
                       [=](std::int64_t g) {
                         for (std::int64_t p = rs[g]; p < rs[g + 1]; ++p)
                           spmm_host_block_k<true, false>(a, ro[p]);
                       });
  Kokkos::parallel_for("kess::spmm_csb_transposed",
                       Policy(exec, 0, std::int64_t(cstart.size()) - 1), [=](std::int64_t g) {
                         for (std::int64_t p = cs[g]; p < cs[g + 1]; ++p)
                           spmm_host_block_k<false, true>(a, co[p]);
                       });
  // The index vectors are captured by pointer: they must outlive the kernels.
  kx::fence(exec, "kess::spmm_csb: host passes done");
}

/// Accumulates this rank's part of Y = H X: Yr[i, :] += v Xc[j, :] and, unless on the global
/// diagonal, Yc[j, :] += v Xr[i, :] for every stored entry (i, j) of the part, with i and j
/// counted from row_offset() and col_offset(). Xc: part_cols() x k (X on the part's columns);
/// Xr: part_rows() x k (X on its rows); Yr and Yc likewise; Yr and Yc may be the same View (and
/// Xr, Xc) when on_diagonal(). Asynchronous on `exec`.
template <class ExecSpace>
void spmm_local(const ExecSpace& exec, const CsbMatrix<double, typename ExecSpace::memory_space>& H,
                const ConstVectorBlock<typename ExecSpace::memory_space>& Xc,
                const ConstVectorBlock<typename ExecSpace::memory_space>& Xr,
                const VectorBlock<double, typename ExecSpace::memory_space>& Yr,
                const VectorBlock<double, typename ExecSpace::memory_space>& Yc) {
  const std::int64_t k = std::int64_t(Xc.extent(1));
  if (H.local_nonzeros() == 0 || k == 0) return;
  const std::int64_t blocks = H.local_blocks();
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    SpmmCsbArgs a = spmm_matrix_args(H);
    a.ldxc = std::int64_t(Xc.stride(0));
    a.ldxr = std::int64_t(Xr.stride(0));
    a.ldyr = std::int64_t(Yr.stride(0));
    a.ldyc = std::int64_t(Yc.stride(0));
    // Column slabs of at most 32 (one group of lanes spans a slab's row).
    for (std::int64_t q = 0; q < k; q += 32) {
      a.xc = Xc.data() + q;
      a.xr = Xr.data() + q;
      a.yr = Yr.data() + q;
      a.yc = Yc.data() + q;
      a.k = static_cast<int>(std::min<std::int64_t>(32, k - q));
      spmm_csb_launch(exec.cuda_stream(), a);
    }
    const cudaError_t err = cudaGetLastError();
    require(err == cudaSuccess, ErrorKind::device, "kess::spmm",
            std::string("CUDA launch failed: ") + cudaGetErrorString(err));
    return;
  }
#endif
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename ExecSpace::memory_space>::accessible) {
    const auto a = host_args(H, Xc, Xr, Yr, Yc);
    // The threaded two passes read the entries twice: they pay when the block rows (and columns)
    // give every thread a few groups.
    const std::int64_t groups = (std::max(H.part_rows(), H.part_cols()) + H.block_size() - 1) /
                                std::max(1, H.block_size());
    if (exec.concurrency() == 1 || groups < 2 * static_cast<std::int64_t>(exec.concurrency())) {
      spmm_local_host(exec, a, blocks, std::true_type{});
    } else {
      spmm_local_host(exec, a, blocks, std::false_type{}, H.block_row_host(), H.block_col_host());
    }
  }
}

}  // namespace kess::detail::lobpcg

namespace kess {

template <class ExecSpace>
void spmm(
    const ExecSpace& exec, const CsbMatrix<double, typename ExecSpace::memory_space>& H,
    const Kokkos::View<const double**, Kokkos::LayoutRight, typename ExecSpace::memory_space>& X,
    const VectorBlock<double, typename ExecSpace::memory_space>& Y) {
  constexpr const char* fn = "kess::spmm";
  require_arg(H.block_size() > 0, fn, "H is empty (no matrix assigned)");
  const std::int64_t n = H.vector_rows();
  require_arg(
      std::int64_t(X.extent(0)) == n, fn,
      "X has " + std::to_string(X.extent(0)) + " rows, H.vector_rows() is " + std::to_string(n));
  require_arg(
      std::int64_t(Y.extent(0)) == n, fn,
      "Y has " + std::to_string(Y.extent(0)) + " rows, H.vector_rows() is " + std::to_string(n));
  require_arg(X.extent(1) >= 1, fn, "X has no columns (k must be >= 1)");
  require_arg(
      Y.extent(1) == X.extent(1), fn,
      "Y has " + std::to_string(Y.extent(1)) + " columns, X has " + std::to_string(X.extent(1)));
  require_arg(X.data() != Y.data() || n == 0, fn, "X and Y are the same View");
  if (H.comm().size() > 1) {
    detail::lobpcg::spmm_distributed(
        exec, H, X, Y, [&](const auto& xc, const auto& xr, const auto& yr, const auto& yc) {
          detail::lobpcg::spmm_local(exec, H, xc, xr, yr, yc);
        });
    return;
  }
  Kokkos::deep_copy(exec, Y, 0.0);
  detail::lobpcg::spmm_local(exec, H, X, X, Y, Y);
}

}  // namespace kess

#define KESS_SPMM_TEMPLATES(EXEC)                                                            \
  template void spmm<EXEC>(                                                                  \
      const EXEC&, const CsbMatrix<double, typename EXEC::memory_space>&,                    \
      const Kokkos::View<const double**, Kokkos::LayoutRight, typename EXEC::memory_space>&, \
      const VectorBlock<double, typename EXEC::memory_space>&);                              \
  template void detail::lobpcg::spmm_local<EXEC>(                                            \
      const EXEC&, const CsbMatrix<double, typename EXEC::memory_space>&,                    \
      const detail::lobpcg::ConstVectorBlock<typename EXEC::memory_space>&,                  \
      const detail::lobpcg::ConstVectorBlock<typename EXEC::memory_space>&,                  \
      const VectorBlock<double, typename EXEC::memory_space>&,                               \
      const VectorBlock<double, typename EXEC::memory_space>&);
