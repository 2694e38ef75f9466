// Execution space instances confined to part of a device, so that a long kernel (a GEMM) leaves
// multiprocessors free for short ones of a critical path beside it.
//
// CUDA: a green context (driver API, CUDA >= 12.5 runtime for the entry points, a driver with
// green contexts) holding a partition of the device's multiprocessors, and a stream on it wrapped
// in a Kokkos::Cuda instance. Kernels (cuBLAS's too) launched on that instance run on the
// partition only; memory is shared with the primary context, and kx::stream_wait orders it with
// the other instances. Everything else (host backends, older CUDA, a driver that refuses): no
// instance, and callers keep the whole device.
#pragma once

#include <Kokkos_Core.hpp>

#include <optional>

namespace kess::core {

/// An instance of exec's space whose kernels use only part of its device's multiprocessors, all
/// but at least `leave` of them. Host backends and devices without partitions: none.
template <class ExecSpace>
std::optional<ExecSpace> partition_device(const ExecSpace& exec, int leave) {
  (void)exec;
  (void)leave;
  return std::nullopt;
}

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: a green context that leaves at least `leave` of the device's multiprocessors out (its
/// size rounded down to what the device allows: on Hopper a multiple of 8; cached per device and
/// `leave`, kept to the end of the process) and a new non-blocking stream on it. No instance
/// where the runtime is older than 12.5, the driver has no green contexts, or leave is not in
/// [1, multiprocessors - the smallest partition].
std::optional<Kokkos::Cuda> partition_device(const Kokkos::Cuda& exec, int leave);
#endif

}  // namespace kess::core
