#pragma once
// Host threads for kess's own host work (the bulge chase, stage 3's leaves and secular equations,
// stage 4's compact-WY blocks): how many, and a parallel loop over them.
#include <functional>

namespace kess::core::detail {

/// Threads that host work asked for with 0 ("automatic") uses: the environment variable
/// KESS_NUM_THREADS when set (> 0); else the default host execution space's concurrency when it is
/// above 1 (Kokkos OpenMP or Threads); else, when the BLAS is OpenBLAS, its thread count (found at
/// run time, so OPENBLAS_NUM_THREADS=1 keeps kess's host work on one thread too); else the
/// hardware's thread count.
int host_threads();

/// Runs f(i) for i in [0, count) over `threads` host threads (0: host_threads()), the calling
/// thread included; indices are handed out in order. The first exception a call throws stops the
/// loop and is rethrown here.
void host_parallel_for(int count, int threads, const std::function<void(int)>& f);

}  // namespace kess::core::detail
