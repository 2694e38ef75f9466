// The CSB_Coo SpMM kernel on CUDA (Maris et al. 2022, §3.2: each stored entry used for H and
// H^T in one pass). A group of G lanes owns a chunk of consecutive entries (lane l the columns
// l + G v of the k); the group loads its entries coalesced and passes them round by shuffles, and
// loads the X rows of 8 entries before applying them. Entries are sorted by row inside a tile, so
// the row part Y[i,:] += v X[j,:] accumulates in registers and is flushed with one atomic per
// column when the row changes; the transposed part Y[j,:] += v X[i,:] goes to memory with
// atomics. Like the block-sparse stack kernel this leaves Kokkos' patterns for warp shuffles.
// The operand struct is also built without CUDA: the host loops take it too.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kess::detail::lobpcg {

/// The operands of one product, for the CUDA kernel and the host loops (detail/spmm_impl.hpp):
/// this rank's part of the triangle and four row-major vector blocks (leading dimensions in
/// doubles), columns [0, k) of each.
struct SpmmCsbArgs {
  const int* block_row;
  const int* block_col;
  const std::int64_t* block_start;
  int blocks;
  const std::uint16_t* row;
  const std::uint16_t* col;
  const double* val;
  std::int64_t nnz;
  std::int64_t beta;
  const double* xc;
  const double* xr;
  double* yr;
  double* yc;
  std::int64_t ldxc, ldxr, ldyr, ldyc;
  int k;
  bool diagonal;  ///< the part holds the global diagonal: entries with i == j applied once
  int chunk;      ///< CUDA: entries per group, a multiple of G (set by the launch)
};

/// The part's matrix operands from a CsbMatrix H; the vector operands are left to the caller.
template <class Matrix>
SpmmCsbArgs spmm_matrix_args(const Matrix& H) {
  SpmmCsbArgs a{};
  a.block_row = H.block_row().data();
  a.block_col = H.block_col().data();
  a.block_start = H.block_start().data();
  a.blocks = static_cast<int>(H.local_blocks());
  a.row = H.entry_row().data();
  a.col = H.entry_col().data();
  a.val = H.entry_value().data();
  a.nnz = H.local_nonzeros();
  a.beta = H.block_size();
  a.diagonal = H.on_diagonal();
  return a;
}

}  // namespace kess::detail::lobpcg

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>

namespace kess::detail::lobpcg {

// S entries are handled together: their X rows are loaded before any of them is applied, so that
// 2 S V loads per lane are in flight (the kernel is latency-bound otherwise).
template <int G, int V, int S>
__global__ void __launch_bounds__(256, 2) spmm_csb_kernel(const SpmmCsbArgs a) {
  constexpr int kSpmmBatch = S;
  // A round loads R = max(G, S) entries (U per lane) and applies them in batches of S.
  constexpr int U = G >= kSpmmBatch ? 1 : kSpmmBatch / G;
  constexpr int R = G * U;
  const std::int64_t gid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = static_cast<int>(gid % G);
  const std::int64_t e0 = (gid / G) * a.chunk;
  if (e0 >= a.nnz) return;  // whole groups leave together (chunks are multiples of R)
  const std::int64_t e1 = e0 + a.chunk < a.nnz ? e0 + a.chunk : a.nnz;
  // Lane `lane` owns columns lane + G v (v < V): each atomic instruction of a group covers
  // consecutive columns.
  bool act[V];
#pragma unroll
  for (int v = 0; v < V; ++v) act[v] = lane + G * v < a.k;
  const unsigned mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x % 32) / G * G));
  // The block holding e0: the last b with block_start[b] <= e0 (empty blocks are skipped).
  int lo = 0, hi = a.blocks;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (__ldg(a.block_start + mid) <= e0)
      lo = mid;
    else
      hi = mid;
  }
  int b = lo;
  std::int64_t bend = __ldg(a.block_start + b + 1);
  std::int64_t rbase = std::int64_t(__ldg(a.block_row + b)) * a.beta;
  std::int64_t cbase = std::int64_t(__ldg(a.block_col + b)) * a.beta;
  bool dblock = a.diagonal && rbase == cbase;
  std::int64_t cur = -1;
  double acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = 0;
  for (std::int64_t base = e0; base < e1; base += R) {
    unsigned rc[U];
    double vv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t el = base + u * G + lane;
      rc[u] = 0;
      vv[u] = 0;
      if (el < e1) {
        rc[u] = unsigned(__ldg(a.row + el)) | (unsigned(__ldg(a.col + el)) << 16);
        vv[u] = __ldg(a.val + el);
      }
    }
#pragma unroll
    for (int h = 0; h < R; h += kSpmmBatch) {
      std::int64_t ii[kSpmmBatch], jj[kSpmmBatch];
      double w[kSpmmBatch], xj[kSpmmBatch][V], xi[kSpmmBatch][V];
      bool trans[kSpmmBatch];
#pragma unroll
      for (int t = 0; t < kSpmmBatch; ++t) {
        const int q = h + t;  // entry of the round: slot q / G of lane q % G
        const unsigned rct = __shfl_sync(mask, rc[q / G], q % G, G);
        w[t] = __shfl_sync(mask, vv[q / G], q % G, G);
        const std::int64_t e = base + q;
        ii[t] = -1;
        if (e < e1) {
          while (e >= bend) {
            ++b;
            bend = __ldg(a.block_start + b + 1);
            rbase = std::int64_t(__ldg(a.block_row + b)) * a.beta;
            cbase = std::int64_t(__ldg(a.block_col + b)) * a.beta;
            dblock = a.diagonal && rbase == cbase;
          }
          const int r = static_cast<int>(rct & 0xffffu), c = static_cast<int>(rct >> 16);
          ii[t] = rbase + r;
          jj[t] = cbase + c;
          trans[t] = !(dblock && r == c);
#pragma unroll
          for (int v = 0; v < V; ++v) {
            if (!act[v]) continue;
            xj[t][v] = __ldg(a.xc + jj[t] * a.ldxc + lane + G * v);
            xi[t][v] = __ldg(a.xr + ii[t] * a.ldxr + lane + G * v);
          }
        }
      }
#pragma unroll
      for (int t = 0; t < kSpmmBatch; ++t) {
        if (ii[t] < 0) continue;
        if (ii[t] != cur) {
          if (cur >= 0) {
#pragma unroll
            for (int v = 0; v < V; ++v)
              if (act[v]) atomicAdd(a.yr + cur * a.ldyr + lane + G * v, acc[v]);
          }
          cur = ii[t];
#pragma unroll
          for (int v = 0; v < V; ++v) acc[v] = 0;
        }
#pragma unroll
        for (int v = 0; v < V; ++v) {
          if (!act[v]) continue;
          acc[v] += w[t] * xj[t][v];
          if (trans[t]) atomicAdd(a.yc + jj[t] * a.ldyc + lane + G * v, w[t] * xi[t][v]);
        }
      }
    }
  }
  if (cur >= 0) {
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (act[v]) atomicAdd(a.yr + cur * a.ldyr + lane + G * v, acc[v]);
  }
}

// rounds: loads of max(G, S) entries per group (0: automatic, 32 entries or more: measured best
// of 32 and 128 on an H100); batch: S, 4 or 8 (0: automatic, 4 where V = 2: no spills).
template <int G, int V>
void spmm_csb_launch_gv(cudaStream_t stream, SpmmCsbArgs a, int rounds, int batch) {
  const int S = batch == 4 || batch == 8 ? batch : (V == 2 ? 4 : 8);
  const int R = G >= S ? G : S;
  a.chunk = R * (rounds > 0 ? rounds : (R >= 32 ? 1 : 32 / R));
  const std::int64_t groups = (a.nnz + a.chunk - 1) / a.chunk;
  const std::int64_t threads = groups * G;
  const unsigned grid = static_cast<unsigned>((threads + 255) / 256);
  if (grid == 0) return;
  if (S == 4)
    spmm_csb_kernel<G, V, 4><<<grid, 256, 0, stream>>>(a);
  else
    spmm_csb_kernel<G, V, 8><<<grid, 256, 0, stream>>>(a);
}

/// Launches the kernel for columns [0, a.k), a.k <= 32: groups of G lanes, each lane V columns
/// (V = 2 from k = 3 on); `rounds` (0: automatic) sets the entries per group.
inline void spmm_csb_launch(cudaStream_t stream, const SpmmCsbArgs& a, int rounds = 0,
                            int batch = 0) {
  const int v = a.k >= 3 ? 2 : 1;
  const int lanes = (a.k + v - 1) / v;
  int g = 1;
  while (g < lanes) g *= 2;
  if (v == 2) {
    switch (g) {
      case 2:
        return spmm_csb_launch_gv<2, 2>(stream, a, rounds, batch);
      case 4:
        return spmm_csb_launch_gv<4, 2>(stream, a, rounds, batch);
      case 8:
        return spmm_csb_launch_gv<8, 2>(stream, a, rounds, batch);
      default:
        return spmm_csb_launch_gv<16, 2>(stream, a, rounds, batch);
    }
  }
  switch (g) {
    case 1:
      return spmm_csb_launch_gv<1, 1>(stream, a, rounds, batch);
    default:
      return spmm_csb_launch_gv<2, 1>(stream, a, rounds, batch);
  }
}

}  // namespace kess::detail::lobpcg

#endif
