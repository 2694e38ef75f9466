// kess::eigh and kess::hh_chase_apply compiled for Kokkos::Serial.
#include <kess/solvers/eigh/detail/eigh.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
namespace kess::detail::eigh {
KESS_EIGH_TEMPLATES(Kokkos::Serial)
}  // namespace kess::detail::eigh
#endif
