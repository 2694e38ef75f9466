// Host helpers shared by the eigensolver tests.
#pragma once

#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <vector>
#include "test_check.hpp"

namespace eigh_test {

using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

/// Options of the two-stage path, which the tests exercise on every backend (the automatic
/// method takes the one-stage path on host memory).
inline kess::EighOptions two_stage() {
  kess::EighOptions o;
  o.method = kess::EighMethod::two_stage;
  return o;
}

inline HostMat copy_of(const HostMat& a) {
  HostMat c("copy", a.extent(0), a.extent(1));
  Kokkos::deep_copy(c, a);
  return c;
}

/// C = op(A) op(B) on the host.
inline HostMat mul(const HostMat& A, const HostMat& B, char ta = 'N', char tb = 'N') {
  const int m = ta == 'N' ? A.extent(0) : A.extent(1);
  const int k = ta == 'N' ? A.extent(1) : A.extent(0);
  const int n = tb == 'N' ? B.extent(1) : B.extent(0);
  HostMat C("C", m, n);
  if (m && n && k)
    kess::core::lapack::gemm(ta, tb, m, n, k, 1.0, A.data(), std::max<int>(1, A.extent(0)), B.data(),
                       std::max<int>(1, B.extent(0)), 0.0, C.data(), std::max(1, m));
  return C;
}

/// max_j ||A z_j - lambda_j B z_j||_2 (B = identity when empty).
inline double residual(const HostMat& A, const HostMat& Z, const std::vector<double>& lam,
                       const HostMat* B = nullptr) {
  HostMat AZ = mul(A, Z);
  HostMat BZ = B ? mul(*B, Z) : Z;
  double worst = 0;
  for (size_t j = 0; j < Z.extent(1); ++j) {
    double s = 0;
    for (size_t i = 0; i < Z.extent(0); ++i) {
      const double r = AZ(i, j) - lam[j] * BZ(i, j);
      s += r * r;
    }
    worst = kess_test::worse(worst, std::sqrt(s));
  }
  return worst;
}

/// max |Z^T B Z - I| (B = identity when empty).
inline double orthogonality(const HostMat& Z, const HostMat* B = nullptr) {
  HostMat G = mul(Z, B ? mul(*B, Z) : Z, 'T', 'N');
  double worst = 0;
  for (size_t j = 0; j < G.extent(1); ++j)
    for (size_t i = 0; i < G.extent(0); ++i)
      worst = kess_test::worse(worst, std::abs(G(i, j) - (i == j ? 1.0 : 0.0)));
  return worst;
}

/// All eigenvalues by LAPACK dsyevd (the reference).
inline std::vector<double> syevd_values(const HostMat& A) {
  const int n = A.extent(0);
  HostMat a = copy_of(A);
  std::vector<double> w(n);
  if (n) kess::core::lapack::syevd('N', 'L', n, a.data(), n, w.data());
  return w;
}

inline double max_abs(const HostMat& A) {
  double m = 0;
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) m = kess_test::worse(m, std::abs(A(i, j)));
  return m;
}

}  // namespace eigh_test
