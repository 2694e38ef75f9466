#include <kess/core/base/settings.hpp>
#include <kess/core/host/simd.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kess::core::detail {

namespace {
std::atomic<int> forced{-1};

bool detect() {
  if (!settings::host_vectors()) return false;
#if defined(__AVX512F__)
  return true;
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && \
    !defined(__CUDACC__)
  return __builtin_cpu_supports("avx512f") != 0;
#else
  return false;
#endif
}
}  // namespace

bool host_wide_vectors() {
  const int f = forced.load(std::memory_order_relaxed);
  if (f >= 0) return f == 1;
  static const bool automatic = detect();
  return automatic;
}

void set_host_wide_vectors(int mode) { forced.store(mode < 0 ? -1 : (mode ? 1 : 0), std::memory_order_relaxed); }

}  // namespace kess::core::detail
