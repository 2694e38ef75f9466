// Blocked Cholesky factorization on an execution space (no MPI): the reduction of the generalized
// symmetric eigenproblem A x = lambda B x on device memory (solvers/kess/solvers/eigh.hpp).
#pragma once

#include <kess/core/kokkos/views.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/kokkos/instances.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <type_traits>

namespace kess::core {

/// B = L L^T for the symmetric positive definite n x n matrix B (LayoutLeft, in exec's memory;
/// its lower triangle is read), L in B's lower triangle; the strict upper triangle is overwritten
/// with scratch. Right-looking, by blocks of nb columns: each nb x nb diagonal block is factored
/// on the host (LAPACK dpotrf on a page-locked copy, a fraction of a millisecond at nb = 256), the
/// panel below it by a triangular solve (core::trsm) and the trailing matrix by GEMMs (core::gemm) on
/// exec, cuBLAS on CUDA. Look-ahead on device memory: the next block column is updated first and
/// travels to the host on a second stream, so that its dpotrf runs under the trailing GEMM.
/// Returns 0, or the 1-based column j at which the leading minor of order j is not positive
/// (dpotrf's info; the work stops there), with the failing pivot (the non-positive value whose
/// square root was due, dpotrf's convention) in *pivot. Fences exec.
template <class ExecSpace>
int potrf_blocked(const ExecSpace& exec, const Matrix<ExecSpace>& B, int nb = 256,
                  double* pivot = nullptr);

}  // namespace kess::core
