// kess::sign (Newton with determinant / norm scaling, pencil form) on matrices with known sign.
#include <kess/solvers/matrix_functions.hpp>

#include "test_sign_common.hpp"

namespace {

using namespace kess_test;

class SignSymmetric : public ::testing::TestWithParam<kess::SignScaling> {};

// A = Q diag(lambda) Q^T: sign(A) = Q sign(diag(lambda)) Q^T exactly.
TEST_P(SignSymmetric, KnownSpectrum) {
  const int n = 80;
  std::vector<double> lam(n), sgn(n);
  for (int i = 0; i < n; ++i) {
    lam[i] = (i % 3 == 0 ? -1.0 : 1.0) * std::pow(10.0, -2.0 + 4.0 * i / (n - 1));  // |.| 1e-2..1e2
    sgn[i] = lam[i] > 0 ? 1.0 : -1.0;
  }
  HostMat Q;
  {
    kess::gen::DenseHost q;
    const HostMat A = kess::gen::prescribed_spectrum(lam, 21, &q);
    Q = q;
    kess::SignOptions o;
    o.scaling = GetParam();
    o.gauss_jordan.block = 16;
    const auto r = kess::sign(TestExecSpace(), to_device(A), o);
    const HostMat S = to_host(r.X);
    const HostMat Sx = kess::gen::prescribed_spectrum(sgn, 21);
    EXPECT_LE(rel_diff(S, Sx), 1e-12) << kess::to_string(GetParam());
    EXPECT_LE(fro(add(mul(S, S), eye(n), 1, -1)) / n, 1e-13);
    EXPECT_TRUE(r.history.converged);
    EXPECT_EQ(static_cast<int>(r.history.rel_change.size()), r.history.iterations);
    EXPECT_EQ(r.history.mu.size(), r.history.rel_change.size());
    EXPECT_LE(r.history.iterations, GetParam() == kess::SignScaling::none ? 20 : 12)
        << r.history.str();
    EXPECT_FALSE(r.history.stopped_by.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Scalings, SignSymmetric,
                         ::testing::Values(kess::SignScaling::determinant, kess::SignScaling::norm,
                                           kess::SignScaling::none),
                         [](const auto& info) { return std::string(kess::to_string(info.param)); });

// Non-normal: V diag(lambda) V^-1 with a non-orthogonal V; sign = V sign(lambda) V^-1.
TEST(Sign, NonNormalDiagonalizable) {
  const int n = 60;
  HostMat Sx;
  double kappa = 0;
  const HostMat A = nonnormal_problem(n, Sx, kappa);
  const auto r = kess::sign(TestExecSpace(), to_device(A));
  EXPECT_LE(rel_diff(to_host(r.X), Sx), 1e-14 * kappa * kappa * n) << "kappa(V)=" << kappa;
  EXPECT_TRUE(r.history.converged) << r.history.str();
}

// A strongly non-normal 2 x 2 block: T = [-1 t; 0 2] has sign [-1 2t/3; 0 1] exactly.
TEST(Sign, NonNormalTriangular) {
  for (double t : {1.0, 1e3, 1e6}) {
    HostMat T("T", 2, 2);
    T(0, 0) = -1.0;
    T(0, 1) = t;
    T(1, 1) = 2.0;
    const auto r = kess::sign(TestExecSpace(), to_device(T));
    const HostMat S = to_host(r.X);
    EXPECT_NEAR(S(0, 0), -1.0, 1e-14 * t);
    EXPECT_NEAR(S(0, 1), 2.0 * t / 3.0, 1e-14 * t * t);
    EXPECT_NEAR(S(1, 0), 0.0, 1e-15);
    EXPECT_NEAR(S(1, 1), 1.0, 1e-14 * t);
    EXPECT_TRUE(r.history.converged) << r.history.str();
  }
}

// Pencil: A = B C with sign(C) known: the limit is B sign(B^-1 A) = B sign(C).
TEST(Sign, Pencil) {
  const int n = 50;
  std::vector<double> lam(n), sgn(n);
  for (int i = 0; i < n; ++i) {
    lam[i] = (i % 4 == 1 ? 1.0 : -1.0) * (0.2 + i * 0.1);
    sgn[i] = lam[i] > 0 ? 1.0 : -1.0;
  }
  HostMat Qs;
  kess::gen::DenseHost q;
  const HostMat C = kess::gen::prescribed_spectrum(lam, 8, &q);
  const HostMat SC = kess::gen::prescribed_spectrum(sgn, 8);
  HostMat B = kess::gen::random_general(n, n, 12);
  for (int i = 0; i < n; ++i) B(i, i) += 4.0;
  const HostMat A = mul(B, C);
  for (auto sc : {kess::SignScaling::determinant, kess::SignScaling::norm}) {
    kess::SignOptions o;
    o.scaling = sc;
    o.gauss_jordan.block = 8;
    const auto r = kess::sign(TestExecSpace(), to_device(A), to_device(B), o);
    EXPECT_LE(rel_diff(to_host(r.X), mul(B, SC)), 1e-11) << kess::to_string(sc);
    EXPECT_TRUE(r.history.converged);
  }
  // B = I reproduces the standard iteration.
  const auto r1 = kess::sign(TestExecSpace(), to_device(C), to_device(eye(n)));
  EXPECT_LE(rel_diff(to_host(r1.X), SC), 1e-12);
}

// Eigenvalues on the imaginary axis: sign(A) does not exist.
TEST(SignErrors, ImaginaryAxisIsNoConvergenceWithHistory) {
  // [0 1; -1 0] (+-i): X_1 = 0 with determinant scaling -> singular iterate.
  HostMat J("J", 2, 2);
  J(0, 1) = 1.0;
  J(1, 0) = -1.0;
  auto e = expect_error([&] { kess::sign(TestExecSpace(), to_device(J)); },
                        kess::ErrorKind::no_convergence);
  EXPECT_TRUE(contains(e, "imaginary axis")) << e.what();
  // A real matrix with eigenvalues +-i w plus a stable part, in a random basis: wanders.
  const int n = 12;
  HostMat D("D", n, n);
  for (int b = 0; b < 3; ++b) {
    const double w = 0.5 + b;
    D(2 * b, 2 * b + 1) = w;
    D(2 * b + 1, 2 * b) = -w;
  }
  for (int i = 6; i < n; ++i) D(i, i) = (i % 2 ? 1.0 : -2.0);
  HostMat V, Vi;
  std::vector<double> ones(n, 1.0);
  similar_to_diag(ones, 0.5, 3, V, Vi);
  const HostMat A = mul(mul(V, D), Vi);
  kess::SignOptions o;
  o.max_iterations = 40;
  e = expect_error([&] { kess::sign(TestExecSpace(), to_device(A), o); },
                   kess::ErrorKind::no_convergence);
  EXPECT_TRUE(contains(e, "history")) << e.what();
  EXPECT_TRUE(contains(e, "k=")) << e.what();
  // Without throwing: converged = false and the full history.
  o.throw_on_failure = false;
  const auto r = kess::sign(TestExecSpace(), to_device(A), o);
  EXPECT_FALSE(r.history.converged);
  EXPECT_GE(r.history.iterations, 1);
  EXPECT_LE(r.history.iterations, 40);
}

TEST(SignErrors, BadInputs) {
  TestExecSpace exec;
  DevMat R("R", 3, 4), Sq("Sq", 3, 3), B4("B4", 4, 4);
  expect_error([&] { kess::sign(exec, R); }, kess::ErrorKind::invalid_argument);
  expect_error([&] { kess::sign(exec, Sq, B4); }, kess::ErrorKind::invalid_argument);
  HostMat A = eye(3);
  A(1, 2) = std::numeric_limits<double>::quiet_NaN();
  auto e = expect_error([&] { kess::sign(exec, to_device(A)); }, kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "NaN")) << e.what();
  kess::SignOptions o;
  o.max_iterations = 0;
  expect_error([&] { kess::sign(exec, to_device(eye(3)), o); }, kess::ErrorKind::invalid_argument);
  // singular B in the pencil form
  expect_error([&] { kess::sign(exec, to_device(eye(3)), Sq); }, kess::ErrorKind::singular);
  EXPECT_EQ(kess::from_string<kess::SignScaling>("norm"), kess::SignScaling::norm);
  expect_error([] { kess::from_string<kess::SignScaling>("bogus"); }, kess::ErrorKind::invalid_argument);
}

}  // namespace
