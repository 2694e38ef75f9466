#include <kess/core/host_parallel.hpp>

#include <kess/core/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>


namespace kess::core::detail {

int host_threads() {
  if (const char* s = std::getenv("KESS_NUM_THREADS")) {
    const int t = std::atoi(s);
    if (t > 0) return t;
  }
  const int kokkos = Kokkos::DefaultHostExecutionSpace().concurrency();
  if (kokkos > 1) return kokkos;
  using GetThreads = int (*)();
  if (auto f = reinterpret_cast<GetThreads>(lapack::openblas_symbol("openblas_get_num_threads")))
    return std::max(1, f());
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
std::atomic<int> active_loops{0};
}

bool host_parallel_active() { return active_loops.load() > 0; }

void host_parallel_for(int count, int threads, const std::function<void(int)>& f) {
  if (threads <= 0) threads = host_threads();
  threads = std::max(1, std::min(threads, count));
  if (threads == 1) {
    for (int i = 0; i < count; ++i) f(i);
    return;
  }
  // OpenBLAS's workers may still spin after a threaded call and would share these threads' cores:
  // park them, unless this loop runs inside another one (whose threads may be inside BLAS).
  struct Active {
    bool outermost = active_loops.fetch_add(1) == 0;
    ~Active() { active_loops.fetch_sub(1); }
  } scope;
  if (scope.outermost) lapack::park_blas_threads();
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex m;
  auto worker = [&] {
    try {
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) f(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (!failure) failure = std::current_exception();
      next.store(count);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kess::core::detail
