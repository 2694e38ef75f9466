// The block-sparse iterations (sign, inverse_sqrt, extremal_eigenvalues, density_matrix) for every
// enabled execution space. One translation unit serves all: the bodies call the compiled
// operations and hold no device lambdas.
#include <kess/solvers/block_sparse/detail/iterations_impl.hpp>

namespace kess {
#if defined(KOKKOS_ENABLE_SERIAL)
KESS_BLOCK_SPARSE_ITERATION_TEMPLATES(Kokkos::Serial)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
KESS_BLOCK_SPARSE_ITERATION_TEMPLATES(Kokkos::OpenMP)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
KESS_BLOCK_SPARSE_ITERATION_TEMPLATES(Kokkos::Cuda)
#endif
}  // namespace kess
