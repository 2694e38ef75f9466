#include <kess/core/base/settings.hpp>
#include <kess/core/host/parallel.hpp>

#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define KESS_SPIN_PAUSE() _mm_pause()
#else
#define KESS_SPIN_PAUSE() std::this_thread::yield()
#endif

namespace kess::core::detail {

int host_threads() {
  if (const int t = settings::num_threads(); t > 0) return t;
  const int kokkos = Kokkos::DefaultHostExecutionSpace().concurrency();
  if (kokkos > 1) return kokkos;
  if (const int blas = core::lapack::blas_threads(); blas > 0) return blas;
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

std::atomic<int> active_loops{0};

// Spins on `ready` for up to `micros` microseconds (short waits: a thread that starts or ends a
// loop right after another), true once it holds.
template <class Ready>
bool spin_until(const Ready& ready, int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  for (int i = 1;; ++i) {
    if (ready()) return true;
    KESS_SPIN_PAUSE();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return ready();
  }
}

// Persistent worker threads for the outermost host_parallel_for (starting and joining a thread
// costs tens of microseconds, and Gauss-Jordan's host sweep runs five or more loops a block
// step). Each worker has a ticket of its own: the caller bumps the tickets of the workers it
// needs, each one runs the loop's body once and counts down `remaining`; the others sleep on. A
// worker spins briefly after its part (the next loop often follows at once), then sleeps on its
// condition variable. The pool is never destroyed (its sleeping threads end with the process).
class HostPool {
 public:
  // Takes the pool for one loop, or returns false when it is in use (a nested or concurrent loop,
  // which then starts threads of its own).
  bool try_acquire() {
    bool expected = false;
    return in_use_.compare_exchange_strong(expected, true, std::memory_order_acquire);
  }
  void release() { in_use_.store(false, std::memory_order_release); }

  // Runs body() on `helpers` workers (the caller runs its own share meanwhile: `own`) and returns
  // when all of them are done. Requires try_acquire().
  void run(int helpers, const std::function<void()>& body, const std::function<void()>& own) {
    while (static_cast<int>(slots_.size()) < helpers)
      slots_.push_back(std::make_unique<Slot>(*this));
    body_ = &body;
    remaining_.store(helpers, std::memory_order_relaxed);
    for (int t = 0; t < helpers; ++t) slots_[t]->start();
    own();
    const auto done = [&] { return remaining_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(done, 200)) {
      std::unique_lock<std::mutex> lock(done_mutex_);
      done_cv_.wait(lock, done);
    }
  }

 private:
  struct Slot {
    explicit Slot(HostPool& pool) : thread([this, &pool] { loop(pool); }) { thread.detach(); }
    void start() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ticket.fetch_add(1, std::memory_order_release);
      }
      cv.notify_one();
    }
    void loop(HostPool& pool) {
      std::uint64_t seen = 0;
      const auto ready = [&] { return ticket.load(std::memory_order_acquire) != seen; };
      for (;;) {
        if (!spin_until(ready, 50)) {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, ready);
        }
        seen = ticket.load(std::memory_order_acquire);
        (*pool.body_)();
        if (pool.remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          std::lock_guard<std::mutex> lock(pool.done_mutex_);
          pool.done_cv_.notify_one();
        }
      }
    }
    std::mutex mutex;
    std::condition_variable cv;
    std::atomic<std::uint64_t> ticket{0};
    std::thread thread;
  };

  std::atomic<bool> in_use_{false};
  std::vector<std::unique_ptr<Slot>> slots_;
  const std::function<void()>* body_ = nullptr;
  std::atomic<int> remaining_{0};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
};

HostPool& host_pool() {
  static HostPool* pool = new HostPool;  // never destroyed: see HostPool
  return *pool;
}

}  // namespace

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
  if (scope.outermost) core::lapack::park_blas_threads();
  std::atomic<int> next{0};
  std::exception_ptr failure;
  std::mutex m;
  const std::function<void()> worker = [&] {
    try {
      for (int i = next.fetch_add(1); i < count; i = next.fetch_add(1)) f(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      if (!failure) failure = std::current_exception();
      next.store(count);
    }
  };
  // The pool serves Kokkos's OpenMP backend too: its host passes are slower on OpenMP's own
  // threads, and with kess's element-wise passes off Kokkos kernels on host backends
  // (host_backend_for) OpenMP's threads do not spin beside the pool.
  if (HostPool& pool = host_pool(); pool.try_acquire()) {
    struct Release {
      HostPool& p;
      ~Release() { p.release(); }
    } release{pool};
    pool.run(threads - 1, worker, worker);
  } else {
    std::vector<std::thread> extra;
    for (int t = 1; t < threads; ++t) extra.emplace_back(worker);
    worker();
    for (auto& t : extra) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kess::core::detail
