// Stage 2 of the eigensolver (band -> tridiagonal by bulge chasing) on CUDA GPUs: the same
// sweeps, reflectors and order as bulge_chase / bulge_chase_team (bulge_chase.hpp), as one kernel
// whose thread blocks run the stages as a pipeline (block g: stages g, g + G, ...; G = the number
// of multiprocessors, one block each).
//
// Why a kernel of its own. Stage i's sweep j overlaps stage i-1's sweeps up to j+2, so the stages
// form a pipeline whose critical path is about two sweeps a stage (n = 16384: ~32768 sweeps in a
// row): only the latency of a sweep matters. The portable team kernel (bulge_chase_team) needs
// ~14 team barriers a sweep, reloads all three blocks through L2 after every wait and publishes a
// flag only at the end of a sweep. Here, with sweep j of stage i on rows r0 = i+1+jb .. and the
// blocks (a) = A(r0 .., c+1 .. r0-1) (the rest of the bulge, c = r0 - b), (b) = A(r0 .., r0 ..)
// (symmetric, lower triangle stored) and (c) = A(r0+b .., r0 ..) (below it):
//   - block (c), once updated, is the next sweep's x (its column 0) and (a) (its other columns),
//     and no other stage touches it in between: it stays in registers;
//   - one iteration = post(j) and pre(j+1): wait until stage i-1 has published the half of its
//     sweep j+2, load (b) and (c), form the partial sums of (b) v, (c) v and v^T (b) v, one
//     barrier, then (c) -= y v^T, and warp 0 (which holds column 0 of every block) updates (b)'s
//     column 0, forms the next reflector from x = (c)(:, 0) and writes x(0) <- beta. That is all
//     that stage i+1's next sweep reads from this iteration ((b) overlaps its blocks only in
//     column 0, (c) only in that corner), so warp 0 publishes the flag right there (a release
//     store); the rest of (b), the reflector record and the left update of (a) follow, with a
//     second barrier (v of the next sweep in shared memory).
// Thread layout (8 warps): lane l holds rows l and l + 32, warp w columns 8w .. 8w+7 of every
// 64 x 64 block, so a warp's load or store of a column is 256 contiguous bytes; row sums go
// through shared memory (the barrier), column sums are warp shuffles. Stage i waits only for
// stage i-1 (every warp polls its flag with acquire loads), which is one block earlier in launch
// order: blocks never wait for one that cannot be resident.
//
// Like hh_chase_mma.hpp and gauss_jordan/cuda/leaf.hpp this leaves Kokkos' parallel patterns:
// waiting across blocks and warp shuffles have no portable spelling. Other backends run
// bulge_chase_team; the unit tests compare both with the host chase on the GPU.
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <kess/core/base/error.hpp>
#include <kess/core/linalg/householder.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kess::detail::eigh {

/// Limits of bulge_chase_cuda.
struct ChaseCudaShape {
  static constexpr int NT = 256;   ///< threads a block: 8 warps, 8 columns of a 64 x 64 block each
  static constexpr int MaxB = 64;  ///< largest band half-width
};


__device__ __forceinline__ int chase_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void chase_release(int* p, int v) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/// Sum over the warp of a[k] (k = 0 .. 7), for every k, in every lane: a reduce-scatter (each
/// lane ends with one k's sum) and an all-gather, 17 shuffles instead of 40.
__device__ __forceinline__ void chase_warp_allreduce8(double (&a)[8]) {
  const int lane = threadIdx.x & 31;
  const bool h4 = lane & 16, h2 = lane & 8, h1 = lane & 4;
  double b4[4], b2[2];
#pragma unroll
  for (int m = 0; m < 4; ++m)
    b4[m] = (h4 ? a[4 + m] : a[m]) + __shfl_xor_sync(0xffffffffu, h4 ? a[m] : a[4 + m], 16);
#pragma unroll
  for (int m = 0; m < 2; ++m)
    b2[m] = (h2 ? b4[2 + m] : b4[m]) + __shfl_xor_sync(0xffffffffu, h2 ? b4[m] : b4[2 + m], 8);
  double d = (h1 ? b2[1] : b2[0]) + __shfl_xor_sync(0xffffffffu, h1 ? b2[0] : b2[1], 4);
  d += __shfl_xor_sync(0xffffffffu, d, 2);
  d += __shfl_xor_sync(0xffffffffu, d, 1);
  // lane holds the sum for k = 4 h4 + 2 h2 + h1
#pragma unroll
  for (int k = 0; k < 8; ++k) a[k] = __shfl_sync(0xffffffffu, d, ((k >> 2) << 4) | (((k >> 1) & 1) << 3) | ((k & 1) << 2));
}

__device__ __forceinline__ double chase_warp_sum(double x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ double chase_warp_max(double x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
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
  static_assert(NT == 256, "the thread layout needs 8 warps");
  constexpr int NW = NT / 32;
  __shared__ double prow_b[NW][64];  // per warp: row parts of (b) v over its columns (lower triangle)
  __shared__ double prow_c[NW][64];  // per warp: row parts of (c) v
  __shared__ double colb[64];        // column parts of (b) v: sum over p > q of (b)(p, q) v(p)
  __shared__ double part_vbv[NW];    // per warp: its part of v^T (b) v
  __shared__ double vsm[64];         // the next sweep's v
  __shared__ double tsm[1];          // and its tau
  __shared__ double wsm[64];         // w = tau (b) v
  const std::size_t ld = 2 * static_cast<std::size_t>(b);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int q0 = 8 * warp;  // this thread's columns q0 .. q0+7, rows lane and lane + 32
  auto at = [&](int r, int c) { return a + r + static_cast<std::size_t>(c) * ld; };
  // Warp 0: the reflector of x (rows lane, lane + 32 of a column, L rows), dlarfg's convention,
  // the same in every lane.
  auto coefficients = [&](const double (&x)[2], double& beta, double& tau1, double& scal) {
    double ssq = chase_warp_sum((lane >= 1 ? x[0] * x[0] : 0.0) + x[1] * x[1]);
    const double alpha = __shfl_sync(0xffffffffu, x[0], 0);
    const bool plain = ssq > 1e-280 && ssq < 1e280;
    double amax = 1.0;
    if (!plain) {  // under- or overflow: scaled, as dlarfg (rare)
      amax = chase_warp_max(fmax(lane >= 1 ? fabs(x[0]) : 0.0, fabs(x[1])));
      ssq = 0;
      if (amax > 0) {
        const double inv = 1.0 / amax;
        const double s0 = lane >= 1 ? x[0] * inv : 0.0, s1 = x[1] * inv;
        ssq = chase_warp_sum(s0 * s0 + s1 * s1);
      }
    }
    if (plain && fabs(alpha) < 1e140) {
      // No scaling needed: beta from one square root (what the flag waits for), tau and scal
      // by two independent divisions.
      const double h = sqrt(alpha * alpha + ssq);
      beta = alpha >= 0 ? -h : h;
      const double d = alpha - beta;
      scal = 1.0 / d;
      tau1 = -d / beta;
    } else {
      core::householder_coefficients(alpha, amax, ssq, beta, tau1, scal);
    }
  };
  // Warp 0: v and tau to shared memory, x's column <- (beta, 0, ...) except x(0) when `skip0`
  // (already written), and the record.
  auto publish = [&](const double (&x)[2], int L, int j, int i, int r0, int c, bool skip0, double beta,
                     double tau1, double scal) {
    const std::int64_t col = offset[j] + i;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int p = lane + 32 * h;
      const double v = p == 0 ? 1.0 : (p < L ? x[h] * scal : 0.0);
      vsm[p] = v;
      if (p < L) {
        if (p > 0 || !skip0) *at(r0 + p, c) = p == 0 ? beta : 0.0;
        if (V) V[p + col * b] = v;
      }
    }
    if (lane == 0) {
      tsm[0] = tau1;
      if (V) tau_out[col] = tau1;
    }
  };
  double vrow[2], vcol[8], tau = 0;
  auto take_v = [&]() {
    vrow[0] = vsm[lane];
    vrow[1] = vsm[lane + 32];
#pragma unroll
    for (int k = 0; k < 8; ++k) vcol[k] = vsm[q0 + k];
    tau = tsm[0];
  };
  const int stages = n - 2;
  for (int i = blockIdx.x; i < stages; i += gridDim.x) {
    double C[2][8];  // block (c) of the sweep: x (column 0) and (a) (columns 1 ..) of the next one
    {
      // Sweep 0's reflector: x = A(i+1 .., i), final once stage i-1 has passed the half of its
      // sweep 1 (which writes the last entry of x).
      const int r0 = i + 1, L = min(b, n - r0);
      if (warp == 0) {
        if (i > 0)
          while (chase_acquire(progress + i - 1) < 3) {
          }
        double x[2], beta, tau1, scal;
#pragma unroll
        for (int h = 0; h < 2; ++h) x[h] = lane + 32 * h < L ? __ldcg(at(r0 + lane + 32 * h, i)) : 0.0;
        coefficients(x, beta, tau1, scal);
        publish(x, L, 0, i, r0, i, false, beta, tau1, scal);
      }
      __syncthreads();
      take_v();
    }
    for (int j = 0;; ++j) {
      const int r0 = i + 1 + j * b, L = min(b, n - r0);
      const int m2 = min(n, r0 + L + b) - (r0 + L);
      const int r1 = r0 + b;
      const bool next = r1 < n - 1;  // then L = b and the next sweep has m2 rows
      if (i > 0)
        while (chase_acquire(progress + i - 1) < 2 * j + 5) {
        }
      double B[2][8];
#pragma unroll
      for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int p = lane + 32 * h, q = q0 + k;
          B[h][k] = (p < L && q <= p) ? __ldcg(at(r0 + p, r0 + q)) : 0.0;
          C[h][k] = (p < m2 && q < L) ? __ldcg(at(r0 + L + p, r0 + q)) : 0.0;
        }
      // Partial sums: rows of (b) v and (c) v over this warp's columns; columns of (b) v over
      // the strictly lower entries (warp reductions); v^T (b) v.
      double cb[8], vbv = 0;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int p = lane + 32 * h;
        double rb = 0, rc = 0;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          rb += B[h][k] * vcol[k];
          rc += C[h][k] * vcol[k];
        }
        prow_b[warp][p] = rb;
        prow_c[warp][p] = rc;
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int q = q0 + k;
        const double lo0 = lane > q ? B[0][k] * vrow[0] : 0.0;
        const double lo1 = lane + 32 > q ? B[1][k] * vrow[1] : 0.0;
        cb[k] = lo0 + lo1;
        vbv += 2.0 * cb[k] * vcol[k] + (lane == q ? B[0][k] * vrow[0] * vcol[k] : 0.0) +
               (lane + 32 == q ? B[1][k] * vrow[1] * vcol[k] : 0.0);
      }
      chase_warp_allreduce8(cb);
      vbv = chase_warp_sum(vbv);
      if (lane < 8) colb[q0 + lane] = cb[lane];
      if (lane == 0) part_vbv[warp] = vbv;
      __syncthreads();  // the main barrier
      double wtv = 0;
#pragma unroll
      for (int w = 0; w < NW; ++w) wtv += part_vbv[w];
      const double al = -0.5 * tau * tau * wtv;  // -tau/2 w^T v with w = tau (b) v
      double wr[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // y = tau (c) v and w = tau (b) v on this thread's rows
        const int p = lane + 32 * h;
        double yc = 0, wb = colb[p];
#pragma unroll
        for (int w = 0; w < NW; ++w) {
          yc += prow_c[w][p];
          wb += prow_b[w][p];
        }
        wr[h] = tau * wb;
        yc *= tau;
#pragma unroll
        for (int k = 0; k < 8; ++k) C[h][k] -= yc * vcol[k];
      }
      if (warp == 0) {
        // What stage i+1 waits for: (b)'s column 0 (its blocks overlap (b) only there) and the
        // next reflector's x(0) <- beta (the corner of its block (c)); then the flag.
        double w0 = colb[0];
#pragma unroll
        for (int w = 0; w < NW; ++w) w0 += prow_b[w][0];
        w0 *= tau;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int p = lane + 32 * h;
          if (p < L) *at(r0 + p, r0) = B[h][0] - vrow[h] * (w0 + al) - (wr[h] + al * vrow[h]);
        }
        if (next) {
          const double x[2] = {C[0][0], C[1][0]};
          double beta1, tau1, scal;
          coefficients(x, beta1, tau1, scal);
          if (lane == 0) *at(r1, r0) = beta1;
          __syncwarp();
          if (lane == 0) chase_release(progress + i, 2 * j + 3);
          publish(x, m2, j + 1, i, r1, r0, true, beta1, tau1, scal);
        }
      }
      if (warp == 1) {
        wsm[lane] = wr[0];
        wsm[lane + 32] = wr[1];
      }
      __syncthreads();  // w and the next v are in shared memory
      {  // (b)'s other columns (column 0 was warp 0's)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int p = lane + 32 * h;
          const double up = wr[h] + al * vrow[h];
          if (p < L)
#pragma unroll
            for (int k = 0; k < 8; ++k) {
              const int q = q0 + k;
              if (q >= 1 && q <= p) *at(r0 + p, r0 + q) = B[h][k] - vrow[h] * (wsm[q] + al * vcol[k]) - up * vcol[k];
            }
        }
      }
      if (!next) {  // the stage is done: (c) goes back
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if (lane + 32 * h < m2)
#pragma unroll
            for (int k = 0; k < 8; ++k)
              if (q0 + k < L) *at(r0 + L + lane + 32 * h, r0 + q0 + k) = C[h][k];
        break;
      }
      // pre(j+1): the left update of (a) = (c)(:, 1 ..) by the new reflector; written back.
      take_v();
      double s[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) s[k] = vrow[0] * C[0][k] + vrow[1] * C[1][k];
      chase_warp_allreduce8(s);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int p = lane + 32 * h;
        if (p < m2)
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            const int q = q0 + k;
            if (q >= 1 && q < b) {
              C[h][k] -= vrow[h] * tau * s[k];
              *at(r1 + p, r0 + q) = C[h][k];
            }
          }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) chase_release(progress + i, INT_MAX);
  }
}


/// Runs the kernel on exec's stream (asynchronous). band: the band in device memory (ld = 2b),
/// progress: n - 2 ints, zero; offset: the sweeps' reflector offsets (ChaseReflectors::offset);
/// V, tau: where the reflectors go (V null: not recorded). Requires 2 <= b <= 64.
inline void bulge_chase_cuda(const Kokkos::Cuda& exec, int n, int b, double* band, int* progress,
                             const std::int64_t* offset, double* V, double* tau) {
  require_arg(b >= 2 && b <= ChaseCudaShape::MaxB, "bulge_chase_cuda",
              "argument 'b': " + std::to_string(b) + " outside 2 .. 64");
  if (n < 3) return;
  const int G = std::max(1, std::min(n - 2, exec.cuda_device_prop().multiProcessorCount));
  bulge_chase_cuda_kernel<ChaseCudaShape::NT><<<G, ChaseCudaShape::NT, 0, exec.cuda_stream()>>>(n, b, band, progress,
                                                                                   offset, V, tau);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "bulge_chase",
                std::string("stage-2 kernel launch failed: ") + cudaGetErrorString(err));
}

}  // namespace kess::detail::eigh

#endif  // KOKKOS_ENABLE_CUDA
