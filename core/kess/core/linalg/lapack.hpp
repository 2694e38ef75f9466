// kess::lapack — the one typed door to the host BLAS/LAPACK (Fortran symbols; column-major).
// Workspace queries are done inside; every function returns LAPACK's `info` (0 = success), except
// the BLAS ones, which return nothing. Arrays are host memory.
#pragma once

#include <cstdint>

namespace kess::core::lapack {

// ---- BLAS
// ----------------------------------------------------------------------------------------
/// C = alpha op(A) op(B) + beta C. Large products run kess's own kernel where it is available
/// (core::detail::host_gemm: AVX-512 CPUs, KESS_HOST_GEMM not 0), the rest the BLAS's dgemm.
void gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc);
/// The same product by the BLAS's dgemm always (the peer in benchmarks).
void blas_gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a,
               int lda, const double* b, int ldb, double beta, double* c, int ldc);

/// C = alpha A B + beta C with A symmetric (side 'L', lower or upper triangle referenced).
void symm(char side, char uplo, int m, int n, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc);
/// C = alpha (A B^T + B A^T) + beta C (trans 'N'; C n x n symmetric, triangle uplo updated).
void syr2k(char uplo, char trans, int n, int k, double alpha, const double* a, int lda,
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
/// A x = lambda B x (itype 1) with B SPD: eigenvalues (ascending) and, for jobz = 'V',
/// B-orthonormal eigenvectors overwriting a; b returns B's Cholesky factor. info > n: B's leading
/// minor of order info - n is not positive.
int sygvd(int itype, char jobz, char uplo, int n, double* a, int lda, double* b, int ldb,
          double* w);
/// Eigenpairs il..iu (1-based, inclusive) by MRRR; z is n x (iu-il+1); m returns their count.
int syevr(char jobz, char uplo, int n, double* a, int lda, int il, int iu, int* m, double* w,
          double* z, int ldz);
/// Tridiagonal (d: n, e: n-1) divide and conquer; compz = 'N' or 'I'.
int stedc(char compz, int n, double* d, double* e, double* z, int ldz);
/// dstedc with the caller's double workspace `work` of `lwork` >= stedc_lwork(compz, n) entries.
int stedc(char compz, int n, double* d, double* e, double* z, int ldz, double* work, int lwork);
/// The double workspace dstedc asks for (its query).
int stedc_lwork(char compz, int n);
/// Tridiagonal implicit QL/QR; compz = 'N' or 'I' (z: n x n, eigenvectors of T).
int steqr(char compz, int n, double* d, double* e, double* z, int ldz);
/// i-th root (1-based) of the secular equation 1 + rho sum_j z_j^2 / (d_j - lambda) = 0 (d strictly
/// increasing, rho > 0, n >= 1); delta(j) = d(j) - lambda (for n = 1: delta(1) = 1; for n = 2
/// delta holds the normalized eigenvector instead, see laed5).
int laed4(int n, int i, const double* d, const double* z, double* delta, double rho, double* dlam);
/// The 2 x 2 case: i-th eigenvalue of diag(d) + rho z z^T and its normalized eigenvector in delta.
void laed5(int i, const double* d, const double* z, double* delta, double rho, double* dlam);
/// Deflation of a divide-and-conquer merge (dlaed2): q (n x n) holds the eigenvectors of the two
/// halves (n1 and n - n1) in its diagonal blocks, zeros elsewhere; d their eigenvalues, indxq the
/// permutations sorting each half (1-based, both starting at 1). Sets k (the secular equation's
/// order), dlamda / w (its poles and weights, k), q2 (at least n^2: the non-deflated vectors
/// grouped by coltyp), the deflated pairs into d / q (columns k ..), rho (as the secular equation
/// needs it), and coltyp[0..3] (column counts of the four types).
int laed2(int* k, int n, int n1, double* d, double* q, int ldq, int* indxq, double* rho, double* z,
          double* dlamda, double* w, double* q2, int* indx, int* indxc, int* indxp, int* coltyp);
/// Tridiagonal eigenpairs il..iu (1-based) by MRRR.
int stemr(char jobz, int n, double* d, double* e, int il, int iu, int* m, double* w, double* z,
          int ldz);
/// All eigenvalues of the tridiagonal (d: n, ascending on return; e: n-1, destroyed) by the
/// root-free QL/QR iteration.
int sterf(int n, double* d, double* e);
/// Eigenvectors of the tridiagonal (d, e: not modified) for the m eigenvalues w by inverse
/// iteration; w grouped by split-off block (iblock, 1-based) and ascending within a block, isplit
/// the last row of each block (1-based). ifail (m) names the vectors that did not converge.
int stein(int n, const double* d, const double* e, int m, const double* w, const int* iblock,
          const int* isplit, double* z, int ldz, int* ifail);

// ---- two-stage eigensolver helpers (kess::eigh) --------------------------------------------------
/// Householder reflector H = I - tau v v^T with H [alpha; x] = [beta; 0] (v(0) = 1 implied; x is
/// overwritten by v(1:), alpha by beta); returns tau.
double larfg(int n, double* alpha, double* x, int incx);
/// Recursive QR of an m x n panel (m >= n) with the compact-WY factor: V below the diagonal of a
/// (unit diagonal implied), R on and above it, T (n x n, upper) in t.
int geqrt3(int m, int n, double* a, int lda, double* t, int ldt);
/// Triangular factor T (k x k, upper) of the compact-WY form of k forward columnwise reflectors.
void larft(char direct, char storev, int n, int k, const double* v, int ldv, const double* tau,
           double* t, int ldt);
/// Symmetric -> tridiagonal (d: n, e: n-1, tau: n-1), reflectors kept in a.
int sytrd(char uplo, int n, double* a, int lda, double* d, double* e, double* tau);
/// Reduces a symmetric-definite generalized problem to standard form (b holds the potrf factor).
int sygst(int itype, char uplo, int n, double* a, int lda, const double* b, int ldb);
/// B <- alpha op(A) B (side 'L') or alpha B op(A) (side 'R'), A triangular.
void trmm(char side, char uplo, char transa, char diag, int m, int n, double alpha,
          const double* a, int lda, double* b, int ldb);
/// B <- alpha op(A)^-1 B (side 'L') or alpha B op(A)^-1 (side 'R'), A triangular.
void trsm(char side, char uplo, char transa, char diag, int m, int n, double alpha,
          const double* a, int lda, double* b, int ldb);

// ---- Schur form and Sylvester equations (the Lyapunov and Riccati peers of the benchmarks) ----
/// Real Schur form A = VS T VS^T (dgees, jobvs 'V'; T overwrites a, eigenvalues in wr + i wi).
/// stable_first: the eigenvalues with negative real part ordered first, their count in *sdim.
int gees(int n, double* a, int lda, double* wr, double* wi, double* vs, int ldvs,
         bool stable_first = false, int* sdim = nullptr);
/// op(A) X + isgn X op(B) = scale C for quasi-triangular A (m x m) and B (n x n), X overwriting c:
/// LAPACK's blocked dtrsyl3 (3.11 and later) where the library has it, else dtrsyl.
int trsyl(char trana, char tranb, int isgn, int m, int n, const double* a, int lda, const double* b,
          int ldb, double* c, int ldc, double* scale);

/// Machine parameters ('E' eps, 'S' safe minimum, ...).
double lamch(char cmach);

/// OpenBLAS's extension function `name` (openblas_get_num_threads, openblas_get_corename, ...)
/// when the BLAS in use is OpenBLAS, looked up at run time; nullptr otherwise.
void* openblas_symbol(const char* name);

/// Puts OpenBLAS's idle worker threads to sleep now, before kess's own host threads start (the
/// pthreads builds of OpenBLAS; a no-op for other BLAS libraries and when the environment sets
/// KESS_PARK_BLAS=0). After every threaded call those workers spin on their cores for a while
/// (2^28 cycles, ~0.1 s, by default): two host threads that start within that time share their
/// cores with them and run at half speed (e.g. stage 3's two dstedc halves). OpenBLAS starts its
/// pool again at its next threaded call, at a fraction of a millisecond. Not safe while another
/// thread is inside threaded OpenBLAS: a program that calls BLAS from other threads while kess
/// runs sets KESS_PARK_BLAS=0.
void park_blas_threads();

/// OpenBLAS's thread count as the program set it (inside a SerialBlasScope: the count saved on
/// entry, not the one thread the scope runs); 0 for other BLAS libraries.
int blas_threads();

/// Whether a SerialBlasScope is open now (in any thread), with OpenBLAS found.
bool serial_blas_scope_active();

/// Runs OpenBLAS on one thread while it lives (restores its thread count after), so that host
/// threads of kess's own can each call LAPACK on a core of their own; no-op for other BLAS
/// libraries. OpenBLAS's thread count is process-wide: calls from other threads meanwhile run on
/// one thread too, and overlapping scopes restore the count when the last one ends.
class SerialBlasScope {
 public:
  SerialBlasScope();
  ~SerialBlasScope();
  SerialBlasScope(const SerialBlasScope&) = delete;
  SerialBlasScope& operator=(const SerialBlasScope&) = delete;
};

}  // namespace kess::core::lapack
