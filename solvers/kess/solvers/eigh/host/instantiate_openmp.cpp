// kess::eigh and kess::hh_chase_apply compiled for Kokkos::OpenMP.
#include <kess/solvers/eigh/detail/eigh.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
namespace kess::detail::eigh {
KESS_EIGH_TEMPLATES(Kokkos::OpenMP)
}  // namespace kess::detail::eigh
#endif
