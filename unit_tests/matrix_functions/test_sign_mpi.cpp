// The distributed (column-block-cyclic, 1 x P grid) kess::sign, its pencil form, kess::lyapunov and
// kess::riccati at 1, 2 and 4 ranks, against known answers and the local versions: every rank
// builds the same global matrices, scatters them and gathers the results.
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/solvers/matrix_functions.hpp>

#include "test_sign_common.hpp"

#include <cstdlib>
#include <functional>
#include <utility>

namespace {

using namespace kess_test;
using Exec = Kokkos::DefaultExecutionSpace;
using Dist = kess::comm::DistMatrix<double>;
using HostExec = Kokkos::DefaultHostExecutionSpace;

kess::comm::ProcessGrid row_grid() {
  const auto world = kess::comm::Communicator::world();
  return kess::comm::ProcessGrid(world, 1, world.size());
}

/// A on a 1 x P grid in column blocks of nb.
Dist distribute(const kess::comm::ProcessGrid& grid, const HostMat& A, int nb) {
  Dist d(grid, A.extent(0), A.extent(1), std::max<int>(1, A.extent(0)), nb);
  d.scatter(0, A);
  return d;
}

/// The spectrum of the symmetric test: |lambda| from 1e-2 to 1e2, every third one negative.
void symmetric_spectrum(int n, std::vector<double>& lam, std::vector<double>& sgn) {
  lam.resize(n);
  sgn.resize(n);
  for (int i = 0; i < n; ++i) {
    lam[i] = (i % 3 == 0 ? -1.0 : 1.0) * std::pow(10.0, -2.0 + 4.0 * i / (n - 1));
    sgn[i] = lam[i] > 0 ? 1.0 : -1.0;
  }
}

struct SignCase {
  kess::SignScaling scaling;
  int nb;
};

class DistSignSymmetric : public ::testing::TestWithParam<SignCase> {};

// A = Q diag(lambda) Q^T: sign(A) = Q sign(diag(lambda)) Q^T exactly; the same iterations as the
// local sign (same decisions from the allreduced norms).
TEST_P(DistSignSymmetric, KnownSpectrumAndLocal) {
  const auto [scaling, nb] = GetParam();
  const int n = 80;
  std::vector<double> lam, sgn;
  symmetric_spectrum(n, lam, sgn);
  const HostMat A = kess::gen::prescribed_spectrum(lam, 21);
  const HostMat Sx = kess::gen::prescribed_spectrum(sgn, 21);
  kess::SignOptions o;
  o.scaling = scaling;
  o.gauss_jordan.block = nb;
  const auto r = kess::sign(Exec(), distribute(row_grid(), A, nb), o);
  const HostMat S = r.X.allgather();
  EXPECT_LE(rel_diff(S, Sx), 1e-12) << kess::to_string(scaling);
  EXPECT_TRUE(r.history.converged) << r.history.str();
  EXPECT_FALSE(r.history.stopped_by.empty());
  o.gauss_jordan.panel = kess::GaussJordanPanel::host;
  const auto rl = kess::sign(HostExec(), A, o);
  EXPECT_EQ(r.history.iterations, rl.history.iterations) << r.history.str() << " | "
                                                         << rl.history.str();
  EXPECT_EQ(r.history.stopped_by, rl.history.stopped_by);
  EXPECT_LE(rel_diff(S, rl.X), 1e-13);
}

INSTANTIATE_TEST_SUITE_P(
    Scalings, DistSignSymmetric,
    ::testing::Values(SignCase{kess::SignScaling::determinant, 16},
                      SignCase{kess::SignScaling::determinant, 7},  // NB does not divide n
                      SignCase{kess::SignScaling::norm, 16}, SignCase{kess::SignScaling::none, 30}),
    [](const auto& info) {
      return std::string(kess::to_string(info.param.scaling)) + "_nb" +
             std::to_string(info.param.nb);
    });

// Non-normal V diag(lambda) V^-1: against the exact sign V sign(lambda) V^-1 and the local sign.
TEST(DistSign, NonNormalAgainstLocal) {
  const int n = 60, nb = 8;
  HostMat Sx;
  double kappa = 0;
  const HostMat A = nonnormal_problem(n, Sx, kappa);
  kess::SignOptions o;
  o.gauss_jordan.block = nb;
  const auto r = kess::sign(Exec(), distribute(row_grid(), A, nb), o);
  const HostMat S = r.X.allgather();
  EXPECT_LE(rel_diff(S, Sx), 1e-14 * kappa * kappa * n) << "kappa(V)=" << kappa;
  o.gauss_jordan.panel = kess::GaussJordanPanel::host;
  const auto rl = kess::sign(HostExec(), A, o);
  EXPECT_EQ(r.history.iterations, rl.history.iterations);
  EXPECT_LE(rel_diff(S, rl.X), 1e-12);
  // [-1 t; 0 2] (sign [-1 2t/3; 0 1]) with one column a block: on two ranks at P >= 2.
  for (double t : {1.0, 1e3, 1e6}) {
    HostMat T("T", 2, 2);
    T(0, 0) = -1.0;
    T(0, 1) = t;
    T(1, 1) = 2.0;
    const auto rt = kess::sign(Exec(), distribute(row_grid(), T, 1));
    const HostMat St = rt.X.allgather();
    EXPECT_NEAR(St(0, 0), -1.0, 1e-14 * t);
    EXPECT_NEAR(St(0, 1), 2.0 * t / 3.0, 1e-14 * t * t);
    EXPECT_NEAR(St(1, 0), 0.0, 1e-15);
    EXPECT_NEAR(St(1, 1), 1.0, 1e-14 * t);
  }
}

// Pencil: A = B C with sign(C) known: the limit is B sign(C); against the local pencil form.
TEST(DistSign, Pencil) {
  const int n = 50, nb = 6;
  std::vector<double> lam(n), sgn(n);
  for (int i = 0; i < n; ++i) {
    lam[i] = (i % 4 == 1 ? 1.0 : -1.0) * (0.2 + i * 0.1);
    sgn[i] = lam[i] > 0 ? 1.0 : -1.0;
  }
  const HostMat C = kess::gen::prescribed_spectrum(lam, 8);
  const HostMat SC = kess::gen::prescribed_spectrum(sgn, 8);
  HostMat B = kess::gen::random_general(n, n, 12);
  for (int i = 0; i < n; ++i) B(i, i) += 4.0;
  const HostMat A = mul(B, C);
  const auto grid = row_grid();
  for (auto sc : {kess::SignScaling::determinant, kess::SignScaling::norm}) {
    kess::SignOptions o;
    o.scaling = sc;
    o.gauss_jordan.block = nb;
    const auto r = kess::sign(Exec(), distribute(grid, A, nb), distribute(grid, B, nb), o);
    const HostMat S = r.X.allgather();
    EXPECT_LE(rel_diff(S, mul(B, SC)), 1e-11) << kess::to_string(sc);
    EXPECT_TRUE(r.history.converged);
    o.gauss_jordan.panel = kess::GaussJordanPanel::host;
    const auto rl = kess::sign(HostExec(), A, B, o);
    EXPECT_EQ(r.history.iterations, rl.history.iterations);
    EXPECT_LE(rel_diff(S, rl.X), 1e-12);
  }
  // B distributed differently from A: rejected on every rank.
  expect_error([&] { kess::sign(Exec(), distribute(grid, A, nb), distribute(grid, B, nb + 1)); },
               kess::ErrorKind::invalid_argument);
}

TEST(DistSignErrors, AgreedOnEveryRank) {
  const auto grid = row_grid();
  const int n = 12, nb = 2;
  // Skew-symmetric: eigenvalues on the imaginary axis, no sign.
  HostMat K("K", n, n);
  const HostMat R = kess::gen::random_general(n, n, 2);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) K(i, j) = R(i, j) - R(j, i);
  kess::SignOptions o;
  o.max_iterations = 30;
  auto e = expect_error([&] { kess::sign(Exec(), distribute(grid, K, nb), o); },
                        kess::ErrorKind::no_convergence);
  EXPECT_TRUE(contains(e, "history")) << e.what();
  o.throw_on_failure = false;
  const auto r = kess::sign(Exec(), distribute(grid, K, nb), o);
  EXPECT_FALSE(r.history.converged);
  // A singular matrix: X_0 singular -> no_convergence naming the singular iterate.
  HostMat Z = kess::gen::random_general(n, n, 3);
  for (int i = 0; i < n; ++i) Z(i, 9) = 0.0;
  e = expect_error([&] { kess::sign(Exec(), distribute(grid, Z, nb)); },
                   kess::ErrorKind::no_convergence);
  EXPECT_TRUE(contains(e, "X_0 is singular")) << e.what();
  EXPECT_TRUE(contains(e, "column 9")) << e.what();
  // NaN on the last column's rank only.
  HostMat N = kess::gen::random_general(n, n, 4);
  N(5, n - 1) = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { kess::sign(Exec(), distribute(grid, N, nb)); },
               kess::ErrorKind::invalid_argument);
  const Dist rect(grid, n, n + 2, n, nb);
  expect_error([&] { kess::sign(Exec(), rect); }, kess::ErrorKind::invalid_argument);
}

class DistLyapunov : public ::testing::TestWithParam<int> {};

// X chosen first (SPD), Q = -(A X + X A^T): X recovered; the same X as the local version.
TEST_P(DistLyapunov, RecoversX) {
  const int n = GetParam(), nb = 5;
  const HostMat A = stable_matrix(n, 31);
  const HostMat X = spd(n, 1.0, 10.0, 32);
  const HostMat Q = add(mul(A, X), mul(X, A, 'N', 'T'), -1.0, -1.0);
  const auto grid = row_grid();
  kess::SignOptions o;
  o.gauss_jordan.block = nb;
  const auto r = kess::lyapunov(Exec(), distribute(grid, A, nb), distribute(grid, Q, nb), o);
  const HostMat Xk = r.X.allgather();
  EXPECT_LE(rel_diff(Xk, X), 1e-11) << r.history.str();
  EXPECT_LE(kess::lyapunov_residual(HostExec(), A, Q, Xk), 1e-14 * std::max(n, 4));
  EXPECT_TRUE(r.history.converged);
  const auto rl = kess::lyapunov(HostExec(), A, Q, o);
  EXPECT_LE(rel_diff(Xk, rl.X), 1e-11);
}

INSTANTIATE_TEST_SUITE_P(Sizes, DistLyapunov, ::testing::Values(1, 7, 40));

TEST(DistLyapunov, NonSymmetricXAndErrors) {
  const int n = 30, nb = 4;
  const auto grid = row_grid();
  const HostMat A = stable_matrix(n, 41);
  const HostMat X = kess::gen::random_general(n, n, 42);
  const HostMat Q = add(mul(A, X), mul(X, A, 'N', 'T'), -1.0, -1.0);
  kess::SignOptions o;
  o.scaling = kess::SignScaling::norm;
  const auto r = kess::lyapunov(Exec(), distribute(grid, A, nb), distribute(grid, Q, nb), o);
  EXPECT_LE(rel_diff(r.X.allgather(), X), 1e-11);
  // Unstable: two eigenvalues moved into the right half-plane.
  HostMat U = stable_matrix(10, 5);
  for (int i = 0; i < 2; ++i) U(i, i) += 20.0;
  auto e = expect_error(
      [&] { kess::lyapunov(Exec(), distribute(grid, U, 3), distribute(grid, eye(10), 3)); },
      kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "not stable")) << e.what();
  EXPECT_TRUE(contains(e, "about 2 eigenvalues")) << e.what();
  expect_error(
      [&] { kess::lyapunov(Exec(), distribute(grid, A, nb), distribute(grid, eye(n + 1), nb)); },
      kess::ErrorKind::invalid_argument);
}

struct RiccatiCase {
  int n, p, nb;
  kess::SignScaling scaling;
};

class DistRiccati : public ::testing::TestWithParam<RiccatiCase> {};

// X chosen first (the stabilizing solution): recovered, symmetric, as the local version's.
TEST_P(DistRiccati, KnownSolution) {
  const auto [n, p, nb, scaling] = GetParam();
  HostMat A, G, Q, X;
  riccati_problem(n, p, A, G, Q, X);
  const auto grid = row_grid();
  kess::SignOptions o;
  o.scaling = scaling;
  o.gauss_jordan.block = nb;
  const auto r = kess::riccati(Exec(), distribute(grid, A, nb), distribute(grid, G, nb),
                               distribute(grid, Q, nb), o);
  const HostMat Xk = r.X.allgather();
  EXPECT_LE(rel_diff(Xk, X), 1e-9) << "n=" << n << " p=" << p << " " << r.history.str();
  EXPECT_LE(kess::riccati_residual(HostExec(), A, G, Q, Xk), 1e-12);
  EXPECT_EQ(fro(add(Xk, transpose(Xk), 1, -1)), 0.0);
  EXPECT_TRUE(r.history.converged);
  const auto rl = kess::riccati(HostExec(), A, G, Q, o);
  EXPECT_EQ(r.history.iterations, rl.history.iterations);
  EXPECT_LE(rel_diff(Xk, rl.X), 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Sizes, DistRiccati,
                         ::testing::Values(RiccatiCase{1, 1, 4, kess::SignScaling::determinant},
                                           RiccatiCase{8, 3, 3, kess::SignScaling::determinant},
                                           RiccatiCase{40, 40, 16, kess::SignScaling::determinant},
                                           RiccatiCase{40, 5, 7, kess::SignScaling::norm}),
                         [](const auto& info) {
                           return "n" + std::to_string(info.param.n) + "_p" +
                                  std::to_string(info.param.p) + "_nb" +
                                  std::to_string(info.param.nb);
                         });

TEST(DistRiccatiErrors, BadInputs) {
  const int n = 5, nb = 2;
  const auto grid = row_grid();
  HostMat G = eye(n);
  G(0, 1) = 1.0;  // not symmetric
  auto e = expect_error(
      [&] {
        kess::riccati(Exec(), distribute(grid, eye(n), nb), distribute(grid, G, nb),
                      distribute(grid, eye(n), nb));
      },
      kess::ErrorKind::not_symmetric);
  EXPECT_TRUE(contains(e, "'G'")) << e.what();
  expect_error(
      [&] {
        kess::riccati(Exec(), distribute(grid, eye(n), nb), distribute(grid, eye(n + 1), nb),
                      distribute(grid, eye(n), nb));
      },
      kess::ErrorKind::invalid_argument);
  // H = 0: every eigenvalue on the imaginary axis.
  expect_error(
      [&] {
        kess::riccati(Exec(), distribute(grid, zeros(n, n), nb), distribute(grid, zeros(n, n), nb),
                      distribute(grid, zeros(n, n), nb));
      },
      kess::ErrorKind::no_convergence);
}

// ---- a failure on one rank only (KESS_FAULT_INJECT) ------------------------------------------

/// KESS_FAULT_INJECT=<site>:<rank> for the lifetime of the object (kess reads it at each call).
class FaultInjected {
 public:
  FaultInjected(const std::string& site, int rank) {
    setenv("KESS_FAULT_INJECT", (site + ":" + std::to_string(rank)).c_str(), 1);
  }
  ~FaultInjected() { unsetenv("KESS_FAULT_INJECT"); }
  FaultInjected(const FaultInjected&) = delete;
  FaultInjected& operator=(const FaultInjected&) = delete;
};

// An allocation failure (std::bad_alloc) of the last rank alone while a distributed matrix
// function sets up (mf_setup_alloc), or a runtime failure while that rank factors a panel of the
// Gauss-Jordan sweeps inside (gj_panel): every rank throws kess::Error of the same kind, with
// comm::agree's message naming that rank, and the communicator stays usable.
TEST(DistMatrixFunctionFaults, AgreedOnEveryRank) {
  const auto grid = row_grid();
  const int ranks = grid.comm().size(), last = ranks - 1;
  const int n = 24, nb = 3;
  const HostMat A = stable_matrix(n, 51), B = spd(n, 1.0, 10.0, 52);
  HostMat Ar, G, Q, X;
  riccati_problem(n, 4, Ar, G, Q, X);
  kess::SignOptions o;
  o.gauss_jordan.block = nb;
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"sign", [&] { kess::sign(Exec(), distribute(grid, A, nb), o); }},
      {"sign pencil",
       [&] { kess::sign(Exec(), distribute(grid, A, nb), distribute(grid, B, nb), o); }},
      {"lyapunov", [&] { kess::lyapunov(Exec(), distribute(grid, A, nb), distribute(grid, B, nb), o); }},
      {"riccati",
       [&] {
         kess::riccati(Exec(), distribute(grid, Ar, nb), distribute(grid, G, nb),
                       distribute(grid, Q, nb), o);
       }},
  };
  const std::string who = "failed on rank " + std::to_string(last) + " (1 of " +
                          std::to_string(ranks) + "); rank " + std::to_string(last) + " reported: ";
  for (const auto& [name, call] : calls) {
    SCOPED_TRACE(name);
    {
      FaultInjected f("mf_setup_alloc", last);
      const auto e = expect_error(call, kess::ErrorKind::out_of_memory);
      EXPECT_TRUE(contains(e, who)) << e.what();
      EXPECT_TRUE(contains(e, "out of memory (std::bad_alloc)")) << e.what();
    }
    {
      FaultInjected f("gj_panel", last);
      const auto e = expect_error(call, kess::ErrorKind::device);
      EXPECT_TRUE(contains(e, who)) << e.what();
      EXPECT_TRUE(contains(e, "fault injected (KESS_FAULT_INJECT) at the panel")) << e.what();
    }
  }
  const auto r = kess::sign(Exec(), distribute(grid, A, nb), o);
  EXPECT_TRUE(r.history.converged);
}

}  // namespace
