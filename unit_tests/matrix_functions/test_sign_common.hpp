// Host helpers shared by the sign / Lyapunov / Riccati tests.
#pragma once

#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>

#include "test_backend.hpp"
#include "test_dense.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace kess_test {

using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;

inline DevMat to_device(const HostMat& a) {
  DevMat d("d", a.extent(0), a.extent(1));
  auto m = Kokkos::create_mirror_view(d);
  Kokkos::deep_copy(m, a);
  Kokkos::deep_copy(d, m);
  return d;
}

template <class View>
HostMat to_host(const View& d) {
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  HostMat h("h", d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, m);
  return h;
}

inline HostMat add(const HostMat& A, const HostMat& B, double a = 1.0, double b = 1.0) {
  HostMat C("C", A.extent(0), A.extent(1));
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) C(i, j) = a * A(i, j) + b * B(i, j);
  return C;
}

inline HostMat transpose(const HostMat& A) {
  HostMat C("C", A.extent(1), A.extent(0));
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) C(j, i) = A(i, j);
  return C;
}

inline double fro(const HostMat& A) {
  double s = 0;
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) s += A(i, j) * A(i, j);
  return std::sqrt(s);
}

inline double rel_diff(const HostMat& A, const HostMat& B) { return fro(add(A, B, 1, -1)) / fro(B); }

inline HostMat host_inverse(const HostMat& A) {
  HostMat X = copy_of(A);
  const int n = A.extent(0);
  std::vector<int> ipiv(n);
  EXPECT_EQ(kess::core::lapack::getrf(n, n, X.data(), n, ipiv.data()), 0);
  EXPECT_EQ(kess::core::lapack::getri(n, X.data(), n, ipiv.data()), 0);
  return X;
}

/// V diag(lambda) V^-1 with V = I + s R / sqrt(n) (R random in [-1, 1)): a non-normal matrix with
/// known eigenvalues; Vinv returned too.
inline HostMat similar_to_diag(const std::vector<double>& lambda, double s, std::uint64_t seed,
                               HostMat& V, HostMat& Vinv) {
  const int n = lambda.size();
  V = kess::gen::random_general(n, n, seed);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) V(i, j) = (i == j ? 1.0 : 0.0) + s * V(i, j) / std::sqrt(double(n));
  Vinv = host_inverse(V);
  HostMat VD = copy_of(V);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) VD(i, j) *= lambda[j];
  return mul(VD, Vinv);
}

/// Non-normal A = V diag(lambda) V^-1 (V non-orthogonal, eigenvalues of both signs) and its exact
/// sign Sx = V sign(diag(lambda)) V^-1; kappa = ||V||_F ||V^-1||_F.
inline HostMat nonnormal_problem(int n, HostMat& Sx, double& kappa) {
  std::vector<double> lam(n), sgn(n);
  for (int i = 0; i < n; ++i) {
    lam[i] = (i % 2 ? 1.0 : -1.0) * (0.05 + 3.0 * i / n);
    sgn[i] = lam[i] > 0 ? 1.0 : -1.0;
  }
  HostMat V, Vi;
  const HostMat A = similar_to_diag(lam, 1.5, 5, V, Vi);
  HostMat VS = copy_of(V);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) VS(i, j) *= sgn[j];
  Sx = mul(VS, Vi);
  kappa = fro(V) * fro(Vi);
  return A;
}

/// Symmetric positive definite with eigenvalues in [lo, hi].
inline HostMat spd(int n, double lo, double hi, std::uint64_t seed) {
  std::vector<double> lam(n);
  for (int i = 0; i < n; ++i) lam[i] = lo + (hi - lo) * (n > 1 ? double(i) / (n - 1) : 0.0);
  return kess::gen::prescribed_spectrum(lam, seed);
}

/// A stable matrix: -(SPD) + skew-symmetric (its symmetric part is negative definite).
inline HostMat stable_matrix(int n, std::uint64_t seed) {
  HostMat S = spd(n, 0.5, 4.0, seed);
  HostMat R = kess::gen::random_general(n, n, seed + 1);
  HostMat A("A", n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) A(i, j) = -S(i, j) + 0.8 * (R(i, j) - R(j, i));
  return A;
}

/// A Riccati problem with a known solution: X (SPD) chosen first, A stable-ish, G = B B^T
/// (B n x p), Q = -(A^T X + X A - X G X). A - G X is stable (-2 I - G X plus a small
/// perturbation), so X is the stabilizing solution.
inline void riccati_problem(int n, int p, HostMat& A, HostMat& G, HostMat& Q, HostMat& X) {
  HostMat R = kess::gen::random_general(n, n, 50 + n);
  A = HostMat("A", n, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) A(i, j) = (i == j ? -2.0 : 0.0) + 0.3 * R(i, j) / std::sqrt(double(n));
  const HostMat Bm = kess::gen::random_general(n, p, 60 + n);
  G = mul(Bm, Bm, 'N', 'T');
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < j; ++i) G(i, j) = G(j, i);
  X = spd(n, 1.0, 2.0, 70 + n);
  Q = add(add(mul(A, X, 'T', 'N'), mul(X, A)), mul(mul(X, G), X), -1.0, 1.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < j; ++i) Q(i, j) = Q(j, i) = 0.5 * (Q(i, j) + Q(j, i));
}

}  // namespace kess_test
