// kess::solve and kess::inverse compiled for Kokkos::OpenMP.
#include <kess/solvers/gauss_jordan/detail/gauss_jordan.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
namespace kess::detail::gauss_jordan {
KESS_GAUSS_JORDAN_TEMPLATES(, Kokkos::OpenMP)
}  // namespace kess::detail::gauss_jordan
#endif
