// Stage 2 of the eigensolver (band -> tridiagonal by bulge chasing) on CUDA GPUs: the same
// sweeps, reflectors and order as bulge_chase / bulge_chase_team (bulge_chase.hpp), as one kernel
// whose thread blocks run the stages as a pipeline (block g: stages g, g + G, ...; G = the number
// of multiprocessors, one block each).
//
// Why a kernel of its own. The stages form a pipeline whose critical path is about 2 sweeps a
// stage: stage i's sweep j overlaps stage i-1's sweeps j+1 and j+2, so the whole chase takes about
// 2 n sweep times, and only the latency of one sweep matters (n = 16384: 32768 sweeps in a row).
// The portable team kernel (bulge_chase_team) spends ~14 us a sweep on ~14 team barriers, the
// loads of three blocks through L2 after every wait, and a flag per half sweep. Here a sweep of
// stage i is split in two parts:
//   pre(j):  the reflector of x = column c of the bulge and the left update of the rest of the
//            bulge, (a) = A(r0 .., c+1 .. r0-1), both taken from the registers: they are the
//            block (c) that this block updated in its own sweep j-1 and kept (no other stage
//            touches it in between); written back, then the flag "half sweep j" (2j+1);
//   post(j): wait until stage i-1 has passed the half of its sweep j+2, load the symmetric
//            diagonal block (b) and the block below it (c), apply the reflector (b) two-sided, (c)
//            from the right; (b) is written back, (c) stays in registers for pre(j+1).
// Thread layout: a block of 16 warps holds a 64 x 64 block as warp w's rows 4w .. 4w+3, lane l's
// row 4w + l/8 and columns l%8 + 8k (k = 0 .. 7), so the row sums of (b) v and (c) v are shuffles
// among 8 lanes, and a sweep needs 5 barriers: the reflector's norm, two for the column sums of
// (a), one before the flag, one to share w = tau (b) v. Stage i waits only for stage i-1 (every
// warp polls its flag with an acquire load), which is one block earlier in launch order: blocks
// never wait for one that cannot be resident.
//
// Like hh_chase_mma.hpp and gauss_jordan_leaf_cuda.hpp this leaves Kokkos' parallel patterns:
// waiting across blocks and warp shuffles have no portable spelling. Other backends run
// bulge_chase_team; the unit tests compare both with the host chase on the GPU.
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <kess/core/error.hpp>
#include <kess/core/householder.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kess::core {

/// Limits of bulge_chase_cuda.
struct ChaseCudaShape {
  static constexpr int NT = 512;   ///< threads a block: 16 warps, 4 rows of a 64 x 64 block each
  static constexpr int MaxB = 64;  ///< largest band half-width
};

namespace detail {

__device__ __forceinline__ int chase_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ double chase_sum8(double x) {  // over the 8 lanes of a row
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  x += __shfl_xor_sync(0xffffffffu, x, 4);
  return x;
}
__device__ __forceinline__ double chase_sum_rows(double x) {  // over the 4 rows of a warp
  x += __shfl_xor_sync(0xffffffffu, x, 8);
  x += __shfl_xor_sync(0xffffffffu, x, 16);
  return x;
}
__device__ __forceinline__ double chase_max_rows(double x) {
  x = fmax(x, __shfl_xor_sync(0xffffffffu, x, 8));
  return fmax(x, __shfl_xor_sync(0xffffffffu, x, 16));
}

/// Cycle counters of the kernel's phases, summed over a block's sweeps (probes only).
struct ChaseProfile {
  static constexpr int Fields = 4;  ///< wait, wait -> main barrier, main barrier -> flag, flag -> end
};

__device__ __forceinline__ long long chase_clock() { return clock64(); }

/// The kernel (file comment). a: the band, entry (r, c) at a[r + c 2b]; progress: n - 2 zeros on
/// entry; offset, V (b x total, column-major), tau: the reflector record (V null: not recorded);
/// prof: null, or ChaseProfile::Fields counters a block.
/// NT = ChaseCudaShape::NT (a template so that the header can be included by several files).
template <int NT>
__global__ void __launch_bounds__(NT, 1)
    bulge_chase_cuda_kernel(int n, int b, double* __restrict__ a, int* __restrict__ progress,
                            const std::int64_t* __restrict__ offset, double* __restrict__ V,
                            double* __restrict__ tau_out, unsigned long long* prof) {
  static_assert(NT == 512, "the thread layout needs 16 warps");
  constexpr int NW = NT / 32;
  __shared__ double xs[64];        // the next reflector's column x
  __shared__ double vs[2][64];     // v of this sweep and of the next
  __shared__ double part_x[NW];    // per warp: sum of x(1:)^2
  __shared__ double part_wv[NW];   // per warp: sum of w(p) v(p)
  __shared__ double red[NW * 64];  // per warp: column sums of x(p) 2^-e (a)(p, q), p >= 1
  __shared__ int red_e[NW];        // per warp: e, the exponent of its largest |x(p)|
  __shared__ double row0[64];      // (a)(0, q)
  __shared__ double sa[64];        // s = tau (a)^T v
  __shared__ double ws[64];        // w = tau (b) v
  __shared__ double bcol0[64];     // (b)(:, 0) before the update
  const std::size_t ld = 2 * static_cast<std::size_t>(b);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int p = 4 * warp + (lane >> 3);  // this thread's row of every block
  const int g = lane & 7;                // and its columns g + 8k
  auto at = [&](int r, int c) { return a + r + static_cast<std::size_t>(c) * ld; };
  // Reflector coefficients from x in xs (rows < L) and the warps' partial sums of squares; the
  // same on every thread.
  auto coefficients = [&](int L, double& beta, double& tau, double& scal) {
    double ssq = 0;
#pragma unroll
    for (int w = 0; w < NW; ++w) ssq += part_x[w];
    double amax = ssq > 0 ? 1.0 : 0.0;
    if (!(ssq > 1e-280 && ssq < 1e280)) {  // under- or overflow: scaled, as dlarfg (rare)
      amax = 0;
      for (int k = 1; k < L; ++k) amax = fmax(amax, fabs(xs[k]));
      ssq = 0;
      if (amax > 0) {
        const double inv = 1.0 / amax;
        for (int k = 1; k < L; ++k) {
          const double t = xs[k] * inv;
          ssq += t * t;
        }
      }
    }
    kess::detail::householder_coefficients(xs[0], amax, ssq, beta, tau, scal);
  };
  // After the coefficients of sweep j (first row r0, column c, L rows): v into registers (this
  // row's and this thread's columns') and shared memory, the reflector record, x's zeros.
  double vp = 0, vc[8];
  auto take_reflector = [&](int j, int i, int r0, int c, int L, double tau, double scal) {
    vp = p == 0 ? 1.0 : (p < L ? xs[p] * scal : 0.0);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int q = g + 8 * k;
      vc[k] = q == 0 ? 1.0 : (q < L ? xs[q] * scal : 0.0);
    }
    const std::int64_t col = offset[j] + i;
    if (g == 0) {
      vs[j & 1][p] = vp;
      if (p < L) {
        if (p > 0) *at(r0 + p, c) = 0.0;  // x(0) <- beta was written before the flag
        if (V) V[p + col * b] = vp;
      }
    }
    if (V && threadIdx.x == 0) tau_out[col] = tau;
  };
  unsigned long long pf[ChaseProfile::Fields] = {0, 0, 0, 0};
  long long t0 = 0, t1 = 0;
  const int stages = n - 2;
  for (int i = blockIdx.x; i < stages; i += gridDim.x) {
    // Sweep 0's reflector: x = A(i+1 .., i), final once stage i-1 has passed the half of its
    // sweep 1 (which writes the last entry of x).
    double C[8];  // block (c) of the sweep: x (column 0) and (a) (columns 1 ..) of the next one
    double tau, beta, scal;
    {
      const int r0 = i + 1, L = min(b, n - r0);
      if (i > 0)
        while (chase_acquire(progress + i - 1) < 3) {
        }
      const double x = (g == 0 && p < L) ? __ldcg(at(r0 + p, i)) : 0.0;
      if (g == 0) xs[p] = x;
      const double xsq = chase_sum_rows(p >= 1 ? x * x : 0.0);
      if (lane == 0) part_x[warp] = xsq;
      __syncthreads();
      coefficients(L, beta, tau, scal);
      if (threadIdx.x == 0) *at(r0, i) = beta;
      take_reflector(0, i, r0, i, L, tau, scal);
    }
    for (int j = 0;; ++j) {
      // post(j): (b) two-sided and (c) from the right, once stage i-1 has passed the half of its
      // sweep j+2 (the last of its sweeps that overlaps these blocks); then the next sweep's
      // reflector from (c)'s first column, and its left update of (c)'s other columns.
      const int r0 = i + 1 + j * b, L = min(b, n - r0);
      const int m2 = min(n, r0 + L + b) - (r0 + L);
      const int r1 = r0 + b;
      const bool next = r1 < n - 1;  // then L = b and the next sweep has m2 rows
      if (prof) t0 = chase_clock();
      if (i > 0)
        while (chase_acquire(progress + i - 1) < 2 * j + 5) {
        }
      if (prof) {
        t1 = chase_clock();
        pf[0] += t1 - t0;
        t0 = t1;
      }
      double Bk[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int q = g + 8 * k;
        Bk[k] = (p < L && q < L) ? __ldcg(p >= q ? at(r0 + p, r0 + q) : at(r0 + q, r0 + p)) : 0.0;
        C[k] = (p < m2 && q < L) ? __ldcg(at(r0 + L + p, r0 + q)) : 0.0;
      }
      double wp = 0, yp = 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        wp += Bk[k] * vc[k];
        yp += C[k] * vc[k];
      }
      wp = tau * chase_sum8(wp);
      yp = tau * chase_sum8(yp);
#pragma unroll
      for (int k = 0; k < 8; ++k) C[k] -= yp * vc[k];
      if (next) {
        // x = (c)(:, 0): its sum of squares, and the column sums of x(p) (c)(p, q) over p >= 1
        // (s = tau (c(0, q) + scal sum_p x(p) c(p, q)) needs only the coefficients after them),
        // x scaled by a power of two per warp so that x(p) c(p, q) neither under- nor overflows.
        const double x = __shfl_sync(0xffffffffu, C[0], lane & ~7);
        const bool tail = p >= 1 && p < m2;
        if (g == 0) xs[p] = p < m2 ? x : 0.0;
        const double xsq = chase_sum_rows(g == 0 && tail ? x * x : 0.0);
        const double xmax = chase_max_rows(tail ? fabs(x) : 0.0);
        const int e = xmax > 0 ? ilogb(xmax) : 0;
        const double xf = scalbn(x, -e);
        if (lane == 0) {
          part_x[warp] = xsq;
          red_e[warp] = e;
        }
        double s[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) s[k] = chase_sum_rows(tail ? xf * C[k] : 0.0);
        if (lane < 8)
#pragma unroll
          for (int k = 0; k < 8; ++k) red[warp * 64 + g + 8 * k] = s[k];
        if (p == 0)
#pragma unroll
          for (int k = 0; k < 8; ++k) row0[g + 8 * k] = C[k];
      }
      if (g == 0) {
        ws[p] = wp;
        bcol0[p] = Bk[0];
      }
      const double wv = chase_sum_rows(g == 0 ? wp * vp : 0.0);
      if (lane == 0) part_wv[warp] = wv;
      __syncthreads();  // the main barrier
      if (prof) {
        t1 = chase_clock();
        pf[1] += t1 - t0;
        t0 = t1;
      }
      double wtv = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) wtv += part_wv[w];
      const double al = -0.5 * tau * wtv;
      double tau1 = 0, beta1 = 0, scal1 = 0;
      if (next) coefficients(m2, beta1, tau1, scal1);
      if (warp == 0) {
        // What stage i+1 waits for: (b)'s column 0 (its blocks overlap (b) only there) and the
        // next reflector's x(0) <- beta (the corner of its block (c)); then the flag.
        const double* vj = vs[j & 1];
        for (int r = lane; r < L; r += 32)
          *at(r0 + r, r0) = bcol0[r] - vj[r] * (ws[0] + al) - (ws[r] + al * vj[r]);
        if (next && lane == 0) *at(r1, r0) = beta1;
        __syncwarp();
        if (lane == 0 && next) {
          __threadfence();
          *reinterpret_cast<volatile int*>(progress + i) = 2 * j + 3;
        }
      }
      if (prof) {
        t1 = chase_clock();
        pf[2] += t1 - t0;
        t0 = t1;
      }
      const double up = wp + al * vp;
      if (p < L)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int q = g + 8 * k;
          if (q >= 1 && q <= p) *at(r0 + p, r0 + q) = Bk[k] - vp * (ws[q] + al * vc[k]) - up * vc[k];
        }
      if (!next) {  // the stage is done: (c) goes back
        if (p < m2)
#pragma unroll
          for (int k = 0; k < 8; ++k)
            if (g + 8 * k < L) *at(r0 + L + p, r0 + g + 8 * k) = C[k];
        break;
      }
      // pre(j+1): its reflector (column r0, rows r1 ..) and the left update of (a) = (c)(:, 1 ..).
      tau = tau1;
      take_reflector(j + 1, i, r1, r0, m2, tau1, scal1);
      if (threadIdx.x < 64) {
        double acc = 0;
#pragma unroll
        for (int w = 0; w < NW; ++w) acc += scalbn(scal1, red_e[w]) * red[w * 64 + threadIdx.x];
        sa[threadIdx.x] = tau1 * (row0[threadIdx.x] + acc);
      }
      __syncthreads();
      if (p < m2)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int q = g + 8 * k;
          if (q >= 1 && q < b) {
            C[k] -= vp * sa[q];
            *at(r1 + p, r0 + q) = C[k];
          }
        }
      if (prof) {
        t1 = chase_clock();
        pf[3] += t1 - t0;
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      *reinterpret_cast<volatile int*>(progress + i) = INT_MAX;
    }
  }
  if (prof && threadIdx.x == 0)
    for (int f = 0; f < ChaseProfile::Fields; ++f) prof[blockIdx.x * ChaseProfile::Fields + f] = pf[f];
}

}  // namespace detail

/// Runs the kernel on exec's stream (asynchronous). band: the band in device memory (ld = 2b),
/// progress: n - 2 ints, zero; offset: the sweeps' reflector offsets (ChaseReflectors::offset);
/// V, tau: where the reflectors go (V null: not recorded); prof: null, or ChaseProfile::Fields
/// counters for each of the grid's blocks (multiprocessor count). Requires 2 <= b <= 64.
inline void bulge_chase_cuda(const Kokkos::Cuda& exec, int n, int b, double* band, int* progress,
                             const std::int64_t* offset, double* V, double* tau,
                             unsigned long long* prof = nullptr) {
  require_arg(b >= 2 && b <= ChaseCudaShape::MaxB, "bulge_chase_cuda",
              "argument 'b': " + std::to_string(b) + " outside 2 .. 64");
  if (n < 3) return;
  const int G = std::max(1, std::min(n - 2, exec.cuda_device_prop().multiProcessorCount));
  detail::bulge_chase_cuda_kernel<ChaseCudaShape::NT><<<G, ChaseCudaShape::NT, 0, exec.cuda_stream()>>>(n, b, band, progress,
                                                                                   offset, V, tau, prof);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "bulge_chase",
                std::string("stage-2 kernel launch failed: ") + cudaGetErrorString(err));
}

}  // namespace kess::core

#endif  // KOKKOS_ENABLE_CUDA
