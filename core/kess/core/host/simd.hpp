#pragma once
// Explicit 8-wide double vectors for the host kernels of core's .cpp files (GCC's vector
// extensions: 512-bit registers in an AVX-512 clone, two or four narrower ones elsewhere), and
// KESS_HOST_CLONES, which compiles a kernel once per instruction set with GCC's target_clones
// (picked at load time: a build without -march flags runs AVX-512 code on CPUs that have it;
// "arch=" clones would not do: they match CPU models that GCC knows, not features). Not under
// nvcc (CUDA builds compile these files as CUDA sources) or clang: one plain compile there.
// Every sum written with these helpers has a fixed association whatever the addresses.

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"  // v8d by value between always-inlined helpers only
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && \
    !defined(__CUDACC__)
#define KESS_HOST_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KESS_HOST_CLONES
#endif
#define KESS_HOST_INLINE inline __attribute__((always_inline))

namespace kess::core::detail {

/// Whether kess's 8-wide host kernels run at full width on this CPU: an AVX-512 CPU under GCC's
/// clones, or a build compiled for one. With AVX2 or SSE2 GCC's code for 8-wide vectors is slower
/// than what those kernels replace (dsterf, dlaed4, OpenBLAS's GEMMs; docs/performance/eigh.md),
/// and ARM or nvcc's host compiles are taken to be alike: their callers take LAPACK's
/// or OpenBLAS's routines instead; the bulge chase and the bisection take 4-wide compiles of
/// their kernels on AVX2 CPUs (bulge_chase_avx2.cpp, tridiag_bisect_avx2.cpp). The environment
/// variable KESS_HOST_VECTORS=0 forces the answer no (comparisons, tests).
bool host_wide_vectors();

/// Tests: -1 automatic (the default), 0 as on a CPU without AVX-512, 1 the vector kernels.
void set_host_wide_vectors(int mode);

}  // namespace kess::core::detail

namespace kess::core::detail::simd {

typedef double v8d __attribute__((vector_size(64), aligned(8), may_alias));
KESS_HOST_INLINE v8d vload(const double* p) { return *reinterpret_cast<const v8d*>(p); }
KESS_HOST_INLINE void vstore(double* p, v8d x) { *reinterpret_cast<v8d*>(p) = x; }
KESS_HOST_INLINE v8d splat(double s) { return v8d{} + s; }
KESS_HOST_INLINE double hsum(v8d a) {
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/// The same helpers 4 wide, for the -mavx2 compiles of the chase's step and the bisection's
/// Sturm counts (bulge_chase_avx2.cpp, tridiag_bisect_avx2.cpp): GCC's code for v8d on 256-bit
/// registers goes through the stack.
typedef double v4d __attribute__((vector_size(32), aligned(8), may_alias));
namespace w4 {
KESS_HOST_INLINE v4d vload(const double* p) { return *reinterpret_cast<const v4d*>(p); }
KESS_HOST_INLINE void vstore(double* p, v4d x) { *reinterpret_cast<v4d*>(p) = x; }
KESS_HOST_INLINE v4d splat(double s) { return v4d{} + s; }
KESS_HOST_INLINE double hsum(v4d a) { return (a[0] + a[2]) + (a[1] + a[3]); }
}  // namespace w4

}  // namespace kess::core::detail::simd
