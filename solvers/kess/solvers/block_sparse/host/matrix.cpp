// BlockSparseMatrix<double, HostSpace>: the matrix of every host backend (Serial, OpenMP).
#include <kess/solvers/block_sparse/detail/matrix_impl.hpp>

namespace kess {
template class BlockSparseMatrix<double, Kokkos::HostSpace>;
}  // namespace kess
