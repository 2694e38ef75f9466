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

/// The kernel (file comment). a: the band, entry (r, c) at a[r + c 2b]; progress: n - 2 zeros on
/// entry; offset, V (b x total, column-major), tau: the reflector record (V null: not recorded).
/// NT = ChaseCudaShape::NT (a template so that the header can be included by several files).
template <int NT>
__global__ void __launch_bounds__(NT, 1)
    bulge_chase_cuda_kernel(int n, int b, double* __restrict__ a, int* __restrict__ progress,
                            const std::int64_t* __restrict__ offset, double* __restrict__ V,
                            double* __restrict__ tau_out) {
  static_assert(NT == 512, "the thread layout needs 16 warps");
  constexpr int NW = NT / 32;
  __shared__ double xs[64];         // the reflector's column x
  __shared__ double part_x[NW];     // per warp: sum of x(1:)^2
  __shared__ double part_wv[NW];    // per warp: sum of w(p) v(p)
  __shared__ double red[NW * 64];   // per warp: column sums of v(p) (a)(p, q)
  __shared__ double sa[64];         // s = tau (a)^T v
  __shared__ double ws[64];         // w = tau (b) v
  const std::size_t ld = 2 * static_cast<std::size_t>(b);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int p = 4 * warp + (lane >> 3);  // this thread's row of every block
  const int g = lane & 7;                // and its columns g + 8k
  auto at = [&](int r, int c) { return a + r + static_cast<std::size_t>(c) * ld; };
  const int stages = n - 2;
  for (int i = blockIdx.x; i < stages; i += gridDim.x) {
    double C[8];  // block (c) of the previous sweep: x (column 0) and (a) (columns 1 ..) of this one
    bool have_c = false;
    int c_row = 0, c_col = 0, c_rows = 0, c_cols = 0;
    for (int j = 0;; ++j) {
      const int r0 = i + 1 + j * b;
      if (r0 >= n - 1) {  // the stage is done: what is still in registers goes back
        if (have_c && p < c_rows)
#pragma unroll
          for (int k = 0; k < 8; ++k)
            if (g + 8 * k < c_cols) *at(c_row + p, c_col + g + 8 * k) = C[k];
        break;
      }
      const int L = min(b, n - r0);
      const int c = j == 0 ? i : r0 - b;
      if (j == 0) {  // x = A(i+1 .., i): final once stage i-1 has passed the half of its sweep 1
        if (i > 0)
          while (chase_acquire(progress + i - 1) < 3) {
          }
#pragma unroll
        for (int k = 0; k < 8; ++k) C[k] = 0.0;
        if (g == 0 && p < L) C[0] = __ldcg(at(r0 + p, i));
      }
      // ---- pre(j): the reflector of x = C(:, 0), rows < L (dlarfg's convention).
      double xsq = (g == 0 && p >= 1 && p < L) ? C[0] * C[0] : 0.0;
      if (g == 0) xs[p] = p < L ? C[0] : 0.0;
      xsq = chase_sum_rows(xsq);
      if (lane == 0) part_x[warp] = xsq;
      __syncthreads();  // 1
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
      double beta, tau, scal;
      kess::detail::householder_coefficients(xs[0], amax, ssq, beta, tau, scal);
      const double vp = p == 0 ? 1.0 : (p < L ? xs[p] * scal : 0.0);
      double vc[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int q = g + 8 * k;
        vc[k] = q == 0 ? 1.0 : (q < L ? xs[q] * scal : 0.0);
      }
      const std::int64_t col = offset[j] + i;
      if (g == 0 && p < L) {
        *at(r0 + p, c) = p == 0 ? beta : 0.0;
        if (V) V[p + col * b] = vp;
      }
      if (V && threadIdx.x == 0) tau_out[col] = tau;
      if (j > 0) {
        // (a) = C(:, 1 .. b-1) from the left: s = tau (a)^T v, (a) -= v s^T; written back.
        double s[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) s[k] = chase_sum_rows(vp * C[k]);
        if (lane < 8)
#pragma unroll
          for (int k = 0; k < 8; ++k) red[warp * 64 + g + 8 * k] = s[k];
        __syncthreads();  // 2
        if (threadIdx.x < 64) {
          double acc = 0;
#pragma unroll
          for (int w = 0; w < NW; ++w) acc += red[w * 64 + threadIdx.x];
          sa[threadIdx.x] = tau * acc;
        }
        __syncthreads();  // 3
        if (p < L)
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            const int q = g + 8 * k;
            if (q >= 1 && q < b) {
              C[k] -= vp * sa[q];
              *at(r0 + p, c + q) = C[k];
            }
          }
      }
      // Half of sweep j: x's column and (a) are written (and (b) of sweep j-1 before them).
      __syncthreads();  // 4
      if (threadIdx.x == 0) {
        __threadfence();
        *reinterpret_cast<volatile int*>(progress + i) = 2 * j + 1;
      }
      // ---- post(j): (b) two-sided, (c) from the right, once stage i-1 has passed the half of its
      // sweep j+2 (the last of its sweeps that overlaps these blocks).
      const int m2 = min(n, r0 + L + b) - (r0 + L);
      if (i > 0)
        while (chase_acquire(progress + i - 1) < 2 * j + 5) {
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
      if (g == 0) ws[p] = wp;
      const double wv = chase_sum_rows(g == 0 ? wp * vp : 0.0);
      if (lane == 0) part_wv[warp] = wv;
      __syncthreads();  // 5
      double wtv = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) wtv += part_wv[w];
      const double al = -0.5 * tau * wtv;
      const double up = wp + al * vp;
      if (p < L)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int q = g + 8 * k;
          if (q <= p) *at(r0 + p, r0 + q) = Bk[k] - vp * (ws[q] + al * vc[k]) - up * vc[k];
        }
      have_c = m2 > 0;
      c_row = r0 + L;
      c_col = r0;
      c_rows = m2;
      c_cols = L;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      *reinterpret_cast<volatile int*>(progress + i) = INT_MAX;
    }
  }
}

}  // namespace detail

/// Runs the kernel on exec's stream (asynchronous). band: the band in device memory (ld = 2b),
/// progress: n - 2 ints, zero; offset: the sweeps' reflector offsets (ChaseReflectors::offset);
/// V, tau: where the reflectors go (V null: not recorded). Requires 2 <= b <= 64.
inline void bulge_chase_cuda(const Kokkos::Cuda& exec, int n, int b, double* band, int* progress,
                             const std::int64_t* offset, double* V, double* tau) {
  require_arg(b >= 2 && b <= ChaseCudaShape::MaxB, "bulge_chase_cuda",
              "argument 'b': " + std::to_string(b) + " outside 2 .. 64");
  if (n < 3) return;
  const int G = std::max(1, std::min(n - 2, exec.cuda_device_prop().multiProcessorCount));
  detail::bulge_chase_cuda_kernel<ChaseCudaShape::NT><<<G, ChaseCudaShape::NT, 0, exec.cuda_stream()>>>(n, b, band, progress,
                                                                                   offset, V, tau);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "bulge_chase",
                std::string("stage-2 kernel launch failed: ") + cudaGetErrorString(err));
}

}  // namespace kess::core

#endif  // KOKKOS_ENABLE_CUDA
