// The LOBPCG family (spmm, the preconditioners, lobpcg) compiled for Kokkos::Cuda (one
// translation unit: the templates hold device lambdas, each instantiated in one unit only).
#include <kess/solvers/lobpcg/detail/lobpcg_impl.hpp>
#include <kess/solvers/lobpcg/detail/spmm_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
namespace kess {
KESS_SPMM_TEMPLATES(Kokkos::Cuda)
KESS_LOBPCG_TEMPLATES(Kokkos::Cuda)
}  // namespace kess
#endif
