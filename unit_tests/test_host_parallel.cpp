// core::detail::host_threads and host_parallel_for: the thread count kess's host work uses and
// the loop that spreads it; lapack::SerialBlasScope, which keeps OpenBLAS off the cores meanwhile.
#include <kess/core/host_parallel.hpp>
#include <kess/core/lapack.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
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

// lapack::SerialBlasScope: OpenBLAS on one thread inside, its count back when the last of several
// overlapping scopes ends (the first one to end must not restore it while another is open).
TEST(SerialBlasScope, RestoresOpenBlasThreadsAfterOverlappingScopes) {
  using Get = int (*)();
  using Set = void (*)(int);
  auto get = reinterpret_cast<Get>(kess::lapack::openblas_symbol("openblas_get_num_threads"));
  auto set = reinterpret_cast<Set>(kess::lapack::openblas_symbol("openblas_set_num_threads"));
  if (!get || !set) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  const int before = get();
  set(2);
  if (get() < 2) {
    set(before);
    GTEST_SKIP() << "OpenBLAS runs on one thread here";
  }
  auto first = std::make_unique<kess::lapack::SerialBlasScope>();
  EXPECT_EQ(get(), 1);
  auto second = std::make_unique<kess::lapack::SerialBlasScope>();
  first.reset();
  EXPECT_EQ(get(), 1) << "restored while a scope was still open";
  second.reset();
  EXPECT_EQ(get(), 2);
  set(before);
}
