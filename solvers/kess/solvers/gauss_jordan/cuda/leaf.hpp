// The leaf of the device panel LU spread over the whole GPU (CUDA): one kernel factors a
// rows x wd leaf (wd <= 64) with partial pivoting, the leaf's rows cut into slabs of R rows, one
// thread block a slab, each slab resident in that block's shared memory for the whole leaf.
//
// Why: the portable pipelined leaf (detail/panel.hpp, lu_leaf_pipelined) gives a column to one
// team, so every column step streams the whole column (16384 rows: 128 KB) through one
// multiprocessor, and the chain of panel factorizations, not the GEMMs, sets the solve's time
// (docs/performance/gauss_jordan.md). Here a column step moves only a pivot candidate and a row
// per block through L2:
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
// as the canonical NaN. (Slots reused between columns, announced by a flag after a fence, would
// put that fence on the critical path.) Waiting for other blocks needs every
// block resident at once: the grid is never larger than the multiprocessor count (one block a
// multiprocessor fits by construction), and blocks that start while a GEMM occupies the device
// wait for that GEMM's blocks to drain (the panel runs on a highest-priority stream:
// panel_instance). Two grid leaves at once on one device (two factorizations on two
// streams) both need their grids resident: with slabs of up to ~32 KB (panels up to ~17000 rows
// on 132 multiprocessors) several grids fit each multiprocessor, beyond that they might not; one
// factorization at a time a device is the supported use (as for the pipelined leaf's teams).
//
// lu_leaf_tournament (GaussJordanPivoting::tournament) chooses a leaf's pivot rows by
// tournament pivoting instead: one exchange between blocks a leaf, not two a column (see there).
//
// Like hh_chase_mma.hpp this leaves Kokkos' parallel patterns: waiting across teams has no
// portable spelling (on Serial the teams run one after the other) and a slab needs up to 200 KB of
// shared memory. Other backends, and leaves that do not fit, run the portable kernels; the unit
// tests compare both with LAPACK dgetrf on the GPU.
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <kess/core/base/error.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <string>

namespace kess::detail::gauss_jordan {

/// Limits and shape of the grid leaf.
struct GridLeafShape {
  static constexpr int NT = 128;          ///< threads a block
  static constexpr int MaxWidth = 64;     ///< leaf width limit
  static constexpr int MinRows = 64;      ///< rows a block at least (fewer blocks for short panels)
  static constexpr std::size_t MaxSmem = 200 * 1024;
  static constexpr int NoRow = 2147483647;  ///< kNoRow
  static constexpr double SafeMin = 2.2250738585072014e-308;  ///< kSafeMin
  /// Words of the publication buffer a column needs with G blocks: G candidates of wd + 2 words
  /// (magnitude, row, entries) and the diagonal row.
  __host__ __device__ static std::size_t column_words(int G, int wd) {
    return static_cast<std::size_t>(G) * (wd + 2) + static_cast<std::size_t>(wd);
  }
};


__device__ __forceinline__ bool grid_better(double mag, int row, double best_mag, int best_row) {
  return mag > best_mag || (mag == best_mag && row < best_row);
}

/// (mag, row) <- the best over the warp; every lane ends with the same pair (a strict order).
__device__ __forceinline__ void grid_warp_best(double& mag, int& row) {
  for (int o = 16; o > 0; o >>= 1) {
    const double m2 = __shfl_xor_sync(0xffffffffu, mag, o);
    const int r2 = __shfl_xor_sync(0xffffffffu, row, o);
    if (grid_better(m2, r2, mag, row)) {
      mag = m2;
      row = r2;
    }
  }
}

/// The same with a tag that travels with the winner (its lane, its warp).
__device__ __forceinline__ void grid_warp_best(double& mag, int& row, int& tag) {
  for (int o = 16; o > 0; o >>= 1) {
    const double m2 = __shfl_xor_sync(0xffffffffu, mag, o);
    const int r2 = __shfl_xor_sync(0xffffffffu, row, o);
    const int t2 = __shfl_xor_sync(0xffffffffu, tag, o);
    if (grid_better(m2, r2, mag, row)) {
      mag = m2;
      row = r2;
      tag = t2;
    }
  }
}

/// The all-ones pattern of an unwritten word.
constexpr long long kUnwritten = -1;

__device__ __forceinline__ long long wait_word(const long long* p) {
  long long v;
  do {
    v = *reinterpret_cast<const volatile long long*>(p);
  } while (v == kUnwritten);
  return v;
}
__device__ __forceinline__ long long publish_bits(double v) {
  return v != v ? 0x7ff8000000000000ll : __double_as_longlong(v);  // canonical NaN
}

/// The kernel (see the file comment). P: the panel, P(r, c) at P[r + c ldp]; the leaf is columns
/// c0 .. c0+wd-1, rows c0 .. rows-1; block q holds rows c0 + q R .. in shared memory s(c, i) at
/// s[c R + i]. ipiv[c0 + jj] = the row interchanged with c0 + jj (relative to P's first row).
/// pub: wd column regions of GridLeafShape::column_words(G, wd) words, all kUnwritten on entry;
/// in column jj's region block q's candidate is at q (wd + 2) (magnitude bits, row, entries) and
/// the diagonal row at G (wd + 2).
template <int NT>
__global__ void __launch_bounds__(NT)
    lu_leaf_grid_kernel(double* __restrict__ P, long long ldp, int rows, int c0, int wd, int R,
                           int* __restrict__ ipiv, long long* pub) {
  using S = GridLeafShape;
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
    if (grid_better(a, lo + i, bm, br)) {
      bm = a;
      br = lo + i;
    }
  }
  // (mag, row) <- the best over the block, on every thread
  auto block_best = [&](double& m, int& r) {
    grid_warp_best(m, r);
    if (lane == 0) {
      wmag[warp] = m;
      wrow[warp] = r;
    }
    __syncthreads();
    m = lane < NW ? wmag[lane] : 0.0;
    r = lane < NW ? wrow[lane] : S::NoRow;
    grid_warp_best(m, r);
  };
  for (int jj = 0; jj < wd; ++jj) {
    const int g = c0 + jj;
    long long* const region = pub + jj * stride;
    long long* const diag = region + static_cast<std::size_t>(G) * (wd + 2);
    // 1. publish this block's candidate (and the diagonal row, by its holder)
    block_best(bm, br);
    if (br != S::NoRow) {
      long long* const cand = region + static_cast<std::size_t>(q) * (wd + 2);
      for (int c = tid; c < wd; c += NT) cand[2 + c] = publish_bits(s[c * R + (br - lo)]);
      if (tid == 0) {
        cand[0] = __double_as_longlong(bm);
        cand[1] = br;
      }
    } else if (tid == 0) {
      region[static_cast<std::size_t>(q) * (wd + 2)] = __double_as_longlong(0.0);
      region[static_cast<std::size_t>(q) * (wd + 2) + 1] = S::NoRow;
    }
    if (g >= lo && g < lo + nr)
      for (int c = tid; c < wd; c += NT) diag[c] = publish_bits(s[c * R + (g - lo)]);
    // 2. every candidate of the column, reduced in the same order by every block
    double m = 0.0;
    int r = S::NoRow;
    for (int b = tid; b < G; b += NT) {
      const long long* cand = region + static_cast<std::size_t>(b) * (wd + 2);
      const double m2 = __longlong_as_double(wait_word(cand));
      const int r2 = static_cast<int>(wait_word(cand + 1));
      if (grid_better(m2, r2, m, r)) {
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
      prow[c] = __longlong_as_double(wait_word(src + c));
      drow[c] = __longlong_as_double(wait_word(diag + c));
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
        if (grid_better(a, rr, bm, br)) {
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


/// Enqueues the grid leaf on exec's stream for the leaf c0 .. c0+wd-1 of P (rows x *, leading
/// dimension ldp), interchanges applied across the leaf's columns only. `pub`: the publication
/// buffer, `pub_words` long; `blocks`: the grid size to aim for (0: one block a multiprocessor;
/// never more than that, never fewer rows a block than MinRows). Returns false (nothing enqueued)
/// when the leaf does not fit: wd > 64, a slab larger than 200 KB of shared memory, or a buffer
/// too small.
inline bool lu_leaf_grid(const Kokkos::Cuda& exec, double* P, long long ldp, int rows, int c0,
                            int wd, int* ipiv, long long* pub, std::size_t pub_words,
                            int blocks = 0) {
  using S = GridLeafShape;
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
      lu_leaf_grid_kernel<S::NT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(S::MaxSmem));
  if (configured != cudaSuccess && bytes > 48 * 1024) return false;
  cudaError_t err = cudaMemsetAsync(pub, 0xff, sizeof(long long) * words, exec.cuda_stream());
  if (err == cudaSuccess) {
    lu_leaf_grid_kernel<S::NT><<<G, S::NT, bytes, exec.cuda_stream()>>>(
        P, ldp, rows, c0, wd, R, ipiv, pub);
    err = cudaGetLastError();
  }
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "gauss_jordan",
                std::string("panel leaf kernel launch failed: ") + cudaGetErrorString(err));
  return true;
}

/// Limits of the tournament leaf (see lu_leaf_tournament).
struct TournamentShape {
  /// Threads a block, one row each, held in registers (a row of 32 doubles is 64 of the 128
  /// registers 512 threads may have; faster than 384 threads x 2 rows or 768 x 1,
  /// docs/performance/gauss_jordan.md).
  static constexpr int NT = 512;
  static constexpr int Width = 32;             ///< the leaf width it takes
  static constexpr int MaxCandidates = NT;     ///< G Width, eliminated by every block
  static constexpr int MaxSlab = 2 * NT;       ///< R, taken in parts of NT rows
  /// Words of the publication buffer with G blocks: a flag a block, G Width candidate slots of
  /// Width + 1 words (row, entries), the leaf's first Width rows.
  __host__ __device__ static std::size_t words(int G) {
    return static_cast<std::size_t>(G) * (1 + Width * (Width + 1)) + Width * Width;
  }
};


/// Partial pivoting over the rows the block's threads hold in registers (one a thread, in `a`;
/// id NoRow: no row), WD steps, fully unrolled so that every register index is a constant: step
/// j picks the row of largest |a(i, j)| (the lower id among equals; NaN loses to every number;
/// none left: sel[j] = NoRow), records its id in sel[j] and its thread in slot[j], puts row j of U
/// in uf[j WD ..] (zeros left of the diagonal), and eliminates column j from the other rows.
/// Multipliers are not kept (they come from a U^-1 afterwards). One barrier a step: each warp's
/// winning lane puts its row in a double-buffered slot beside its magnitude, and every warp
/// reduces the warps' winners with shuffles.
template <int NT, int WD>
__device__ __forceinline__ void tournament_gepp(double (&a)[WD], int id, int* sel, int* slot,
                                                   double* uf, double (*prow)[NT / 32][WD],
                                                   double (*wmag)[NT / 32], int (*wrid)[NT / 32],
                                                   int (*wslot)[NT / 32]) {
  using S = GridLeafShape;
  constexpr int NW = NT / 32;
  static_assert(NW <= 32 && WD % 2 == 0, "one warp reduces the warps' winners");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  bool live = id != S::NoRow;
#pragma unroll
  for (int j = 0; j < WD; ++j) {
    double bm = -2.0;
    int br = S::NoRow;
    if (live) {
      bm = fabs(a[j]);
      if (bm != bm) bm = -1.0;
      br = id;
    }
    int bl = lane;
    grid_warp_best(bm, br, bl);
    const int buf = j & 1;  // the slot is written again two steps later, after another barrier
    if (lane == bl) {
      if (br != S::NoRow) {
        double2* dst = reinterpret_cast<double2*>(prow[buf][warp]);
#pragma unroll
        for (int c = j / 2; c < WD / 2; ++c) dst[c] = make_double2(a[2 * c], a[2 * c + 1]);
        wslot[buf][warp] = tid;
      }
      wmag[buf][warp] = bm;
      wrid[buf][warp] = br;
    }
    __syncthreads();
    // every warp reduces the warps' winners with shuffles (lane w holds warp w's; a warp without
    // rows has magnitude -2 and no row, below every row, NaN rows' -1 included)
    bm = lane < NW ? wmag[buf][lane] : -2.0;
    br = lane < NW ? wrid[buf][lane] : S::NoRow;
    int bw = lane;
    grid_warp_best(bm, br, bw);
    if (tid == 0) {
      sel[j] = br;
      slot[j] = br == S::NoRow ? 0 : wslot[buf][bw];
    }
    if (br == S::NoRow) continue;  // uniform: no rows left (a slab shorter than WD)
    const double* pr = prow[buf][bw];
    const double2* pr2 = reinterpret_cast<const double2*>(pr);
    if (tid < WD) uf[j * WD + tid] = tid >= j ? pr[tid] : 0.0;  // U(j, :)
    const double u = pr[j];
    const bool recip = fabs(u) >= S::SafeMin;
    const double ru = recip ? 1.0 / u : 0.0;
    if (id == br) live = false;
    double l = a[j];
    if (u != 0.0) l = recip ? l * ru : l / u;  // as dgetf2: no division by an exact zero
#pragma unroll
    for (int c = (j + 1) / 2; c < WD / 2; ++c) {
      const double2 v = pr2[c];
      if (2 * c > j) a[2 * c] -= l * v.x;
      a[2 * c + 1] -= l * v.y;
    }
  }
  __syncthreads();
}

/// The tournament leaf (see lu_leaf_tournament). Block q holds rows c0 + q R .. of P. pub (all
/// kUnwritten on entry): G flags, then G WD candidate slots of WD + 1 words (row, the row's
/// original entries), then the leaf's first WD rows as they were.
template <int NT, int WD>
__global__ void __launch_bounds__(NT, 1)
    lu_leaf_tournament_kernel(double* __restrict__ P, long long ldp, int rows, int c0, int R,
                                 int* __restrict__ ipiv, long long* pub) {
  using S = GridLeafShape;
  constexpr int NW = NT / 32;
  __shared__ __align__(16) double prow[2][NW][WD];
  __shared__ double wmag[2][NW];
  __shared__ int wrid[2][NW], wslot[2][NW];
  __shared__ __align__(16) double uz[WD * WD];  // U(j, c) at uz[j WD + c], zeros for c < j
  __shared__ double rcp[WD];
  __shared__ int sel[WD], slot[WD], pv[WD], moved[2 * WD], content[WD], cand[2 * WD];
  __shared__ int nmoved;
  const int G = gridDim.x, q = blockIdx.x, tid = threadIdx.x;
  const int lo = c0 + q * R;
  const int nr = max(0, min(lo + R, rows) - lo);
  double* const Pl = P + static_cast<long long>(c0) * ldp;  // the leaf's first column
  long long* const flags = pub;
  long long* const slots = pub + G;
  long long* const top = slots + static_cast<std::size_t>(G) * WD * (WD + 1);
  double a[WD];  // this thread's row
  int id;        // its number (NoRow: none)
  // 1. this slab's WD candidates: partial pivoting over a copy of its rows (P is not written), NT
  //    rows at a time; a slab of two such parts picks among their 2 WD candidates once more
  const int parts = (nr + NT - 1) / NT;  // 1 or 2 (the launch keeps R <= 2 NT); uniform
  int kc = 0;
  for (int part = 0; part < parts; ++part) {
    const int i = part * NT + tid;
    id = i < nr ? lo + i : S::NoRow;
#pragma unroll
    for (int c = 0; c < WD; ++c) a[c] = i < nr ? Pl[(lo + i) + c * ldp] : 0.0;
    tournament_gepp<NT, WD>(a, id, sel, slot, uz, prow, wmag, wrid, wslot);
    const int k = min(WD, nr - part * NT);
    if (parts > 1 && tid < k) cand[kc + tid] = sel[tid];
    kc += k;
    __syncthreads();  // cand is complete, and sel is read before the next round writes it
  }
  if (parts > 1) {
    id = tid < kc ? cand[tid] : S::NoRow;
#pragma unroll
    for (int c = 0; c < WD; ++c) a[c] = tid < kc ? Pl[cand[tid] + c * ldp] : 0.0;
    tournament_gepp<NT, WD>(a, id, sel, slot, uz, prow, wmag, wrid, wslot);
    kc = min(WD, kc);
  }
  if (q == 0)  // the leaf's first WD rows, as they are (their holder: R >= WD)
    for (int t = tid; t < WD * WD; t += NT)
      top[t] = __double_as_longlong(Pl[(c0 + t / WD) + (t % WD) * ldp]);
  for (int t = tid; t < WD * (WD + 1); t += NT) {
    const int k = t / (WD + 1), x = t % (WD + 1);
    long long* w = slots + static_cast<std::size_t>(q * WD + k) * (WD + 1);
    if (k >= kc) {
      if (x == 0) w[0] = S::NoRow;
    } else {
      w[x] = x == 0 ? static_cast<long long>(sel[k])
                    : __double_as_longlong(Pl[sel[k] + (x - 1) * ldp]);
    }
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) atomicExch(reinterpret_cast<unsigned long long*>(flags + q), 1ull);
  // 2. every slab's candidates (the same on every block), their original entries eliminated with
  //    partial pivoting: the leaf's pivot rows, in order, and U
  for (int b = tid; b < G; b += NT) wait_word(flags + b);
  __threadfence();
  __syncthreads();
  const int ns = G * WD;  // <= NT: a candidate a thread (its slot is its thread number)
  {
    const long long* w = slots + static_cast<std::size_t>(tid) * (WD + 1);
    id = tid < ns ? static_cast<int>(__ldcg(w)) : S::NoRow;
#pragma unroll
    for (int c = 0; c < WD; ++c)
      a[c] = id != S::NoRow ? __longlong_as_double(__ldcg(w + 1 + c)) : 0.0;
  }
  tournament_gepp<NT, WD>(a, id, sel, slot, uz, prow, wmag, wrid, wslot);
  if (tid < 32) {
    // the interchanges in order (LAPACK's ipiv) and where the displaced rows end up, by one warp:
    // content[t] is the row now at position c0 + t, moved[] the (position, row) pairs below
    const int lane = tid;
    content[lane] = c0 + lane;
    int nm = 0;
    __syncwarp();
    for (int j = 0; j < WD; ++j) {
      const int r = sel[j];
      const unsigned in_top = __ballot_sync(0xffffffffu, lane >= j && content[lane] == r);
      int pos = r;
      if (in_top) {
        pos = c0 + __ffs(in_top) - 1;
      } else {
        const unsigned in_moved = __ballot_sync(0xffffffffu, lane < nm && moved[2 * lane + 1] == r);
        if (in_moved) pos = moved[2 * (__ffs(in_moved) - 1)];
      }
      const int displaced = content[j];
      const unsigned at = __ballot_sync(0xffffffffu, lane < nm && moved[2 * lane] == pos);
      __syncwarp();
      if (lane == 0) {
        pv[j] = pos;
        if (pos < c0 + WD) {
          content[pos - c0] = displaced;
        } else {
          const int e = at ? __ffs(at) - 1 : nm;
          moved[2 * e] = pos;
          moved[2 * e + 1] = displaced;
        }
        content[j] = r;
      }
      if (pos >= c0 + WD && !at) ++nm;
      __syncwarp();
    }
    if (lane == 0) nmoved = nm;
  }
  if (tid < WD) {
    const double u = uz[tid * WD + tid];
    rcp[tid] = fabs(u) >= S::SafeMin ? 1.0 / u : 0.0;
  }
  __syncthreads();
  if (q == 0 && tid < WD) ipiv[c0 + tid] = pv[tid];
  // 3. this block's rows in their final places: l = a U^-1 from the original entries of the row
  //    that ends there (a pivot row's from its candidate slot, a displaced leading row's from the
  //    publication, any other row's where it is); the pivot rows keep U from the diagonal on
  for (int i = tid; i < nr; i += NT) {
    const int pos = lo + i, jt = pos - c0;  // jt < WD: a pivot row's place
    const long long* src = nullptr;
    if (jt < WD) {
      src = slots + static_cast<std::size_t>(slot[jt]) * (WD + 1) + 1;
    } else {
      for (int e = 0; e < nmoved; ++e)
        if (moved[2 * e] == pos) src = top + (moved[2 * e + 1] - c0) * WD;
    }
    double x[WD];
#pragma unroll
    for (int c = 0; c < WD; ++c)
      x[c] = src ? __longlong_as_double(__ldcg(src + c)) : Pl[pos + c * ldp];
    // x <- x U^-1 (forward substitution by columns, unrolled: constant register indices)
#pragma unroll
    for (int kk = 0; kk < WD; ++kk) {
      const double2* ur = reinterpret_cast<const double2*>(uz + kk * WD);  // U(kk, :)
      const double u = uz[kk * WD + kk];
      double v = x[kk];
      if (u != 0.0) v = rcp[kk] != 0.0 ? v * rcp[kk] : v / u;  // as dgetf2
      x[kk] = v;
#pragma unroll
      for (int c = (kk + 1) / 2; c < WD / 2; ++c) {
        const double2 uc = ur[c];
        if (2 * c > kk) x[2 * c] -= v * uc.x;
        x[2 * c + 1] -= v * uc.y;
      }
    }
    if (jt < WD) {
#pragma unroll
      for (int c = 0; c < WD; ++c)
        if (c >= jt) x[c] = uz[jt * WD + c];
    }
#pragma unroll
    for (int c = 0; c < WD; ++c) Pl[pos + c * ldp] = x[c];
  }
}


/// Tournament pivoting for a 32-column leaf (CALU; Grigori, Demmel and Xiang 2011): enqueues on
/// exec's stream one kernel that factors the leaf c0 .. c0+31 of P (rows x *, leading dimension
/// ldp) with the interchanges applied across the leaf's columns, as lu_leaf_grid does, but
/// chooses the pivot rows in two rounds instead of an exchange between blocks a column: each of G
/// blocks picks 32 candidate rows of its slab of R rows by partial pivoting on a copy held in
/// registers, then every block eliminates the G x 32 candidates (their original entries) with
/// partial pivoting, which gives the leaf's pivot rows and U, and computes its own rows of L as
/// a U^-1. One wait on the other blocks a leaf instead of two a column. The pivots differ from
/// partial pivoting's (the same matrix factored with other interchanges; |l_ij| may exceed 1, on
/// random matrices by little). G ~ sqrt(rows / 32) balances the two rounds, at most 16 blocks
/// (512 candidates, a row a thread); slabs above 512 rows pick their candidates in two parts and
/// a local round, up to 16384 rows in all. Few blocks leave the other multiprocessors to the
/// trailing GEMM beside it: the leaf alone is as fast as the grid leaf, and the solve faster
/// (docs/performance/gauss_jordan.md). Returns false (nothing enqueued) when the leaf
/// does not fit: a width other than 32, fewer than 64 rows, more than 16384, or a buffer too
/// small.
inline bool lu_leaf_tournament(const Kokkos::Cuda& exec, double* P, long long ldp, int rows,
                                  int c0, int wd, int* ipiv, long long* pub,
                                  std::size_t pub_words) {
  using T = TournamentShape;
  const int n = rows - c0;
  if (wd != T::Width || n < 2 * T::Width || pub == nullptr) return false;
  int G = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n) / T::Width)));
  G = G < 1 ? 1 : (G > T::MaxCandidates / T::Width ? T::MaxCandidates / T::Width : G);
  const int R = (n + G - 1) / G;
  G = (n + R - 1) / R;  // no empty block
  if (R < T::Width || R > T::MaxSlab || G * T::Width > T::MaxCandidates) return false;
  if (G > exec.cuda_device_prop().multiProcessorCount) return false;
  const std::size_t words = T::words(G);
  if (words > pub_words) return false;
  cudaError_t err = cudaMemsetAsync(pub, 0xff, sizeof(long long) * words, exec.cuda_stream());
  if (err == cudaSuccess) {
    lu_leaf_tournament_kernel<T::NT, T::Width>
        <<<G, T::NT, 0, exec.cuda_stream()>>>(P, ldp, rows, c0, R, ipiv, pub);
    err = cudaGetLastError();
  }
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "gauss_jordan",
                std::string("panel leaf kernel launch failed: ") + cudaGetErrorString(err));
  return true;
}

/// Words of the grid leaf's publication buffer for exec's device (leaves up to MaxWidth wide).
inline std::size_t lu_leaf_grid_words(const Kokkos::Cuda& exec) {
  using S = GridLeafShape;
  return S::column_words(exec.cuda_device_prop().multiProcessorCount, S::MaxWidth) * S::MaxWidth;
}

}  // namespace kess::detail::gauss_jordan
#endif  // KOKKOS_ENABLE_CUDA
