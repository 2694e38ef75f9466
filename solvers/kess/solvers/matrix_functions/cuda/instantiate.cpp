// kess::sign, kess::lyapunov and kess::riccati compiled for Kokkos::Cuda.
#include <kess/solvers/matrix_functions/detail/matrix_functions.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
namespace kess::detail::matrix_functions {
KESS_MATRIX_FUNCTIONS_TEMPLATES(, Kokkos::Cuda)
}  // namespace kess::detail::matrix_functions
#endif
