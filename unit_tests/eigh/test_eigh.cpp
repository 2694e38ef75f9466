// kess::eigh against LAPACK dsyevd on the host: eigenvalues, residuals, orthogonality, for the
// two-stage and one-stage paths, subsets, values only, generalized problems, prescribed spectra
// with clusters and multiplicities, and bad inputs.
#include <kess/core/host/simd.hpp>
#include <kess/solvers/eigh/detail/tridiag_bisect.hpp>
#include <kess/solvers/eigh/detail/tridiagonal.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/solvers/eigh.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"
#include "test_eigh_common.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {

using eigh_test::HostMat;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;

DevMat to_device(const HostMat& h) {
  DevMat d("kess::test::A", h.extent(0), h.extent(1));
  Kokkos::deep_copy(d, h);
  return d;
}

HostMat to_host(const DevMat& d) {
  HostMat h("h", d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, d);
  return h;
}

struct Check {
  double value_err = 0, residual = 0, orth = 0, norm = 0;
  std::string tridiagonal;  // the stage-3 routines used
};

/// Runs eigh and measures it against dsyevd (or against `exact` eigenvalues when given).
Check run_and_check(const HostMat& A, const kess::EighOptions& opts,
                    const std::vector<double>* exact = nullptr) {
  const int n = A.extent(0);
  TestExecSpace exec;
  auto r = kess::eigh(exec, to_device(A), opts);
  const int nev = opts.nev < 0 ? n : static_cast<int>(opts.nev);
  EXPECT_EQ(static_cast<int>(r.eigenvalues.extent(0)), nev);
  std::vector<double> ref = exact ? *exact : eigh_test::syevd_values(A);
  std::sort(ref.begin(), ref.end());
  Check c;
  c.tridiagonal = r.tridiagonal;
  for (double l : ref) c.norm = kess_test::worse(c.norm, std::abs(l));
  if (c.norm == 0) c.norm = 1;
  std::vector<double> lam(nev);
  for (int i = 0; i < nev; ++i) {
    lam[i] = r.eigenvalues(i);
    c.value_err = kess_test::worse(c.value_err, std::abs(lam[i] - ref[i]));
    if (i > 0) EXPECT_LE(lam[i - 1], lam[i]) << "not ascending at " << i;
  }
  if (opts.vectors && nev > 0) {
    EXPECT_EQ(static_cast<int>(r.eigenvectors.extent(0)), n);
    EXPECT_EQ(static_cast<int>(r.eigenvectors.extent(1)), nev);
    HostMat Z = to_host(r.eigenvectors);
    c.residual = eigh_test::residual(A, Z, lam);
    c.orth = eigh_test::orthogonality(Z);
  } else {
    EXPECT_EQ(r.eigenvectors.extent(1), 0u);
  }
  c.value_err /= c.norm;
  c.residual /= c.norm;
  return c;
}

/// LAPACK-level bound, 10 n eps: for eigenvalue errors and residuals relative to ||A||, and for
/// orthogonality.
double lapack_tol(int n) { return 10.0 * std::max(1, n) * std::numeric_limits<double>::epsilon(); }

void expect_accurate(const Check& c, int n, const std::string& what) {
  EXPECT_LE(c.value_err, lapack_tol(n)) << what;
  EXPECT_LE(c.residual, lapack_tol(n)) << what;
  EXPECT_LE(c.orth, lapack_tol(n)) << what;
}

// ---- the size x band x nev grid ------------------------------------------------------------------
class EighGrid : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(EighGrid, MatchesSyevd) {
  const auto [n, b, nev_code] = GetParam();
  const int nev = nev_code == 0 ? 1 : (nev_code == 1 ? std::max(1, n / 5) : n);
  HostMat A = kess::gen::random_symmetric(n, 1000 + n + b);
  kess::EighOptions opts = eigh_test::two_stage();
  opts.band_width = b;
  opts.nev = nev;
  expect_accurate(run_and_check(A, opts), n,
                  "n=" + std::to_string(n) + " b=" + std::to_string(b) + " nev=" + std::to_string(nev));
}

INSTANTIATE_TEST_SUITE_P(
    Small, EighGrid,
    ::testing::Combine(::testing::Values(1, 2, 3, 17, 100), ::testing::Values(0, 1, 2, 3, 8, 32),
                       ::testing::Values(0, 1, 2)),
    [](const auto& info) {
      return "n" + std::to_string(std::get<0>(info.param)) + "_b" +
             std::to_string(std::get<1>(info.param)) + "_nev" + std::to_string(std::get<2>(info.param));
    });

INSTANTIATE_TEST_SUITE_P(
    Medium, EighGrid,
    ::testing::Combine(::testing::Values(257), ::testing::Values(0, 5, 16, 64),
                       ::testing::Values(0, 1, 2)),
    [](const auto& info) {
      return "n" + std::to_string(std::get<0>(info.param)) + "_b" +
             std::to_string(std::get<1>(info.param)) + "_nev" + std::to_string(std::get<2>(info.param));
    });

// n = 1000 with b = 24 (does not divide n) and the automatic b.
INSTANTIATE_TEST_SUITE_P(
    Large, EighGrid,
    ::testing::Values(std::make_tuple(1000, 24, 2), std::make_tuple(1000, 0, 1),
                      std::make_tuple(1000, 0, 0)),
    [](const auto& info) {
      return "n" + std::to_string(std::get<0>(info.param)) + "_b" +
             std::to_string(std::get<1>(info.param)) + "_nev" + std::to_string(std::get<2>(info.param));
    });

TEST(Eigh, BandWiderThanMatrix) {
  for (int n : {1, 2, 3, 5, 10}) {
    kess::EighOptions opts = eigh_test::two_stage();
    opts.band_width = 16;  // n < b
    HostMat A = kess::gen::random_symmetric(n, 7);
    auto c = run_and_check(A, opts);
    expect_accurate(c, n, "n=" + std::to_string(n));
  }
}

// Matrices of 1e-300 to 1e300 (a random symmetric A0 times 2^k, exactly): every path and subset
// gives the eigenvalues of A0 times 2^k and A0's eigenvectors to the accuracy of an unscaled A0
// (eigh scales into the safe range as LAPACK's drivers do; unscaled, the tridiagonal's splitting
// test underflowed below 1e-154 and the subset's vectors were NaN at 1e300).
TEST(Eigh, TinyAndHugeScales) {
  const int n = 100;
  const HostMat A0 = kess::gen::random_symmetric(n, 41);
  for (const int k : {-997, -665, -400, 400, 665, 997}) {
    HostMat A = eigh_test::copy_of(A0);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) A(i, j) = std::ldexp(A0(i, j), k);
    for (const auto method : {kess::EighMethod::two_stage, kess::EighMethod::one_stage})
      for (const int nev : {n / 5, n}) {
        const std::string what = "2^" + std::to_string(k) + " nev " + std::to_string(nev) +
                                 (method == kess::EighMethod::one_stage ? " one-stage" : "");
        kess::EighOptions opts;
        opts.method = method;
        opts.nev = nev;
        TestExecSpace exec;
        auto r = kess::eigh(exec, to_device(A), opts);
        std::vector<double> ref = eigh_test::syevd_values(A0), lam(nev);
        double norm = 0;
        for (double l : ref) norm = std::max(norm, std::abs(l));
        double err = 0;
        for (int i = 0; i < nev; ++i) {
          lam[i] = std::ldexp(r.eigenvalues(i), -k);
          err = kess_test::worse(err, std::abs(lam[i] - ref[i]) / norm);
        }
        const HostMat Z = to_host(r.eigenvectors);
        EXPECT_LE(err, lapack_tol(n)) << what;
        EXPECT_LE(eigh_test::residual(A0, Z, lam) / norm, lapack_tol(n)) << what;
        EXPECT_LE(eigh_test::orthogonality(Z), lapack_tol(n)) << what;
      }
  }
}

// Hard matrices on every path (two-stage with the automatic stage 3 and with divide and conquer,
// one-stage; all vectors and a fifth), against dsyevd with LAPACK-level bounds: eigenvalues and
// residuals within 10 n eps ||A||, orthogonality within 10 n eps. Wilkinson W21+ and W41+
// (pairs agreeing to many digits), 50 copies of W21+ glued by 1.5e-8, 1e-10 and 1e-14 (n = 1050:
// clusters of 50 eigenvalues, deflation by rotations at every merge), eigenvalues graded from 1e-150 to 1e150, a
// cluster 1e-14 wide, a random matrix of norm about 1e-10 (n = 400: the split stage 3 scales T
// as dstedc does), zero, identity.
TEST(Eigh, HardMatricesAtLapackTolerances) {
  const double eps = std::numeric_limits<double>::epsilon();
  std::vector<std::pair<std::string, HostMat>> cases;
  for (const int m : {10, 20}) {  // W_{2m+1}^+
    const int n = 2 * m + 1;
    HostMat W("W", n, n);
    for (int i = 0; i < n; ++i) {
      W(i, i) = std::abs(m - i);
      if (i + 1 < n) W(i, i + 1) = W(i + 1, i) = 1.0;
    }
    cases.emplace_back("Wilkinson " + std::to_string(n), W);
  }
  for (const double glue : {1.5e-8, 1e-10, 1e-14}) {
    const int m = 21, copies = 50, n = m * copies;
    HostMat G("glued", n, n);
    for (int i = 0; i < n; ++i) {
      G(i, i) = std::abs((m - 1) / 2 - i % m);
      if (i + 1 < n) G(i, i + 1) = G(i + 1, i) = (i + 1) % m == 0 ? glue : 1.0;
    }
    char name[64];
    std::snprintf(name, sizeof name, "glued Wilkinson 21 x 50, glue %g", glue);
    cases.emplace_back(name, G);
  }
  {
    const int n = 120;
    std::vector<double> lam(n);
    for (int i = 0; i < n; ++i)
      lam[i] = std::pow(10.0, -150.0 + 300.0 * i / (n - 1)) * (i % 2 ? -1 : 1);
    cases.emplace_back("graded 1e+-150", kess::gen::prescribed_spectrum(lam, 3));
  }
  {
    const int n = 150;
    std::vector<double> lam(n);
    for (int i = 0; i < n; ++i) lam[i] = i < n - 2 ? 1.0 + 1e-14 * i : 2.0 + i;
    cases.emplace_back("tight cluster", kess::gen::prescribed_spectrum(lam, 4));
  }
  {
    HostMat R = kess::gen::random_symmetric(400, 23);
    for (int j = 0; j < 400; ++j)
      for (int i = 0; i < 400; ++i) R(i, j) *= 1e-10;
    cases.emplace_back("random 1e-10", R);
  }
  cases.emplace_back("zero", HostMat("zero", 90, 90));
  {
    HostMat I("I", 90, 90);
    for (int i = 0; i < 90; ++i) I(i, i) = 1.0;
    cases.emplace_back("identity", I);
  }
  for (const auto& [name, A] : cases) {
    const int n = static_cast<int>(A.extent(0));
    for (int path = 0; path < 3; ++path)
      for (const int nev : {std::max(1, n / 5), n}) {
        kess::EighOptions o = eigh_test::two_stage();
        if (path == 1) o.tridiagonal = kess::EighTridiagonal::divide_conquer;
        if (path == 2) o.method = kess::EighMethod::one_stage;
        o.nev = nev;
        const Check c = run_and_check(A, o);
        const std::string what = name + (path == 1 ? " dc" : path == 2 ? " one-stage" : "") +
                                 " nev " + std::to_string(nev);
        EXPECT_LE(c.value_err, 10 * n * eps) << what;
        EXPECT_LE(c.residual, 10 * n * eps) << what;
        EXPECT_LE(c.orth, 10 * n * eps) << what;
      }
  }
}

TEST(Eigh, ValuesOnly) {
  for (int n : {1, 3, 100, 257}) {
    for (int nev : {1, n}) {
      kess::EighOptions opts = eigh_test::two_stage();
      opts.vectors = false;
      opts.nev = nev;
      opts.band_width = 7;
      auto c = run_and_check(kess::gen::random_symmetric(n, 3), opts);
      EXPECT_LE(c.value_err, lapack_tol(n)) << "n=" << n << " nev=" << nev;
    }
  }
}

TEST(Eigh, OneStage) {
  for (int n : {1, 2, 17, 257, 400, 1200}) {
    for (int nev : {1, n}) {
      if (n >= 400 && nev != n) continue;
      kess::EighOptions opts = eigh_test::two_stage();
      opts.method = kess::EighMethod::one_stage;
      opts.nev = nev;
      TestExecSpace exec;
      auto c = run_and_check(kess::gen::random_symmetric(n, 5), opts);
      expect_accurate(c, n, "one-stage n=" + std::to_string(n));
      // All vectors of n >= 300, on any number of host threads: the split stage 3, which applies
      // the reflectors of its bottom half's rows itself (the rest of Q afterwards); dstedc below.
      if (nev == n && n > 2) EXPECT_EQ(c.tridiagonal, n >= 300 ? "dstedc (split)" : "dstedc");
    }
  }
}

TEST(Eigh, ReportsBandAndTimings) {
  TestExecSpace exec;
  auto r = kess::eigh(exec, to_device(kess::gen::random_symmetric(300, 9)), eigh_test::two_stage());
  EXPECT_GT(r.band_width, 0);
  EXPECT_FALSE(r.band_width_reason.empty());
  EXPECT_GT(r.timings.total, 0);
  EXPECT_GE(r.timings.total, r.timings.band_reduce + r.timings.bulge_chase +
                                 r.timings.tridiagonal + r.timings.hh_chase +
                                 r.timings.band_backtransform - 1e-6);
  EXPECT_EQ(kess::from_string<kess::EighMethod>("one-stage"), kess::EighMethod::one_stage);
  EXPECT_EQ(kess::from_string<kess::EighMethod>("auto"), kess::EighMethod::automatic);
  EXPECT_EQ(kess::from_string<kess::EighMethod>("automatic"), kess::EighMethod::automatic);
  EXPECT_EQ(kess::from_string<kess::EighMethod>("two_stage"), kess::EighMethod::two_stage);
  EXPECT_STREQ(kess::to_string(kess::EighMethod::automatic), "auto");
  EXPECT_STREQ(kess::to_string(kess::EighMethod::two_stage), "two-stage");
  EXPECT_THROW(kess::from_string<kess::EighMethod>("three-stage"), kess::Error);
  try {
    kess::from_string<kess::EighMethod>("three-stage");
  } catch (const kess::Error& e) {  // names the option and every accepted name
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("eigh method 'three-stage'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'auto', 'two-stage', 'one-stage'"), std::string::npos)
        << e.what();
  }
}

// The default method: two-stage on device memory, one-stage on host memory (the faster path
// there); the result names the path taken and why, and is accurate either way.
TEST(Eigh, AutomaticMethodByMemorySpace) {
  const bool host = std::is_same<TestMemSpace, Kokkos::HostSpace>::value;
  TestExecSpace exec;
  auto r = kess::eigh(exec, to_device(kess::gen::random_symmetric(40, 2)), kess::EighOptions{});
  EXPECT_EQ(r.method, host ? kess::EighMethod::one_stage : kess::EighMethod::two_stage);
  EXPECT_NE(r.method_reason.find("automatic"), std::string::npos) << r.method_reason;
  EXPECT_EQ(r.band_width == 0, host);  // the one-stage path has no band
  const int n = 150;
  auto c = run_and_check(kess::gen::random_symmetric(n, 6), kess::EighOptions{});
  expect_accurate(c, n, "automatic method n=150");
  // A subset of at most n/4 vectors of n >= 3000 takes the two-stage path everywhere.
  kess::EighOptions subset;
  subset.nev = 600;
  auto rs = kess::eigh(exec, to_device(kess::gen::random_symmetric(3000, 3)), subset);
  EXPECT_EQ(rs.method, kess::EighMethod::two_stage) << rs.method_reason;
  EXPECT_GT(rs.band_width, 0);
}

// ---- stage 3 by kess::detail::eigh::tridiag_dc (the GPU default) on every backend --------------------------------
TEST(Eigh, DivideAndConquerStage3) {
  for (int n : {1, 2, 3, 17, 100, 257, 1000}) {
    for (int nev : {1, std::max(1, n / 5), n}) {
      if (n == 1000 && nev != n) continue;
      kess::EighOptions opts = eigh_test::two_stage();
      opts.band_width = n >= 1000 ? 24 : 5;
      opts.nev = nev;
      opts.tridiagonal = kess::EighTridiagonal::divide_conquer;
      opts.tuning.tridiag_dc.leaf = 8;
      TestExecSpace exec;
      auto r = kess::eigh(exec, to_device(kess::gen::random_symmetric(n, 41 + n)), opts);
      EXPECT_EQ(r.tridiagonal, "dc");
      auto c = run_and_check(kess::gen::random_symmetric(n, 41 + n), opts);
      expect_accurate(c, n, "dc n=" + std::to_string(n) + " nev=" + std::to_string(nev));
    }
  }
  // Clusters and multiplicities deflate heavily inside the merges.
  const int n = 200;
  std::vector<double> lam;
  for (int i = 0; i < n; ++i) lam.push_back(i < 80 ? 1.0 : (i < 120 ? 1e-14 * i : std::sin(double(i))));
  kess::EighOptions opts = eigh_test::two_stage();
  opts.band_width = 8;
  opts.tridiagonal = kess::EighTridiagonal::divide_conquer;
  opts.tuning.tridiag_dc.leaf = 16;
  expect_accurate(run_and_check(kess::gen::prescribed_spectrum(lam, 5), opts, &lam), n, "dc clusters");
  // The automatic choice: divide and conquer on device memory, LAPACK on the host.
  TestExecSpace exec;
  auto r = kess::eigh(exec, to_device(kess::gen::random_symmetric(60, 1)), eigh_test::two_stage());
  const bool host = std::is_same<TestMemSpace, Kokkos::HostSpace>::value;
  EXPECT_EQ(r.tridiagonal, host ? "dstedc" : "dc");
  EXPECT_EQ(kess::from_string<kess::EighTridiagonal>("dc"), kess::EighTridiagonal::divide_conquer);
  EXPECT_THROW(kess::from_string<kess::EighTridiagonal>("qr"), kess::Error);
}

// ---- stage 2 by the team pipeline (the GPU default) on every backend ------------------------------
TEST(Eigh, TeamBulgeChase) {
  for (int n : {3, 17, 100, 257, 1000}) {
    for (int b : {2, 7, 32, 64}) {
      if (n == 1000 && b < 32) continue;
      kess::EighOptions opts = eigh_test::two_stage();
      opts.band_width = b;
      opts.chase = kess::EighChase::team;
      opts.nev = n == 1000 ? n / 5 : n;
      expect_accurate(run_and_check(kess::gen::random_symmetric(n, 61 + n + b), opts), n,
                      "team chase n=" + std::to_string(n) + " b=" + std::to_string(b));
    }
  }
  TestExecSpace exec;
  kess::EighOptions opts = eigh_test::two_stage();
  opts.band_width = 8;
  auto r = kess::eigh(exec, to_device(kess::gen::random_symmetric(60, 1)), opts);
  const bool host = std::is_same<TestMemSpace, Kokkos::HostSpace>::value;
  EXPECT_EQ(r.chase, host ? "host" : "team");  // the automatic choice
  EXPECT_EQ(kess::from_string<kess::EighChase>("team"), kess::EighChase::team);
  EXPECT_THROW(kess::from_string<kess::EighChase>("gpu"), kess::Error);
}

// ---- stage 3 on the host: a subset by dsterf (or bisection) + dstein, against dstedc ------------
// tridiagonal for each nev, values only and with vectors: the routines it reports
// (label(nev, vectors)), eigenvalues against dstedc's, residuals and orthogonality; dstein's
// pieces on three threads.
void expect_subset_matches_dstedc(const std::vector<double>& d, const std::vector<double>& e,
                                  const std::vector<int>& nevs,
                                  const std::function<std::string(int, bool)>& label) {
  const int n = static_cast<int>(d.size());
  double tnorm = 0;
  for (int i = 0; i < n; ++i)
    tnorm = kess_test::worse(tnorm, std::abs(d[i]) + (i > 0 ? std::abs(e[i - 1]) : 0.0) +
                                        (i + 1 < n ? std::abs(e[i]) : 0.0));
  std::vector<double> ref = d, eref = e;
  ASSERT_EQ(kess::core::lapack::stedc('N', n, ref.data(), eref.data(), nullptr, 1), 0);

  setenv("KESS_NUM_THREADS", "3", 1);  // three pieces of dstein
  for (int nev : nevs) {
    for (bool vectors : {true, false}) {
      std::vector<double> dd = d, ee = e, w(n), Z(vectors ? std::size_t(n) * nev : 1);  // w: n (dstemr)
      const std::string used = kess::detail::eigh::tridiagonal(n, nev, vectors, dd, ee, w.data(),
                                                             Z.data(), n);
      const std::string what = "nev " + std::to_string(nev) + (vectors ? " vectors" : " values");
      EXPECT_EQ(used, label(nev, vectors)) << what;
      for (int j = 0; j < nev; ++j) EXPECT_NEAR(w[j], ref[j], 1e-13 * tnorm) << what << ", j = " << j;
      if (!vectors) continue;
      double res = 0, orth = 0;
      for (int j = 0; j < nev; ++j) {
        const double* z = Z.data() + std::size_t(j) * n;
        for (int i = 0; i < n; ++i) {
          const double tz = d[i] * z[i] + (i > 0 ? e[i - 1] * z[i - 1] : 0.0) +
                            (i + 1 < n ? e[i] * z[i + 1] : 0.0);
          res = kess_test::worse(res, std::abs(tz - w[j] * z[i]));
        }
        for (int k = 0; k <= j; ++k) {
          double s = 0;
          for (int i = 0; i < n; ++i) s += z[i] * Z[i + std::size_t(k) * n];
          orth = kess_test::worse(orth, std::abs(s - (j == k ? 1.0 : 0.0)));
        }
      }
      EXPECT_LE(res, 1e-13 * tnorm) << what;
      EXPECT_LE(orth, lapack_tol(n)) << what;
    }
  }
  unsetenv("KESS_NUM_THREADS");
}

// A tridiagonal with two split points, two identical blocks (every eigenvalue of them twice) and a
// Wilkinson block (pairs of eigenvalues that agree to many digits); a few hundred of its 1200
// eigenpairs go through the dsterf + dstein path, cut into pieces that run on separate threads.
TEST(EighTridiagonal, SubsetBySterfSteinMatchesDstedc) {
  const int n = 1200;
  std::vector<double> d(n), e(n - 1);
  for (int i = 0; i < 300; ++i) d[i] = std::abs(i - 150.0) / 10.0;  // Wilkinson W+ (rows 0 .. 299)
  for (int i = 0; i < 299; ++i) e[i] = 1.0;
  e[299] = 0.0;  // split
  for (int i = 300; i < 750; ++i) d[i] = std::sin(0.37 * i) * 4.0;
  for (int i = 300; i < 749; ++i) e[i] = 0.5 + 0.25 * std::cos(1.3 * i);
  e[749] = 0.0;  // split; rows 750 .. 1199 repeat rows 300 .. 749
  for (int i = 750; i < n; ++i) d[i] = d[i - 450];
  for (int i = 750; i < n - 1; ++i) e[i] = e[i - 450];
  expect_subset_matches_dstedc(d, e, {30, 300, 1100}, [&](int nev, bool vectors) {
    return nev < n / 20 ? "dstemr" : vectors ? "dsterf+dstein" : "dsterf";
  });
}

// The same without split points (a Wilkinson block glued to the rest by couplings of 1e-3, close
// pairs and tight clusters inside one block): up to n / 3 eigenvalues by kess's bisection, more by
// dsterf.
TEST(EighTridiagonal, SubsetByBisectionSteinMatchesDstedc) {
  const int n = 900;
  std::vector<double> d(n), e(n - 1);
  for (int i = 0; i < 300; ++i) d[i] = std::abs(i - 150.0) / 10.0;  // Wilkinson W+
  for (int i = 0; i < 299; ++i) e[i] = 1.0;
  for (int i = 300; i < n; ++i) d[i] = std::sin(0.37 * i) * 4.0;
  for (int i = 300; i < n - 1; ++i) e[i] = 0.5 + 0.25 * std::cos(1.3 * i);
  e[299] = 1e-3;
  // Also as on a CPU without AVX-512 (kess::core::detail::host_wide_vectors): the bisection's 4-wide
  // AVX2 compile where the CPU has AVX2, else dsterf.
  for (int wide : {1, 0}) {
    kess::core::detail::set_host_wide_vectors(wide);
    expect_subset_matches_dstedc(d, e, {45, 120, 300, 450}, [&](int nev, bool vectors) {
      const bool bisect = 3 * nev <= n && kess::detail::eigh::tridiag_bisect_fast();
      return std::string(bisect ? "bisection" : "dsterf") + (vectors ? "+dstein" : "");
    });
    kess::core::detail::set_host_wide_vectors(-1);
  }
}

// ---- prescribed spectra: clusters and exact multiplicities ---------------------------------------
TEST(Eigh, PrescribedSpectrumClusters) {
  for (int n : {60, 257}) {
    std::vector<double> lam;
    for (int i = 0; i < n; ++i) {
      if (i < n / 3) lam.push_back(2.0);                       // multiplicity n/3
      else if (i < n / 2) lam.push_back(-1.0 + 1e-13 * i);     // tight cluster
      else if (i < n / 2 + 5) lam.push_back(0.0);              // a zero eigenvalue, 5 times
      else lam.push_back(std::cos(double(i)) * 3.0);
    }
    HostMat A = kess::gen::prescribed_spectrum(lam, 77 + n);
    for (int b : {4, 16}) {
      for (int nev : {n / 5, n}) {
        kess::EighOptions opts = eigh_test::two_stage();
        opts.band_width = b;
        opts.nev = nev;
        auto c = run_and_check(A, opts, &lam);
        expect_accurate(c, n, "clusters n=" + std::to_string(n) + " b=" + std::to_string(b) +
                                  " nev=" + std::to_string(nev));
      }
    }
  }
}

// ---- generalized problems ------------------------------------------------------------------------
TEST(EighGeneralized, MatchesCholeskyReference) {
  for (int n : {1, 3, 17, 120}) {
    HostMat A = kess::gen::random_symmetric(n, 21), B = kess::gen::random_spd(n, 22);
    // Reference: L^-1 A L^-T by LAPACK on the host, then dsyevd.
    HostMat L = eigh_test::copy_of(B), H = eigh_test::copy_of(A);
    ASSERT_EQ(kess::core::lapack::potrf('L', n, L.data(), n), 0);
    kess::core::lapack::sygst(1, 'L', n, H.data(), n, L.data(), n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < j; ++i) H(i, j) = H(j, i);
    std::vector<double> ref = eigh_test::syevd_values(H);
    double norm = 0;
    for (double l : ref) norm = kess_test::worse(norm, std::abs(l));
    // (the reduction on the host, on the execution space, and the automatic choice)
    for (auto gen : {kess::EighGeneralized::lapack, kess::EighGeneralized::blas,
                     kess::EighGeneralized::automatic})
      for (auto method : {kess::EighMethod::two_stage, kess::EighMethod::one_stage}) {
        for (int nev : {1, n}) {
          kess::EighOptions opts = eigh_test::two_stage();
          opts.nev = nev;
          opts.band_width = 4;
          opts.method = method;
          opts.generalized = gen;
          TestExecSpace exec;
          auto r = kess::eigh(exec, to_device(A), to_device(B), opts);
          const bool host_mem = std::is_same<TestMemSpace, Kokkos::HostSpace>::value;
          EXPECT_EQ(r.generalized, gen == kess::EighGeneralized::blas ||
                                           (gen == kess::EighGeneralized::automatic && !host_mem)
                                       ? "blas"
                                       : "lapack");
          ASSERT_EQ(static_cast<int>(r.eigenvalues.extent(0)), nev);
          std::vector<double> lam(nev);
          double err = 0;
          for (int i = 0; i < nev; ++i) {
            lam[i] = r.eigenvalues(i);
            err = kess_test::worse(err, std::abs(lam[i] - ref[i]));
          }
          HostMat Z = to_host(r.eigenvectors);
          const double anorm = eigh_test::max_abs(A) * n, bnorm = eigh_test::max_abs(B) * n;
          const std::string what = "n=" + std::to_string(n) + " nev=" + std::to_string(nev) + " " +
                                   kess::to_string(method) + " reduction " + kess::to_string(gen);
          EXPECT_LE(err, lapack_tol(n) * norm) << what;
          // Residual relative to ||A|| + |lambda| ||B|| (both bounded by the inf-norms).
          EXPECT_LE(eigh_test::residual(A, Z, lam, &B), lapack_tol(n) * (anorm + norm * bnorm)) << what;
          EXPECT_LE(eigh_test::orthogonality(Z, &B), lapack_tol(n) * bnorm) << what;
        }
      }
  }
}

// Larger than one block of kess::core::potrf_blocked (256 columns), B graded (eigenvalues 1e-3 .. 1e3),
// against LAPACK dsygvd: both reductions, the default path.
TEST(EighGeneralized, SeveralCholeskyBlocksMatchDsygvd) {
  const int n = 600;
  std::vector<double> beta(n);
  for (int i = 0; i < n; ++i) beta[i] = std::pow(10.0, -3.0 + 6.0 * ((i * 7) % n) / (n - 1));
  HostMat A = kess::gen::random_symmetric(n, 23), B = kess::gen::prescribed_spectrum(beta, 24);
  HostMat a = eigh_test::copy_of(A), b = eigh_test::copy_of(B);
  std::vector<double> ref(n);
  ASSERT_EQ(kess::core::lapack::sygvd(1, 'N', 'L', n, a.data(), n, b.data(), n, ref.data()), 0);
  double norm = 0;
  for (double l : ref) norm = kess_test::worse(norm, std::abs(l));
  for (auto gen : {kess::EighGeneralized::lapack, kess::EighGeneralized::blas}) {
    SCOPED_TRACE(std::string("reduction ") + kess::to_string(gen));
    kess::EighOptions opts;
    opts.generalized = gen;
    TestExecSpace exec;
    auto r = kess::eigh(exec, to_device(A), to_device(B), opts);
    std::vector<double> lam(n);
    double err = 0;
    for (int i = 0; i < n; ++i) {
      lam[i] = r.eigenvalues(i);
      err = kess_test::worse(err, std::abs(lam[i] - ref[i]));
    }
    const HostMat Z = to_host(r.eigenvectors);
    const double anorm = eigh_test::max_abs(A) * n, bnorm = eigh_test::max_abs(B) * n;
    // B's condition number (1e6) enters the eigenvalues' forward error: 10 eps cond(B) ||.||.
    EXPECT_LE(err, 10 * std::numeric_limits<double>::epsilon() * 1e6 * norm);
    EXPECT_LE(eigh_test::residual(A, Z, lam, &B), lapack_tol(n) * (anorm + norm * bnorm));
    EXPECT_LE(eigh_test::orthogonality(Z, &B), lapack_tol(n) * bnorm);
  }
}

// ---- bad inputs ----------------------------------------------------------------------------------
template <class F>
void expect_error(F&& f, kess::ErrorKind kind, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error; expected " << kess::to_string(kind);
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& s : needles)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "'" << s << "' not in: " << e.what();
  }
}

// A numerically singular B (B = diag(1, 1e-17, 1): cond(B) = 1e17 > 1/(n eps)) is refused on both
// reductions, naming the bound, instead of returning eigenvalues without a correct digit
// ({-12, 1.67, 3e17} where dsygv gives {1.653, 3.680, 3e17}); cond(B) = 1e10 is solved as usual.
TEST(EighGeneralized, RefusesNumericallySingularB) {
  TestExecSpace exec;
  const int n = 3;
  HostMat A("A", n, n), B("B", n, n);
  const double a[3][3] = {{2, 1, 0.5}, {1, 3, 1}, {0.5, 1, 4}};
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) A(i, j) = a[i][j];
  for (const auto reduction : {kess::EighGeneralized::lapack, kess::EighGeneralized::blas}) {
    SCOPED_TRACE(kess::to_string(reduction));
    kess::EighOptions o;
    o.generalized = reduction;
    B(0, 0) = 1;
    B(1, 1) = 1e-17;
    B(2, 2) = 1;
    expect_error([&] { kess::eigh(exec, to_device(A), to_device(B), o); },
                 kess::ErrorKind::not_positive_definite,
                 {"argument 'B' is numerically singular", "cond(B) >= 1e+17"});
    B(1, 1) = 1e-10;
    const auto r = kess::eigh(exec, to_device(A), to_device(B), o);
    EXPECT_EQ(r.eigenvalues.extent(0), 3u);
  }
}

// opts.overwrite_a: eigh works in A itself (symmetrized in place) and gives what it gives with a
// copy; errors are still reported with A's own values (A is checked before it is written); a
// padded A (leading dimension > n) is copied as usual and left as it was.
TEST(Eigh, OverwriteAMatchesTheCopy) {
  using K = kess::ErrorKind;
  TestExecSpace exec;
  for (const auto method : {kess::EighMethod::one_stage, kess::EighMethod::two_stage}) {
    SCOPED_TRACE(kess::to_string(method));
    const int n = 300;
    HostMat A = kess::gen::random_symmetric(n, 41);
    A(7, 3) += 1e-13;  // asymmetric at rounding level: the symmetrization must happen in place too
    kess::EighOptions o;
    o.method = method;
    const auto r1 = kess::eigh(exec, to_device(A), o);
    kess::EighOptions ow = o;
    ow.overwrite_a = true;
    DevMat Ad = to_device(A);
    const auto r2 = kess::eigh(exec, Ad, ow);
    const HostMat Z1 = to_host(r1.eigenvectors), Z2 = to_host(r2.eigenvectors);
    double dv = 0, dz = 0;
    std::vector<double> lam(n);
    for (int i = 0; i < n; ++i) {
      lam[i] = r2.eigenvalues(i);
      dv = kess_test::worse(dv, std::abs(r1.eigenvalues(i) - lam[i]));
      for (int k = 0; k < n; ++k) dz = kess_test::worse(dz, std::abs(Z1(k, i) - Z2(k, i)));
    }
    double norm = 0;
    for (double l : lam) norm = std::max(norm, std::abs(l));
    EXPECT_LE(dv, 1e-13);
    EXPECT_LE(dz, 1e-11);
    EXPECT_LE(eigh_test::residual(A, Z2, lam) / norm, lapack_tol(n));
    EXPECT_LE(eigh_test::orthogonality(Z2), lapack_tol(n));
    const HostMat Aafter = to_host(Ad);
    double changed = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        changed = kess_test::worse(changed, std::abs(Aafter(i, j) - A(i, j)));
    EXPECT_GT(changed, 0.0) << "overwrite_a: A is the work matrix";
  }
  // Errors name A's entries as given, and leave A as it was.
  kess::EighOptions ow;
  ow.overwrite_a = true;
  HostMat Bad = kess::gen::random_symmetric(300, 5);
  Bad(290, 7) = std::nan("");
  DevMat Bd = to_device(Bad);
  expect_error([&] { kess::eigh(exec, Bd, ow); }, K::invalid_argument, {"(290, 7)", "NaN"});
  Bad = kess::gen::random_symmetric(300, 5);
  Bad(200, 130) += 1e-3;
  Bd = to_device(Bad);
  expect_error([&] { kess::eigh(exec, Bd, ow); }, K::not_symmetric, {"(200, 130)", "(130, 200)"});
  const HostMat after = to_host(Bd);
  EXPECT_EQ(after(200, 130), Bad(200, 130));
  EXPECT_EQ(after(130, 200), Bad(130, 200));
  // A padded A: copied, unchanged.
  const int n = 100;
  const HostMat S = kess::gen::random_symmetric(n, 6);
  DevMat big = to_device(kess::gen::random_symmetric(n + 5, 6));
  auto Ap = Kokkos::subview(big, Kokkos::make_pair(0, n), Kokkos::make_pair(0, n));
  Kokkos::deep_copy(big, 0.0);
  {
    auto bigh = Kokkos::create_mirror_view(big);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) bigh(i, j) = S(i, j);
    Kokkos::deep_copy(big, bigh);
  }
  const auto rp = kess::eigh(exec, Ap, ow);
  EXPECT_EQ(static_cast<int>(rp.eigenvalues.extent(0)), n);
  const HostMat bigafter = to_host(big);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) ASSERT_EQ(bigafter(i, j), S(i, j)) << "padded A must be copied";
}

TEST(Eigh, RejectsBadInput) {
  TestExecSpace exec;
  using K = kess::ErrorKind;
  HostMat A = kess::gen::random_symmetric(6, 1);
  expect_error([&] { kess::eigh(exec, DevMat("A", 4, 5)); }, K::invalid_argument, {"'A'", "4 x 5"});
  for (long long nev : {7LL, -2LL}) {
    kess::EighOptions o = eigh_test::two_stage();
    o.nev = nev;
    expect_error([&] { kess::eigh(exec, to_device(A), o); }, K::invalid_argument,
                 {"nev", std::to_string(nev)});
  }
  {
    kess::EighOptions o = eigh_test::two_stage();
    o.band_width = -3;
    expect_error([&] { kess::eigh(exec, to_device(A), o); }, K::invalid_argument, {"'opts.band_width'"});
  }
  {
    HostMat Bad = eigh_test::copy_of(A);
    Bad(4, 2) = std::nan("");
    expect_error([&] { kess::eigh(exec, to_device(Bad)); }, K::invalid_argument, {"(4, 2)", "NaN"});
    Bad(4, 2) = INFINITY;
    expect_error([&] { kess::eigh(exec, to_device(Bad)); }, K::invalid_argument, {"(4, 2)"});
  }
  {
    HostMat Bad = eigh_test::copy_of(A);
    Bad(5, 1) += 1e-3;
    Bad(3, 0) += 1e-6;
    expect_error([&] { kess::eigh(exec, to_device(Bad)); }, K::not_symmetric, {"(5, 1)", "(1, 5)"});
    // Rounding-level asymmetry is accepted.
    Bad = eigh_test::copy_of(A);
    Bad(5, 1) *= 1 + 1e-15;
    EXPECT_NO_THROW(kess::eigh(exec, to_device(Bad)));
  }
  {  // n = 300: the check's tile pairs are spread over the host threads on Kokkos::Serial
    HostMat Big = kess::gen::random_symmetric(300, 5);
    Big(290, 7) = std::nan("");
    expect_error([&] { kess::eigh(exec, to_device(Big)); }, K::invalid_argument, {"(290, 7)", "NaN"});
    Big = kess::gen::random_symmetric(300, 5);
    Big(200, 130) += 1e-3;
    Big(20, 10) += 1e-6;
    expect_error([&] { kess::eigh(exec, to_device(Big)); }, K::not_symmetric,
                 {"(200, 130)", "(130, 200)"});
  }
  {
    HostMat B = kess::gen::random_spd(6, 2);
    HostMat Bnpd = eigh_test::copy_of(B);
    Bnpd(3, 3) = -50.0;
    for (auto gen : {kess::EighGeneralized::lapack, kess::EighGeneralized::blas}) {
      kess::EighOptions og;
      og.generalized = gen;
      expect_error([&] { kess::eigh(exec, to_device(A), to_device(Bnpd), og); },
                   K::not_positive_definite, {"'B'", "pivot 4", "(row/column 3,"});
    }
    expect_error([&] { kess::eigh(exec, to_device(A), DevMat("B", 5, 5)); }, K::invalid_argument,
                 {"'B'"});
    HostMat Bns = eigh_test::copy_of(B);
    Bns(0, 5) = 3.0;
    expect_error([&] { kess::eigh(exec, to_device(A), to_device(Bns)); }, K::not_symmetric, {"'B'"});
  }
  // Empty and nev = 0 are fine.
  auto r0 = kess::eigh(exec, DevMat("A", 0, 0));
  EXPECT_EQ(r0.eigenvalues.extent(0), 0u);
  for (auto gen : {kess::EighGeneralized::lapack, kess::EighGeneralized::blas}) {
    kess::EighOptions og;
    og.generalized = gen;
    auto g0 = kess::eigh(exec, DevMat("A", 0, 0), DevMat("B", 0, 0), og);
    EXPECT_EQ(g0.eigenvalues.extent(0), 0u);
    EXPECT_EQ(g0.eigenvectors.extent(0), 0u);
  }
  kess::EighOptions o = eigh_test::two_stage();
  o.nev = 0;
  auto r1 = kess::eigh(exec, to_device(A), o);
  EXPECT_EQ(r1.eigenvalues.extent(0), 0u);
}

}  // namespace
