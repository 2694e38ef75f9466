// kess::sign, kess::lyapunov and kess::riccati compiled for Kokkos::Serial.
#include <kess/solvers/matrix_functions/detail/matrix_functions.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
namespace kess::detail::matrix_functions {
KESS_MATRIX_FUNCTIONS_TEMPLATES(, Kokkos::Serial)
}  // namespace kess::detail::matrix_functions
#endif
