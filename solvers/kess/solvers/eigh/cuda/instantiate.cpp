// kess::eigh and kess::hh_chase_apply compiled for Kokkos::Cuda.
#include <kess/solvers/eigh/detail/eigh.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
namespace kess::detail::eigh {
KESS_EIGH_TEMPLATES(Kokkos::Cuda)
}  // namespace kess::detail::eigh
#endif
