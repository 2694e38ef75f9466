// kess::solve and kess::inverse compiled for Kokkos::Serial.
#include <kess/solvers/gauss_jordan/detail/gauss_jordan.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
namespace kess::detail::gauss_jordan {
KESS_GAUSS_JORDAN_TEMPLATES(, Kokkos::Serial)
}  // namespace kess::detail::gauss_jordan
#endif
