// Host helpers shared by the eigensolver tests.
#pragma once

#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <vector>
#include "test_check.hpp"
#include "test_dense.hpp"

namespace eigh_test {

using kess_test::copy_of;
using kess_test::HostMat;
using kess_test::max_abs;
using kess_test::mul;

/// Options of the two-stage path, which the tests exercise on every backend (the automatic
/// method takes the one-stage path on host memory).
inline kess::EighOptions two_stage() {
  kess::EighOptions o;
  o.method = kess::EighMethod::two_stage;
  return o;
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

}  // namespace eigh_test
