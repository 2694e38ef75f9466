// FP64 tensor-core MMA of one warp (CUDA, sm_80 and newer): the one spelling kess's tensor-core
// kernels share (the Householder chase, the block-sparse stack kernel).
#pragma once

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
namespace kess::core::detail {

/// d += a b for one 8x8x4 FP64 tile: a = A(lane / 4, lane % 4), b = B(lane % 4, lane / 4),
/// d = D(lane / 4, 2 (lane % 4) + {0, 1}) (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f64").
/// Callers launch it on sm_80 and newer only; older devices trap.
__device__ __forceinline__ void dmma_8x8x4(double (&d)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
#else
  (void)d;
  (void)a;
  (void)b;
  __trap();
#endif
}

}  // namespace kess::core::detail
#endif
