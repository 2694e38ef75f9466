// The distributed (column-block-cyclic) kess::solve and kess::inverse at 1, 2 and 4 ranks against
// LAPACK (dgesv, dgetrf + dgetri) and the local versions: every rank builds the same global
// matrices and scatters them onto a 1 x P grid.
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/base/settings.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/matrix_functions.hpp>

#include "test_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using Dist = kess::comm::DistMatrix<double>;
constexpr double kEps = std::numeric_limits<double>::epsilon();

double norm_inf(const HostMat& A) {
  double mx = 0;
  for (size_t i = 0; i < A.extent(0); ++i) {
    double s = 0;
    for (size_t j = 0; j < A.extent(1); ++j) s += std::abs(A(i, j));
    mx = kess_test::worse(mx, s);
  }
  return mx;
}

double backward_error(const HostMat& A, const HostMat& Y, const HostMat& B) {
  HostMat R("R", B.extent(0), B.extent(1));
  Kokkos::deep_copy(R, B);
  const int n = A.extent(0), m = B.extent(1);
  kess::core::lapack::gemm('N', 'N', n, m, n, 1.0, A.data(), n, Y.data(), n, -1.0, R.data(), n);
  return norm_inf(R) / (norm_inf(A) * norm_inf(Y) + norm_inf(B));
}

HostMat identity(int n) {
  HostMat I("I", n, n);
  for (int i = 0; i < n; ++i) I(i, i) = 1.0;
  return I;
}

double diff_inf(const HostMat& A, const HostMat& B) {
  double mx = 0;
  for (size_t i = 0; i < A.extent(0); ++i) {
    double s = 0;
    for (size_t j = 0; j < A.extent(1); ++j) s += std::abs(A(i, j) - B(i, j));
    mx = kess_test::worse(mx, s);
  }
  return mx;
}

/// log|det| and sign of det from LAPACK's LU.
std::pair<int, double> lapack_det(const HostMat& A) {
  const int n = A.extent(0);
  HostMat L("L", n, n);
  Kokkos::deep_copy(L, A);
  std::vector<int> ipiv(n);
  EXPECT_EQ(kess::core::lapack::getrf(n, n, L.data(), n, ipiv.data()), 0);
  int sign = 1;
  double logdet = 0;
  for (int j = 0; j < n; ++j) {
    if (ipiv[j] != j + 1) sign = -sign;
    if (L(j, j) < 0) sign = -sign;
    logdet += std::log(std::abs(L(j, j)));
  }
  return {sign, logdet};
}

/// The distributed inverse of A (every rank passes the same A), gathered on every rank.
HostMat dist_inverse(const kess::comm::ProcessGrid& grid, const HostMat& A, int nb,
                     kess::GaussJordanResult* r = nullptr) {
  const int n = A.extent(0);
  Dist Ad(grid, n, n, n, nb);
  Ad.scatter(0, A);
  const auto res = kess::inverse(Exec(), Ad);
  if (r) *r = res;
  return Ad.allgather();
}

/// The distributed solve of A Y = B and inverse of A with the same options (every rank passes the
/// same A and B), gathered on every rank: {A^-1, Y, solve's result, inverse's result}.
struct SolveAndInverse {
  HostMat X, Y;
  kess::GaussJordanResult rs, ri;
};
SolveAndInverse dist_solve_and_inverse(const kess::comm::ProcessGrid& grid, const HostMat& A,
                                       const HostMat& B, int nb, const kess::GaussJordanOptions& o) {
  const int n = A.extent(0), m = B.extent(1);
  Dist Ad(grid, n, n, n, nb), Bd(grid, n, m, n, nb);
  Ad.scatter(0, A);
  Bd.scatter(0, B);
  SolveAndInverse r;
  r.rs = kess::solve(Exec(), Ad, Bd, o);
  r.ri = kess::inverse(Exec(), Ad, o);
  r.X = Ad.allgather();
  r.Y = Bd.allgather();
  return r;
}

struct Case {
  int n, m, nb;
};

class GaussJordanDist : public ::testing::TestWithParam<Case> {};

TEST_P(GaussJordanDist, MatchesLapackAndLocal) {
  const auto [n, m, nb] = GetParam();
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const HostMat A = kess::gen::random_general(n, n, 100 + n);
  const HostMat B = kess::gen::random_general(n, m, 200 + m);
  Dist Ad(grid, n, n, n, nb), Bd(grid, n, m, n, nb);
  Ad.scatter(0, A);
  Bd.scatter(0, B);
  const auto r = kess::solve(Exec(), Ad, Bd);
  EXPECT_EQ(r.block, nb);
  const HostMat Y = Bd.gather(0);
  const HostMat Aafter = Ad.gather(0);
  // In A's own storage (overwrite_a): the same answer.
  kess::GaussJordanOptions ow;
  ow.overwrite_a = true;
  Dist A2(grid, n, n, n, nb), B2(grid, n, m, n, nb);
  A2.scatter(0, A);
  B2.scatter(0, B);
  kess::solve(Exec(), A2, B2, ow);
  const HostMat Y2 = B2.gather(0);
  // The local version on the same data: the same determinant, the same answer up to rounding.
  HostMat Yl("Yl", n, m);
  Kokkos::deep_copy(Yl, B);
  kess::GaussJordanOptions o;
  o.block = nb;
  const auto rl = kess::solve(Kokkos::DefaultHostExecutionSpace(), A, Yl, o);
  EXPECT_EQ(r.det_sign, rl.det_sign);
  EXPECT_NEAR(r.log_abs_det, rl.log_abs_det, 1e-12 * std::max(1.0, std::abs(rl.log_abs_det)));
  if (world.rank() == 0) {
    EXPECT_LE(backward_error(A, Y, B), 10.0 * n * kEps) << "n=" << n << " m=" << m << " nb=" << nb;
    HostMat Al("Al", n, n), Yg("Yg", n, m);
    Kokkos::deep_copy(Al, A);
    Kokkos::deep_copy(Yg, B);
    std::vector<int> ipiv(n);
    ASSERT_EQ(kess::core::lapack::gesv(n, m, Al.data(), n, ipiv.data(), Yg.data(), n), 0);
    double d = 0, dl = 0;
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < n; ++i) {
        d = kess_test::worse(d, std::abs(Y(i, j) - Yg(i, j)));
        dl = kess_test::worse(dl, std::abs(Y(i, j) - Yl(i, j)));
      }
    EXPECT_LE(d, 1e-10 * norm_inf(Yg));
    EXPECT_LE(dl, 1e-12 * norm_inf(Yg));  // same algorithm, same blocks
    double d2 = 0, da = 0;
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < n; ++i) d2 = kess_test::worse(d2, std::abs(Y2(i, j) - Y(i, j)));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) da = kess_test::worse(da, std::abs(Aafter(i, j) - A(i, j)));
    EXPECT_LE(d2, 1e-13 * norm_inf(Yg)) << "overwrite_a";
    EXPECT_EQ(da, 0.0) << "A must not be modified without overwrite_a";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GaussJordanDist,
                         ::testing::Values(Case{100, 30, 16},  // 7 blocks over P ranks
                                           Case{20, 5, 8},     // n < NB * ranks at 4 ranks
                                           Case{64, 64, 64},   // one block: one rank does it
                                           Case{1, 1, 4}, Case{130, 7, 7}, Case{97, 150, 10}),
                         [](const auto& info) {
                           return "n" + std::to_string(info.param.n) + "_m" +
                                  std::to_string(info.param.m) + "_nb" +
                                  std::to_string(info.param.nb);
                         });

struct InvCase {
  int n, nb;
};

class GaussJordanDistInverse : public ::testing::TestWithParam<InvCase> {};

TEST_P(GaussJordanDistInverse, MatchesLapackGetri) {
  const auto [n, nb] = GetParam();
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const HostMat A = kess::gen::random_general(n, n, 300 + n);
  kess::GaussJordanResult r;
  const HostMat X = dist_inverse(grid, A, nb, &r);
  EXPECT_EQ(r.block, nb);
  EXPECT_EQ(r.nrhs, 0);
  HostMat Xl("Xl", n, n);
  Kokkos::deep_copy(Xl, A);
  std::vector<int> ipiv(n);
  ASSERT_EQ(kess::core::lapack::getrf(n, n, Xl.data(), n, ipiv.data()), 0);
  ASSERT_EQ(kess::core::lapack::getri(n, Xl.data(), n, ipiv.data()), 0);
  const HostMat I = identity(n);
  const double be = backward_error(A, X, I), be_lapack = backward_error(A, Xl, I);
  EXPECT_LE(be, 10.0 * n * kEps) << "n=" << n << " nb=" << nb;
  EXPECT_LE(be, 10.0 * be_lapack + 10.0 * kEps);
  // Forward error against LAPACK's inverse, within 10x of LAPACK's own error bound (n kappa eps).
  const double kappa = norm_inf(A) * norm_inf(Xl);
  EXPECT_LE(diff_inf(X, Xl) / norm_inf(Xl), 10.0 * n * kappa * kEps);
  // The local inverse with the same blocks: the same determinant, the same answer up to rounding.
  HostMat Y("Y", n, n);
  Kokkos::deep_copy(Y, A);
  kess::GaussJordanOptions o;
  o.block = nb;
  o.panel = kess::GaussJordanPanel::host;
  const auto rl = kess::inverse(Kokkos::DefaultHostExecutionSpace(), Y, o);
  const auto [sign, logdet] = lapack_det(A);
  EXPECT_EQ(r.det_sign, sign);
  EXPECT_EQ(r.det_sign, rl.det_sign);
  EXPECT_NEAR(r.log_abs_det, logdet, 1e-10 * std::max(1.0, std::abs(logdet)));
  EXPECT_NEAR(r.log_abs_det, rl.log_abs_det, 1e-12 * std::max(1.0, std::abs(rl.log_abs_det)));
  EXPECT_LE(diff_inf(X, Y), 1e-12 * norm_inf(Y));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GaussJordanDistInverse,
                         ::testing::Values(InvCase{100, 16},  // 7 blocks over P ranks
                                           InvCase{20, 8},    // n < NB * ranks at 4 ranks
                                           InvCase{64, 64},   // one block: one rank does it
                                           InvCase{1, 4}, InvCase{130, 7}, InvCase{97, 10},
                                           InvCase{150, 1}),
                         [](const auto& info) {
                           return "n" + std::to_string(info.param.n) + "_nb" +
                                  std::to_string(info.param.nb);
                         });

// Look-ahead off: the next panel's owner factors it after its whole update; the same answers.
TEST(GaussJordanDistInverse, LookAheadOff) {
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const int n = 90, nb = 8;
  const HostMat A = kess::gen::random_general(n, n, 77), B = kess::gen::random_general(n, 5, 78);
  kess::GaussJordanOptions off;
  off.look_ahead = false;
  const auto [X, Y, rs, ri] = dist_solve_and_inverse(grid, A, B, nb, off);
  const HostMat Xon = dist_inverse(grid, A, nb);
  EXPECT_LE(diff_inf(X, Xon), 1e-13 * norm_inf(Xon));
  EXPECT_LE(backward_error(A, Y, B), 10.0 * n * kEps);
  EXPECT_EQ(rs.det_sign, ri.det_sign);
  EXPECT_NEAR(rs.log_abs_det, ri.log_abs_det, 1e-12 * std::abs(ri.log_abs_det));
}

// The device panel (GaussJordanPanel::device: the panel LU of the local device sweep, run by the
// panel's owner, its pivots checked on the host before the broadcast) gives the host panel's
// interchanges, so the same answers to rounding, the same determinant, and the same agreed error.
TEST(GaussJordanDistInverse, DevicePanel) {
  using kess_test::contains;
  using kess_test::expect_error;
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  for (const auto& [n, nb] : {std::pair<int, int>{90, 8}, {40, 40}, {33, 5}}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " nb=" + std::to_string(nb));
    const HostMat A = kess::gen::random_general(n, n, 91 + n), B = kess::gen::random_general(n, 4, 92);
    kess::GaussJordanOptions dev;
    dev.panel = kess::GaussJordanPanel::device;
    const auto [X, Y, rs, ri] = dist_solve_and_inverse(grid, A, B, nb, dev);
    kess::GaussJordanResult rh;
    const HostMat Xh = dist_inverse(grid, A, nb, &rh);  // host panel
    EXPECT_LE(diff_inf(X, Xh), 1e-12 * norm_inf(Xh));
    EXPECT_LE(backward_error(A, X, identity(n)), 10.0 * n * kEps);
    EXPECT_LE(backward_error(A, Y, B), 10.0 * n * kEps);
    EXPECT_EQ(ri.det_sign, rh.det_sign);
    EXPECT_EQ(rs.det_sign, rh.det_sign);
    EXPECT_NEAR(ri.log_abs_det, rh.log_abs_det, 1e-12 * std::max(1.0, std::abs(rh.log_abs_det)));
  }
  // A zero column on one rank's panel: every rank throws the singular error naming it.
  const int n = 24, nb = 4;
  HostMat A = kess::gen::random_general(n, n, 7);
  for (int i = 0; i < n; ++i) A(i, 13) = 0.0;
  Dist Ad(grid, n, n, n, nb);
  Ad.scatter(0, A);
  kess::GaussJordanOptions dev;
  dev.panel = kess::GaussJordanPanel::device;
  auto e = expect_error([&] { kess::inverse(Exec(), Ad, dev); }, kess::ErrorKind::singular);
  EXPECT_TRUE(contains(e, "column 13")) << e.what();
}

// A11 = 0 (the first step must pivot) and the anti-diagonal permutation (every leading block
// singular, every column crosses to the mirror column's rank): its inverse is its transpose.
TEST(GaussJordanDistInverse, PivotsAtFirstStep) {
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  for (const int n : {12, 40})
    for (const int nb : {1, 2, 4, 5}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " nb=" + std::to_string(nb));
      HostMat A = kess::gen::random_general(n, n, 3);
      A(0, 0) = 0.0;
      const HostMat X = dist_inverse(grid, A, nb);
      EXPECT_LE(backward_error(A, X, identity(n)), 10.0 * n * kEps);
      HostMat P("P", n, n);
      for (int i = 0; i < n; ++i) P(i, n - 1 - i) = 1.0;
      kess::GaussJordanResult r;
      const HostMat Pi = dist_inverse(grid, P, nb, &r);
      EXPECT_EQ(r.det_sign, n % 4 == 0 ? 1 : -1);  // n/2 swaps
      EXPECT_NEAR(r.log_abs_det, 0.0, 1e-15);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) EXPECT_EQ(Pi(i, j), P(j, i)) << i << "," << j;
    }
}

TEST(GaussJordanDistInverse, ErrorsAgreedOnEveryRank) {
  using kess_test::contains;
  using kess_test::expect_error;
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const int n = 24, nb = 4;
  Dist Ad(grid, n, n, n, nb);
  const auto inverse_of = [&](const HostMat& M) {
    Ad.scatter(0, M);
    kess::inverse(Exec(), Ad);
  };
  // Column 17 (block 4: rank 4 % P) is zero: the owner of that panel fails; every rank throws
  // the singular error naming the column.
  HostMat A = kess::gen::random_general(n, n, 7);
  for (int i = 0; i < n; ++i) A(i, 17) = 0.0;
  auto e = expect_error([&] { inverse_of(A); }, kess::ErrorKind::singular);
  EXPECT_TRUE(contains(e, "column 17")) << e.what();
  // Numerically singular (two equal columns on different ranks at P > 1): the magnitude named.
  HostMat A1 = kess::gen::random_general(n, n, 8);
  for (int i = 0; i < n; ++i) A1(i, 21) = A1(i, 2);
  e = expect_error([&] { inverse_of(A1); }, kess::ErrorKind::singular);
  EXPECT_TRUE(contains(e, "column 21")) << e.what();
  EXPECT_TRUE(contains(e, "magnitude")) << e.what();
  // A NaN in the last rank's columns only: every rank throws.
  HostMat A2 = kess::gen::random_general(n, n, 9);
  A2(3, n - 1) = std::numeric_limits<double>::quiet_NaN();
  e = expect_error([&] { inverse_of(A2); }, kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "NaN")) << e.what();
  // The communicator still works after the errors (no rank left behind).
  const HostMat A3 = kess::gen::random_general(n, n, 10);
  EXPECT_LE(backward_error(A3, dist_inverse(grid, A3, nb), identity(n)), 10.0 * n * kEps);
  Dist Arect(grid, n, n + 1, n, nb);
  expect_error([&] { kess::inverse(Exec(), Arect); }, kess::ErrorKind::invalid_argument);
  if (world.size() == 4) {
    kess::comm::ProcessGrid g22(world, 2, 2);
    Dist A22(g22, n, n, nb, nb);
    e = expect_error([&] { kess::inverse(Exec(), A22); }, kess::ErrorKind::invalid_argument);
    EXPECT_TRUE(contains(e, "1 x P")) << e.what();
  }
}

TEST(GaussJordanDistErrors, AgreedOnEveryRank) {
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const int n = 24, nb = 4;
  HostMat A = kess::gen::random_general(n, n, 7);
  for (int i = 0; i < n; ++i) A(i, 17) = 0.0;  // column 17 (block 4: rank 4 % P) is zero
  const HostMat B = kess::gen::random_general(n, 2, 8);
  Dist Ad(grid, n, n, n, nb), Bd(grid, n, 2, n, nb);
  Ad.scatter(0, A);
  Bd.scatter(0, B);
  try {
    kess::solve(Exec(), Ad, Bd);
    ADD_FAILURE() << "no error";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::singular) << e.what();
    EXPECT_NE(std::string(e.what()).find("column 17"), std::string::npos) << e.what();
  }
  // A NaN in one rank's columns only: every rank throws.
  HostMat A2 = kess::gen::random_general(n, n, 9);
  A2(3, n - 1) = std::numeric_limits<double>::quiet_NaN();
  Ad.scatter(0, A2);
  try {
    kess::solve(Exec(), Ad, Bd);
    ADD_FAILURE() << "no error";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument) << e.what();
  }
  // Shapes
  Dist Bbad(grid, n + 1, 2, n + 1, nb);
  EXPECT_THROW(kess::solve(Exec(), Ad, Bbad), kess::Error);
  if (world.size() == 4) {
    kess::comm::ProcessGrid g22(world, 2, 2);
    Dist A22(g22, n, n, nb, nb), B22(g22, n, 2, nb, nb);
    try {
      kess::solve(Exec(), A22, B22);
      ADD_FAILURE() << "no error";
    } catch (const kess::Error& e) {
      EXPECT_NE(std::string(e.what()).find("1 x P"), std::string::npos) << e.what();
    }
  }
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

/// f must throw kess::Error of `kind` on this rank, with comm::agree's message naming the failing
/// rank (of `ranks`) and containing `text` (what that rank reported).
void expect_agreed(const std::function<void()>& f, kess::ErrorKind kind, int failing, int ranks,
                   const std::string& text) {
  const auto e = kess_test::expect_error(f, kind);
  const std::string who = "failed on rank " + std::to_string(failing) + " (1 of " +
                          std::to_string(ranks) + "); rank " + std::to_string(failing) +
                          " reported: ";
  EXPECT_TRUE(kess_test::contains(e, who)) << e.what();
  EXPECT_TRUE(kess_test::contains(e, text)) << e.what();
}

TEST(GaussJordanDistFaults, InjectionSetting) {
  using kess::core::settings::fault_injection;
  const int me = kess::comm::Communicator::world().rank();
  EXPECT_FALSE(fault_injection("gj_panel"));
  {
    FaultInjected f("gj_panel", me);
    EXPECT_TRUE(fault_injection("gj_panel"));
    EXPECT_FALSE(fault_injection("gj_setup_alloc"));
    EXPECT_FALSE(fault_injection("gj_pan"));
  }
  {
    FaultInjected f("gj_panel", me + 1);
    EXPECT_FALSE(fault_injection("gj_panel"));
  }
  setenv("KESS_FAULT_INJECT", "gj_panel", 1);  // no rank: every process
  EXPECT_TRUE(fault_injection("gj_panel"));
  setenv("KESS_FAULT_INJECT", "gj_panel:x", 1);
  EXPECT_FALSE(fault_injection("gj_panel"));
  unsetenv("KESS_FAULT_INJECT");
  EXPECT_FALSE(fault_injection("gj_panel"));
}

/// The cases of the fault tests: the distributed solve (A copied, and in place), the inverse and
/// the sign function (through its distributed inverses), each with `o`.
struct FaultCase {
  const char* name;
  std::function<void(const kess::GaussJordanOptions&)> run;
};

std::vector<FaultCase> fault_cases(const kess::comm::ProcessGrid& grid, int n, int nb) {
  const HostMat A = kess::gen::random_general(n, n, 41), B = kess::gen::random_general(n, 3, 42);
  return {
      {"solve",
       [=](const kess::GaussJordanOptions& o) {
         Dist Ad(grid, n, n, n, nb), Bd(grid, n, 3, n, nb);
         Ad.scatter(0, A);
         Bd.scatter(0, B);
         kess::solve(Exec(), Ad, Bd, o);
       }},
      {"solve in place",
       [=](const kess::GaussJordanOptions& o) {
         Dist Ad(grid, n, n, n, nb), Bd(grid, n, 3, n, nb);
         Ad.scatter(0, A);
         Bd.scatter(0, B);
         kess::GaussJordanOptions ow = o;
         ow.overwrite_a = true;
         kess::solve(Exec(), Ad, Bd, ow);
       }},
      {"inverse",
       [=](const kess::GaussJordanOptions& o) {
         Dist Ad(grid, n, n, n, nb);
         Ad.scatter(0, A);
         kess::inverse(Exec(), Ad, o);
       }},
      {"sign",
       [=](const kess::GaussJordanOptions& o) {
         Dist Ad(grid, n, n, n, nb);
         Ad.scatter(0, A);
         kess::SignOptions so;
         so.gauss_jordan = o;
         kess::sign(Exec(), Ad, so);
       }},
  };
}

/// After the agreed errors no rank is left behind: the same communicator solves correctly.
void expect_communicator_usable(const kess::comm::ProcessGrid& grid) {
  const int n = 30, nb = 4;
  const HostMat A = kess::gen::random_general(n, n, 43), B = kess::gen::random_general(n, 2, 44);
  Dist Ad(grid, n, n, n, nb), Bd(grid, n, 2, n, nb);
  Ad.scatter(0, A);
  Bd.scatter(0, B);
  kess::solve(Exec(), Ad, Bd);
  EXPECT_LE(backward_error(A, Bd.allgather(), B), 10.0 * n * kEps);
}

// An allocation failure on the last rank alone while the sweep sets up (std::bad_alloc there):
// every rank throws out_of_memory naming that rank, instead of the others waiting in the first
// broadcast. At 1 rank the local sweep runs and the same error comes out.
TEST(GaussJordanDistFaults, SetupAllocationAgreed) {
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const int last = world.size() - 1;
  for (const auto& c : fault_cases(grid, 40, 4)) {
    SCOPED_TRACE(c.name);
    FaultInjected f("gj_setup_alloc", last);
    expect_agreed([&] { c.run({}); }, kess::ErrorKind::out_of_memory, last, world.size(),
                  "out of memory (std::bad_alloc)");
  }
  expect_communicator_usable(grid);
}

// A runtime failure (std::runtime_error) while the last rank factors its first panel, on the host
// and the device panel, with look-ahead on and off: every rank throws kess::Error (device) with
// that rank's message, instead of the others waiting for its broadcast.
TEST(GaussJordanDistFaults, PanelFailureAgreed) {
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const int last = world.size() - 1;
  const int n = 40, nb = 4;
  const std::string column = "at the panel of column " + std::to_string(world.size() > 1 ? last * nb : 0);
  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device})
    for (const bool look_ahead : {true, false}) {
      kess::GaussJordanOptions o;
      o.panel = panel;
      o.look_ahead = look_ahead;
      for (const auto& c : fault_cases(grid, n, nb)) {
        SCOPED_TRACE(std::string(c.name) + (panel == kess::GaussJordanPanel::host ? " host" : " device") +
                     " panel, look-ahead " + (look_ahead ? "on" : "off"));
        FaultInjected f("gj_panel", last);
        expect_agreed([&] { c.run(o); }, kess::ErrorKind::device, last, world.size(),
                      "fault injected (KESS_FAULT_INJECT) " + column);
      }
    }
  expect_communicator_usable(grid);
}

}  // namespace
