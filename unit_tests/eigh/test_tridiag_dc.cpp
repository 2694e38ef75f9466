// kess::detail::eigh::tridiag_dc (divide and conquer with device GEMMs) against LAPACK dstedc on the host and
// against closed-form spectra: eigenvalues, residuals ||T z - lambda z||, orthogonality, on
// matrices that deflate little (random) and a lot (glued Wilkinson, repeated blocks, tiny
// couplings, constant diagonal), for several leaf sizes; and bad inputs.
#include <kess/core/base/error.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/core/host/simd.hpp>
#include <kess/solvers/eigh/detail/secular.hpp>
#include <kess/solvers/eigh/detail/tridiag_bisect.hpp>
#include <kess/solvers/eigh/detail/tridiag_dc.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <cfloat>
#include <vector>

namespace {

/// secular_fd with a count of its calls (a functor: secular_root_with is a host-device
/// function, which nvcc must not see call a host-only lambda).
struct CountingSecular {
  int k;
  const double *d, *z;
  double rho;
  int* evals;
  KOKKOS_INLINE_FUNCTION double operator()(double d_o, double t, double& df) const {
    ++*evals;
    return kess::detail::eigh::secular_fd(k, d, z, rho, d_o, t, df);
  }
};

/// CountingSecular that also bounds f's rounding as the host root finder's functor does,
/// 2 eps (1 + rho sum |term|): secular_root_with may stop at a point under that bound.
struct CountingBoundedSecular : CountingSecular {
  CountingBoundedSecular(int k_, const double* d_, const double* z_, double rho_, int* evals_)
      : CountingSecular{k_, d_, z_, rho_, evals_} {}
  using CountingSecular::operator();
  // Host-device like CountingSecular (nvcc compiles secular_root_with for both); used on the host.
  KOKKOS_INLINE_FUNCTION double operator()(double d_o, double t, double& df, double& bound) const {
    double abs_sum = 0;
    for (int i = 0; i < k; ++i) abs_sum += z[i] * z[i] / kess::kx::fabs((d[i] - d_o) - t);
    bound = 2 * DBL_EPSILON * (1 + rho * abs_sum);
    return (*this)(d_o, t, df);
  }
};

/// Reference secular function f(tau) = 1 + rho sum_i z_i^2 / ((d_i - d_o) - tau), written apart
/// from the library's (which also forms the derivative).
double secular_f(int k, const double* d, const double* z, double rho, double d_o, double tau) {
  double s = 0;
  for (int i = 0; i < k; ++i) s += z[i] * z[i] / ((d[i] - d_o) - tau);
  return 1.0 + rho * s;
}

using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;
using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

struct Tri {
  std::vector<double> d, e;
};

struct Result {
  double value_err = 0, residual = 0, orth = 0, norm = 0;
  kess::detail::eigh::TridiagDcStats stats;
};

/// Runs tridiag_dc and measures it against `ref` eigenvalues (dstedc's when empty).
/// Merges with at least this many roots solve the secular equations on the execution space
/// (TridiagDcTuning::exec_secular_min); the ExecSecular tests set it to 3 (every merge).
int g_exec_secular_min = -1;

Result check(const Tri& t, int leaf, std::vector<double> ref = {}) {
  const int n = t.d.size();
  Result r;
  if (ref.empty()) {
    std::vector<double> d = t.d, e = t.e;
    if (e.empty()) e.push_back(0);
    std::vector<double> z(1);
    if (n > 0) EXPECT_EQ(kess::core::lapack::stedc('N', n, d.data(), e.data(), z.data(), 1), 0);
    ref = d;
  }
  std::vector<double> w(n);
  DevMat Z("Z", n, n);
  TestExecSpace exec;
  kess::TridiagDcTuning opts;
  opts.leaf = leaf;
  opts.exec_secular_min = g_exec_secular_min;
  kess::detail::eigh::tridiag_dc(exec, t.d, t.e, w.data(), Z, opts, &r.stats);
  HostMat Zh("Zh", n, n);
  Kokkos::deep_copy(Zh, Z);
  for (int i = 0; i < n; ++i)
    r.norm = kess_test::worse(r.norm, std::abs(t.d[i]) + (i > 0 ? std::abs(t.e[i - 1]) : 0.0) +
                                          (i + 1 < n ? std::abs(t.e[i]) : 0.0));
  if (r.norm == 0) r.norm = 1;
  for (int i = 0; i < n; ++i) {
    r.value_err = kess_test::worse(r.value_err, std::abs(w[i] - ref[i]));
    if (i > 0) EXPECT_LE(w[i - 1], w[i]) << "not ascending at " << i;
  }
  for (int j = 0; j < n; ++j) {
    double s = 0;
    for (int i = 0; i < n; ++i) {
      double tz = t.d[i] * Zh(i, j);
      if (i > 0) tz += t.e[i - 1] * Zh(i - 1, j);
      if (i + 1 < n) tz += t.e[i] * Zh(i + 1, j);
      const double v = tz - w[j] * Zh(i, j);
      s += v * v;
    }
    r.residual = kess_test::worse(r.residual, std::sqrt(s));
  }
  HostMat G("G", n, n);
  if (n > 0) kess::core::lapack::gemm('T', 'N', n, n, n, 1.0, Zh.data(), n, Zh.data(), n, 0.0, G.data(), n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      r.orth = kess_test::worse(r.orth, std::abs(G(i, j) - (i == j ? 1.0 : 0.0)));
  return r;
}

void expect_accurate(const Result& r, int n, const std::string& what) {
  const double tol = 10.0 * std::max(1, n) * std::numeric_limits<double>::epsilon();
  EXPECT_LE(r.value_err, tol * r.norm) << what;
  EXPECT_LE(r.residual, tol * r.norm) << what;
  EXPECT_LE(r.orth, tol) << what;
}

Tri random_tri(int n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tri t;
  for (int i = 0; i < n; ++i) t.d.push_back(u(g));
  for (int i = 0; i + 1 < n; ++i) t.e.push_back(u(g));
  return t;
}

/// Wilkinson W_m^+ (m odd) glued `copies` times with coupling `glue`: pairs of eigenvalues that
/// agree to many digits, the classic stress test of deflation.
Tri glued_wilkinson(int m, int copies, double glue) {
  Tri t;
  for (int c = 0; c < copies; ++c) {
    for (int i = 0; i < m; ++i) t.d.push_back(std::abs((m - 1) / 2 - i));
    for (int i = 0; i + 1 < m; ++i) t.e.push_back(1.0);
    if (c + 1 < copies) t.e.push_back(glue);
  }
  return t;
}

}  // namespace

void body_RandomMatchesDstedc() {
  for (int n : {1, 2, 3, 17, 33, 64, 100, 257, 1000})
    for (int leaf : {2, 5, 32}) {
      if (n == 1000 && leaf == 2) continue;  // many tiny merges: covered at smaller n
      auto r = check(random_tri(n, 17 + n), leaf);
      expect_accurate(r, n, "random n=" + std::to_string(n) + " leaf=" + std::to_string(leaf));
      if (n > leaf) EXPECT_GT(r.stats.merges, 0);
    }
}

void body_ToeplitzClosedForm() {
  // tridiag(-1, 2, -1): lambda_k = 2 - 2 cos(k pi / (n + 1)).
  for (int n : {50, 301}) {
    Tri t;
    t.d.assign(n, 2.0);
    t.e.assign(n - 1, -1.0);
    std::vector<double> ref(n);
    const double pi = std::acos(-1.0);
    for (int k = 1; k <= n; ++k) ref[k - 1] = 2.0 - 2.0 * std::cos(k * pi / (n + 1));
    std::sort(ref.begin(), ref.end());
    auto r = check(t, 16, ref);
    expect_accurate(r, n, "toeplitz n=" + std::to_string(n));
  }
}

void body_HeavyDeflation() {
  {
    auto t = glued_wilkinson(21, 20, 1e-10);  // n = 420
    auto r = check(t, 16);
    expect_accurate(r, 420, "glued Wilkinson 1e-10");
    EXPECT_GT(r.stats.deflated, 0);
    EXPECT_GT(r.stats.rotations, 0) << "close poles must be deflated by rotations";
  }
  {
    auto t = glued_wilkinson(21, 10, 1e-14);
    expect_accurate(check(t, 8), 210, "glued Wilkinson 1e-14");
  }
  {
    // Identical blocks, decoupled: every eigenvalue has multiplicity 4.
    Tri b = random_tri(25, 5), t;
    for (int c = 0; c < 4; ++c) {
      t.d.insert(t.d.end(), b.d.begin(), b.d.end());
      t.e.insert(t.e.end(), b.e.begin(), b.e.end());
      if (c < 3) t.e.push_back(0.0);
    }
    auto r = check(t, 8);
    expect_accurate(r, 100, "repeated blocks");
  }
  {
    Tri t;  // constant diagonal, tiny couplings
    t.d.assign(200, 3.0);
    t.e.assign(199, 1e-13);
    expect_accurate(check(t, 8), 200, "constant diagonal, tiny e");
  }
  {
    Tri t;  // diagonal matrix with repeated entries
    for (int i = 0; i < 150; ++i) t.d.push_back(double(i % 7));
    t.e.assign(149, 0.0);
    expect_accurate(check(t, 8), 150, "diagonal");
  }
  {
    Tri t;  // zero matrix
    t.d.assign(40, 0.0);
    t.e.assign(39, 0.0);
    expect_accurate(check(t, 8), 40, "zero");
  }
}

void body_ScaleInvariant() {
  for (double scale : {1e-150, 1e150}) {
    Tri t = random_tri(200, 3);
    for (auto& x : t.d) x *= scale;
    for (auto& x : t.e) x *= scale;
    auto r = check(t, 16);
    expect_accurate(r, 200, "scale " + std::to_string(scale));
  }
}

TEST(TridiagDc, BadInputs) {
  TestExecSpace exec;
  std::vector<double> w(4);
  DevMat Z("Z", 4, 4);
  Tri t = random_tri(4, 1);
  auto expect_error = [&](const Tri& bad, const DevMat& z, const std::string& needle) {
    try {
      kess::detail::eigh::tridiag_dc(exec, bad.d, bad.e, w.data(), z);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const kess::Error& err) {
      EXPECT_EQ(err.kind(), kess::ErrorKind::invalid_argument);
      EXPECT_NE(std::string(err.what()).find(needle), std::string::npos) << err.what();
    }
  };
  Tri nan = t;
  nan.d[2] = std::nan("");
  expect_error(nan, Z, "argument 'd': entry 2 is NaN");
  Tri inf = t;
  inf.e[1] = INFINITY;
  expect_error(inf, Z, "argument 'e': entry 1 is NaN or Inf");
  Tri short_e = t;
  short_e.e.pop_back();
  expect_error(short_e, Z, "argument 'e' has 2 entries");
  expect_error(t, DevMat("Z3", 3, 4), "argument 'Z': 3 x 4");
}

TEST(TridiagDc, RandomMatchesDstedc) { body_RandomMatchesDstedc(); }
TEST(TridiagDc, ToeplitzClosedForm) { body_ToeplitzClosedForm(); }
TEST(TridiagDc, HeavyDeflation) { body_HeavyDeflation(); }
TEST(TridiagDc, ScaleInvariant) { body_ScaleInvariant(); }

// The same problems with every merge's secular equations solved on the execution space (one
// thread a root, secular_root; the GPU default for merges of 256 roots and more) instead of
// on the host threads (secular_roots_host).
class ExecSecular : public ::testing::Test {
 protected:
  void SetUp() override { g_exec_secular_min = 3; }
  void TearDown() override { g_exec_secular_min = -1; }
};
TEST_F(ExecSecular, RandomMatchesDstedc) { body_RandomMatchesDstedc(); }
TEST_F(ExecSecular, ToeplitzClosedForm) { body_ToeplitzClosedForm(); }
TEST_F(ExecSecular, HeavyDeflation) { body_HeavyDeflation(); }
TEST_F(ExecSecular, ScaleInvariant) { body_ScaleInvariant(); }

// The root finder itself: roots of a secular equation with poles at 1 .. k and equal weights,
// against the characteristic property f(lambda) = 0 to rounding, strict interlacing, and the
// trace identity sum lambda_j = sum d_i + rho z^T z. Run with a functor that bounds f's rounding
// (the host's) it stops where |f| is under that bound, with the same checks and fewer
// evaluations.
template <class Secular>
void expect_secular_roots(double max_mean_evals) {
  long total_evals = 0, roots = 0;
  int max_evals = 0;
  for (int k : {3, 17, 200}) {
    std::vector<double> d(k), z(k);
    for (int i = 0; i < k; ++i) {
      d[i] = i + 1.0 + 1e-3 * std::sin(i);
      z[i] = (i % 3 == 0 ? -1.0 : 1.0) / std::sqrt(double(k)) * (0.5 + 0.5 * std::cos(0.3 * i) * std::cos(0.3 * i));
    }
    for (double rho : {1e-6, 0.7, 50.0}) {
      double zz = 0;
      for (double x : z) zz += x * x;
      double sum = 0, ref = rho * zz;
      for (int i = 0; i < k; ++i) ref += d[i];
      for (int j = 0; j < k; ++j) {
        int o = -1;
        double tau = 0;
        int evals = 0;
        kess::detail::eigh::secular_root_with(
            k, j, d.data(), z.data(), rho, zz, Secular{k, d.data(), z.data(), rho, &evals}, o, tau);
        total_evals += evals;
        max_evals = std::max(max_evals, evals);
        ASSERT_TRUE(o == j || (o == j + 1 && j + 1 < k)) << "k=" << k << " j=" << j;
        const double lam = d[o] + tau;
        EXPECT_GT(lam, d[j]) << "k=" << k << " j=" << j << " rho=" << rho;
        if (j + 1 < k) EXPECT_LT(lam, d[j + 1]) << "k=" << k << " j=" << j << " rho=" << rho;
        // |f| at the root is at most the change of f over one ulp of tau, times a few.
        const double f = secular_f(k, d.data(), z.data(), rho, d[o], tau);
        const double t2 = tau + 4 * std::numeric_limits<double>::epsilon() * std::abs(tau);
        const double slope = std::abs(secular_f(k, d.data(), z.data(), rho, d[o], t2) - f);
        EXPECT_LE(std::abs(f), slope + 1e-13 * (1 + rho)) << "k=" << k << " j=" << j << " rho=" << rho;
        sum += lam;
        ++roots;
      }
      EXPECT_NEAR(sum, ref, 1e-11 * std::abs(ref)) << "k=" << k << " rho=" << rho;
    }
  }
  // The model steps, not bisection (up to 64 evaluations a root), do the work.
  EXPECT_LE(total_evals, max_mean_evals * roots)
      << "mean evaluations a root: " << double(total_evals) / roots;
  EXPECT_LE(max_evals, 64);
}

// Narrowed to adjacent doubles: about 10 evaluations a root here, 20 at most.
TEST(TridiagDc, SecularRootBisection) { expect_secular_roots<CountingSecular>(12); }

// Stopped under the rounding bound: 4.1 a root here (5.6 on a merge of a dense matrix's
// tridiagonal, k = 1700; dlaed4 takes 3-4 scalar ones).
TEST(TridiagDc, SecularRootStopsAtRoundingBound) {
  expect_secular_roots<CountingBoundedSecular>(6);
}

// The host roots (secular_roots_host: the same root finder, the secular function summed in
// 8-wide vectors) on secular equations as a merge makes them (poles random and ascending, some in
// pairs 1e-7 apart, ||z|| = 1, rho of several sizes; k with and without a tail of fewer than 8
// terms): f at every root is zero to rounding (as in SecularRootBisection), and d_i - lambda_j
// agrees with LAPACK dlaed4's to its stopping tolerance, relative to its own size (1.2e-13 seen).
// CPUs without AVX-512 (kess::core::detail::host_wide_vectors) take dlaed4's roots themselves, read back
// as (orig, tau): checked here too.
TEST(TridiagDc, HostSecularRootsMatchDlaed4) {
  std::mt19937 gen(2024);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  double worst_delta = 0, worst_lambda = 0;
  for (int wide : {1, 0})
  for (int k : {3, 9, 64, 257, 1000}) {
    std::vector<double> d(k), z(k);
    for (int i = 0; i < k; ++i) d[i] = 10 * u(gen);
    std::sort(d.begin(), d.end());
    for (int i = 1; i < k; i += 7) d[i] = d[i - 1] + 1e-7 * (1 + std::abs(u(gen)));  // pairs
    std::sort(d.begin(), d.end());
    ASSERT_EQ(std::adjacent_find(d.begin(), d.end()), d.end());
    double nz = 0;
    for (int i = 0; i < k; ++i) nz += (z[i] = u(gen)) * z[i];
    for (double& x : z) x /= std::sqrt(nz);
    for (double rho : {1e-8, 0.3, 2.0, 1e3}) {
      std::vector<int> orig(k);
      std::vector<double> taus(k), delta(k);
      kess::core::detail::set_host_wide_vectors(wide);
      kess::detail::eigh::secular_roots_host(k, d.data(), z.data(), rho, 0, k, orig.data(),
                                                taus.data());
      kess::core::detail::set_host_wide_vectors(-1);
      for (int j = 0; j < k; ++j) {
        const int o = orig[j];
        const double tau = taus[j], lambda = d[o] + tau;
        ASSERT_TRUE(o == j || (o == j + 1 && j + 1 < k)) << "k=" << k << " j=" << j;
        // Strictly between the poles (lambda itself may round onto d_j when rho is tiny).
        const double gap = j + 1 < k ? d[j + 1] - d[j] : rho;
        EXPECT_GT(o == j ? tau : -tau, 0.0) << "k=" << k << " j=" << j;
        if (j + 1 < k) EXPECT_LT(o == j ? tau : -tau, gap) << "k=" << k << " j=" << j;
        // |f| at the root: at most its change over a few ulps of tau plus the rounding of the
        // reference sum (another order than the library's), k eps sum |terms|.
        const double f = secular_f(k, d.data(), z.data(), rho, d[o], tau);
        const double t2 = tau + 4 * std::numeric_limits<double>::epsilon() * std::abs(tau);
        const double slope = std::abs(secular_f(k, d.data(), z.data(), rho, d[o], t2) - f);
        double terms = 1;
        for (int i = 0; i < k; ++i) terms += rho * z[i] * z[i] / std::abs((d[i] - d[o]) - tau);
        EXPECT_LE(std::abs(f), slope + k * std::numeric_limits<double>::epsilon() * terms)
            << "k=" << k << " j=" << j << " rho=" << rho;
        double lam = 0;
        ASSERT_EQ(kess::core::lapack::laed4(k, j + 1, d.data(), z.data(), delta.data(), rho, &lam), 0);
        const double el = std::abs(lambda - lam) / std::max(std::abs(lam), gap);
        worst_lambda = kess_test::worse(worst_lambda, el);
        EXPECT_LE(el, 1e-12) << "k=" << k << " rho=" << rho << " root " << j;
        for (int i = 0; i < k; ++i) {
          const double e = std::abs(((d[i] - d[o]) - tau) - delta[i]) / std::abs(delta[i]);
          worst_delta = kess_test::worse(worst_delta, e);
          ASSERT_LE(e, 1e-11) << "k=" << k << " rho=" << rho << " root " << j << " pole " << i;
        }
      }
    }
  }
  std::printf("worst relative difference to dlaed4: d_i - lambda_j %.2e, lambda_j %.2e\n",
              worst_delta, worst_lambda);
}

// Roots within half an ulp of the midpoint between two poles a few ulps apart (equal weights;
// f at the midpoint, c, is the outer poles' pull, just below zero: the root lies a fraction of an
// ulp on d_j+1's side), as deflation leaves them in glued Wilkinson matrices. The midpoint
// d_j + (d_j+1 - d_j) / 2 is not a double: a bracket that starts from its rounding cuts such a
// root off (d_i - lambda_j wrong by up to half an ulp of d_j, a third of itself at a gap of 3
// ulps; residuals of 1e-11 in the merge). Every root finder (to adjacent doubles, stopped at the
// rounding bound, the host's vectorized one and dlaed4 through it) against dlaed4's
// d_i - lambda_j, relative to their own size.
TEST(TridiagDc, SecularRootAtMidpointOfClosePoles) {
  const double p = 0.70039522095286755, rho = 0.2;
  for (int gap_ulps : {1, 3, 5, 89})
    for (double c : {-1e-2, -1e-5})
      for (double w : {1e-8, 1e-6}) {
        double q = p;
        for (int u = 0; u < gap_ulps; ++u) q = std::nextafter(q, 2.0);
        const double mid = p + 0.5 * (q - p);
        std::vector<double> d = {0.1, 0.5, p, q, 1.1, 1.3}, z = {0, 0.3, w, w, 0.3, 0.5};
        // z_0 such that 1 + rho sum_{i != 2, 3} z_i^2 / (d_i - mid) = c.
        double rest = 1;
        for (int i = 1; i < 6; ++i)
          if (i != 2 && i != 3) rest += rho * z[i] * z[i] / (d[i] - mid);
        z[0] = std::sqrt((rest - c) * (mid - d[0]) / rho);
        const int k = static_cast<int>(d.size()), j = 2;
        double zz = 0;
        for (double x : z) zz += x * x;
        std::vector<double> delta(k);
        double lam = 0;
        ASSERT_EQ(kess::core::lapack::laed4(k, j + 1, d.data(), z.data(), delta.data(), rho, &lam), 0);
        const auto expect_close = [&](int o, double tau, const std::string& who) {
          for (int i : {j, j + 1}) {
            const double mine = (d[i] - d[o]) - tau;
            EXPECT_LE(std::abs(mine - delta[i]), 1e-10 * std::abs(delta[i]))
                << who << ": gap " << gap_ulps << " ulps, c " << c << ", w " << w << ", pole " << i
                << ": " << mine << " vs dlaed4 " << delta[i];
          }
        };
        int evals = 0, o = -1;
        double tau = 0;
        kess::detail::eigh::secular_root_with(
            k, j, d.data(), z.data(), rho, zz, CountingSecular{k, d.data(), z.data(), rho, &evals}, o, tau);
        expect_close(o, tau, "to adjacent doubles");
        kess::detail::eigh::secular_root_with(
            k, j, d.data(), z.data(), rho, zz,
            CountingBoundedSecular(k, d.data(), z.data(), rho, &evals), o, tau);
        expect_close(o, tau, "stopped at the rounding bound");
        std::vector<int> orig(k);
        std::vector<double> taus(k);
        for (int wide : {1, 0}) {
          kess::core::detail::set_host_wide_vectors(wide);
          kess::detail::eigh::secular_roots_host(k, d.data(), z.data(), rho, 0, k, orig.data(), taus.data());
          kess::core::detail::set_host_wide_vectors(-1);
          expect_close(orig[j], taus[j], wide ? "host roots" : "host roots (dlaed4)");
        }
      }
}

// The merge's two vectorized division loops against the same loops written out: the weight
// factors bit for bit (same operations on every entry, i = j included), the columns bit for bit,
// their largest magnitude exactly, and the compensated sum of squares to a few ulps of a long
// double sum; k with and without vector tails, j at both ends and inside.
TEST(TridiagDc, HostMergeLoopsMatchScalar) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int k : {1, 7, 8, 9, 100, 257}) {
    std::vector<double> d(k), s(k), what(k);
    for (int i = 0; i < k; ++i) {
      d[i] = i + 0.5 * u(gen);
      s[i] = u(gen);
      what[i] = u(gen) * (i % 13 == 0 ? 1e6 : 1.0);  // a few large entries among small ones
    }
    for (int j : {0, k / 2, k - 1}) {
      std::vector<double> p(k), ref(k);
      for (int i = 0; i < k; ++i) p[i] = ref[i] = 1.0 + u(gen);
      kess::detail::eigh::secular_products(k, j, d.data(), s.data(), p.data());
      for (int i = 0; i < k; ++i) ref[i] *= i == j ? s[i] : s[i] / (d[i] - d[j]);
      for (int i = 0; i < k; ++i) ASSERT_EQ(p[i], ref[i]) << "k=" << k << " j=" << j << " i=" << i;
    }
    std::vector<double> col(k);
    double sumsq = -1;
    const double big =
        kess::detail::eigh::secular_column(k, what.data(), s.data(), col.data(), &sumsq);
    double rbig = 0;
    long double rsum = 0;
    for (int i = 0; i < k; ++i) {
      ASSERT_EQ(col[i], what[i] / s[i]) << "k=" << k << " i=" << i;
      rbig = std::max(rbig, std::abs(col[i]));
    }
    for (int i = 0; i < k; ++i) rsum += (long double)(col[i] / rbig) * (col[i] / rbig);
    EXPECT_EQ(big, rbig) << "k=" << k;
    EXPECT_NEAR(sumsq, double(rsum), 4 * std::numeric_limits<double>::epsilon() * double(rsum))
        << "k=" << k;
  }
}

// Bisection of Sturm counts (kess::detail::eigh::tridiag_bisect): the tridiagonal Toeplitz matrix
// (2, -1) has eigenvalues 2 - 2 cos(k pi / (n + 1)); index ranges that start inside and end short
// of a multiple of the 24 lanes, on one and three threads, to 8 ulps of ||T||, also scaled to the
// ends of the double range; and a graded matrix (diagonal from 1 down to 1e-12, couplings of its
// geometric means) against dstedc. On x86 CPUs run twice: the kernel for this CPU and, as on a
// CPU without AVX-512, the 4-wide AVX2 compile (tridiag_bisect_avx2.cpp).
void body_BisectionClosedFormAndGraded() {
  const double pi = std::acos(-1.0), eps = std::numeric_limits<double>::epsilon();
  for (int n : {1, 2, 37, 500}) {
    std::vector<double> d(n, 2.0), e(std::max(0, n - 1), -1.0);
    for (int threads : {1, 3}) {
      for (auto range : {std::make_pair(0, n), std::make_pair(n / 3, n - n / 4)}) {
        const int j0 = range.first, j1 = std::max(range.first, range.second);
        std::vector<double> w(std::max(1, j1 - j0));
        kess::detail::eigh::tridiag_bisect(n, d.data(), e.data(), j0, j1, w.data(), threads);
        for (int j = j0; j < j1; ++j) {
          const double exact = n == 1 ? 2.0 : 2.0 - 2.0 * std::cos((j + 1) * pi / (n + 1));
          EXPECT_NEAR(w[j - j0], exact, 8 * eps * 4) << "n=" << n << " j=" << j << " threads=" << threads;
        }
      }
    }
  }
  // Scaled by 1e280 and 1e-280 (e_i^2 would overflow or underflow unscaled): the same eigenvalues,
  // scaled.
  for (double scale : {1e280, 1e-280}) {
    const int n = 37;
    std::vector<double> d(n, 2.0 * scale), e(n - 1, -1.0 * scale), w(n);
    kess::detail::eigh::tridiag_bisect(n, d.data(), e.data(), 0, n, w.data(), 2);
    for (int j = 0; j < n; ++j)
      EXPECT_NEAR(w[j] / scale, 2.0 - 2.0 * std::cos((j + 1) * pi / (n + 1)), 8 * eps * 4)
          << "scale " << scale << ", j=" << j;
  }
  const int n = 300;
  std::vector<double> d(n), e(n - 1);
  for (int i = 0; i < n; ++i) d[i] = std::pow(10.0, -12.0 * i / (n - 1));
  for (int i = 0; i + 1 < n; ++i) e[i] = 0.3 * std::sqrt(d[i] * d[i + 1]);
  std::vector<double> ref = d, eref = e, w(n);
  ASSERT_EQ(kess::core::lapack::stedc('N', n, ref.data(), eref.data(), nullptr, 1), 0);
  kess::detail::eigh::tridiag_bisect(n, d.data(), e.data(), 0, n, w.data(), 2);
  // (both to a few ulps of ||T||_1 = 1.6: 15 ulps apart at most here)
  for (int j = 0; j < n; ++j) EXPECT_NEAR(w[j], ref[j], 64 * eps * 1.6) << "graded, j=" << j;
}
TEST(TridiagDc, BisectionClosedFormAndGraded) {
  body_BisectionClosedFormAndGraded();
  kess::core::detail::set_host_wide_vectors(0);
  body_BisectionClosedFormAndGraded();
  kess::core::detail::set_host_wide_vectors(-1);
}

// Glued Wilkinson W21+ x 50 (n = 1050): clusters of 50 eigenvalues within the glue's width,
// deflated by rotations at every level. Residual within 10 n eps ||T||, orthogonality within
// 10 n eps, with the roots on the host and on the execution space, for several leaf sizes.
TEST(TridiagDc, GluedWilkinsonAtLapackTolerances) {
  for (int exec_min : {-1, 3})
    for (double glue : {1.5e-8, 1e-10, 1e-14})
      for (int leaf : {32, 8}) {
        g_exec_secular_min = exec_min;
        const auto t = glued_wilkinson(21, 50, glue);
        const int n = static_cast<int>(t.d.size());
        const auto r = check(t, leaf);
        g_exec_secular_min = -1;
        char gs[32];
        std::snprintf(gs, sizeof gs, "%g", glue);
        const std::string what = std::string("glue ") + gs + " leaf " + std::to_string(leaf) +
                                 (exec_min > 0 ? " exec roots" : "");
        expect_accurate(r, n, what);
      }
}
