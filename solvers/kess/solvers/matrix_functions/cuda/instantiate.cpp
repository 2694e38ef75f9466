// Gauss-Jordan (kess::solve, kess::inverse) and the matrix functions built on it (kess::sign,
// kess::lyapunov, kess::riccati) compiled for Kokkos::Cuda, in one translation unit: they share
// templates with device lambdas, and each of those is instantiated in one unit only.
#include <kess/solvers/gauss_jordan/detail/gauss_jordan.hpp>
#include <kess/solvers/matrix_functions/detail/matrix_functions.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
namespace kess::detail::gauss_jordan {
KESS_GAUSS_JORDAN_TEMPLATES(Kokkos::Cuda)
}  // namespace kess::detail::gauss_jordan
namespace kess::detail::matrix_functions {
KESS_MATRIX_FUNCTIONS_TEMPLATES(Kokkos::Cuda)
}  // namespace kess::detail::matrix_functions
#endif
