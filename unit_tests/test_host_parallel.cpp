// core::detail::host_threads and host_parallel_for: the thread count kess's host work uses and
// the loop that spreads it.
#include <kess/core/host_parallel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace {

TEST(HostParallel, ThreadsFromTheEnvironment) {
  setenv("KESS_NUM_THREADS", "3", 1);
  EXPECT_EQ(kess::core::detail::host_threads(), 3);
  setenv("KESS_NUM_THREADS", "0", 1);  // not a count: the next source decides
  EXPECT_GE(kess::core::detail::host_threads(), 1);
  unsetenv("KESS_NUM_THREADS");
  EXPECT_GE(kess::core::detail::host_threads(), 1);
}

TEST(HostParallel, EveryIndexOnceAndExceptionsComeBack) {
  for (int threads : {0, 1, 2, 5}) {
    std::vector<std::atomic<int>> seen(1000);
    for (auto& s : seen) s.store(0);
    kess::core::detail::host_parallel_for(1000, threads, [&](int i) { seen[i].fetch_add(1); });
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(seen[i].load(), 1) << "threads " << threads << " index " << i;
    EXPECT_THROW(kess::core::detail::host_parallel_for(100, threads,
                                                       [](int i) {
                                                         if (i == 37) throw std::runtime_error("37");
                                                       }),
                 std::runtime_error)
        << "threads " << threads;
  }
  kess::core::detail::host_parallel_for(0, 4, [](int) { FAIL() << "no index to run"; });
}

}  // namespace
