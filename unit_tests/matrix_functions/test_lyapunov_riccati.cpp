// kess::lyapunov and kess::riccati on problems with known solutions (X chosen first, then Q).
#include <kess/solvers/matrix_functions.hpp>

#include "test_sign_common.hpp"

namespace {

using namespace kess_test;

class LyapunovKnown : public ::testing::TestWithParam<int> {};

TEST_P(LyapunovKnown, RecoversX) {
  const int n = GetParam();
  const HostMat A = stable_matrix(n, 31);
  const HostMat X = spd(n, 1.0, 10.0, 32);
  // Q = -(A X + X A^T)
  const HostMat Q = add(mul(A, X), mul(X, A, 'N', 'T'), -1.0, -1.0);
  TestExecSpace exec;
  const auto Ad = to_device(A), Qd = to_device(Q);
  kess::SignOptions o;
  o.gauss_jordan.block = 16;
  const auto r = kess::lyapunov(exec, Ad, Qd, o);
  EXPECT_LE(rel_diff(to_host(r.X), X), 1e-11) << r.history.str();
  EXPECT_LE(kess::lyapunov_residual(exec, Ad, Qd, r.X), 1e-14 * n);
  EXPECT_TRUE(r.history.converged);
  EXPECT_LE(r.history.iterations, 15);
}

INSTANTIATE_TEST_SUITE_P(Sizes, LyapunovKnown, ::testing::Values(1, 7, 40, 90));

TEST(Lyapunov, NormScalingAndNonSymmetricQ) {
  const int n = 30;
  const HostMat A = stable_matrix(n, 41);
  const HostMat X = kess::gen::random_general(n, n, 42);  // any X: Q = -(A X + X A^T)
  const HostMat Q = add(mul(A, X), mul(X, A, 'N', 'T'), -1.0, -1.0);
  kess::SignOptions o;
  o.scaling = kess::SignScaling::norm;
  const auto r = kess::lyapunov(TestExecSpace(), to_device(A), to_device(Q), o);
  EXPECT_LE(rel_diff(to_host(r.X), X), 1e-11);
}

TEST(LyapunovErrors, UnstableA) {
  const int n = 10;
  HostMat A = stable_matrix(n, 5);
  for (int i = 0; i < 2; ++i) A(i, i) += 20.0;  // two eigenvalues move into the right half-plane
  const HostMat Q = eye(n);
  auto e = expect_error([&] { kess::lyapunov(TestExecSpace(), to_device(A), to_device(Q)); },
                        kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "not stable")) << e.what();
  EXPECT_TRUE(contains(e, "about 2 eigenvalues")) << e.what();
}

TEST(LyapunovErrors, ImaginaryAxisAndShapes) {
  const int n = 6;
  HostMat A("A", n, n);  // skew-symmetric: eigenvalues on the imaginary axis
  const HostMat R = kess::gen::random_general(n, n, 2);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) A(i, j) = R(i, j) - R(j, i);
  kess::SignOptions o;
  o.max_iterations = 30;
  expect_error([&] { kess::lyapunov(TestExecSpace(), to_device(A), to_device(eye(n)), o); },
               kess::ErrorKind::no_convergence);
  expect_error([&] { kess::lyapunov(TestExecSpace(), to_device(A), to_device(eye(n + 1))); },
               kess::ErrorKind::invalid_argument);
}

void riccati_case(int n, int p, kess::SignScaling sc) {
  HostMat A, G, Q, X;
  riccati_problem(n, p, A, G, Q, X);
  TestExecSpace exec;
  const auto Ad = to_device(A), Gd = to_device(G), Qd = to_device(Q);
  kess::SignOptions o;
  o.scaling = sc;
  o.gauss_jordan.block = 16;
  const auto r = kess::riccati(exec, Ad, Gd, Qd, o);
  const HostMat Xk = to_host(r.X);
  EXPECT_LE(rel_diff(Xk, X), 1e-9) << "n=" << n << " p=" << p << " " << r.history.str();
  EXPECT_LE(kess::riccati_residual(exec, Ad, Gd, Qd, r.X), 1e-12);
  EXPECT_EQ(fro(add(Xk, transpose(Xk), 1, -1)), 0.0);
  EXPECT_TRUE(r.history.converged);
}

TEST(Riccati, KnownSolution) {
  riccati_case(1, 1, kess::SignScaling::determinant);
  riccati_case(8, 3, kess::SignScaling::determinant);
  riccati_case(40, 40, kess::SignScaling::determinant);
  riccati_case(40, 5, kess::SignScaling::norm);
}

TEST(RiccatiErrors, BadInputs) {
  const int n = 5;
  TestExecSpace exec;
  HostMat G = eye(n);
  G(0, 1) = 1.0;  // not symmetric
  auto e = expect_error(
      [&] { kess::riccati(exec, to_device(eye(n)), to_device(G), to_device(eye(n))); },
      kess::ErrorKind::not_symmetric);
  EXPECT_TRUE(contains(e, "'G'")) << e.what();
  expect_error([&] { kess::riccati(exec, to_device(eye(n)), to_device(eye(n)), to_device(G)); },
               kess::ErrorKind::not_symmetric);
  expect_error(
      [&] { kess::riccati(exec, to_device(eye(n)), to_device(eye(n + 1)), to_device(eye(n))); },
      kess::ErrorKind::invalid_argument);
  // A = 0, G = 0, Q = 0: H = 0 has every eigenvalue on the imaginary axis.
  expect_error([&] {
    kess::riccati(exec, to_device(zeros(n, n)), to_device(zeros(n, n)), to_device(zeros(n, n)));
  }, kess::ErrorKind::no_convergence);
}

}  // namespace
