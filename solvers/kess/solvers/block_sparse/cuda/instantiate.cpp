// The block-sparse matrix on CUDA memory and its operations compiled for Kokkos::Cuda (one
// translation unit: the templates hold device lambdas, each instantiated in one unit only).
#include <kess/solvers/block_sparse/detail/block_sparse_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
namespace kess {
template class BlockSparseMatrix<double, Kokkos::CudaSpace>;
KESS_BLOCK_SPARSE_TEMPLATES(Kokkos::Cuda)
}  // namespace kess
#endif
