// kess::kx — the one place that knows which Kokkos (3.4 from Debian, or >= 4.x) kess is built on.
// No other file may test KOKKOS_VERSION.
#pragma once

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>

namespace kess::kx {

// ---- math ----------------------------------------------------------------------------------------
#if KOKKOS_VERSION >= 40000
using Kokkos::fabs;
using Kokkos::isfinite;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::sqrt;
#endif

template <class T>
KOKKOS_INLINE_FUNCTION constexpr const T& min(const T& a, const T& b) {
  return b < a ? b : a;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr const T& max(const T& a, const T& b) {
  return a < b ? b : a;
}

// ---- printf from device code ---------------------------------------------------------------------
#if KOKKOS_VERSION >= 40200
using Kokkos::printf;
#else
template <class... Args>
KOKKOS_INLINE_FUNCTION void printf(const char* format, Args... args) {
  ::printf(format, args...);
}
#endif

// ---- fences and profiling regions ----------------------------------------------------------------
/// Fences one execution space instance (never the whole device), with a label where Kokkos has them.
template <class ExecSpace>
void fence(const ExecSpace& exec, const std::string& label) {
#if KOKKOS_VERSION >= 30600
  exec.fence(label);
#else
  (void)label;
  exec.fence();
#endif
}

/// RAII profiling region, visible in Kokkos Tools (and Nsight through the NVTX connector).
class ScopedRegion {
 public:
  explicit ScopedRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ScopedRegion() { Kokkos::Profiling::popRegion(); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;
};

// ---- Views a solver can work in -----------------------------------------------------------------
/// Whether a caller's View can serve as a solver's work matrix in Mem (an "overwrite" option):
/// writable, LayoutLeft, in Mem itself.
template <class View, class Mem>
constexpr bool can_work_in() {
  return !std::is_const<typename View::value_type>::value &&
         std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value &&
         std::is_same<typename View::memory_space, Mem>::value;
}

// ---- Kokkos Kernels calls on an execution space instance ------------------------------------
namespace detail {
/// call(args...) runs a Kokkos Kernels routine with the instance as first argument when given one.
/// Kokkos Kernels >= 4 takes the instance: call(exec). 3.4 does not: the caller's instance is
/// fenced, call() runs on the default instance of `Space`, which is fenced after.
template <class Space, class ExecSpace, class Call>
void blas_on_instance(const ExecSpace& exec, const Call& call) {
#if KOKKOS_VERSION >= 40000
  call(exec);
#else
  exec.fence();
  call();
  Space().fence();
#endif
}
}  // namespace detail

// ---- loads of data that other teams write concurrently -------------------------------------------
/// Reads *p past the (non-coherent) L1 cache of GPUs (an L2 load, still pipelined, unlike a
/// volatile one); a plain load on host backends, whose caches are coherent.
KOKKOS_FORCEINLINE_FUNCTION double load_uncached(const double* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}
KOKKOS_FORCEINLINE_FUNCTION int load_uncached(const int* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}

/// Human-readable name of an execution space ("Serial", "OpenMP", "Cuda").
template <class ExecSpace>
std::string backend_name() {
  return ExecSpace::name();
}

}  // namespace kess::kx
