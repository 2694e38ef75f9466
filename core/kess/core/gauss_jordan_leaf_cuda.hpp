// The leaf of the device panel LU spread over the whole GPU (CUDA): one kernel factors a
// rows x wd leaf (wd <= 64) with partial pivoting, the leaf's rows cut into slabs of R rows, one
// thread block a slab, each slab resident in that block's shared memory for the whole leaf.
//
// Why: the portable pipelined leaf (gauss_jordan_panel.hpp, gj_lu_leaf_pipelined) gives a column
// to one team, so every column step streams the whole column (16384 rows: 128 KB) through one
// multiprocessor; its critical path was 19.3 us a column at 16384 rows (docs/benchmarks.md,
// Gauss-Jordan, session 5) and the chain of panel factorizations, not the GEMMs, set the solve's
// time. Here a column step moves only a pivot candidate and a row per block through L2:
//   1. every block finds the pivot candidate of its slab (LAPACK's idamax order: the larger
//      magnitude, the lower row among equals; NaNs never win) and publishes its magnitude, its row
//      and the candidate row's wd entries (the block holding the diagonal row publishes that row
//      too) in the column's own region of a buffer that was filled with an all-ones pattern before
//      the launch;
//   2. every block reads every candidate of the column (a thread a block), waiting while a word
//      still holds the pattern, and reduces them in the same order, so all agree on the pivot row p;
//   3. every block reads the pivot row and the diagonal row (waiting the same way), interchanges
//      rows in its slab where it holds row j or p, and applies the multipliers and the rank-1
//      update to its own rows, finding its next candidate on the way.
// Every published word is written once and is its own flag (an aligned 8-byte store is seen whole
// or not at all), so no fence or barrier is on the critical path. No value can look like the
// all-ones pattern: magnitudes are >= 0, rows >= 0, and published entries that are NaN are written
// as the canonical NaN. (Slots reused between columns, announced by a flag after a fence, gave
// 8-12 us a column instead of 5.5; docs/benchmarks.md.) Waiting for other blocks needs every
// block resident at once: the grid is never larger than the multiprocessor count (one block a
// multiprocessor fits by construction), and blocks that start while a GEMM occupies the device
// wait for that GEMM's blocks to drain (the panel runs on a highest-priority stream:
// gj_instances::panel_instance). Two grid leaves at once on one device (two factorizations on two
// streams) both need their grids resident: with slabs of up to ~32 KB (panels up to ~17000 rows
// on an H100) several grids fit each multiprocessor, beyond that they might not; one
// factorization at a time a device is the supported use (as for the pipelined leaf's teams).
//
// Like hh_chase_mma.hpp this leaves Kokkos' parallel patterns: waiting across teams has no
// portable spelling (on Serial the teams run one after the other) and a slab needs up to 200 KB of
// shared memory. Other backends, and leaves that do not fit, run the portable kernels; the unit
// tests compare both with LAPACK dgetrf on the GPU.
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <kess/core/error.hpp>

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace kess::core {

/// Limits and shape of the grid leaf.
struct GjGridLeafShape {
  static constexpr int NT = 128;          ///< threads a block
  static constexpr int MaxWidth = 64;     ///< leaf width limit
  static constexpr int MinRows = 64;      ///< rows a block at least (fewer blocks for short panels)
  static constexpr std::size_t MaxSmem = 200 * 1024;
  static constexpr int NoRow = 2147483647;  ///< kGjNoRow
  static constexpr double SafeMin = 2.2250738585072014e-308;  ///< kGjSafeMin
  /// Words of the publication buffer a column needs with G blocks: G candidates of wd + 2 words
  /// (magnitude, row, entries) and the diagonal row.
  __host__ __device__ static std::size_t column_words(int G, int wd) {
    return static_cast<std::size_t>(G) * (wd + 2) + static_cast<std::size_t>(wd);
  }
};

namespace detail {

__device__ __forceinline__ bool gj_grid_better(double mag, int row, double best_mag, int best_row) {
  return mag > best_mag || (mag == best_mag && row < best_row);
}

/// (mag, row) <- the best over the warp; every lane ends with the same pair (a strict order).
__device__ __forceinline__ void gj_grid_warp_best(double& mag, int& row) {
  for (int o = 16; o > 0; o >>= 1) {
    const double m2 = __shfl_xor_sync(0xffffffffu, mag, o);
    const int r2 = __shfl_xor_sync(0xffffffffu, row, o);
    if (gj_grid_better(m2, r2, mag, row)) {
      mag = m2;
      row = r2;
    }
  }
}

/// The all-ones pattern of an unwritten word.
constexpr long long kGjUnwritten = -1;

__device__ __forceinline__ long long gj_wait_word(const long long* p) {
  long long v;
  do {
    v = *reinterpret_cast<const volatile long long*>(p);
  } while (v == kGjUnwritten);
  return v;
}
__device__ __forceinline__ long long gj_publish_bits(double v) {
  return v != v ? 0x7ff8000000000000ll : __double_as_longlong(v);  // canonical NaN
}

/// The kernel (see the file comment). P: the panel, P(r, c) at P[r + c ldp]; the leaf is columns
/// c0 .. c0+wd-1, rows c0 .. rows-1; block q holds rows c0 + q R .. in shared memory s(c, i) at
/// s[c R + i]. ipiv[c0 + jj] = the row interchanged with c0 + jj (relative to P's first row).
/// pub: wd column regions of GjGridLeafShape::column_words(G, wd) words, all kGjUnwritten on entry;
/// in column jj's region block q's candidate is at q (wd + 2) (magnitude bits, row, entries) and
/// the diagonal row at G (wd + 2).
template <int NT>
__global__ void __launch_bounds__(NT)
    gj_lu_leaf_grid_kernel(double* __restrict__ P, long long ldp, int rows, int c0, int wd, int R,
                           int* __restrict__ ipiv, long long* pub) {
  using S = GjGridLeafShape;
  constexpr int NW = NT / 32;
  extern __shared__ double smem[];
  double* s = smem;             // wd x R
  double* prow = s + wd * R;    // the pivot row, wd entries
  double* drow = prow + wd;     // the diagonal row before the interchange, wd entries
  __shared__ double wmag[NW];
  __shared__ int wrow[NW];
  const int G = gridDim.x, q = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int lo = c0 + q * R;
  const int nr = min(lo + R, rows) - lo;
  const std::size_t stride = S::column_words(G, wd);
  double* const Pl = P + static_cast<long long>(c0) * ldp;  // the leaf's first column
  for (int c = 0; c < wd; ++c)
    for (int i = tid; i < nr; i += NT) s[c * R + i] = Pl[(lo + i) + c * ldp];
  __syncthreads();
  double bm = 0.0;
  int br = S::NoRow;
  for (int i = tid; i < nr; i += NT) {
    const double a = fabs(s[i]);
    if (gj_grid_better(a, lo + i, bm, br)) {
      bm = a;
      br = lo + i;
    }
  }
  // (mag, row) <- the best over the block, on every thread
  auto block_best = [&](double& m, int& r) {
    gj_grid_warp_best(m, r);
    if (lane == 0) {
      wmag[warp] = m;
      wrow[warp] = r;
    }
    __syncthreads();
    m = lane < NW ? wmag[lane] : 0.0;
    r = lane < NW ? wrow[lane] : S::NoRow;
    gj_grid_warp_best(m, r);
  };
  for (int jj = 0; jj < wd; ++jj) {
    const int g = c0 + jj;
    long long* const region = pub + jj * stride;
    long long* const diag = region + static_cast<std::size_t>(G) * (wd + 2);
    // 1. publish this block's candidate (and the diagonal row, by its holder)
    block_best(bm, br);
    if (br != S::NoRow) {
      long long* const cand = region + static_cast<std::size_t>(q) * (wd + 2);
      for (int c = tid; c < wd; c += NT) cand[2 + c] = gj_publish_bits(s[c * R + (br - lo)]);
      if (tid == 0) {
        cand[0] = __double_as_longlong(bm);
        cand[1] = br;
      }
    } else if (tid == 0) {
      region[static_cast<std::size_t>(q) * (wd + 2)] = __double_as_longlong(0.0);
      region[static_cast<std::size_t>(q) * (wd + 2) + 1] = S::NoRow;
    }
    if (g >= lo && g < lo + nr)
      for (int c = tid; c < wd; c += NT) diag[c] = gj_publish_bits(s[c * R + (g - lo)]);
    // 2. every candidate of the column, reduced in the same order by every block
    double m = 0.0;
    int r = S::NoRow;
    for (int b = tid; b < G; b += NT) {
      const long long* cand = region + static_cast<std::size_t>(b) * (wd + 2);
      const double m2 = __longlong_as_double(gj_wait_word(cand));
      const int r2 = static_cast<int>(gj_wait_word(cand + 1));
      if (gj_grid_better(m2, r2, m, r)) {
        m = m2;
        r = r2;
      }
    }
    __syncthreads();  // everyone has read wmag (block_best above) before it is written again
    block_best(m, r);
    // 3. the pivot row and the diagonal row, the interchange in this slab
    const int p = r == S::NoRow ? g : r;  // NaN column: no candidate, no interchange
    const long long* src =
        p == g ? diag : region + static_cast<std::size_t>((p - c0) / R) * (wd + 2) + 2;
    for (int c = tid; c < wd; c += NT) {
      prow[c] = __longlong_as_double(gj_wait_word(src + c));
      drow[c] = __longlong_as_double(gj_wait_word(diag + c));
    }
    __syncthreads();
    if (p != g) {
      if (g >= lo && g < lo + nr)
        for (int c = tid; c < wd; c += NT) s[c * R + (g - lo)] = prow[c];
      if (p >= lo && p < lo + nr)
        for (int c = tid; c < wd; c += NT) s[c * R + (p - lo)] = drow[c];
    }
    if (q == 0 && tid == 0) ipiv[g] = p;
    __syncthreads();
    // multipliers (dgetf2: times the reciprocal where it is representable, an exact zero pivot
    // divides nothing), the rank-1 update of this block's rows, the next column's candidate
    const double u = prow[jj];
    const bool recip = fabs(u) >= S::SafeMin;
    const double ru = recip ? 1.0 / u : 0.0;
    bm = 0.0;
    br = S::NoRow;
    for (int i = tid; i < nr; i += NT) {
      const int rr = lo + i;
      if (rr <= g) continue;
      double l = s[jj * R + i];
      if (u != 0.0) {
        l = recip ? l * ru : l / u;
        s[jj * R + i] = l;
      }
      for (int c = jj + 1; c < wd; ++c) {
        const double uc = prow[c];
        if (uc != 0.0) s[c * R + i] -= l * uc;
      }
      if (jj + 1 < wd) {
        const double a = fabs(s[(jj + 1) * R + i]);
        if (gj_grid_better(a, rr, bm, br)) {
          bm = a;
          br = rr;
        }
      }
    }
    __syncthreads();  // the slab is updated before the next candidate row is published
  }
  for (int c = 0; c < wd; ++c)
    for (int i = tid; i < nr; i += NT) Pl[(lo + i) + c * ldp] = s[c * R + i];
}

}  // namespace detail

/// Enqueues the grid leaf on exec's stream for the leaf c0 .. c0+wd-1 of P (rows x *, leading
/// dimension ldp), interchanges applied across the leaf's columns only. `pub`: the publication
/// buffer, `pub_words` long; `blocks`: the grid size to aim for (0: one block a multiprocessor;
/// never more than that, never fewer rows a block than MinRows). Returns false (nothing enqueued)
/// when the leaf does not fit: wd > 64, a slab larger than 200 KB of shared memory, or a buffer
/// too small.
inline bool gj_lu_leaf_grid(const Kokkos::Cuda& exec, double* P, long long ldp, int rows, int c0,
                            int wd, int* ipiv, long long* pub, std::size_t pub_words,
                            int blocks = 0) {
  using S = GjGridLeafShape;
  const int n = rows - c0;
  if (wd <= 0 || n <= 0 || wd > S::MaxWidth || pub == nullptr) return false;
  const int sms = exec.cuda_device_prop().multiProcessorCount;
  int most = sms;
  if (blocks > 0 && blocks < most) most = blocks;
  int R = (n + most - 1) / most;
  if (R < S::MinRows) R = S::MinRows;
  const std::size_t bytes = sizeof(double) * (static_cast<std::size_t>(wd) * R + 2 * wd);
  if (bytes > S::MaxSmem) return false;
  const int G = (n + R - 1) / R;
  const std::size_t words = S::column_words(G, wd) * wd;
  if (G > sms || words > pub_words) return false;
  static const cudaError_t configured = cudaFuncSetAttribute(
      detail::gj_lu_leaf_grid_kernel<S::NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(S::MaxSmem));
  if (configured != cudaSuccess && bytes > 48 * 1024) return false;
  cudaError_t err = cudaMemsetAsync(pub, 0xff, sizeof(long long) * words, exec.cuda_stream());
  if (err == cudaSuccess) {
    detail::gj_lu_leaf_grid_kernel<S::NT><<<G, S::NT, bytes, exec.cuda_stream()>>>(
        P, ldp, rows, c0, wd, R, ipiv, pub);
    err = cudaGetLastError();
  }
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "gauss_jordan",
                std::string("panel leaf kernel launch failed: ") + cudaGetErrorString(err));
  return true;
}

/// Words of the grid leaf's publication buffer for exec's device (leaves up to MaxWidth wide).
inline std::size_t gj_lu_leaf_grid_words(const Kokkos::Cuda& exec) {
  using S = GjGridLeafShape;
  return S::column_words(exec.cuda_device_prop().multiProcessorCount, S::MaxWidth) * S::MaxWidth;
}

}  // namespace kess::core
#endif  // KOKKOS_ENABLE_CUDA
