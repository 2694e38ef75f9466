// kess::solve and kess::inverse (blocked Gauss-Jordan) against LAPACK dgesv / dgetrf + dgetri, on
// the backend this binary was compiled for.
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/gauss_jordan/detail/panel_lu.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

namespace {

using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;
constexpr double kEps = std::numeric_limits<double>::epsilon();

HostMat copy_of(const HostMat& a) {
  HostMat c("c", a.extent(0), a.extent(1));
  Kokkos::deep_copy(c, a);
  return c;
}

DevMat to_device(const HostMat& a) {
  DevMat d("d", a.extent(0), a.extent(1));
  auto m = Kokkos::create_mirror_view(d);
  Kokkos::deep_copy(m, a);
  Kokkos::deep_copy(d, m);
  return d;
}

HostMat to_host(const DevMat& d) {
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  HostMat h("h", d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, m);
  return h;
}

// C = alpha A B + beta C on the host.
void host_gemm(double alpha, const HostMat& A, const HostMat& B, double beta, const HostMat& C) {
  kess::core::lapack::gemm('N', 'N', C.extent(0), C.extent(1), A.extent(1), alpha, A.data(),
                     std::max<int>(1, A.stride(1)), B.data(), std::max<int>(1, B.stride(1)), beta,
                     C.data(), std::max<int>(1, C.stride(1)));
}

double norm_inf(const HostMat& A) {
  double mx = 0;
  for (size_t i = 0; i < A.extent(0); ++i) {
    double s = 0;
    for (size_t j = 0; j < A.extent(1); ++j) s += std::abs(A(i, j));
    mx = kess_test::worse(mx, s);
  }
  return mx;
}

double diff_inf(const HostMat& A, const HostMat& B) {
  HostMat d = copy_of(A);
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) d(i, j) -= B(i, j);
  return norm_inf(d);
}

// ||A Y - B|| / (||A|| ||Y|| + ||B||) in the infinity norm.
double backward_error(const HostMat& A, const HostMat& Y, const HostMat& B) {
  HostMat R = copy_of(B);
  host_gemm(1.0, A, Y, -1.0, R);
  return norm_inf(R) / (norm_inf(A) * norm_inf(Y) + norm_inf(B));
}

// Random general matrix with a little diagonal weight (condition numbers of a few hundred).
HostMat test_matrix(int n, std::uint64_t seed) {
  HostMat A = kess::gen::random_general(n, n, seed);
  return A;
}

class GaussJordanSolve : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(GaussJordanSolve, MatchesLapackGesv) {
  const auto [n, m, nb] = GetParam();
  const HostMat A = test_matrix(n, 17 + n);
  const HostMat Xtrue = kess::gen::random_general(n, m, 99 + m);
  HostMat B("B", n, m);
  host_gemm(1.0, A, Xtrue, 0.0, B);

  // LAPACK
  HostMat Al = copy_of(A), Yl = copy_of(B);
  std::vector<int> ipiv(n);
  ASSERT_EQ(kess::core::lapack::gesv(n, m, Al.data(), n, ipiv.data(), Yl.data(), std::max(1, n)), 0);

  // kess, with the panel LU on the host (LAPACK) and on the execution space (on CUDA from
  // 2048 rows also with tournament pivoting in the leaves: variant 2)
  for (const int variant : {0, 1, 2}) {
  if (variant == 2 && n < 2048) continue;
  const auto panel = variant == 0 ? kess::GaussJordanPanel::host : kess::GaussJordanPanel::device;
  SCOPED_TRACE(variant == 0 ? "host panel" : variant == 1 ? "device panel" : "tournament pivoting");
  TestExecSpace exec;
  DevMat Ad = to_device(A), Bd = to_device(B);
  kess::GaussJordanOptions opts;
  opts.block = nb;
  opts.panel = panel;
  if (variant == 2) opts.pivoting = kess::GaussJordanPivoting::tournament;
  const auto r = kess::solve(exec, Ad, Bd, opts);
  const HostMat Y = to_host(Bd);
  EXPECT_EQ(diff_inf(to_host(Ad), A), 0.0) << "A must not be modified";
  EXPECT_EQ(r.n, n);
  EXPECT_EQ(r.nrhs, m);

  if (m > 0) {
    const double be = backward_error(A, Y, B);
    EXPECT_LE(be, 10.0 * n * kEps) << "n=" << n << " m=" << m << " nb=" << nb;
    const double fe = diff_inf(Y, Xtrue) / norm_inf(Xtrue);
    const double fe_lapack = diff_inf(Yl, Xtrue) / norm_inf(Xtrue);
    EXPECT_LE(fe, 10.0 * fe_lapack + 10.0 * kEps) << "forward error " << fe << " vs LAPACK "
                                                    << fe_lapack;
  }

  // Determinant against LAPACK's LU.
  Al = copy_of(A);
  ASSERT_EQ(kess::core::lapack::getrf(n, n, Al.data(), n, ipiv.data()), 0);
  int sign = 1;
  double logdet = 0;
  for (int j = 0; j < n; ++j) {
    if (ipiv[j] != j + 1) sign = -sign;
    if (Al(j, j) < 0) sign = -sign;
    logdet += std::log(std::abs(Al(j, j)));
  }
  EXPECT_EQ(r.det_sign, sign);
  EXPECT_NEAR(r.log_abs_det, logdet, 1e-10 * std::max(1.0, std::abs(logdet)));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GaussJordanSolve,
                         ::testing::Values(std::make_tuple(1, 1, 0), std::make_tuple(2, 3, 1),
                                           std::make_tuple(7, 7, 3), std::make_tuple(64, 64, 16),
                                           std::make_tuple(100, 100, 32),  // NB does not divide n
                                           std::make_tuple(100, 1, 7), std::make_tuple(130, 257, 64),
                                           std::make_tuple(300, 300, 0),  // default NB > n
                                           std::make_tuple(257, 40, 100), std::make_tuple(50, 0, 8),
                                           std::make_tuple(33, 5, 33), std::make_tuple(33, 5, 1000),
                                           std::make_tuple(400, 50, 100),  // recursive panel LU
                                           std::make_tuple(600, 20, 256),
                                           // panels of >= 2048 rows: CUDA's grid leaf in a solve
                                           std::make_tuple(2100, 30, 256)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_m" +
                                  std::to_string(std::get<1>(info.param)) + "_nb" +
                                  std::to_string(std::get<2>(info.param));
                         });

class GaussJordanInverse : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(GaussJordanInverse, MatchesLapackGetri) {
  const auto [n, nb] = GetParam();
  const HostMat A = test_matrix(n, 5 + n);
  HostMat Xl = copy_of(A);
  std::vector<int> ipiv(n);
  ASSERT_EQ(kess::core::lapack::getrf(n, n, Xl.data(), n, ipiv.data()), 0);
  ASSERT_EQ(kess::core::lapack::getri(n, Xl.data(), n, ipiv.data()), 0);

  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device}) {
  SCOPED_TRACE(panel == kess::GaussJordanPanel::host ? "host panel" : "device panel");
  TestExecSpace exec;
  DevMat Xd = to_device(A);
  kess::GaussJordanOptions opts;
  opts.block = nb;
  opts.panel = panel;
  const auto r = kess::inverse(exec, Xd, opts);
  const HostMat X = to_host(Xd);
  EXPECT_EQ(r.nrhs, 0);

  HostMat I("I", n, n);
  for (int i = 0; i < n; ++i) I(i, i) = 1.0;
  // Residuals A X - I (right inverse), relative to ||A|| ||X||, and against LAPACK's.
  const double be = backward_error(A, X, I);
  const double be_lapack = backward_error(A, Xl, I);
  EXPECT_LE(be, 10.0 * n * kEps) << "n=" << n << " nb=" << nb;
  EXPECT_LE(be, 10.0 * be_lapack + 10.0 * kEps);
  // Forward error: both against each other, scaled by the condition number estimate.
  const double kappa = norm_inf(A) * norm_inf(Xl);
  EXPECT_LE(diff_inf(X, Xl) / norm_inf(Xl), 10.0 * n * kappa * kEps);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GaussJordanInverse,
                         ::testing::Values(std::make_tuple(1, 0), std::make_tuple(2, 1),
                                           std::make_tuple(10, 3), std::make_tuple(64, 64),
                                           std::make_tuple(100, 32), std::make_tuple(200, 0),
                                           std::make_tuple(129, 16), std::make_tuple(300, 96)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_nb" +
                                  std::to_string(std::get<1>(info.param));
                         });

// A = Q1 diag(s) Q2 with s from 1 down to 1/kappa (geometric), Q1, Q2 random orthogonal: 2-norm
// condition number kappa.
HostMat conditioned_matrix(int n, double kappa, std::uint64_t seed) {
  const HostMat Q1 = kess::gen::random_orthogonal(n, seed), Q2 = kess::gen::random_orthogonal(n, seed + 1);
  HostMat S = copy_of(Q1);
  for (int j = 0; j < n; ++j) {
    const double s = n > 1 ? std::pow(kappa, -double(j) / (n - 1)) : 1.0;
    for (int i = 0; i < n; ++i) S(i, j) *= s;
  }
  HostMat A("A", n, n);
  host_gemm(1.0, S, Q2, 0.0, A);
  return A;
}

// The backward error of the blocked elimination is that of the unblocked one at every block size,
// up to condition numbers of 1e15 (the pivot block is applied by triangular solves, not by an
// explicit inverse): ||A Y - B|| <= 10 n eps (||A|| ||Y|| + ||B||) for solve, and the same for the
// inverse's A X - I, with the panel on the host and on the execution space; and the Hilbert matrix
// of order 12.
TEST(GaussJordanAccuracy, IllConditionedAtEveryBlockSize) {
  const int n = 200;
  std::vector<std::pair<std::string, HostMat>> cases;
  for (const double kappa : {1e4, 1e8, 1e12, 1e15})
    cases.emplace_back("kappa " + std::to_string(kappa), conditioned_matrix(n, kappa, 7));
  HostMat hilbert("hilbert", 12, 12);
  for (int j = 0; j < 12; ++j)
    for (int i = 0; i < 12; ++i) hilbert(i, j) = 1.0 / (i + j + 1);
  cases.emplace_back("Hilbert 12", hilbert);
  for (const auto& [name, A] : cases) {
    const int m = static_cast<int>(A.extent(0));
    const HostMat B = kess::gen::random_general(m, 3, 11);
    HostMat I("I", m, m);
    for (int i = 0; i < m; ++i) I(i, i) = 1.0;
    for (const int nb : {1, 2, 7, 32, 64, 0, m})
      for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device}) {
        SCOPED_TRACE(name + ", nb " + std::to_string(nb) +
                     (panel == kess::GaussJordanPanel::host ? ", host panel" : ", device panel"));
        TestExecSpace exec;
        kess::GaussJordanOptions opts;
        opts.block = nb;
        opts.panel = panel;
        DevMat Ad = to_device(A), Bd = to_device(B);
        kess::solve(exec, Ad, Bd, opts);
        EXPECT_LE(backward_error(A, to_host(Bd), B), 10.0 * m * kEps);
        DevMat Xd = to_device(A);
        kess::inverse(exec, Xd, opts);
        EXPECT_LE(backward_error(A, to_host(Xd), I), 10.0 * m * kEps);
      }
  }
}

// A11 = 0: the first step must pivot (and so must later ones: an anti-diagonal-heavy matrix).
TEST(GaussJordan, PivotsAtFirstStep) {
  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device})
  for (const int n : {12, 40})  // 40: the recursive device panel LU (more than one leaf)
  for (int nb : {1, 2, 4, 0}) {
    SCOPED_TRACE(panel == kess::GaussJordanPanel::host ? "host panel" : "device panel");
    SCOPED_TRACE("n=" + std::to_string(n));
    HostMat A = test_matrix(n, 3);
    A(0, 0) = 0.0;
    HostMat P("P", n, n);  // a permutation matrix: every leading block singular
    for (int i = 0; i < n; ++i) P(i, n - 1 - i) = 1.0;
    for (const HostMat& M : {A, P}) {
      const HostMat B = kess::gen::random_general(n, 3, 4);
      TestExecSpace exec;
      DevMat Md = to_device(M), Bd = to_device(B);
      kess::GaussJordanOptions opts;
      opts.block = nb;
      opts.panel = panel;
      kess::solve(exec, Md, Bd, opts);
      EXPECT_LE(backward_error(M, to_host(Bd), B), 10.0 * n * kEps) << "nb=" << nb;
      DevMat Xd = to_device(M);
      kess::inverse(exec, Xd, opts);
      HostMat I("I", n, n);
      for (int i = 0; i < n; ++i) I(i, i) = 1.0;
      EXPECT_LE(backward_error(M, to_host(Xd), I), 10.0 * n * kEps) << "nb=" << nb;
    }
    // det of the anti-diagonal permutation of order 12 (40): 6 (20) swaps, +1.
    DevMat Pd = to_device(P);
    kess::GaussJordanOptions opts;
    opts.block = nb;
    opts.panel = panel;
    const auto r = kess::inverse(TestExecSpace(), Pd, opts);
    EXPECT_EQ(r.det_sign, 1);
    EXPECT_NEAR(r.log_abs_det, 0.0, 1e-15);
    // the inverse of a permutation is its transpose, exactly.
    const HostMat Pi = to_host(Pd);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) EXPECT_EQ(Pi(i, j), P(j, i));
  }
}

TEST(GaussJordan, LookAheadOffGivesTheSameResult) {
  const int n = 90, m = 20;
  const HostMat A = test_matrix(n, 8), B = kess::gen::random_general(n, m, 9);
  TestExecSpace exec;
  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device}) {
    kess::GaussJordanOptions on, off;
    on.block = off.block = 16;
    on.panel = off.panel = panel;
    off.look_ahead = false;
    DevMat A1 = to_device(A), B1 = to_device(B), B2 = to_device(B);
    kess::solve(exec, A1, B1, on);
    kess::solve(exec, A1, B2, off);
    EXPECT_LE(diff_inf(to_host(B1), to_host(B2)), 1e-12 * norm_inf(to_host(B1)));
  }
}

// The device panel's variants (look-ahead on or off; the panel chain on a second instance, with
// the updates on a partition of the device or not, or everything on one): the same answers as
// the host panel. On host backends the pipelined order runs on one instance.
TEST(GaussJordan, DevicePanelVariants) {
  for (const int n : {70, 300, 600}) {
    const int m = 30, nb = n == 600 ? 256 : 64;
    const HostMat A = test_matrix(n, 40 + n), B = kess::gen::random_general(n, m, 41);
    HostMat I("I", n, n);
    for (int i = 0; i < n; ++i) I(i, i) = 1.0;
    kess::GaussJordanOptions ref_opts;
    ref_opts.panel = kess::GaussJordanPanel::host;
    ref_opts.block = nb;
    DevMat A0 = to_device(A), B0 = to_device(B);
    const auto ref = kess::solve(TestExecSpace(), A0, B0, ref_opts);
    // (look_ahead, panel_stream, panel_sms): the pipelined sweep with and without a partition of
    // the device for the updates (CUDA), the sweep on one instance, without look-ahead.
    for (const auto& [look_ahead, stream, sms] :
         {std::tuple{true, true, 12}, std::tuple{true, true, 0}, std::tuple{true, false, 12},
          std::tuple{false, true, 12}, std::tuple{false, false, 12}}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " look_ahead=" + std::to_string(look_ahead) +
                   " panel_stream=" + std::to_string(stream) + " panel_sms=" + std::to_string(sms));
      kess::GaussJordanOptions o;
      o.panel = kess::GaussJordanPanel::device;
      o.block = nb;
      o.look_ahead = look_ahead;
      o.tuning.panel_stream = stream;
      o.tuning.panel_sms = sms;
      TestExecSpace exec;
      DevMat Ad = to_device(A), Bd = to_device(B);
      const auto r = kess::solve(exec, Ad, Bd, o);
      EXPECT_LE(backward_error(A, to_host(Bd), B), 10.0 * n * kEps);
      EXPECT_EQ(r.det_sign, ref.det_sign);
      EXPECT_NEAR(r.log_abs_det, ref.log_abs_det, 1e-10 * std::abs(ref.log_abs_det));
      DevMat Xd = to_device(A);
      const auto ri = kess::inverse(exec, Xd, o);
      EXPECT_LE(backward_error(A, to_host(Xd), I), 10.0 * n * kEps);
      EXPECT_EQ(ri.det_sign, ref.det_sign);
    }
  }
}

// Which leaf kernel the device panel LU uses (on host backends grid = tournament = pipelined).
enum class PanelLeaf { grid, pipelined, columns, tournament };

struct PanelLu {
  HostMat lu;            // [L1; L2] \ U
  std::vector<int> piv;  // interchanges, 0-based
};

// factor_panel_device on a copy of A (rows x b) with the given leaf kernel and width; the
// grid leaf for every panel, down to 1 row.
PanelLu device_panel_lu(const HostMat& A, PanelLeaf mode, int leaf = kess::detail::gauss_jordan::kLuLeaf) {
  const int rows = static_cast<int>(A.extent(0)), b = static_cast<int>(A.extent(1));
  DevMat P("P", rows, b), uinv("uinv", b, b), l1("l1", b, b);
  Kokkos::deep_copy(P, A);
  Kokkos::View<double*, TestMemSpace> diag("diag", b);
  Kokkos::View<int*, TestMemSpace> piv("piv", b), rowmap("rowmap", rows);
  {
    auto rmh = Kokkos::create_mirror_view(rowmap);
    for (int i = 0; i < rows; ++i) rmh(i) = i;
    Kokkos::deep_copy(rowmap, rmh);
  }
  kess::detail::gauss_jordan::PanelLuOptions o;
  o.pipelined_leaves = mode != PanelLeaf::columns;
  o.grid_leaves = mode == PanelLeaf::grid || mode == PanelLeaf::tournament;
  o.tournament_leaves = mode == PanelLeaf::tournament;
  o.grid_min_rows = 0;
  o.leaf = leaf;
  kess::detail::gauss_jordan::PanelLu<TestExecSpace> lu(rows, b, o);
  TestExecSpace exec;
  lu.factor(exec, P, uinv, l1, diag, piv, rowmap);
  exec.fence();
  PanelLu out{HostMat("lu", rows, b), {}};
  Kokkos::deep_copy(out.lu, P);
  auto pivh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), piv);
  out.piv.assign(pivh.data(), pivh.data() + b);
  return out;
}

// The device panel LU alone (factor_panel_device on a rows x b panel), with each leaf kernel
// (CUDA's grid leaf, the pipelined leaf, the per-column kernels; on host backends the first two are
// the same) and leaf widths 32, 8 and 64, against LAPACK dgetrf: the same interchanges (pivots are
// unique in these matrices, or tied on purpose: LAPACK takes the first row) and the same L \ U to
// rounding. Includes a zero column (pivot 0, no division), columns of tied magnitudes (also ties
// far apart, in different slabs of the grid leaf) and panels taller than a team's registers hold on
// host backends (there the per-column kernels run).
TEST(GaussJordanPanel, DeviceLuMatchesDgetrf) {
  struct Case { int rows, b; bool zero_col, ties, far_ties = false; };
  const Case cases[] = {{1, 1, false, false},   {5, 3, false, false},  {32, 32, false, false},
                        {30, 30, false, true},  {40, 40, false, true},  {100, 7, true, false},
                        {100, 96, false, false},
                        {300, 64, false, true}, {3000, 64, false, false}, {9000, 40, false, false},
                        {5000, 70, false, false, true}};
  for (const Case& cs : cases)
    for (const int leaf : {kess::detail::gauss_jordan::kLuLeaf, 8, 64})
    for (const PanelLeaf mode : {PanelLeaf::grid, PanelLeaf::pipelined, PanelLeaf::columns}) {
      if (leaf == 64 && mode != PanelLeaf::grid) continue;
      HostMat A("A", cs.rows, cs.b);
      for (int c = 0; c < cs.b; ++c)
        for (int r = 0; r < cs.rows; ++r) {
          double v = kess::gen::random_general_entry(cs.rows + 7 * cs.b, r, c);
          if (cs.zero_col && c == 2) v = 0.0;
          if (cs.ties && c == 0) v = (r % 3 == 1) ? -4.0 : (r % 3 == 2 ? 4.0 : 1.0);  // first max: row 1
          // equal magnitudes at rows/2 and rows-1 (column 0), and at rows/3 and 2 rows/3 of
          // column 1 (multipliers 0 there, so they stay equal): the lower row wins
          if (cs.far_ties && c == 0 && (r == cs.rows / 2 || r == cs.rows - 1))
            v = r == cs.rows - 1 ? 9.0 : -9.0;
          if (cs.far_ties && c == 0 && (r == cs.rows / 3 || r == 2 * cs.rows / 3)) v = 0.0;
          if (cs.far_ties && c == 1 && (r == cs.rows / 3 || r == 2 * cs.rows / 3))
            v = r == cs.rows / 3 ? 50.0 : -50.0;
          A(r, c) = v;
        }
      HostMat R("R", cs.rows, cs.b);
      Kokkos::deep_copy(R, A);
      std::vector<int> ipiv(cs.b);
      kess::core::lapack::getrf(cs.rows, cs.b, R.data(), cs.rows, ipiv.data());  // info > 0: zero pivot, fine
      const PanelLu got = device_panel_lu(A, mode, leaf);
      SCOPED_TRACE("rows=" + std::to_string(cs.rows) + " b=" + std::to_string(cs.b) + " leaf=" +
                   std::to_string(leaf) +
                   (mode == PanelLeaf::grid        ? " grid leaves"
                    : mode == PanelLeaf::pipelined ? " pipelined leaves"
                                                   : " column kernels"));
      for (int i = 0; i < cs.b; ++i)
        ASSERT_EQ(got.piv[i], ipiv[i] - 1) << "interchange of column " << i;
      double scale = 0, diff = 0;
      for (int c = 0; c < cs.b; ++c)
        for (int r = 0; r < cs.rows; ++r) {
          scale = kess_test::worse(scale, std::abs(R(r, c)));
          diff = kess_test::worse(diff, std::abs(got.lu(r, c) - R(r, c)));
        }
      EXPECT_LE(diff, 1e-13 * cs.b * scale);
    }
}

// Tournament pivoting in the leaves (CUDA; elsewhere the partial-pivoting leaves run): other
// interchanges than dgetrf's, so the check is the factorization itself — the interchanges applied
// to A equal L U to rounding, with L unit lower triangular and its entries bounded (partial
// pivoting's are <= 1; a tournament's may exceed 1, on random panels by little). Cases: panels
// up to 9000 rows (several leaves a panel, slabs of every size, a last slab shorter than the
// leaf), a zero column, tied magnitudes near and far apart, leaf widths 32 and 8.
TEST(GaussJordanPanel, DeviceLuTournamentFactorsThePanel) {
  struct Case { int rows, b; bool zero_col, ties; };
  const Case cases[] = {{64, 32, false, false},  {100, 7, true, false},  {300, 64, false, true},
                        {2049, 33, false, false}, {3000, 64, true, false}, {9000, 40, false, true},
                        {5000, 70, false, false}};
  for (const Case& cs : cases)
    for (const int leaf : {kess::detail::gauss_jordan::kLuLeaf, 8}) {
      SCOPED_TRACE("rows=" + std::to_string(cs.rows) + " b=" + std::to_string(cs.b) +
                   " leaf=" + std::to_string(leaf));
      HostMat A("A", cs.rows, cs.b);
      double amax = 0;
      for (int c = 0; c < cs.b; ++c)
        for (int r = 0; r < cs.rows; ++r) {
          double v = kess::gen::random_general_entry(cs.rows + 11 * cs.b, r, c);
          if (cs.zero_col && c == 2) v = 0.0;
          if (cs.ties && c == 0) v = (r % 97 == 5) ? -4.0 : (r % 97 == 50 ? 4.0 : v);
          A(r, c) = v;
          amax = kess_test::worse(amax, std::abs(v));
        }
      const PanelLu got = device_panel_lu(A, PanelLeaf::tournament, leaf);
      HostMat PA = copy_of(A);
      for (int j = 0; j < cs.b; ++j) {
        ASSERT_GE(got.piv[j], j);
        ASSERT_LT(got.piv[j], cs.rows);
        if (got.piv[j] != j)
          for (int c = 0; c < cs.b; ++c) std::swap(PA(j, c), PA(got.piv[j], c));
      }
      double lmax = 0, umax = 0, diff = 0;
      for (int c = 0; c < cs.b; ++c)
        for (int r = 0; r < cs.rows; ++r) {
          if (r > c) lmax = kess_test::worse(lmax, std::abs(got.lu(r, c)));
          if (r <= c) umax = kess_test::worse(umax, std::abs(got.lu(r, c)));
        }
      for (int c = 0; c < cs.b; ++c)
        for (int r = 0; r < cs.rows; ++r) {
          double lu = 0;  // (L U)(r, c) = sum over k <= min(r, c) of L(r, k) U(k, c)
          for (int k = 0; k <= std::min(r, c); ++k)
            lu += (k == r ? 1.0 : got.lu(r, k)) * got.lu(k, c);
          diff = kess_test::worse(diff, std::abs(PA(r, c) - lu));
        }
      EXPECT_LE(diff, 20.0 * cs.b * kEps * std::max(amax, lmax * umax)) << "P A - L U";
      EXPECT_LE(lmax, 8.0) << "largest multiplier";
    }
}

// NaN in the panel (check_input off upstream): every leaf kernel finishes (the grid leaf waits
// on published words, none of which may look unwritten), NaNs never become pivots, a column that is
// NaN from its diagonal down takes no interchange, and all kernels give the same interchanges and
// the same L \ U (NaN where the others have NaN, equal to rounding elsewhere).
TEST(GaussJordanPanel, DeviceLuWithNaN) {
  const int rows = 2500, b = 40, nan_row = 1234;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  HostMat A("A", rows, b);
  for (int c = 0; c < b; ++c)
    for (int r = 0; r < rows; ++r) {
      double v = kess::gen::random_general_entry(91, r, c);
      if (c == 5 && r == nan_row) v = nan;  // one NaN: its row turns NaN from column 5 on
      if (c == 25 && r >= 25) v = nan;      // a NaN column from the diagonal down
      A(r, c) = v;
    }
  std::vector<HostMat> out;
  std::vector<std::vector<int>> pivs;
  for (const PanelLeaf mode : {PanelLeaf::grid, PanelLeaf::pipelined, PanelLeaf::columns}) {
    PanelLu got = device_panel_lu(A, mode);
    out.push_back(got.lu);
    pivs.push_back(std::move(got.piv));
  }
  for (int j = 0; j < b; ++j) {
    EXPECT_NE(pivs[0][j], nan_row) << "a NaN row became the pivot of column " << j;
    if (j >= 25) EXPECT_EQ(pivs[0][j], j) << "NaN column " << j << " took an interchange";
  }
  {  // the tournament leaves finish too; rows that are NaN in a column never win it
    const PanelLu t = device_panel_lu(A, PanelLeaf::tournament);
    for (int j = 0; j < b; ++j) {
      EXPECT_GE(t.piv[j], j);
      EXPECT_LT(t.piv[j], rows);
      if (j >= 5 && j < 25) EXPECT_NE(t.piv[j], nan_row) << "tournament, column " << j;
    }
  }
  for (std::size_t m = 1; m < out.size(); ++m) {
    SCOPED_TRACE("leaf kernel " + std::to_string(m) + " against the grid leaf");
    EXPECT_EQ(pivs[m], pivs[0]);
    std::int64_t nan_mismatch = 0;
    double diff = 0;
    for (int c = 0; c < b; ++c)
      for (int r = 0; r < rows; ++r) {
        const double x = out[m](r, c), y = out[0](r, c);
        if (std::isnan(x) != std::isnan(y))
          ++nan_mismatch;
        else if (!std::isnan(x))
          diff = kess_test::worse(diff, std::abs(x - y));
      }
    EXPECT_EQ(nan_mismatch, 0);
    EXPECT_LE(diff, 1e-12);
  }
}

TEST(GaussJordan, DeterminantOfKnownMatrix) {
  // diag(2, -3, 0.5, 4) under a permutation: det = -12 * sign(perm).
  const int n = 4;
  HostMat A("A", n, n);
  A(1, 0) = 2.0;
  A(0, 1) = -3.0;
  A(2, 2) = 0.5;
  A(3, 3) = 4.0;  // one swap of rows 0 and 1 of diag(2,-3,..): det = -(2 * -3 * 0.5 * 4) = 12
  DevMat Ad = to_device(A);
  const auto r = kess::inverse(TestExecSpace(), Ad);
  EXPECT_EQ(r.det_sign, 1);
  EXPECT_NEAR(r.determinant(), 12.0, 1e-13);
  EXPECT_NEAR(r.min_abs_pivot, 0.5, 0.0);
  EXPECT_NEAR(r.max_abs_pivot, 4.0, 0.0);
}

// dst = src on the test's backend (dst: a subview, so deep_copy's contiguity rules do not apply).
template <class Dst>
void copy_into(const Dst& dst, const DevMat& src) {
  Kokkos::parallel_for(
      "copy_into", Kokkos::RangePolicy<TestExecSpace>(0, static_cast<int>(src.extent(1))),
      KOKKOS_LAMBDA(int j) {
        for (int i = 0; i < static_cast<int>(src.extent(0)); ++i) dst(i, j) = src(i, j);
      });
  Kokkos::fence();
}

// Where solve works: in a copy of A or (overwrite_a) in A itself; in B itself (LayoutLeft, also a
// strided subview of a larger matrix, whose other entries must stay as they were) or in a work
// copy (LayoutRight). Same operations on the same numbers: the same answer to rounding.
TEST(GaussJordan, InPlaceAndCopiedStorageAgree) {
  const int n = 150, m = 40;
  const HostMat A = test_matrix(n, 71), B = kess::gen::random_general(n, m, 72);
  TestExecSpace exec;
  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device}) {
    SCOPED_TRACE(panel == kess::GaussJordanPanel::host ? "host panel" : "device panel");
    kess::GaussJordanOptions o;
    o.block = 32;
    o.panel = panel;
    DevMat Ad = to_device(A), Bd = to_device(B);
    kess::solve(exec, Ad, Bd, o);
    const HostMat Y = to_host(Bd);
    EXPECT_EQ(diff_inf(to_host(Ad), A), 0.0) << "A must not be modified without overwrite_a";
    EXPECT_LE(backward_error(A, Y, B), 10.0 * n * kEps);
    const double tol = 1e-13 * norm_inf(Y);

    // A's own storage.
    kess::GaussJordanOptions ow = o;
    ow.overwrite_a = true;
    DevMat A2 = to_device(A), B2 = to_device(B);
    const auto r2 = kess::solve(exec, A2, B2, ow);
    EXPECT_LE(diff_inf(to_host(B2), Y), tol);
    EXPECT_GT(diff_inf(to_host(A2), A), 0.0) << "overwrite_a: A is the work matrix";
    EXPECT_EQ(r2.n, n);

    // B as the middle of a larger matrix (leading dimension n + 7).
    const double sentinel = -12345.0;
    DevMat big("big", n + 7, m + 3);
    Kokkos::deep_copy(big, sentinel);
    auto Bs = Kokkos::subview(big, Kokkos::make_pair(2, 2 + n), Kokkos::make_pair(1, 1 + m));
    copy_into(Bs, to_device(B));
    DevMat A3 = to_device(A);
    kess::solve(exec, A3, Bs, ow);
    const HostMat bigh = to_host(big);
    double off = 0;
    for (int j = 0; j < m + 3; ++j)
      for (int i = 0; i < n + 7; ++i) {
        const bool inside = i >= 2 && i < 2 + n && j >= 1 && j < 1 + m;
        if (inside)
          off = kess_test::worse(off, std::abs(bigh(i, j) - Y(i - 2, j - 1)));
        else
          EXPECT_EQ(bigh(i, j), sentinel) << "entry (" << i << ", " << j << ") outside B";
      }
    EXPECT_LE(off, tol);

    // LayoutRight B: through a work copy.
    Kokkos::View<double**, Kokkos::LayoutRight, TestMemSpace> Br("Br", n, m);
    {
      auto Brh = Kokkos::create_mirror_view(Br);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < m; ++j) Brh(i, j) = B(i, j);
      Kokkos::deep_copy(Br, Brh);
    }
    kess::solve(exec, to_device(A), Br, o);
    auto Brh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Br);
    double dr = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j) dr = kess_test::worse(dr, std::abs(Brh(i, j) - Y(i, j)));
    EXPECT_LE(dr, tol);
  }
  // overwrite_a needs a writable A.
  Kokkos::View<const double**, Kokkos::LayoutLeft, TestMemSpace> Ac = to_device(A);
  DevMat Bd = to_device(B);
  kess::GaussJordanOptions ow;
  ow.overwrite_a = true;
  try {
    kess::solve(exec, Ac, Bd, ow);
    ADD_FAILURE() << "no kess::Error for overwrite_a with a read-only A";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("overwrite_a"), std::string::npos) << e.what();
  }
}

TEST(GaussJordan, EmptyMatrix) {
  DevMat A("A", 0, 0), B("B", 0, 3);
  const auto r = kess::solve(TestExecSpace(), A, B);
  EXPECT_EQ(r.n, 0);
  EXPECT_EQ(r.det_sign, 1);
  EXPECT_EQ(r.log_abs_det, 0.0);
  EXPECT_EQ(kess::inverse(TestExecSpace(), A).n, 0);
}

// ---- bad inputs -----------------------------------------------------------------------------
using kess_test::expect_error;

TEST(GaussJordanErrors, Shapes) {
  TestExecSpace exec;
  DevMat A("A", 4, 5), B("B", 4, 2), Sq("Sq", 4, 4), B3("B3", 3, 2);
  auto e = expect_error([&] { kess::solve(exec, A, B); }, kess::ErrorKind::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("square"), std::string::npos) << e.what();
  e = expect_error([&] { kess::solve(exec, Sq, B3); }, kess::ErrorKind::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("'B'"), std::string::npos) << e.what();
  expect_error([&] { kess::inverse(exec, A); }, kess::ErrorKind::invalid_argument);
  kess::GaussJordanOptions o;
  o.block = -2;
  expect_error([&] { kess::inverse(exec, Sq, o); }, kess::ErrorKind::invalid_argument);
}

TEST(GaussJordanErrors, NonFinite) {
  TestExecSpace exec;
  HostMat A = test_matrix(6, 1), B = kess::gen::random_general(6, 2, 2);
  A(2, 3) = std::numeric_limits<double>::quiet_NaN();
  DevMat Ad = to_device(A), Bd = to_device(B);
  auto e = expect_error([&] { kess::solve(exec, Ad, Bd); }, kess::ErrorKind::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("NaN or Inf"), std::string::npos) << e.what();
  expect_error([&] { kess::inverse(exec, Ad); }, kess::ErrorKind::invalid_argument);
  HostMat A2 = test_matrix(6, 1);
  B(5, 1) = std::numeric_limits<double>::infinity();
  DevMat A2d = to_device(A2), B2d = to_device(B);
  e = expect_error([&] { kess::solve(exec, A2d, B2d); }, kess::ErrorKind::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("'B'"), std::string::npos) << e.what();
}

TEST(GaussJordanErrors, ExactlySingularNamesTheColumn) {
  TestExecSpace exec;
  const int n = 20;
  HostMat A = test_matrix(n, 4);
  for (int i = 0; i < n; ++i) A(i, 13) = 0.0;  // column 13 is zero
  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device})
  for (int nb : {1, 4, 0}) {
    kess::GaussJordanOptions o;
    o.block = nb;
    o.panel = panel;
    DevMat Ad = to_device(A);
    auto e = expect_error([&] { kess::inverse(exec, Ad, o); }, kess::ErrorKind::singular);
    EXPECT_NE(std::string(e.what()).find("column 13"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exactly 0"), std::string::npos) << e.what();
  }
}

// A singular column in a later panel: on host backends with kess's host GEMM that panel is
// factored on one of the update's threads beside the previous step's update; the error must come
// back from there, name the column, and leave no thread behind (the next solve works).
TEST(GaussJordanErrors, SingularLaterPanelFactoredBesideTheUpdate) {
  TestExecSpace exec;
  const int n = 600;
  HostMat A = test_matrix(n, 8);
  for (int i = 0; i < n; ++i) A(i, 400) = 0.0;
  for (int nb : {64, 0}) {
    kess::GaussJordanOptions o;
    o.block = nb;
    o.panel = kess::GaussJordanPanel::host;
    DevMat Ad = to_device(A), Bd("B", n, n);
    auto e = expect_error([&] { kess::solve(exec, Ad, Bd, o); }, kess::ErrorKind::singular);
    EXPECT_NE(std::string(e.what()).find("column 400"), std::string::npos) << e.what();
    DevMat Rd = to_device(test_matrix(n, 9));
    EXPECT_NO_THROW(kess::inverse(exec, Rd, o));
  }
}

TEST(GaussJordanErrors, NumericallySingularNamesColumnAndMagnitude) {
  TestExecSpace exec;
  const int n = 30;
  HostMat A = test_matrix(n, 6);
  // column 29 = column 0 + column 1 (up to rounding): the last pivot is O(eps) ||A||.
  for (int i = 0; i < n; ++i) A(i, n - 1) = A(i, 0) + A(i, 1);
  for (const auto panel : {kess::GaussJordanPanel::host, kess::GaussJordanPanel::device}) {
    kess::GaussJordanOptions o;
    o.panel = panel;
    DevMat Ad = to_device(A), Bd("B", n, 1);
    auto e = expect_error([&] { kess::solve(exec, Ad, Bd, o); }, kess::ErrorKind::singular);
    EXPECT_NE(std::string(e.what()).find("column 29"), std::string::npos) << e.what();
    EXPECT_TRUE(std::string(e.what()).find("magnitude") != std::string::npos ||
                std::string(e.what()).find("exactly 0") != std::string::npos)
        << e.what();
    o.pivot_tolerance = 2.0;  // a huge tolerance flags a regular matrix too
    DevMat Rd = to_device(test_matrix(n, 7));
    e = expect_error([&] { kess::inverse(exec, Rd, o); }, kess::ErrorKind::singular);
    EXPECT_NE(std::string(e.what()).find("column 0 "), std::string::npos) << e.what();
  }
}

}  // namespace
