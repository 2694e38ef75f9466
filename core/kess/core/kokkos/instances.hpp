// kess::kx instances: a second instance that runs beside a first, events between instances, and
// the host memory used for staging copies to a memory space.
#pragma once

#include <Kokkos_Core.hpp>

namespace kess::kx {

// ---- concurrency ---------------------------------------------------------------------------------
/// An instance of exec's space that can run concurrently with exec (a new CUDA stream with Kokkos
/// >= 4; the same instance where the backend or Kokkos version has no such thing).
template <class ExecSpace>
ExecSpace concurrent_instance(const ExecSpace& exec) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::Experimental::partition_space(exec, 1)[0];
#else
  return exec;
#endif
}
#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: a stream of the highest priority, so that the small kernels of the critical path put on
/// it (panel factorizations) are scheduled ahead of the waiting blocks of a GEMM running beside
/// them; at equal priority they queue behind those blocks and the overlap is lost.
inline Kokkos::Cuda concurrent_instance(const Kokkos::Cuda& exec) {
  int least = 0, greatest = 0;
  cudaStream_t stream = nullptr;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess &&
      cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest) == cudaSuccess)
    return Kokkos::Cuda(stream, Kokkos::Impl::ManageStream::yes);
  return Kokkos::Experimental::partition_space(exec, 1)[0];
}
#endif

/// A point in one instance's work that work enqueued later on other instances can wait for:
/// record(on) marks everything enqueued on `on` so far, wait(waiter) makes what is enqueued on
/// `waiter` afterwards wait for it (CUDA: an event, the host never blocks). Elsewhere record
/// fences `on` and wait does nothing.
template <class ExecSpace>
class StreamMark {
 public:
  void record(const ExecSpace& on) { on.fence(); }
  void wait(const ExecSpace& waiter) const { (void)waiter; }
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
class StreamMark<Kokkos::Cuda> {
 public:
  StreamMark() = default;
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;
  StreamMark(StreamMark&& o) noexcept : ev_(o.ev_), on_(o.on_) { o.ev_ = nullptr; }
  StreamMark& operator=(StreamMark&&) = delete;
  ~StreamMark() {
    if (ev_) cudaEventDestroy(ev_);
  }
  void record(const Kokkos::Cuda& on) {
    on_ = on;
    if (ev_ == nullptr && cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming) != cudaSuccess)
      ev_ = nullptr;
    if (ev_ == nullptr || cudaEventRecord(ev_, on.cuda_stream()) != cudaSuccess) {
      on.fence();  // no event: the work is done before anything waits for it
      if (ev_) cudaEventDestroy(ev_);
      ev_ = nullptr;
    }
  }
  void wait(const Kokkos::Cuda& waiter) const {
    if (ev_ && cudaStreamWaitEvent(waiter.cuda_stream(), ev_, 0) != cudaSuccess) on_.fence();
  }

 private:
  cudaEvent_t ev_ = nullptr;
  Kokkos::Cuda on_;
};
#endif

/// Makes work enqueued on `waiter` after this call wait for the work enqueued on `signaler` so
/// far, without blocking the host where the backend allows (CUDA: an event); elsewhere the host
/// fences `signaler`.
template <class ExecSpace>
void stream_wait(const ExecSpace& waiter, const ExecSpace& signaler) {
  StreamMark<ExecSpace> mark;
  mark.record(signaler);
  mark.wait(waiter);  // the event is released once the wait is satisfied
}

/// Host memory for staging copies to and from MemSpace: page-locked for CUDA device memory (full
/// speed, asynchronous copies), plain host memory otherwise.
template <class MemSpace>
struct HostStaging {
  using type = Kokkos::HostSpace;
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct HostStaging<Kokkos::CudaSpace> {
  using type = Kokkos::CudaHostPinnedSpace;
};
#endif

}  // namespace kess::kx
