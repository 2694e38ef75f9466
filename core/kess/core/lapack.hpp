// kess::lapack — the one typed door to the host BLAS/LAPACK (Fortran symbols; column-major).
// Workspace queries are done inside; every function returns LAPACK's `info` (0 = success), except
// the BLAS ones, which return nothing. Arrays are host memory.
#pragma once

#include <cstdint>

namespace kess::lapack {

// ---- BLAS ----------------------------------------------------------------------------------------
void gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc);

// ---- linear systems ------------------------------------------------------------------------------
int gesv(int n, int nrhs, double* a, int lda, int* ipiv, double* b, int ldb);
int getrf(int m, int n, double* a, int lda, int* ipiv);
int getri(int n, double* a, int lda, const int* ipiv);
int potrf(char uplo, int n, double* a, int lda);

// ---- QR ------------------------------------------------------------------------------------------
int geqrf(int m, int n, double* a, int lda, double* tau);

// ---- symmetric eigenproblems ---------------------------------------------------------------------
/// All eigenvalues (ascending) and, for jobz = 'V', eigenvectors overwriting a.
int syevd(char jobz, char uplo, int n, double* a, int lda, double* w);
/// Eigenpairs il..iu (1-based, inclusive) by MRRR; z is n x (iu-il+1); m returns their count.
int syevr(char jobz, char uplo, int n, double* a, int lda, int il, int iu, int* m, double* w,
          double* z, int ldz);
/// Tridiagonal (d: n, e: n-1) divide and conquer; compz = 'N' or 'I'.
int stedc(char compz, int n, double* d, double* e, double* z, int ldz);
/// Tridiagonal eigenpairs il..iu (1-based) by MRRR.
int stemr(char jobz, int n, double* d, double* e, int il, int iu, int* m, double* w, double* z,
          int ldz);

/// Machine parameters ('E' eps, 'S' safe minimum, ...).
double lamch(char cmach);

}  // namespace kess::lapack
