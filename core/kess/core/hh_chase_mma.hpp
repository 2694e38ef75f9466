// The Householder chase's compact-WY blocks on FP64 tensor cores (CUDA, sm_80 and newer).
//
// Same algorithm and data as the `fast` variant of hh_chase.hpp (blocks of M = 32 reflectors of
// length B = 64, X_w <- X_w - W (T (W^T X_w)) last block first, the window of X in shared memory
// as a circular buffer), with the three products of a block done by warp-level
// mma.m8n8k4.f64 instructions instead of scalar FMAs, and with 32 columns a thread block instead
// of 4, so that every reflector and T loaded from L2 serves 8x more columns.
//
// This is the one place where kess leaves Kokkos' parallel patterns: a tensor-core MMA has no
// portable spelling, and the 70 KB of shared memory a block needs is above what Kokkos' TeamPolicy
// grants (48 KB). Every other backend, and CUDA devices older than sm_80, run the portable kernels
// of hh_chase.hpp; the unit tests compare both on the GPU.
#pragma once

#include <kess/core/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>

namespace kess {
namespace detail {

/// Shape of the tensor-core kernel. Shared memory (doubles): the window of X, column-major with a
/// padded leading dimension (C x LDS), the block's reflectors (M x LDV, V(i, j) at j LDV + i), its
/// T (M x LDT, T(j, l) at l LDT + j) and z = W^T X_w, later -T z (C x LDZ, z(l, c) at c LDZ + l).
/// The paddings make every fragment load of a half-warp hit 16 different banks.
struct HhChaseMmaShape {
  static constexpr int B = 64, M = 32, C = 32, NT = 256;
  static constexpr int S = 128;  // window slots: a power of two >= B + 2M - 1
  static constexpr int LDS = S + 4, LDV = B + 5, LDT = M + 4, LDZ = M + 4;
  static constexpr std::size_t smem_bytes =
      sizeof(double) * (std::size_t(C) * LDS + std::size_t(M) * LDV + std::size_t(M) * LDT +
                        std::size_t(C) * LDZ);
};

/// d += a b for one 8x8x4 FP64 tile: a = A(lane / 4, lane % 4), b = B(lane % 4, lane / 4),
/// d = D(lane / 4, 2 (lane % 4) + {0, 1}) (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64").
__device__ __forceinline__ void dmma_8x8x4(double (&d)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
#else
  (void)d;
  (void)a;
  (void)b;
  __trap();  // never launched on older devices (hh_chase_mma_supported)
#endif
}

/// One thread block per 32 columns of X; V is b x n contiguous, T is M x M x nblk (LayoutLeft),
/// X(r, c) at X[r + c ldx]. Eight warps: in the first two products warp w owns rows
/// 8 (w % 4) .. +7 of z and columns 16 (w / 4) .. +15; in the update rows 24 (w % 4) .. +23 of the
/// window and the same columns.
template <class Shape>
__global__ void __launch_bounds__(Shape::NT, 2)
    hh_chase_mma_kernel(const double* __restrict__ V, const double* __restrict__ T,
                        double* __restrict__ X, long long ldx, int n, int NC) {
  constexpr int B = Shape::B, M = Shape::M, C = Shape::C, NT = Shape::NT, S = Shape::S;
  constexpr int LDS = Shape::LDS, LDV = Shape::LDV, LDT = Shape::LDT, LDZ = Shape::LDZ;
  constexpr int PV = B * M / NT, PT = M * M / NT, PX = M * C / NT;
  static_assert(B * M % NT == 0 && M * M % NT == 0 && M * C % NT == 0, "prefetch split");
  extern __shared__ double smem[];
  double* xs = smem;
  double* vs = xs + C * LDS;
  double* ts = vs + M * LDV;
  double* zs = ts + M * LDT;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int col0 = blockIdx.x * C;
  const int nc = min(C, NC - col0);
  const int nblk = (n + M - 1) / M;
  auto xg = [&](int r, int c) -> double& { return X[r + (col0 + c) * ldx]; };
  auto slot = [](int r) { return r & (S - 1); };

  // Rows past the end of X are read (times zero) in a partial block: start from zeros.
  for (int e = tid; e < C * LDS; e += NT) xs[e] = 0.0;
  __syncthreads();
  {  // the last (possibly partial) block and its window, rows k0 .. b + n - 2
    const int p = nblk - 1, k0 = p * M, msz = n - k0, rows = B + msz - 1;
    for (int e = tid; e < B * M; e += NT) {
      const int j = e / B, i = e % B;
      vs[j * LDV + i] = j < msz ? V[std::size_t(k0 + j) * B + i] : 0.0;
    }
    for (int e = tid; e < M * M; e += NT) ts[(e / M) * LDT + e % M] = T[std::size_t(p) * M * M + e];
    for (int e = tid; e < rows * C; e += NT) {
      const int c = e / rows, r = e % rows;
      xs[c * LDS + slot(k0 + r)] = c < nc ? xg(k0 + r, c) : 0.0;
    }
  }
  __syncthreads();

  const int j0 = 8 * (warp & 3);   // products 1 and 2: rows j0 .. j0+7 of z
  const int c0 = 16 * (warp >> 2); // all products: columns c0 .. c0+15 (two 8-column tiles)
  const int R0 = 24 * (warp & 3);  // update: window rows R0 .. R0+23 (three 8-row tiles)
  double pv[PV], pt[PT], px[PX];
  for (int p = nblk - 1; p >= 0; --p) {
    const int k0 = p * M, msz = min(M, n - k0);
    if (p > 0) {  // block p-1 (full) into registers; stored after this block is applied
      const std::size_t vb = std::size_t(k0 - M) * B, tb = std::size_t(p - 1) * M * M;
#pragma unroll
      for (int q = 0; q < PV; ++q) pv[q] = V[vb + tid + q * NT];
#pragma unroll
      for (int q = 0; q < PT; ++q) pt[q] = T[tb + tid + q * NT];
#pragma unroll
      for (int q = 0; q < PX; ++q) {
        const int e = tid + q * NT, r = e % M, c = e / M;
        px[q] = c < nc ? xg(k0 - M + r, c) : 0.0;
      }
    }
    // 1. z = W^T X_w, W(r, j) = V(r - j, j): row j of z needs window rows j .. j + B - 1.
    {
      double z[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
      const int j = j0 + g;
#pragma unroll 2
      for (int kk = j0 / 4; kk <= (j0 + 7 + B - 1) / 4; ++kk) {
        const int r = 4 * kk + t4, i = r - j;
        const double a = (i >= 0 && i < B) ? vs[j * LDV + i] : 0.0;
        const int s = slot(k0 + r);
        dmma_8x8x4(z[0], a, xs[(c0 + g) * LDS + s]);
        dmma_8x8x4(z[1], a, xs[(c0 + 8 + g) * LDS + s]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u) zs[(c0 + 8 * h + 2 * t4 + u) * LDZ + j0 + g] = z[h][u];
    }
    __syncthreads();
    // 2. z <- -T z (T upper triangular: row j needs l >= j).
    {
      double y[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
      const int j = j0 + g;
#pragma unroll 2
      for (int kk = j0 / 4; kk < M / 4; ++kk) {
        const int l = 4 * kk + t4;
        const double a = ts[l * LDT + j];
        dmma_8x8x4(y[0], a, zs[(c0 + g) * LDZ + l]);
        dmma_8x8x4(y[1], a, zs[(c0 + 8 + g) * LDZ + l]);
      }
      __syncthreads();
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int u = 0; u < 2; ++u) zs[(c0 + 8 * h + 2 * t4 + u) * LDZ + j0 + g] = -y[h][u];
    }
    __syncthreads();
    // 3. X_w <- X_w + W (-T z); window rows >= B-1 are final after this block.
    {
      double acc[3][2][2];
#pragma unroll
      for (int rt = 0; rt < 3; ++rt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int u = 0; u < 2; ++u)
            acc[rt][h][u] = xs[(c0 + 8 * h + 2 * t4 + u) * LDS + slot(k0 + R0 + 8 * rt + g)];
      const int klo = max(0, R0 - (B - 1)) / 4, khi = min(M - 1, R0 + 23) / 4;
      for (int kk = klo; kk <= khi; ++kk) {
        const int j = 4 * kk + t4;
        double a[3];
#pragma unroll
        for (int rt = 0; rt < 3; ++rt) {
          const int i = R0 + 8 * rt + g - j;
          a[rt] = (i >= 0 && i < B) ? vs[j * LDV + i] : 0.0;
        }
        const double b0 = zs[(c0 + g) * LDZ + j], b1 = zs[(c0 + 8 + g) * LDZ + j];
#pragma unroll
        for (int rt = 0; rt < 3; ++rt) {
          dmma_8x8x4(acc[rt][0], a[rt], b0);
          dmma_8x8x4(acc[rt][1], a[rt], b1);
        }
      }
      const bool last = p == 0;
      const int wrows = B + msz - 1;
#pragma unroll
      for (int rt = 0; rt < 3; ++rt) {
        const int r = R0 + 8 * rt + g;
        if (r >= wrows) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int c = c0 + 8 * h + 2 * t4 + u;
            if (last || r >= B - 1) {
              if (c < nc) xg(k0 + r, c) = acc[rt][h][u];
            } else {
              xs[c * LDS + slot(k0 + r)] = acc[rt][h][u];
            }
          }
      }
    }
    if (p == 0) break;
    __syncthreads();  // everyone is done with this block's V, T and z
#pragma unroll
    for (int q = 0; q < PV; ++q) {
      const int e = tid + q * NT;
      vs[(e / B) * LDV + e % B] = pv[q];
    }
#pragma unroll
    for (int q = 0; q < PT; ++q) {
      const int e = tid + q * NT;
      ts[(e / M) * LDT + e % M] = pt[q];
    }
#pragma unroll
    for (int q = 0; q < PX; ++q) {
      const int e = tid + q * NT;
      xs[(e / M) * LDS + slot(k0 - M + e % M)] = px[q];
    }
    __syncthreads();
  }
}

/// Whether exec's device has FP64 tensor cores (compute capability 8.0 or newer).
inline bool hh_chase_mma_supported(const Kokkos::Cuda& exec) {
  return exec.cuda_device_prop().major >= 8;
}

/// Enqueues the kernel on exec's stream. V: b x n contiguous (b = 64), T: 32 x 32 x ceil(n/32)
/// contiguous, X: (b + n - 1) x NC with leading dimension ldx.
inline void hh_chase_mma_launch(const Kokkos::Cuda& exec, const double* V, const double* T,
                                double* X, long long ldx, int n, int NC) {
  using Shape = HhChaseMmaShape;
  static const cudaError_t configured = cudaFuncSetAttribute(
      hh_chase_mma_kernel<Shape>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      static_cast<int>(Shape::smem_bytes));
  if (configured != cudaSuccess)
    throw Error(ErrorKind::device, "hh_chase_apply",
                "cannot reserve " + std::to_string(Shape::smem_bytes) +
                    " bytes of shared memory for the tensor-core kernel: " +
                    cudaGetErrorString(configured));
  const unsigned blocks = static_cast<unsigned>((NC + Shape::C - 1) / Shape::C);
  hh_chase_mma_kernel<Shape><<<blocks, Shape::NT, Shape::smem_bytes, exec.cuda_stream()>>>(
      V, T, X, ldx, n, NC);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, "hh_chase_apply",
                std::string("tensor-core kernel launch failed: ") + cudaGetErrorString(err));
}

}  // namespace detail
}  // namespace kess
#endif  // KOKKOS_ENABLE_CUDA
