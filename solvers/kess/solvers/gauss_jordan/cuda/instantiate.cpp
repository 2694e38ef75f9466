// kess::solve and kess::inverse compiled for Kokkos::Cuda.
#include <kess/solvers/gauss_jordan/detail/gauss_jordan.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
namespace kess::detail::gauss_jordan {
KESS_GAUSS_JORDAN_TEMPLATES(, Kokkos::Cuda)
}  // namespace kess::detail::gauss_jordan
#endif
