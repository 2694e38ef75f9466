// The stages of the two-stage eigensolver one by one: band_reduce (Eq. 6a) with its
// back-transformation (Eq. 6e), and bulge_chase (Eq. 6b) with the stage-4 ordering (Eq. 6d).
#include <kess/solvers/eigh/detail/band_reduce.hpp>
#include <kess/solvers/eigh/detail/band_backtransform.hpp>
#include <kess/solvers/eigh/detail/hh_chase.hpp>
#include <kess/core/kokkos/team.hpp>
#include <kess/solvers/eigh/detail/bulge_chase.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/host/simd.hpp>
#include <kess/core/linalg/lapack.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"
#include "test_eigh_common.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <type_traits>

namespace {

using eigh_test::HostMat;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;

HostMat band_to_dense(const kess::detail::eigh::BandMatrix& B, int width) {
  HostMat D("D", B.n, B.n);
  for (int c = 0; c < B.n; ++c)
    for (int r = c; r < std::min(B.n, c + width + 1); ++r) D(r, c) = D(c, r) = B(r, c);
  return D;
}

double max_diff(const HostMat& A, const HostMat& B) {
  double m = 0;
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) m = kess_test::worse(m, std::abs(A(i, j) - B(i, j)));
  return m;
}

HostMat identity(int n, int rows) {
  HostMat I("I", rows, n);
  for (int i = 0; i < n; ++i) I(i, i) = 1.0;
  return I;
}

/// Stage 1 of A (n x n, half-width b) on the test backend with the given panel path (and, for
/// the device path, panel kernel).
kess::detail::eigh::BandReflectors<TestMemSpace> reduce(
    const HostMat& A, int b, kess::detail::eigh::PanelQR panel, kess::detail::eigh::BandMatrix& band,
    kess::core::PanelKernel kernel = kess::core::PanelKernel::automatic) {
  const int n = A.extent(0);
  DevMat W("W", n, n);
  Kokkos::deep_copy(W, A);
  return kess::detail::eigh::band_reduce(TestExecSpace(), W, b, band, nullptr, panel, kernel);
}

/// The stage-1 paths every band_reduce test runs: host LAPACK, the device path with its automatic
/// panel kernel, and the device path with CholeskyQR2 wherever it applies (automatic takes it
/// only for panels of >= 3072 rows, larger than these tests).
struct Stage1Path {
  kess::detail::eigh::PanelQR panel;
  kess::core::PanelKernel kernel;
  const char* name;
};
const Stage1Path kStage1Paths[] = {
    {kess::detail::eigh::PanelQR::host, kess::core::PanelKernel::automatic, " host panel"},
    {kess::detail::eigh::PanelQR::device, kess::core::PanelKernel::automatic, " device panel"},
    {kess::detail::eigh::PanelQR::device, kess::core::PanelKernel::cholqr, " device panel, CholeskyQR2"}};

/// Q Z by band_backtransform (merge: panels per WY block, 0 automatic), back on the host.
HostMat apply_q(const kess::detail::eigh::BandReflectors<TestMemSpace>& refl, const HostMat& Z, int merge = 0) {
  TestExecSpace exec;
  DevMat Zd("Z", Z.extent(0), Z.extent(1));
  Kokkos::deep_copy(Zd, Z);
  kess::detail::eigh::band_backtransform(exec, refl, Zd, merge);
  exec.fence();
  HostMat out("QZ", Z.extent(0), Z.extent(1));
  Kokkos::deep_copy(out, Zd);
  return out;
}

// Q from band_backtransform applied to I; then Q^T A Q must be the band matrix, and zero outside.
TEST(BandReduce, TwoSidedTransformIsExact) {
  for (const Stage1Path& path : kStage1Paths)
  for (int n : {1, 2, 5, 7, 8, 9, 10, 11, 12, 13, 33, 100, 301}) {
    for (int b : {1, 3, 8, 40, 64}) {
      HostMat A = kess::gen::random_symmetric(n, 11 * n + b);
      kess::detail::eigh::BandMatrix band;
      const auto refl = reduce(A, b, path.panel, band, path.kernel);
      const HostMat Qh = apply_q(refl, identity(n, n));
      HostMat B = eigh_test::mul(eigh_test::mul(Qh, A, 'T', 'N'), Qh);  // Q^T A Q
      const std::string what = "n=" + std::to_string(n) + " b=" + std::to_string(b) + path.name;
      EXPECT_LE(max_diff(B, band_to_dense(band, b)), 1e-13 * n) << what;
      EXPECT_LE(eigh_test::orthogonality(Qh), 1e-13 * n) << what;
    }
  }
}

// Stage 5 with consecutive panels merged into larger WY blocks (the GPU default is 8): the same
// Q Z as one panel at a time, for group sizes that do and do not divide the panel count, a last
// panel narrower than b, and both panel QR paths.
TEST(BandReduce, MergedBacktransformMatchesPanelByPanel) {
  for (const Stage1Path& path : kStage1Paths)
    for (int n : {2, 9, 70, 203})
      for (int b : {1, 8, 32}) {
        kess::detail::eigh::BandMatrix band;
        const auto refl = reduce(kess::gen::random_symmetric(n, 7 * n + b), b, path.panel, band, path.kernel);
        const HostMat Z0 = kess::gen::random_symmetric(n, 3 * n + b);  // any n x n matrix
        const HostMat ref = apply_q(refl, Z0, 1);
        for (int g : {2, 3, 4, 7, 8}) {
          const HostMat got = apply_q(refl, Z0, g);
          const std::string what = "n=" + std::to_string(n) + " b=" + std::to_string(b) +
                                   " merge=" + std::to_string(g) + " panels=" +
                                   std::to_string(refl.panels);
          EXPECT_LE(max_diff(got, ref), 1e-13 * n) << what;
        }
        if (n >= b + 2) EXPECT_GT(max_diff(ref, Z0), 1e-3) << "Q = I? n=" << n << " b=" << b << " panels=" << refl.panels;
      }
}

// The device panel QR, both kernels (generic: every pass over L2; registers: each column held by
// a team), against LAPACK dgeqrf on the host: same convention, so R, V and tau agree to rounding.
// Shapes: tall, short (m < nb), one row/column, a zero column (tau = 0) and columns scaled by
// 1e-200 and 1e200 (the unscaled sum of squares under/overflows and must be rescaled).
TEST(BandReduce, DevicePanelMatchesDgeqrf) {
  using Tau = Kokkos::View<double*, TestMemSpace>;
  using kess::core::PanelKernel;
  // graded: column c scaled by 10^(-3 c / (nb - 1)) (cond ~ 1e3, CholeskyQR2 still applies);
  // dependent: column 3 = column 2 + 1e-9 noise (cond ~ 1e9: CholeskyQR2 must decline).
  struct Case { int m, nb; double scale; bool zero_col, graded = false, dependent = false; };
  const Case cases[] = {{1, 1, 1, false},   {5, 3, 1, false},      {3, 5, 1, false},
                        {32, 8, 1, false},  {31, 32, 1, false},    {200, 16, 1, true},
                        {24, 6, 1e-200, false}, {24, 6, 1e200, false}, {1000, 64, 1, false},
                        {9000, 64, 1, false}, {20000, 8, 1e-200, false},
                        {2000, 32, 1, false, true}, {500, 8, 1, false, false, true},
                        {64, 32, 1e150, false}, {300, 24, 1e-90, false, true}};
  for (const Case& cs : cases)
    for (auto kernel : {PanelKernel::generic, PanelKernel::pipelined, PanelKernel::cholqr}) {
      const int ts = kess::kx::column_team_size<TestExecSpace>(cs.m);
      if (kernel == PanelKernel::pipelined && kess::kx::column_rows_per_thread(cs.m, ts) == 0)
        continue;  // does not fit a team's registers on this backend
      HostMat A("A", cs.m, cs.nb);
      for (int c = 0; c < cs.nb; ++c)
        for (int r = 0; r < cs.m; ++r) {
          const double g = cs.graded ? std::pow(10.0, -3.0 * c / std::max(1, cs.nb - 1)) : 1.0;
          A(r, c) = (cs.zero_col && c == 1) ? 0.0 : g * cs.scale * kess::gen::random_entry(cs.m + cs.nb, r, c);
        }
      if (cs.dependent)
        for (int r = 0; r < cs.m; ++r) A(r, 3) = A(r, 2) + 1e-9 * kess::gen::random_entry(7, r, 3);
      const int k = std::min(cs.m, cs.nb);
      HostMat R("R", cs.m, cs.nb);
      Kokkos::deep_copy(R, A);
      std::vector<double> tref(std::max(1, k));
      ASSERT_EQ(kess::core::lapack::geqrf(cs.m, cs.nb, R.data(), cs.m, tref.data()), 0);
      DevMat P("P", cs.m, cs.nb);
      Tau tau("tau", cs.nb);
      Kokkos::deep_copy(P, A);
      const PanelKernel ran = kess::core::panel_qr_device(TestExecSpace(), P, tau, kernel);
      HostMat Ph("Ph", cs.m, cs.nb);
      Kokkos::deep_copy(Ph, P);
      auto th = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tau);
      const std::string what = "m=" + std::to_string(cs.m) + " nb=" + std::to_string(cs.nb) +
                               " scale=" + std::to_string(cs.scale) + " kernel " +
                               std::to_string(static_cast<int>(kernel)) + " ran " +
                               std::to_string(static_cast<int>(ran));
      // CholeskyQR2 runs exactly where it applies: tall, full-rank, moderately conditioned,
      // ordinarily scaled panels; everything else falls back to Householder QR.
      const bool cholqr_applies = cs.m >= 2 * cs.nb && cs.nb >= 8 && cs.nb <= 64 && !cs.zero_col && !cs.dependent &&
                                  cs.scale > 1e-95 && cs.scale < 1e95;
      if (kernel == PanelKernel::cholqr)
        EXPECT_EQ(ran == PanelKernel::cholqr, cholqr_applies) << what;
      else
        EXPECT_EQ(ran, kernel) << what;
      double rmax = 0, rdiff = 0, vdiff = 0;
      for (int c = 0; c < cs.nb; ++c)
        for (int r = 0; r < cs.m; ++r) {
          if (r <= c) {
            rmax = kess_test::worse(rmax, std::abs(R(r, c)));
            rdiff = kess_test::worse(rdiff, std::abs(Ph(r, c) - R(r, c)));
          } else if (c < k) {
            vdiff = kess_test::worse(vdiff, std::abs(Ph(r, c) - R(r, c)));
          }
        }
      // The graded panel (cond ~ 1e3): V and tau agree to ~ cond eps (the forward error of a
      // backward-stable QR).
      const double cond = cs.dependent ? 1e9 : (cs.graded ? 1e3 : 1.0);
      EXPECT_LE(rdiff, 1e-13 * std::sqrt(double(cs.m)) * rmax * cond) << what;
      EXPECT_LE(vdiff, 1e-12 * cond) << what;  // v is O(1)
      for (int j = 0; j < k; ++j) EXPECT_NEAR(th(j), tref[j], 1e-13 * cond) << what << " j=" << j;
      if (cs.zero_col && cs.nb > 1) EXPECT_EQ(th(1), 0.0) << what;
    }
}

// Bulge chase of a random band matrix: Q from hh_chase (stage-4 order) must satisfy
// Q^T B Q = T, which proves the reordering "sweep descending, stage ascending" legal. On host
// backends also as on a CPU without AVX-512 (the chase's 4-wide step, stage 4 through OpenBLAS).
TEST(BulgeChase, StageFourOrderReproducesQ) {
  for (int wide : {1, 0})
  for (int n : {3, 4, 9, 50, 131}) {
    for (int b : {2, 3, 7, 16, 33}) {
     for (bool use_blas : {true, false}) {
      if (b >= n) continue;
      kess::core::detail::set_host_wide_vectors(wide);
      kess::detail::eigh::BandMatrix B(n, b);
      for (int c = 0; c < n; ++c)
        for (int r = c; r < std::min(n, c + b + 1); ++r)
          B(r, c) = kess::gen::random_entry(5 + b, r, c);
      HostMat Bd = band_to_dense(B, b);
      std::vector<double> d, e;
      kess::detail::eigh::ChaseReflectors refl;
      kess::detail::eigh::bulge_chase(B, d, e, &refl);
      TestExecSpace exec;
      DevMat Y("Y", n + b, n);
      Kokkos::deep_copy(Y, identity(n, n + b));
      auto V = Kokkos::create_mirror_view_and_copy(TestMemSpace(), refl.V);
      auto tau = Kokkos::create_mirror_view_and_copy(TestMemSpace(), refl.tau);
      kess::HhChaseOptions hh;
      hh.tuning.host_blas = use_blas;
      kess::detail::eigh::hh_chase(exec, refl, V, tau, Y, hh);
      exec.fence();
      HostMat Yh("Yh", n + b, n);
      Kokkos::deep_copy(Yh, Y);
      HostMat Q("Q", n, n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) Q(i, j) = Yh(i, j);
      for (int j = 0; j < n; ++j)
        for (int i = n; i < n + b; ++i) EXPECT_EQ(Yh(i, j), 0.0);  // padding untouched
      HostMat T = eigh_test::mul(eigh_test::mul(Q, Bd, 'T', 'N'), Q);
      HostMat Tref("T", n, n);
      for (int i = 0; i < n; ++i) Tref(i, i) = d[i];
      for (int i = 0; i + 1 < n; ++i) Tref(i + 1, i) = Tref(i, i + 1) = e[i];
      kess::core::detail::set_host_wide_vectors(-1);
      const std::string what = "n=" + std::to_string(n) + " b=" + std::to_string(b) +
                               (use_blas ? " host BLAS" : " hh_chase_apply") + " wide=" + std::to_string(wide);
      EXPECT_LE(max_diff(T, Tref), 1e-13 * n) << what;
      EXPECT_LE(eigh_test::orthogonality(Q), 1e-13 * n) << what;
     }
    }
  }
}

// Stage 4 at b = 64 (the tensor-core kernels on CUDA) against Q from the host: one launch a sweep,
// and the cyclic schedule over the sweeps (round_blocks > 0: a few blocks a launch, so that every
// launch but the first meets two sweeps and wraps around the column blocks; n = 330 leaves a last
// sweep of 8 reflectors to the per-sweep path). Other backends run their own kernels here.
TEST(BulgeChase, StageFourRoundsMatchHost) {
  const int b = 64;
  for (int n : {300, 330}) {
    kess::detail::eigh::BandMatrix B(n, b);
    for (int c = 0; c < n; ++c)
      for (int r = c; r < std::min(n, c + b + 1); ++r) B(r, c) = kess::gen::random_entry(17, r, c);
    std::vector<double> d, e;
    kess::detail::eigh::ChaseReflectors refl;
    kess::detail::eigh::bulge_chase(B, d, e, &refl);
    // 8 column blocks of the 8-warp kernel on CUDA; fewer columns for the host kernels.
    const int NC = std::is_same<TestMemSpace, Kokkos::HostSpace>::value ? 200 : 1000;
    HostMat X0("X0", n + b, NC);
    for (int c = 0; c < NC; ++c)
      for (int r = 0; r < n; ++r) X0(r, c) = kess::gen::random_entry(23, r, c);
    HostMat Yref = eigh_test::copy_of(X0);
    kess::detail::eigh::hh_chase(Kokkos::DefaultHostExecutionSpace(), refl, refl.V, refl.tau, Yref);
    TestExecSpace exec;
    auto V = Kokkos::create_mirror_view_and_copy(TestMemSpace(), refl.V);
    auto tau = Kokkos::create_mirror_view_and_copy(TestMemSpace(), refl.tau);
    for (int rounds : {0, 3, 7, -1}) {
      DevMat Y("Y", n + b, NC);
      Kokkos::deep_copy(Y, X0);
      kess::HhChaseOptions hh;
      hh.tuning.round_blocks = rounds;
      hh.tuning.host_blas = false;  // host backends: the portable kernel against the BLAS reference
      kess::detail::eigh::hh_chase(exec, refl, V, tau, Y, hh);
      exec.fence();
      HostMat Yh("Yh", n + b, NC);
      Kokkos::deep_copy(Yh, Y);
      double xmax = 0;
      for (int c = 0; c < NC; ++c)
        for (int r = 0; r < n; ++r) xmax = kess_test::worse(xmax, std::abs(X0(r, c)));
      const std::string what = "n=" + std::to_string(n) + " round_blocks=" + std::to_string(rounds);
      EXPECT_LE(max_diff(Yh, Yref), 1e-13 * std::sqrt(double(n)) * xmax) << what;
      for (int c = 0; c < NC; ++c)
        for (int r = n; r < n + b; ++r) ASSERT_EQ(Yh(r, c), 0.0) << what << " c=" << c;
    }
  }
}

// The pipelined bulge chase gives bitwise the sequential result, whatever the thread count and
// the stage grouping (every entry sees the same operations in the same order); for the 8-wide and
// the 4-wide step alike.
TEST(BulgeChase, ThreadCountDoesNotChangeTheResult) {
  for (int wide : {1, 0})
  for (int n : {5, 64, 301}) {
    for (int b : {2, 5, 16, 40}) {
      if (b >= n) continue;
      kess::detail::eigh::BandMatrix B0(n, b);
      for (int c = 0; c < n; ++c)
        for (int r = c; r < std::min(n, c + b + 1); ++r)
          B0(r, c) = kess::gen::random_entry(11 + b, r, c);
      std::vector<double> d1, e1;
      kess::detail::eigh::ChaseReflectors r1;
      kess::detail::eigh::BandMatrix B1 = B0;
      kess::core::detail::set_host_wide_vectors(wide);
      kess::detail::eigh::bulge_chase(B1, d1, e1, &r1, 1);
      for (int threads : {2, 3, 7})
      for (int group : {1, 4, 9}) {
        std::vector<double> d, e;
        kess::detail::eigh::ChaseReflectors r;
        kess::detail::eigh::BandMatrix Bt = B0;
        kess::detail::eigh::bulge_chase(Bt, d, e, &r, threads, group);
        const std::string what = "n=" + std::to_string(n) + " b=" + std::to_string(b) +
                                 " threads=" + std::to_string(threads) + " group=" + std::to_string(group);
        EXPECT_EQ(d, d1) << what << " wide=" << wide;
        EXPECT_EQ(e, e1) << what << " wide=" << wide;
        ASSERT_EQ(r.tau.extent(0), r1.tau.extent(0)) << what;
        for (size_t k = 0; k < r.tau.extent(0); ++k) {
          ASSERT_EQ(r.tau(k), r1.tau(k)) << what << " k=" << k << " wide=" << wide;
          for (int i = 0; i < b; ++i) ASSERT_EQ(r.V(i, k), r1.V(i, k)) << what << " k=" << k;
        }
      }
      kess::core::detail::set_host_wide_vectors(-1);
    }
  }
}

// A step leaves its right update of the block below to the stage's next step, which applies it
// in the same pass as its left update (kess::detail::eigh::chase_bulge's `pending`). Against the update made
// at once: a regular next step, one whose reflector is the identity (the block's first column
// zero below its top after the update: the deferred update must still reach the other columns),
// and one past the end of the matrix (the update alone). A dropped or misplaced update is O(1)
// off.
TEST(BulgeChase, DeferredRightUpdateMatchesImmediate) {
  for (int b : {5, 8}) {
    for (int kase = 0; kase < 3; ++kase) {
      const int n = kase == 2 ? 2 * b + 2 : 6 * b;
      kess::detail::eigh::BandMatrix B(n, b);
      for (int c = 0; c < n; ++c)
        for (int r = c; r < std::min(n, c + b + 1); ++r)
          B(r, c) = kess::gen::random_entry(5 + b, r, c);
      std::vector<double> v(b), w(b), y(2 * b), y2(2 * b);
      int pending = 0, pending2 = 0;
      // Stage 0 up to the step before the one under test.
      const int j = kase == 2 ? 2 : 1;
      for (int jj = 0; jj < j; ++jj)
        ASSERT_TRUE(kess::detail::eigh::chase_bulge(B.data.data(), B.ld(), n, b, 0, jj, v.data(),
                                              w.data(), y.data(), &pending, nullptr, nullptr));
      ASSERT_GT(pending, 0);
      const int r0 = 1 + j * b,
                c = r0 - b;  // the block: rows r0 .. r0+pending-1, columns c .. c+b-1
      if (kase == 1)         // column c becomes y s_0 below its top, zero after the update
        for (int k = 1; k < pending; ++k) B(r0 + k, c) = y[k] * y[b];
      kess::detail::eigh::BandMatrix A = B;  // the reference: the update at once
      for (int q = 0; q < b; ++q)
        for (int p = 0; p < pending; ++p) A(r0 + p, c + q) -= y[p] * y[b + q];
      if (kase == 1)  // exactly zero, also where a*b - c would be contracted
        for (int k = 1; k < pending; ++k) A(r0 + k, c) = 0.0;
      std::vector<double> va(b, 0.0), vb(b, 0.0);
      double ta = -1, tb = -1;
      const bool more_a = kess::detail::eigh::chase_bulge(A.data.data(), A.ld(), n, b, 0, j, v.data(),
                                                    w.data(), y2.data(), &pending2, va.data(), &ta);
      const bool more_b = kess::detail::eigh::chase_bulge(B.data.data(), B.ld(), n, b, 0, j, v.data(),
                                                    w.data(), y.data(), &pending, vb.data(), &tb);
      const std::string what = "b=" + std::to_string(b) + " case=" + std::to_string(kase);
      EXPECT_EQ(more_a, more_b) << what;
      EXPECT_EQ(more_b, kase != 2) << what;
      if (kase == 1) EXPECT_EQ(tb, 0.0) << what;
      EXPECT_NEAR(ta, tb, 1e-14) << what;
      for (int k = 0; k < b; ++k) EXPECT_NEAR(va[k], vb[k], 1e-14) << what << " k=" << k;
      // The next step's deferred updates agree too (same y and s up to rounding).
      EXPECT_EQ(pending, pending2) << what;
      for (int p = 0; p < pending; ++p) {
        EXPECT_NEAR(y[p], y2[p], 1e-13) << what << " p=" << p;
        EXPECT_NEAR(y[b + p], y2[b + p], 1e-13) << what << " p=" << p;
      }
      double diff = 0;
      for (int cc = 0; cc < n; ++cc)
        for (int r = cc; r < std::min(n, cc + 2 * b); ++r)
          diff = kess_test::worse(diff, std::abs(A(r, cc) - B(r, cc)));
      EXPECT_LE(diff, 1e-14) << what;
    }
  }
}

}  // namespace

// The team pipeline (stage 2 on the execution space) against the host version: the same
// tridiagonal matrix and the same reflectors up to rounding (both use dlarfg's sign convention;
// a wrong sign or a skipped update is O(1) off). Band entries scaled by 1e-160 and 1e200 make the
// team chase's unscaled sums of squares under- and overflow: its rescaled path must agree too.
TEST(BulgeChase, TeamPipelineMatchesHost) {
  // On CUDA both kernels: the dedicated one (eigh/cuda/bulge_chase.hpp) and the portable pipeline.
  std::vector<kess::detail::eigh::ChaseKernel> kernels{kess::detail::eigh::ChaseKernel::automatic};
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same<TestExecSpace, Kokkos::Cuda>::value) kernels.push_back(kess::detail::eigh::ChaseKernel::portable);
#endif
  for (const auto kernel : kernels) {
    auto check = [kernel](int n, int b, double s) {
        kess::detail::eigh::BandMatrix B0(n, b);
        for (int c = 0; c < n; ++c)
          for (int r = c; r < std::min(n, c + b + 1); ++r)
            B0(r, c) = s * kess::gen::random_entry(23 + b, r, c);
        std::vector<double> d1, e1, d, e;
        kess::detail::eigh::ChaseReflectors r1, meta;
        kess::detail::eigh::BandMatrix B1 = B0;
        kess::detail::eigh::bulge_chase(B1, d1, e1, &r1);
        kess::detail::eigh::ChaseReflectorsOn<TestMemSpace> out;
        kess::detail::eigh::bulge_chase_team(TestExecSpace(), B0, d, e, &meta, &out, kernel);
        const std::string what = "n=" + std::to_string(n) + " b=" + std::to_string(b) +
                                 " scale=" + std::to_string(s) +
                                 (kernel == kess::detail::eigh::ChaseKernel::portable ? " portable" : "");
        double scale = 0;
        for (double x : d1) scale = kess_test::worse(scale, std::abs(x));
        ASSERT_EQ(d.size(), d1.size());
        ASSERT_EQ(e.size(), e1.size());
        double dd = 0, de = 0;
        for (size_t i = 0; i < d.size(); ++i) dd = kess_test::worse(dd, std::abs(d[i] - d1[i]));
        for (size_t i = 0; i < e.size(); ++i) de = kess_test::worse(de, std::abs(e[i] - e1[i]));
        EXPECT_LE(dd, 1e-12 * scale * n) << what;
        EXPECT_LE(de, 1e-12 * scale * n) << what;
        ASSERT_EQ(meta.offset, r1.offset) << what;
        auto V = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out.V);
        auto tau = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out.tau);
        ASSERT_EQ(tau.extent(0), r1.tau.extent(0)) << what;
        double dv = 0;
        for (size_t k = 0; k < tau.extent(0); ++k) {
          dv = kess_test::worse(dv, std::abs(tau(k) - r1.tau(k)));
          for (int i = 0; i < b; ++i) dv = kess_test::worse(dv, std::abs(V(i, k) - r1.V(i, k)));
        }
        EXPECT_LE(dv, 1e-6) << what;  // later reflectors carry the rounding of earlier sweeps
    };
    for (int n : {3, 5, 64, 301, 700})
      for (int b : {2, 5, 16, 32, 64})
        if (b < n) check(n, b, 1.0);
    for (double s : {1e-160, 1e200}) {
      check(64, 16, s);
      check(301, 5, s);
      check(130, 64, s);
    }
    // Many stages in flight at once on a GPU (every block of the grid busy, stages wrapping around).
    if (!std::is_same<TestMemSpace, Kokkos::HostSpace>::value) check(2500, 64, 1.0);
  }
  kess::detail::eigh::BandMatrix wide(100, kess::detail::eigh::bulge_chase_team_max_b + 1);
  std::vector<double> d, e;
  EXPECT_THROW(kess::detail::eigh::bulge_chase_team(TestExecSpace(), wide, d, e, nullptr, nullptr), kess::Error);
}
