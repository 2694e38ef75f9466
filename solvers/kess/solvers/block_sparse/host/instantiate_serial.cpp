// The block-sparse operations compiled for Kokkos::Serial (one translation unit: the templates
// hold device lambdas, each instantiated in one unit only).
#include <kess/solvers/block_sparse/detail/block_sparse_impl.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
namespace kess {
KESS_BLOCK_SPARSE_TEMPLATES(Kokkos::Serial)
}  // namespace kess
#endif
