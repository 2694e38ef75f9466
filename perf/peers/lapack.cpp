#include "lapack.hpp"

#include <kess/core/linalg/lapack.hpp>

namespace kess::perf::peers::lapack {

namespace lp = kess::core::lapack;

int dsyevd(const HostMatrix& a, double* w) {
  const int n = a.extent(0);
  return lp::syevd('V', 'L', n, a.data(), n, w);
}

int dsyevr(const HostMatrix& a, int il, int iu, double* w, const HostMatrix& z) {
  const int n = a.extent(0);
  int m = 0;
  return lp::syevr('V', 'L', n, a.data(), n, il, iu, &m, w, z.data(), n);
}

int dsygvd(const HostMatrix& a, const HostMatrix& b, double* w) {
  const int n = a.extent(0);
  return lp::sygvd(1, 'V', 'L', n, a.data(), n, b.data(), n, w);
}

void dlaed4_all_roots(int k, const double* d, const double* z, double* delta) {
  double lam = 0;
  for (int j = 0; j < k; ++j) lp::laed4(k, j + 1, d, z, delta, 1.0, &lam);
}

int dgesv(const HostMatrix& a, const HostMatrix& b, std::vector<int>& ipiv) {
  const int n = a.extent(0);
  ipiv.resize(n);
  return lp::gesv(n, b.extent(1), a.data(), n, ipiv.data(), b.data(), n);
}

int dgetrf_dgetri(const HostMatrix& a, std::vector<int>& ipiv) {
  const int n = a.extent(0);
  ipiv.resize(n);
  int info = lp::getrf(n, n, a.data(), n, ipiv.data());
  info += lp::getri(n, a.data(), n, ipiv.data());
  return info;
}

void dgemm(char ta, char tb, int m, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc) {
  lp::blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

LyapunovBartelsStewart::LyapunovBartelsStewart(int n)
    : n_(n), T_("T", n, n), U_("U", n, n), W_("W", n, n), wr_(n), wi_(n) {}

void LyapunovBartelsStewart::prepare(const HostMatrix& A) { Kokkos::deep_copy(T_, A); }

void LyapunovBartelsStewart::solve(const HostMatrix& Q, const HostMatrix& X) {
  const int n = n_;
  double* T = T_.data();
  double* U = U_.data();
  double* W = W_.data();
  lp::gees(n, T, n, wr_.data(), wi_.data(), U, n);
  lp::gemm('N', 'N', n, n, n, 1.0, Q.data(), n, U, n, 0.0, W, n);
  lp::gemm('T', 'N', n, n, n, -1.0, U, n, W, n, 0.0, X.data(), n);
  double scale = 1.0;
  lp::trsyl('N', 'T', 1, n, n, T, n, T, n, X.data(), n, &scale);
  lp::gemm('N', 'N', n, n, n, 1.0 / scale, U, n, X.data(), n, 0.0, W, n);
  lp::gemm('N', 'T', n, n, n, 1.0, W, n, U, n, 0.0, X.data(), n);
}

RiccatiSchur::RiccatiSchur(int n)
    : n_(n),
      H_("H", 2 * n, 2 * n),
      U_("U", 2 * n, 2 * n),
      Mt_("Mt", n, n),
      wr_(2 * n),
      wi_(2 * n),
      ipiv_(n) {}

void RiccatiSchur::prepare(const HostMatrix& A, const HostMatrix& G, const HostMatrix& Q) {
  const int n = n_;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      H_(i, j) = A(i, j);
      H_(i, n + j) = -G(i, j);
      H_(n + i, j) = -Q(i, j);
      H_(n + i, n + j) = -A(j, i);
    }
}

int RiccatiSchur::solve(const HostMatrix& X) {
  const int n = n_, m = 2 * n;
  int sdim = 0;
  lp::gees(m, H_.data(), m, wr_.data(), wi_.data(), U_.data(), m, true, &sdim);
  // X U11 = U21  <=>  U11^T X^T = U21^T
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      Mt_(i, j) = U_(j, i);
      X(i, j) = U_(n + j, i);
    }
  lp::gesv(n, n, Mt_.data(), n, ipiv_.data(), X.data(), n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < j; ++i) X(i, j) = X(j, i) = 0.5 * (X(i, j) + X(j, i));
  return sdim;
}

}  // namespace kess::perf::peers::lapack
