// kess::sign, kess::lyapunov and kess::riccati compiled for Kokkos::OpenMP.
#include <kess/solvers/matrix_functions/detail/matrix_functions.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
namespace kess::detail::matrix_functions {
KESS_MATRIX_FUNCTIONS_TEMPLATES(, Kokkos::OpenMP)
}  // namespace kess::detail::matrix_functions
#endif
