// kess::core::detail::host_threads and host_parallel_for: the thread count kess's host work uses and
// the loop that spreads it; kess::core::lapack::SerialBlasScope, which keeps OpenBLAS off the cores meanwhile,
// and kess::core::lapack::park_blas_threads, which ends its idle workers before kess's own threads start.
#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_OPENMP) && defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

// The calling process's thread count (Linux), -1 where /proc does not say.
int process_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return -1;
}

// process_threads() once it has not changed for 20 ms (at most 1 s): a thread that pthread_join
// has returned for can still be counted for a moment, until the kernel has reaped it (as
// OpenBLAS's workers can be just after they end).
int settled_threads() {
  using clock = std::chrono::steady_clock;
  int last = process_threads();
  const auto deadline = clock::now() + std::chrono::seconds(1);
  for (auto since = clock::now(); clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int now = process_threads();
    if (now != last) {
      last = now;
      since = clock::now();
    } else if (clock::now() - since >= std::chrono::milliseconds(20)) {
      break;
    }
  }
  return last;
}

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

// The indices of one loop run on `threads` threads at once: each index waits (bounded) until all
// of them have started, so a loop that ran them one after another would see fewer than `threads`.
TEST(HostParallel, IndicesRunConcurrentlyOnDistinctThreads) {
  for (int threads : {2, 3, 2}) {
    std::atomic<int> started{0};
    std::vector<std::thread::id> ids(threads);
    std::vector<int> saw(threads, 0);
    kess::core::detail::host_parallel_for(threads, threads, [&](int i) {
      ids[i] = std::this_thread::get_id();
      started.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (started.load() < threads && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      saw[i] = started.load();
    });
    for (int i = 0; i < threads; ++i) EXPECT_EQ(saw[i], threads) << "index " << i;
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(std::unique(ids.begin(), ids.end()) - ids.begin(), threads);
  }
}

// Loops inside loops (each inner loop on threads of its own, all of them at once) and loops started
// from several threads at once: every index of every loop exactly once, and the threads kess keeps
// for its loops are reused, not started again for each loop.
TEST(HostParallel, NestedAndConcurrentLoops) {
  std::vector<std::atomic<int>> seen(4 * 300);
  for (auto& s : seen) s.store(0);
  kess::core::detail::host_parallel_for(4, 2, [&](int o) {
    kess::core::detail::host_parallel_for(300, 3, [&](int i) { seen[o * 300 + i].fetch_add(1); });
  });
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << "index " << i;
  std::atomic<int> started{0}, saw_all{0};
  kess::core::detail::host_parallel_for(2, 2, [&](int) {
    kess::core::detail::host_parallel_for(2, 2, [&](int) {
      started.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (started.load() < 4 && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      if (started.load() == 4) saw_all.fetch_add(1);
    });
  });
  EXPECT_EQ(saw_all.load(), 4) << "the inner loops' indices did not all run at once";

  std::vector<std::atomic<long>> sums(4);
  for (auto& s : sums) s.store(0);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 50; ++rep)
        kess::core::detail::host_parallel_for(64, 2, [&](int i) { sums[c].fetch_add(i + 1); });
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(sums[c].load(), 50L * 64 * 65 / 2) << "caller " << c;

  kess::core::detail::host_parallel_for(8, 2, [](int) {});
  const int before = process_threads();
  for (int rep = 0; rep < 200; ++rep) kess::core::detail::host_parallel_for(8, 2, [](int) {});
  if (before > 0) EXPECT_EQ(process_threads(), before) << "loops left threads behind or ended some";
}

// On host backends (Kokkos::Serial and Kokkos::OpenMP) kess's element-wise passes run over kess's
// own host threads, never as OpenMP kernels (whose threads then spin beside kess's): every index
// once, large passes over several threads outside any OpenMP parallel region, small ones on the
// calling thread.
TEST(HostParallel, HostBackendPassesRunOnKessThreads) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  static_assert(
      kess::core::detail::is_host_backend<Host>() == (std::is_same<Host, Kokkos::Serial>::value
#if defined(KOKKOS_ENABLE_OPENMP)
                                                      || std::is_same<Host, Kokkos::OpenMP>::value
#endif
                                                      ),
      "is_host_backend: Serial and OpenMP");
  if (!kess::core::detail::is_host_backend<Host>())
    GTEST_SKIP() << "the default host execution space is neither Serial nor OpenMP";
  const int n = 256;
  std::vector<std::atomic<int>> visits(n);
  std::atomic<int> in_openmp{0};
  std::mutex m;
  std::vector<std::thread::id> seen;
  const auto distinct = [&] {
    std::lock_guard<std::mutex> lock(m);
    return seen.size();
  };
  const bool wait = kess::core::detail::host_threads() > 1;
  const bool ran = kess::core::detail::host_backend_for<Host>(n, 1 << 12, [&](std::int64_t i) {
    visits[i].fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(m);
      const auto me = std::this_thread::get_id();
      if (std::find(seen.begin(), seen.end(), me) == seen.end()) seen.push_back(me);
    }
    // (index 0 waits for a second thread to take some: the indices are handed out as they are
    // asked for, and one thread could otherwise take them all)
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (wait && i == 0 && distinct() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
#if defined(KOKKOS_ENABLE_OPENMP) && defined(_OPENMP)
    if (omp_in_parallel()) in_openmp.fetch_add(1);
#endif
  });
  EXPECT_TRUE(ran);
  for (int i = 0; i < n; ++i) EXPECT_EQ(visits[i].load(), 1) << "index " << i;
  EXPECT_EQ(in_openmp.load(), 0) << "a pass ran on OpenMP's threads";
  if (wait) EXPECT_GT(distinct(), 1u) << "a large pass ran on one thread";
  std::vector<std::thread::id> small(4);
  EXPECT_TRUE(kess::core::detail::host_backend_for<Host>(
      4, 4, [&](std::int64_t i) { small[i] = std::this_thread::get_id(); }));
  for (const auto& id : small)
    EXPECT_EQ(id, std::this_thread::get_id()) << "a small pass left the caller";
}

}  // namespace

// kess::core::lapack::SerialBlasScope: OpenBLAS on one thread inside, its count back when the last of several
// overlapping scopes ends (the first one to end must not restore it while another is open).
TEST(SerialBlasScope, RestoresOpenBlasThreadsAfterOverlappingScopes) {
  using Get = int (*)();
  using Set = void (*)(int);
  auto get = reinterpret_cast<Get>(kess::core::lapack::openblas_symbol("openblas_get_num_threads"));
  auto set = reinterpret_cast<Set>(kess::core::lapack::openblas_symbol("openblas_set_num_threads"));
  if (!get || !set) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  const int before = get();
  set(2);
  if (get() < 2) {
    set(before);
    GTEST_SKIP() << "OpenBLAS runs on one thread here";
  }
  auto first = std::make_unique<kess::core::lapack::SerialBlasScope>();
  EXPECT_EQ(get(), 1);
  auto second = std::make_unique<kess::core::lapack::SerialBlasScope>();
  first.reset();
  EXPECT_EQ(get(), 1) << "restored while a scope was still open";
  second.reset();
  EXPECT_EQ(get(), 2);
  set(before);
}

// OpenBLAS's pool in a test: its thread count set to 2 for the test and restored after, and two
// 300 x 300 operands for threaded products (skipped where the BLAS is not OpenBLAS or parking is
// off).
class OpenBlasPool : public ::testing::Test {
 protected:
  static constexpr int n = 300;
  void SetUp() override {
    get = reinterpret_cast<int (*)()>(kess::core::lapack::openblas_symbol("openblas_get_num_threads"));
    set =
        reinterpret_cast<void (*)(int)>(kess::core::lapack::openblas_symbol("openblas_set_num_threads"));
    if (!get || !set) GTEST_SKIP() << "the BLAS is not OpenBLAS";
    if (const char* env = std::getenv("KESS_PARK_BLAS"); env && std::string(env) == "0")
      GTEST_SKIP() << "KESS_PARK_BLAS=0";
    before = get();
    set(2);
    changed = true;
    a.resize(n * n);
    b.resize(n * n);
    for (int i = 0; i < n * n; ++i) {
      a[i] = std::sin(0.37 * i);
      b[i] = std::cos(0.11 * i);
    }
  }
  void TearDown() override {
    if (changed) set(before);
  }
  // A B by OpenBLAS (threaded unless a scope says otherwise).
  std::vector<double> product() const {
    std::vector<double> c(n * n);
    kess::core::lapack::blas_gemm('N', 'N', n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
    return c;
  }
  int (*get)() = nullptr;
  void (*set)(int) = nullptr;
  int before = 0;
  bool changed = false;
  std::vector<double> a, b;
};

// kess::core::lapack::park_blas_threads: OpenBLAS's workers end (they would spin beside kess's host threads),
// and its next threaded call starts them again and computes the same product.
class ParkBlasThreads : public OpenBlasPool {};

TEST_F(ParkBlasThreads, EndsOpenBlasWorkersThatTheNextThreadedCallStartsAgain) {
  const int idle = process_threads();
  const std::vector<double> c1 = product();
  const int with_pool = settled_threads();
  if (get() < 2 || idle < 0 || with_pool <= 1)
    GTEST_SKIP() << "no OpenBLAS thread pool to see here (threads " << get() << ", tasks "
                 << with_pool << ")";
  kess::core::lapack::park_blas_threads();
  EXPECT_LT(settled_threads(), with_pool) << "OpenBLAS's workers still exist";
  EXPECT_EQ(get(), 2) << "parking changed OpenBLAS's thread count";
  const std::vector<double> c2 = product();
  EXPECT_EQ(settled_threads(), with_pool) << "the pool did not come back";
  for (int i = 0; i < n * n; ++i) ASSERT_EQ(c1[i], c2[i]) << "entry " << i;
  kess::core::lapack::park_blas_threads();  // twice in a row is harmless
  kess::core::lapack::park_blas_threads();
}

// A SerialBlasScope opened while OpenBLAS's workers are parked (every kess host loop parks them)
// must not start them again: openblas_set_num_threads does, and the new workers then spin beside
// kess's threads (at every Gauss-Jordan step). Inside the scope OpenBLAS runs on
// one thread, kess's own host thread count stays what the program set, and afterwards OpenBLAS's
// next threaded call starts its workers again.
class SerialBlasScopeAfterPark : public OpenBlasPool {};

TEST_F(SerialBlasScopeAfterPark, LeavesParkedWorkersParkedAndHostThreadsAsSet) {
  const std::vector<double> c1 = product();
  const int with_pool = settled_threads();
  kess::core::lapack::park_blas_threads();
  const int parked = settled_threads();
  if (get() < 2 || with_pool < 0 || parked >= with_pool)
    GTEST_SKIP() << "no OpenBLAS thread pool to see here (threads " << get() << ", tasks "
                 << with_pool << " / " << parked << ")";
  const bool host_threads_from_blas =
      !std::getenv("KESS_NUM_THREADS") && Kokkos::DefaultHostExecutionSpace().concurrency() == 1;
  std::vector<double> c2;
  {
    kess::core::lapack::SerialBlasScope scope;
    EXPECT_EQ(get(), 1);
    EXPECT_EQ(settled_threads(), parked) << "the scope started OpenBLAS's workers again";
    EXPECT_EQ(kess::core::lapack::blas_threads(), 2) << "the count the program set, not the scope's";
    if (host_threads_from_blas) EXPECT_EQ(kess::core::detail::host_threads(), 2);
    c2 = product();
    EXPECT_EQ(settled_threads(), parked) << "a call inside the scope started the workers";
  }
  EXPECT_EQ(get(), 2);
  const std::vector<double> c3 = product();
  EXPECT_EQ(settled_threads(), with_pool) << "the next threaded call did not start the pool";
  for (int i = 0; i < n * n; ++i) {
    ASSERT_NEAR(c2[i], c1[i], 1e-12 * (1 + std::abs(c1[i]))) << "entry " << i;
    ASSERT_EQ(c3[i], c1[i]) << "entry " << i;
  }
}
