// kess::detail::eigh::stedc_split (all eigenpairs of a symmetric tridiagonal: dstedc on the two halves
// at once, the top merge over host threads) against LAPACK dstedc on the same matrix: eigenvalues,
// residuals ||T z - lambda z||, orthogonality (no worse than dstedc's own beyond a small factor),
// ascending order, for random matrices, every deflation path of the merge and 1 to 3 threads;
// with 4 and more threads the halves are split again over thread groups, and on one thread a
// half is split again while its own halves keep 150 rows or more (merges inside merges), checked
// the same way.
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh/detail/tridiag_split.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include "test_check.hpp"

namespace {

struct Eig {
  std::vector<double> w, Z;
  int info = 0;
};

// M <- H M for the rows handed over (rows x cols, ld): H = I - 2 v v^T, v a fixed unit vector of
// that length. H is its own inverse.
void reflect_rows(int rows, int cols, double* m, int ld) {
  std::vector<double> v(rows);
  double nrm = 0;
  for (int i = 0; i < rows; ++i) {
    v[i] = std::sin(1.7 * i + 0.3) + 0.5;
    nrm += v[i] * v[i];
  }
  for (double& x : v) x /= std::sqrt(nrm);
  for (int c = 0; c < cols; ++c) {
    double* col = m + std::size_t(c) * ld;
    double dot = 0;
    for (int i = 0; i < rows; ++i) dot += v[i] * col[i];
    for (int i = 0; i < rows; ++i) col[i] -= 2 * dot * v[i];
  }
}

// transform: stedc_split with the bottom rows' transform reflect_rows (checked to have been
// applied to exactly the promised rows of every column, then undone).
Eig run(bool split, const std::vector<double>& d, const std::vector<double>& e, int threads,
        bool transform = false) {
  const int n = static_cast<int>(d.size());
  Eig r;
  r.w = d;
  std::vector<double> ee = e;
  ee.resize(std::max(1, n));
  r.Z.assign(std::size_t(n) * n, -7.0);  // garbage the routine must overwrite
  const int rows = kess::detail::eigh::stedc_split_bottom_rows(n, true);
  std::atomic<long long> columns{0};  // the split path calls bottom from two threads at once
  kess::detail::eigh::BottomRowsTransform bottom;
  if (transform)
    bottom = [&](int rows_seen, int cols, double* m, int ld) {
      EXPECT_EQ(rows_seen, rows);
      columns += cols;
      reflect_rows(rows_seen, cols, m, ld);
    };
  r.info = split ? kess::detail::eigh::stedc_split(n, r.w.data(), ee.data(), r.Z.data(), n, threads, bottom)
                 : kess::core::lapack::stedc('I', n, r.w.data(), ee.data(), r.Z.data(), n);
  if (transform) {
    // The bottom block's own columns (split path) or every column (dstedc alone); either way
    // diag(I, H) Z comes back, so undoing H must give T's eigenvectors.
    EXPECT_TRUE(columns == n || columns == rows) << columns.load() << " columns transformed";
    reflect_rows(rows, n, r.Z.data() + (n - rows), n);
  }
  return r;
}

double orthogonality(const Eig& r, int n) {
  std::vector<double> G(std::size_t(n) * n);
  kess::core::lapack::gemm('T', 'N', n, n, n, 1.0, r.Z.data(), n, r.Z.data(), n, 0.0, G.data(), n);
  double o = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      o = kess_test::worse(o, std::abs(G[i + std::size_t(j) * n] - (i == j ? 1.0 : 0.0)));
  return o;
}

void expect_matches_dstedc(const std::vector<double>& d, const std::vector<double>& e,
                           const std::string& what, bool transform = false,
                           const std::vector<int>& thread_counts = {1, 2, 3}) {
  const int n = static_cast<int>(d.size());
  double tnorm = 0;
  for (int i = 0; i < n; ++i)
    tnorm = kess_test::worse(tnorm, std::abs(d[i]) + (i > 0 ? std::abs(e[i - 1]) : 0.0) +
                                        (i + 1 < n ? std::abs(e[i]) : 0.0));
  const Eig ref = run(false, d, e, 1);
  ASSERT_EQ(ref.info, 0) << what;
  const double orth_ref = orthogonality(ref, n);
  for (int threads : thread_counts) {
    const std::string w = what + ", " + std::to_string(threads) + " threads";
    const Eig r = run(true, d, e, threads, transform);
    ASSERT_EQ(r.info, 0) << w;
    double res = 0;
    for (int j = 0; j < n; ++j) {
      EXPECT_NEAR(r.w[j], ref.w[j], 1e-13 * tnorm) << w << ", eigenvalue " << j;
      if (j > 0) EXPECT_LE(r.w[j - 1], r.w[j]) << w << ": not ascending at " << j;
      const double* z = r.Z.data() + std::size_t(j) * n;
      for (int i = 0; i < n; ++i) {
        const double tz = d[i] * z[i] + (i > 0 ? e[i - 1] * z[i - 1] : 0.0) + (i + 1 < n ? e[i] * z[i + 1] : 0.0);
        res = kess_test::worse(res, std::abs(tz - r.w[j] * z[i]));
      }
    }
    EXPECT_LE(res, 1e-13 * tnorm) << w;
    const double orth = orthogonality(r, n);
    EXPECT_LE(orth, 3.0 * orth_ref + 4e-16 * n) << w << " (dstedc: " << orth_ref << ")";
    if (threads == 1 && !transform && n < 300)
      EXPECT_EQ(r.Z, ref.Z) << w << ": one thread below 300 rows is dstedc itself";
  }
}

// Random tridiagonals (entries in [-1, 1]) of orders 4, 5, 37 and 1201.
void expect_random_match_dstedc(unsigned seed, bool transform) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int n : {4, 5, 37, 1201}) {
    std::vector<double> d(n), e(n - 1);
    for (auto& x : d) x = u(gen);
    for (auto& x : e) x = u(gen);
    expect_matches_dstedc(d, e, "random n = " + std::to_string(n) + (transform ? ", transform" : ""),
                          transform);
  }
}

}  // namespace

TEST(TridiagSplit, RandomMatchesDstedc) { expect_random_match_dstedc(7, false); }

// The top merge's deflation paths: two identical halves joined by a small coupling (every
// eigenvalue twice: deflation by rotation, columns of the dense type), the same halves not coupled
// (rho = 0: everything deflates, k = 0), and Wilkinson halves (pairs that agree to many digits)
// with a coupling of 1.
TEST(TridiagSplit, DeflationPathsMatchDstedc) {
  const int h = 300, n = 2 * h;
  std::vector<double> d(n), e(n - 1);
  for (int i = 0; i < h; ++i) d[i] = d[i + h] = std::sin(0.37 * i) * 4.0;
  for (int i = 0; i + 1 < h; ++i) e[i] = e[i + h] = 0.5 + 0.25 * std::cos(1.3 * i);
  for (double glue : {1e-3, 0.0}) {
    e[h - 1] = glue;
    expect_matches_dstedc(d, e, "identical halves, coupling " + std::to_string(glue));
  }
  for (int i = 0; i < n; ++i) d[i] = std::abs((i % h) - (h - 1) / 2.0) / 10.0;
  std::fill(e.begin(), e.end(), 1.0);
  expect_matches_dstedc(d, e, "Wilkinson halves");
}

// With a transform of the bottom rows (what kess::eigh's one-stage path hands over: dsytrd's
// reflectors of those rows) the tear is uneven, the bottom half goes first in dlaed2's layout and
// the transform runs on that half's vectors before the merge. Random matrices, and a bottom half
// whose spectrum the top half contains (every one of its eigenvalues deflates by rotation), joined
// by a small coupling and by none (k = 0).
TEST(TridiagSplit, BottomRowsTransformCommutesWithTheMerge) {
  expect_random_match_dstedc(11, true);
  std::mt19937 gen(13);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int n = 600, n2 = kess::detail::eigh::stedc_split_bottom_rows(n, true), n1 = n - n2;
  ASSERT_LT(n2, n1);
  std::vector<double> d(n), e(n - 1);
  for (int i = 0; i < n; ++i) d[i] = u(gen);
  for (auto& x : e) x = u(gen);
  for (int i = 0; i < n2; ++i) d[n1 + i] = d[i] = std::sin(0.37 * i) * 4.0;
  for (int i = 0; i + 1 < n2; ++i) e[n1 + i] = e[i] = 0.5 + 0.25 * std::cos(1.3 * i);
  e[n2 - 1] = 0.0;  // the top half: a copy of the bottom one, then other rows
  for (double glue : {1e-3, 0.0}) {
    e[n1 - 1] = glue;
    expect_matches_dstedc(d, e, "bottom spectrum inside the top, coupling " + std::to_string(glue) + ", transform", true);
  }
}

// 4 to 8 threads: the halves are split again (halves of at least 400 rows), with every level's
// merge inside another host loop (its GEMMs in column chunks); 1 and 2 threads: each half split
// again on its one thread down to halves of 150 rows (three levels below the top at n = 2000).
// Random matrices of 1201 rows (one level below the top), 2000 rows (two levels at 8 threads;
// with the bottom rows' transform too) and 3203 rows (uneven halves), then eight identical blocks
// joined by small couplings (every eigenvalue eight times: deflation by rotation at every level)
// and by none (k = 0 everywhere).
TEST(TridiagSplit, RecursiveHalvesMatchDstedc) {
  std::mt19937 gen(17);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int n : {1201, 2000, 3203}) {
    std::vector<double> d(n), e(n - 1);
    for (auto& x : d) x = u(gen);
    for (auto& x : e) x = u(gen);
    const std::string what = "random n = " + std::to_string(n);
    expect_matches_dstedc(d, e, what, false, {1, 2, 4, 5, 8});
    if (n == 2000) expect_matches_dstedc(d, e, what + ", transform", true, {1, 2, 4, 8});
  }
  const int h = 250, n = 8 * h;
  std::vector<double> d(n), e(n - 1);
  for (int i = 0; i < n; ++i) d[i] = std::sin(0.37 * (i % h)) * 4.0;
  for (int i = 0; i + 1 < n; ++i) e[i] = 0.5 + 0.25 * std::cos(1.3 * (i % h));
  for (double glue : {1e-3, 0.0}) {
    for (int b = 1; b < 8; ++b) e[b * h - 1] = glue;
    expect_matches_dstedc(d, e, "eight identical blocks, coupling " + std::to_string(glue), false,
                          {1, 2, 8});
  }
}

// Glued Wilkinson matrices (50 copies of W21+ glued by small couplings, n = 1050): clusters of
// 50 eigenvalues within the glue's width, roots within rounding of the midpoint between two close
// poles at every merge. Residuals ||T z - lambda z|| within 10 n eps ||T||, orthogonality within
// 10 n eps, on 1 to 3 threads (merges inside merges on one thread) and with the transform.
TEST(TridiagSplit, GluedWilkinsonAtLapackTolerances) {
  const double eps = std::numeric_limits<double>::epsilon();
  const int m = 21, copies = 50, n = m * copies;
  for (double glue : {1.5e-8, 1e-10, 1e-14}) {
    std::vector<double> d, e;
    for (int c = 0; c < copies; ++c) {
      for (int i = 0; i < m; ++i) d.push_back(std::abs((m - 1) / 2 - i));
      for (int i = 0; i + 1 < m; ++i) e.push_back(1.0);
      if (c + 1 < copies) e.push_back(glue);
    }
    const double tnorm = 12.0;  // max |d_i| + 2 max |e_i| bounds ||T||_2
    for (int threads : {1, 2, 3})
      for (bool transform : {false, true}) {
        char what[96];
        std::snprintf(what, sizeof what, "glue %g, %d threads%s", glue, threads,
                      transform ? ", transform" : "");
        const Eig r = run(true, d, e, threads, transform);
        ASSERT_EQ(r.info, 0) << what;
        double res = 0;
        for (int j = 0; j < n; ++j) {
          const double* z = r.Z.data() + std::size_t(j) * n;
          double s = 0;
          for (int i = 0; i < n; ++i) {
            const double tz = d[i] * z[i] + (i > 0 ? e[i - 1] * z[i - 1] : 0.0) +
                              (i + 1 < n ? e[i] * z[i + 1] : 0.0) - r.w[j] * z[i];
            s += tz * tz;
          }
          res = kess_test::worse(res, std::sqrt(s));
        }
        const double orth = orthogonality(r, n);
        EXPECT_LE(res, 10 * n * eps * tnorm) << what;
        EXPECT_LE(orth, 10 * n * eps) << what;
      }
  }
}

// Random tridiagonals scaled by 1e-10, 1e-100 and 1e100: the merge sees T scaled to max |T_ij|
// = 1, as dstedc does (dlaed2's deflation tolerance is absolute: without the scaling the merge of
// a T of norm 1e-10 deflates z_i up to 1e-5, residuals 2e-6 ||T||).
TEST(TridiagSplit, ScaledMatchesDstedc) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int n = 1201;
  std::vector<double> d0(n), e0(n - 1);
  for (auto& x : d0) x = u(gen);
  for (auto& x : e0) x = u(gen);
  for (double scale : {1e-10, 1e-100, 1e100}) {
    std::vector<double> d = d0, e = e0;
    for (auto& x : d) x *= scale;
    for (auto& x : e) x *= scale;
    char what[64];
    std::snprintf(what, sizeof what, "random n = %d scaled by %g", n, scale);
    expect_matches_dstedc(d, e, what, false, {1, 2});
  }
}
