// The host LAPACK/BLAS peers of the benchmarks: the routines kess's solvers are compared against,
// called as a user of LAPACK would (through kess::core::lapack, the one typed door to the host
// library). Each call is what a benchmark times; copies of the inputs stay with the caller.
#pragma once

#include "perf_common.hpp"

#include <vector>

namespace kess::perf::peers::lapack {

// ---- eigh ----------------------------------------------------------------------------------------
/// dsyevd: all eigenvalues (w, n) and eigenvectors (overwriting a) of the symmetric n x n a.
int dsyevd(const HostMatrix& a, double* w);
/// dsyevr: eigenpairs il..iu (1-based) by MRRR into w and z (n x (iu - il + 1)); a is destroyed.
int dsyevr(const HostMatrix& a, int il, int iu, double* w, const HostMatrix& z);
/// dsygvd (itype 1): A x = lambda B x, all vectors (overwriting a); b returns B's Cholesky factor.
int dsygvd(const HostMatrix& a, const HostMatrix& b, double* w);
/// dlaed4 for every root of one secular equation of order k (rho = 1): stage 3's merge step.
void dlaed4_all_roots(int k, const double* d, const double* z, double* delta);

// ---- gauss_jordan ----------------------------------------------------------------------------------
/// dgesv: A Y = B by LU with partial pivoting (A overwritten by its factors, B by Y).
int dgesv(const HostMatrix& a, const HostMatrix& b, std::vector<int>& ipiv);
/// dgetrf + dgetri: A^-1 in place.
int dgetrf_dgetri(const HostMatrix& a, std::vector<int>& ipiv);
/// The BLAS's dgemm, C = alpha op(A) op(B) + beta C (never kess's own host kernel).
void dgemm(char ta, char tb, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc);

// ---- matrix_functions ------------------------------------------------------------------------------
/// A X + X A^T + Q = 0 by Bartels-Stewart: A = U T U^T (dgees), T Y + Y T^T = -U^T Q U (dtrsyl3),
/// X = U Y U^T (four GEMMs). Work arrays are made once for order n.
class LyapunovBartelsStewart {
 public:
  explicit LyapunovBartelsStewart(int n);
  /// Untimed: A copied into the work matrix the Schur form overwrites.
  void prepare(const HostMatrix& A);
  /// Timed: X from the prepared A and Q.
  void solve(const HostMatrix& Q, const HostMatrix& X);
  static const char* label() { return "LAPACK Bartels-Stewart (dgees, dtrsyl3)"; }

 private:
  int n_;
  HostMatrix T_, U_, W_;
  std::vector<double> wr_, wi_;
};

/// A^T X + X A - X G X + Q = 0 by the Schur method: H = [A -G; -Q -A^T] = U T U^T (dgees, the
/// stable eigenvalues first), X = U21 U11^-1 (dgesv), symmetrized.
class RiccatiSchur {
 public:
  explicit RiccatiSchur(int n);
  /// Untimed: the Hamiltonian H from A, G and Q.
  void prepare(const HostMatrix& A, const HostMatrix& G, const HostMatrix& Q);
  /// Timed: X; returns the dimension of the stable invariant subspace found (n when it worked).
  int solve(const HostMatrix& X);
  static const char* label() { return "LAPACK Schur method (dgees of the Hamiltonian)"; }

 private:
  int n_;
  HostMatrix H_, U_, Mt_;
  std::vector<double> wr_, wi_;
  std::vector<int> ipiv_;
};

}  // namespace kess::perf::peers::lapack
