// The block-sparse stack kernel on FP64 tensor cores (CUDA, sm_80 and newer): blocks of up to
// 32 x 32 (k up to 32), each run (one C block and its products) in one thread block of
// 4 warps; warp w owns rows 8w .. 8w + 7 of C for every 8-column tile, as m8n8k4 MMA
// accumulators over all the run's products. A and B of the next product are read into registers
// while the current one multiplies from shared memory (zero-padded to multiples of 8 and 4).
// Like the Householder chase's MMA kernels, this leaves Kokkos' patterns: an MMA has no portable
// spelling. Other sizes and devices run the portable team kernel.
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/mma.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>

namespace kess::detail::block_sparse {


// Shared tiles: A (32 x 32, column-major, leading dimension LDA) and B (32 x 32, LDB).
constexpr int kBsTile = 32, kBsLda = 36, kBsLdb = 36;
// Entries of a 32 x 32 tile each of the up to 128 threads stages.
constexpr int kBsPer = kBsTile * kBsTile / 128;

template <int Unused = 0>
__global__ void __launch_bounds__(128) stack_dmma_kernel(
    const std::int64_t* __restrict__ run_c, const std::int64_t* __restrict__ run_begin,
    const int* __restrict__ run_m, const int* __restrict__ run_n,
    const std::int64_t* __restrict__ a_off, const std::int64_t* __restrict__ b_off,
    const int* __restrict__ kk, const double* __restrict__ A, const double* __restrict__ B,
    double* __restrict__ C, double alpha) {
  __shared__ double as[kBsTile * kBsLda];
  __shared__ double bsm[kBsTile * kBsLdb];
  const int run = blockIdx.x;
  const int m = run_m[run], n = run_n[run];
  const std::int64_t p0 = run_begin[run], p1 = run_begin[run + 1];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int nct = (n + 7) / 8;
  double acc[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  // Registers for the next product's tiles: entry e = tid + i nt of the padded 32 x kp (A) and
  // kp x 32 (B) tiles, zero outside the block.
  double ra[kBsPer], rb[kBsPer];
  auto fetch = [&](std::int64_t p, int k) {
    const double* Ap = A + a_off[p];
    const double* Bp = B + b_off[p];
#pragma unroll
    for (int i = 0; i < kBsPer; ++i) {
      const int e = tid + i * 128;
      const int r = e % kBsTile, c = e / kBsTile;  // A(r, c): r < m, c < k
      ra[i] = (r < m && c < k) ? Ap[r + c * m] : 0.0;
      rb[i] = (r < k && c < n) ? Bp[r + c * k] : 0.0;  // B(r, c)
    }
  };
  int k_next = p0 < p1 ? kk[p0] : 0;
  if (p0 < p1) fetch(p0, k_next);
  for (std::int64_t p = p0; p < p1; ++p) {
    const int k = k_next;
    __syncthreads();  // the previous product's reads of the tiles are done
#pragma unroll
    for (int i = 0; i < kBsPer; ++i) {
      const int e = tid + i * 128;
      const int r = e % kBsTile, c = e / kBsTile;
      as[r + c * kBsLda] = ra[i];
      bsm[r + c * kBsLdb] = rb[i];
    }
    __syncthreads();
    if (p + 1 < p1) {
      k_next = kk[p + 1];
      fetch(p + 1, k_next);
    }
    const int row = warp * 8 + g;
    if (warp * 8 >= m) continue;  // rows past the block: this warp only stages
    for (int s = 0; s < k; s += 4) {
      const double a = as[row + (s + t4) * kBsLda];
#pragma unroll
      for (int ct = 0; ct < 4; ++ct) {
        if (ct < nct) core::detail::dmma_8x8x4(acc[ct], a, bsm[(s + t4) + (ct * 8 + g) * kBsLdb]);
      }
    }
  }
  // C(row, col) += alpha acc for the block's entries.
  double* Cp = C + run_c[run];
  const int row = warp * 8 + g;
#pragma unroll
  for (int ct = 0; ct < 4; ++ct) {
    if (ct >= nct) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = ct * 8 + 2 * t4 + h;
      if (row < m && col < n) Cp[row + std::int64_t(col) * m] += alpha * acc[ct][h];
    }
  }
}

inline bool stack_dmma_supported(const Kokkos::Cuda& exec) {
  return exec.cuda_device_prop().major >= 8;
}

/// Launches the kernel over `runs` runs (every m, n, k <= 32) on exec's stream.
inline void stack_dmma_launch(const Kokkos::Cuda& exec, std::int64_t runs,
                              const std::int64_t* run_c, const std::int64_t* run_begin,
                              const int* run_m, const int* run_n, const std::int64_t* a_off,
                              const std::int64_t* b_off, const int* k, const double* A,
                              const double* B, double* C, double alpha) {
  if (runs == 0) return;
  stack_dmma_kernel<0><<<static_cast<unsigned>(runs), 128, 0, exec.cuda_stream()>>>(
      run_c, run_begin, run_m, run_n, a_off, b_off, k, A, B, C, alpha);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw Error(ErrorKind::device, "multiply",
                std::string("the tensor-core stack kernel did not launch: ") +
                    cudaGetErrorString(err));
  }
}

}  // namespace kess::detail::block_sparse
#endif
