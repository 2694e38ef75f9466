#pragma once
// Host threads for kess's own host work (the bulge chase, stage 3's leaves and secular equations,
// stage 4's compact-WY blocks): how many, and a parallel loop over them.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace kess::core::detail {

/// Threads that host work asked for with 0 ("automatic") uses: the environment variable
/// KESS_NUM_THREADS when set (> 0); else the default host execution space's concurrency when it is
/// above 1 (Kokkos OpenMP or Threads); else, when the BLAS is OpenBLAS, its thread count (found at
/// run time, so OPENBLAS_NUM_THREADS=1 keeps kess's host work on one thread too; inside a
/// core::lapack::SerialBlasScope the count from before it, core::lapack::blas_threads()); else the hardware's
/// thread count.
int host_threads();

/// Runs f(i) for i in [0, count) over `threads` host threads (0: host_threads()), the calling
/// thread included; indices are handed out in order. The first exception a call throws stops the
/// loop and is rethrown here. The outermost loop runs on persistent worker threads (started on
/// first use, asleep between loops after a spin of ~50 us); loops inside a loop, or started while
/// another thread's loop holds the workers, start threads of their own.
void host_parallel_for(int count, int threads, const std::function<void(int)>& f);

/// Whether a host_parallel_for loop on more than one thread is running now (in any thread): work
/// that would start threads of its own (host_gemm) stays on the calling thread then.
bool host_parallel_active();

/// Whether ExecSpace is a host backend whose memory-bound passes (copies, gathers, scans) kess runs
/// over its own host threads (host_backend_for): Kokkos::Serial, which keeps its loops on one core,
/// and Kokkos::OpenMP, whose threads spin after every kernel on the cores kess's threads need next
/// (docs/performance/gauss_jordan.md).
template <class ExecSpace>
constexpr bool is_host_backend() {
#if defined(KOKKOS_ENABLE_SERIAL)
  if constexpr (std::is_same<ExecSpace, Kokkos::Serial>::value) return true;
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  if constexpr (std::is_same<ExecSpace, Kokkos::OpenMP>::value) return true;
#endif
  return false;
}

/// On a host backend (is_host_backend): runs f(i) for every i in [0, n) and returns true; with at
/// least 2 host threads and at least 2^16 entries of work (n items of `per` entries each) in
/// contiguous chunks over them (host_parallel_for), else on the calling thread. Elsewhere runs
/// nothing and returns false (the caller's Kokkos loop follows).
template <class ExecSpace, class F>
bool host_backend_for(std::int64_t n, std::int64_t per, const F& f) {
  if constexpr (!is_host_backend<ExecSpace>()) {
    return false;
  } else {
    const int threads = host_threads();
    if (n < 2 || n * per < (std::int64_t(1) << 16) || threads < 2) {
      for (std::int64_t i = 0; i < n; ++i) f(i);
      return true;
    }
    const int chunks = static_cast<int>(std::min<std::int64_t>(n, 4 * threads));
    host_parallel_for(chunks, threads, [&](int c) {
      for (std::int64_t i = n * c / chunks; i < n * (c + 1) / chunks; ++i) f(i);
    });
    return true;
  }
}

}  // namespace kess::core::detail
