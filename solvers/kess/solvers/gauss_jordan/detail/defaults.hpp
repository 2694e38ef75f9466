// Gauss-Jordan's automatic choices (block sizes, the device updates' GEMM width, the
// multiprocessors left to the panel chain): no kernels here, so drivers and benchmarks can include
// it without compiling any of the sweeps.
#pragma once

#include <kess/core/host/gemm.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kess::detail::gauss_jordan {

template <class ExecSpace>
constexpr bool host_backend() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                    typename ExecSpace::memory_space>::accessible;
}

/// Widest GEMM of a device update, in columns: between such GEMMs the panel chain's kernels get
/// multiprocessors that one long GEMM keeps (narrower or wider pieces are no better;
/// docs/performance/gauss_jordan.md). Host BLAS: one GEMM.
constexpr std::int64_t kDeviceGemmColumns = 2048;

/// The host panel's NB: 128; with the BLAS's DGEMM 256 from n = 3000, where OpenBLAS's wider
/// updates pay (docs/design/gauss_jordan.md, docs/performance/gauss_jordan.md). With kess's host
/// GEMM 128 stays the better one. With the host panel on a GPU, 64 to 128 are best (the host
/// panel limits larger NB).
inline int default_block(std::int64_t n) {
  return n >= 3000 && !core::detail::host_gemm_available() ? 256 : 128;
}

/// With the device panel: 512 on devices (faster than 384, and wider blocks lose;
/// docs/performance/gauss_jordan.md), 128 on host backends.
template <class ExecSpace>
int default_block_device_panel() {
  return host_backend<ExecSpace>() ? 128 : 512;
}

/// The NB that GaussJordanPanel::automatic gets for order n (the host panel on host backends).
template <class ExecSpace>
int default_block_automatic(std::int64_t n) {
  return host_backend<ExecSpace>() ? default_block(n)
                                      : default_block_device_panel<ExecSpace>();
}

/// GaussJordanTuning::panel_sms resolved: -1 gives a device's multiprocessors / 11.
template <class ExecSpace>
int panel_sms(const ExecSpace& exec, int requested) {
  if (requested >= 0) return requested;
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    return exec.cuda_device_prop().multiProcessorCount / 11;
#endif
  (void)exec;
  return 0;
}

}  // namespace kess::detail::gauss_jordan
