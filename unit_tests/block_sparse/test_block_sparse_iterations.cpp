// The block-sparse iterations on one process, per backend: kess::sign against a dense
// eigendecomposition, S^-1/2 and S^1/2 (orders 2 and 3) against dense, Lanczos bounds, the density
// matrix by sign and TRS4 against dense generalized eigenvectors (Tr(PS) = N, PSP = P, HPS = SPH,
// mu between HOMO and LUMO), errors that shrink with filter_eps, and bad inputs.
#include <kess/kess.hpp>  // the dense kess::sign too: the overloads must not clash

#include "block_sparse_testing.hpp"
#include "test_backend.hpp"
#include "test_check.hpp"

#include <kess/core/linalg/lapack.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using Matrix = kess::BlockSparseMatrix<double, TestMemSpace>;
using kess::BlockDistribution;
using Dense = std::vector<double>;

// Mixed block sizes 2..6, 30 blocks (n = 118).
const std::vector<int> kSizes = bs_test::sizes(30, {2, 5, 3, 6, 4, 2, 6, 3});

// A symmetric block matrix: blocks within `band` of the diagonal, entries uniform in [-1, 1]
// times amp * decay^|i-j| (off the diagonal block), plus diag_shift + spread * (i / nb) on the
// diagonal of block i (a molecule-like spread of on-site energies).
bs_test::Global symmetric(const std::vector<int>& s, unsigned seed, double amp, double decay,
                          int band, double diag_shift, double spread) {
  const int nb = static_cast<int>(s.size());
  bs_test::Global g;
  g.row_sizes = g.col_sizes = s;
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> upper(static_cast<std::size_t>(nb) * nb);
  for (int i = 0; i < nb; ++i) {
    for (int j = i; j < nb && j - i <= band; ++j) {
      auto& b = upper[i * nb + j];
      b.resize(static_cast<std::size_t>(s[i]) * s[j]);
      const double sc = amp * std::pow(decay, j - i);
      for (auto& x : b) x = sc * u(gen);
      if (i == j) {
        for (int c = 0; c < s[i]; ++c)
          for (int r = 0; r < c; ++r) b[r + c * s[i]] = b[c + r * s[i]];
        for (int r = 0; r < s[i]; ++r)
          b[r + r * s[i]] += diag_shift + spread * (double(i) + double(r) / s[i]) / nb;
      }
    }
  }
  for (int i = 0; i < nb; ++i) {
    for (int j = 0; j < nb; ++j) {
      if (std::abs(i - j) > band) continue;
      g.rows.push_back(i);
      g.cols.push_back(j);
      if (i <= j) {
        const auto& b = upper[i * nb + j];
        g.values.insert(g.values.end(), b.begin(), b.end());
      } else {
        const auto& b = upper[j * nb + i];  // s[j] x s[i], transposed
        for (int c = 0; c < s[j]; ++c)
          for (int r = 0; r < s[i]; ++r) g.values.push_back(b[c + r * s[j]]);
      }
      g.offsets.push_back(static_cast<std::int64_t>(g.values.size()));
    }
  }
  return g;
}

// The test's H and S: S = I + small decaying overlap (SPD, near identity), H with spread energies.
bs_test::Global make_h(unsigned seed = 3) {
  return symmetric(kSizes, seed, 0.3, 0.4, 4, -1.0, 3.0);
}
bs_test::Global make_s(unsigned seed = 4) {
  return symmetric(kSizes, seed, 0.04, 0.5, 3, 1.0, 0.0);
}

// Eigenvalues (ascending) and vectors of a dense symmetric matrix.
void eig(Dense a, std::int64_t n, Dense& w, Dense& v) {
  w.assign(static_cast<std::size_t>(n), 0.0);
  ASSERT_EQ(kess::core::lapack::syevd('V', 'L', int(n), a.data(), int(n), w.data()), 0);
  v = std::move(a);
}

// V f(Lambda) V^T.
template <class F>
Dense spectral(const Dense& a, std::int64_t n, F f) {
  Dense w, v;
  eig(a, n, w, v);
  Dense vf = v;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) vf[i + j * n] *= f(w[j]);
  Dense out(static_cast<std::size_t>(n * n), 0.0);
  bs_test::gemm(false, true, n, n, n, 1.0, vf, n, v, n, 0.0, out, n);
  return out;
}

Dense mul(const Dense& a, const Dense& b, std::int64_t n) {
  Dense c(static_cast<std::size_t>(n * n), 0.0);
  kess::core::lapack::blas_gemm('N', 'N', int(n), int(n), int(n), 1.0, a.data(), int(n), b.data(),
                                int(n), 0.0, c.data(), int(n));
  return c;
}

Dense minus(const Dense& a, const Dense& b) {
  Dense c(a.size());
  for (std::size_t e = 0; e < a.size(); ++e) c[e] = a[e] - b[e];
  return c;
}

// Generalized eigenpairs H c = e S c (c S-orthonormal).
void geig(const Dense& h, const Dense& s, std::int64_t n, Dense& w, Dense& c) {
  c = h;
  Dense b = s;
  w.assign(static_cast<std::size_t>(n), 0.0);
  ASSERT_EQ(
      kess::core::lapack::sygvd(1, 'V', 'L', int(n), c.data(), int(n), b.data(), int(n), w.data()),
      0);
}

// C_occ C_occ^T for the N lowest.
Dense projector(const Dense& c, std::int64_t n, int N) {
  Dense p(static_cast<std::size_t>(n * n), 0.0);
  if (N > 0) bs_test::gemm(false, true, n, n, N, 1.0, c, n, c, n, 0.0, p, n);
  return p;
}

// The N in [n/4, 3n/4] with the widest gap w[N] - w[N-1].
int widest_gap(const Dense& w) {
  const int n = static_cast<int>(w.size());
  int best = n / 4;
  for (int k = n / 4; k <= 3 * n / 4; ++k)
    if (w[k] - w[k - 1] > w[best] - w[best - 1]) best = k;
  return best;
}

TEST(BlockSparseIterations, OverloadsDoNotClashWithDenseSign) {
  using Exec = TestExecSpace;
  using R2 = decltype(kess::sign(std::declval<const Exec&>(), std::declval<const Matrix&>()));
  using R3 = decltype(kess::sign(std::declval<const Exec&>(), std::declval<const Matrix&>(),
                                 kess::BlockSignOptions{}));
  static_assert(std::is_same<R2, kess::BlockSignResult<TestMemSpace>>::value, "block sign");
  static_assert(std::is_same<R3, kess::BlockSignResult<TestMemSpace>>::value, "block sign");
  SUCCEED();
}

TEST(BlockSparseIterations, SignMatchesDenseEigendecomposition) {
  TestExecSpace exec;
  const auto gh = make_h();
  const std::int64_t n = gh.m();
  auto a = gh.dense();
  Dense w, v;
  eig(a, n, w, v);
  const int k = widest_gap(w);
  const double mu = 0.5 * (w[k - 1] + w[k]);
  for (std::int64_t i = 0; i < n; ++i) a[i + i * n] -= mu;
  const Dense ref = spectral(a, n, [](double x) { return x < 0 ? -1.0 : 1.0; });
  const BlockDistribution d(kSizes, kSizes);
  const auto A = Matrix::from_dense(d, a.data(), n);
  for (auto bound : {kess::BlockNormBound::gershgorin, kess::BlockNormBound::frobenius}) {
    kess::BlockSignOptions o;
    o.bound = bound;
    const auto r = kess::sign(exec, A, o);
    EXPECT_LE(bs_test::max_diff(r.X.to_dense(), ref), 1e-9) << kess::to_string(bound);
    const auto& h = r.history;
    EXPECT_TRUE(h.converged);
    EXPECT_GT(h.iterations, 3);
    EXPECT_EQ(h.residual.size(), static_cast<std::size_t>(h.iterations));
    EXPECT_EQ(h.flops.size(), static_cast<std::size_t>(h.iterations));
    EXPECT_EQ(h.occupancy.size(), static_cast<std::size_t>(h.iterations));
    EXPECT_LT(h.residual.back(), 1e-8);
    EXPECT_GT(h.total_flops(), 0);
    EXPECT_GE(r.scale, 0.999 * std::max(std::fabs(w.front() - mu), std::fabs(w.back() - mu)));
  }
  // The two-argument call (default options) is the block-sparse one.
  const auto r2 = kess::sign(exec, A);
  EXPECT_LE(bs_test::max_diff(r2.X.to_dense(), ref), 1e-9);
}

// The sign's error at filter_eps: below c * eps (c from the matrix size), and shrinking with eps.
TEST(BlockSparseIterations, SignFilterErrorScalesWithEps) {
  TestExecSpace exec;
  const auto gh = make_h();
  const std::int64_t n = gh.m();
  auto a = gh.dense();
  Dense w, v;
  eig(a, n, w, v);
  const int k = widest_gap(w);
  const double mu = 0.5 * (w[k - 1] + w[k]);
  for (std::int64_t i = 0; i < n; ++i) a[i + i * n] -= mu;
  const Dense ref = spectral(a, n, [](double x) { return x < 0 ? -1.0 : 1.0; });
  const BlockDistribution d(kSizes, kSizes);
  const auto A = Matrix::from_dense(d, a.data(), n);
  double last = INFINITY;
  for (double eps : {1e-4, 1e-6, 1e-8}) {
    kess::BlockSignOptions o;
    o.filter_eps = eps;
    const auto r = kess::sign(exec, A, o);
    const double err = bs_test::frob(minus(r.X.to_dense(), ref));
    EXPECT_LE(err, 100 * eps) << "eps " << eps;
    EXPECT_LT(err, last) << "eps " << eps;
    EXPECT_LT(r.history.residual.back(), std::sqrt(eps));
    last = err;
  }
}

TEST(BlockSparseIterations, InverseSqrtMatchesDense) {
  TestExecSpace exec;
  const auto gs = make_s();
  const std::int64_t n = gs.m();
  const auto s = gs.dense();
  const Dense ref_is = spectral(s, n, [](double x) { return 1 / std::sqrt(x); });
  const Dense ref_s = spectral(s, n, [](double x) { return std::sqrt(x); });
  const BlockDistribution d(kSizes, kSizes);
  const auto S = bs_test::build<Matrix>(d, gs);
  int its[2] = {0, 0};
  for (int order : {2, 3}) {
    kess::BlockInverseSqrtOptions o;
    o.order = order;
    const auto r = kess::inverse_sqrt(exec, S, o);
    EXPECT_LE(bs_test::max_diff(r.inv_sqrt.to_dense(), ref_is), 1e-11) << "order " << order;
    EXPECT_LE(bs_test::max_diff(r.sqrt.to_dense(), ref_s), 1e-11) << "order " << order;
    EXPECT_TRUE(r.history.converged);
    its[order - 2] = r.history.iterations;
    // Filtered: within c * eps, less accurate at larger eps.
    double last = INFINITY;
    for (double eps : {1e-4, 1e-6, 1e-8}) {
      o.filter_eps = eps;
      const auto f = kess::inverse_sqrt(exec, S, o);
      const double err = bs_test::frob(minus(f.inv_sqrt.to_dense(), ref_is));
      EXPECT_LE(err, 50 * eps) << "order " << order << " eps " << eps;
      EXPECT_LT(err, last) << "order " << order << " eps " << eps;
      last = err;
    }
  }
  EXPECT_LE(its[1], its[0]);  // third order: no more steps than second
}

TEST(BlockSparseIterations, LanczosFindsTheSpectrumEnds) {
  TestExecSpace exec;
  const auto gh = make_h();
  const std::int64_t n = gh.m();
  Dense w, v;
  eig(gh.dense(), n, w, v);
  const auto H = bs_test::build<Matrix>(BlockDistribution(kSizes, kSizes), gh);
  const auto e = kess::extremal_eigenvalues(exec, H);
  const double width = w.back() - w.front();
  EXPECT_LE(e.steps, 48);
  EXPECT_GT(e.flops, 0);
  // Ritz values inside the spectrum, within their residual (+ rounding) of its ends.
  EXPECT_GE(e.min, w.front() - 1e-12 * width);
  EXPECT_LE(e.max, w.back() + 1e-12 * width);
  EXPECT_LE(e.min - w.front(), std::max(e.min_residual, 1e-3 * width));
  EXPECT_LE(w.back() - e.max, std::max(e.max_residual, 1e-3 * width));
}

struct DenseRef {
  Dense h, s, w, c;
  std::int64_t n = 0;
};

DenseRef dense_ref(const bs_test::Global& gh, const bs_test::Global& gs) {
  DenseRef r;
  r.n = gh.m();
  r.h = gh.dense();
  r.s = gs.dense();
  geig(r.h, r.s, r.n, r.w, r.c);
  return r;
}

// P against dense: Tr(PS) = N, PSP = P, HPS = SPH, mu in the gap, P = C_occ C_occ^T.
void check_density(const DenseRef& ref, int N, const kess::BlockDensityResult<TestMemSpace>& r,
                   double tol, const char* what) {
  const std::int64_t n = ref.n;
  const auto p = r.P.to_dense();
  const auto ps = mul(p, ref.s, n);
  double tr = 0;
  for (std::int64_t i = 0; i < n; ++i) tr += ps[i + i * n];
  EXPECT_NEAR(tr, N, 50 * tol) << what;
  EXPECT_NEAR(r.trace_ps, tr, 1e-9 * n) << what;
  EXPECT_LE(bs_test::frob(minus(mul(ps, p, n), p)), tol) << what << ": PSP = P";
  EXPECT_LE(bs_test::frob(minus(mul(ref.h, ps, n), mul(mul(ref.s, p, n), ref.h, n))), 10 * tol)
      << what << ": HPS = SPH";
  EXPECT_LE(r.idempotency, 10 * tol) << what;
  EXPECT_GT(r.mu, ref.w[N - 1]) << what << ": mu above the HOMO";
  EXPECT_LT(r.mu, ref.w[N]) << what << ": mu below the LUMO";
  EXPECT_LE(bs_test::frob(minus(p, projector(ref.c, n, N))), tol) << what << ": P";
  EXPECT_GT(r.iterations, 0) << what;
  EXPECT_GT(r.sqrt_iterations, 0) << what;
  EXPECT_GT(r.flops, 0) << what;
  EXPECT_TRUE(r.history.converged) << what;
}

TEST(BlockSparseIterations, DensityMatrixBySignAndTrs4) {
  TestExecSpace exec;
  const auto gh = make_h(), gs = make_s();
  const auto ref = dense_ref(gh, gs);
  const int N = widest_gap(ref.w);
  const BlockDistribution d(kSizes, kSizes);
  const auto H = bs_test::build<Matrix>(d, gh);
  const auto S = bs_test::build<Matrix>(d, gs);
  for (auto method : {kess::DensityMethod::sign, kess::DensityMethod::trs4}) {
    kess::BlockDensityOptions o;
    o.method = method;
    const auto r = kess::density_matrix(exec, H, S, N, o);
    check_density(ref, N, r, 1e-10, kess::to_string(method));
    if (method == kess::DensityMethod::trs4) EXPECT_EQ(r.mu_evaluations, 1);
    if (method == kess::DensityMethod::sign) EXPECT_GT(r.mu_evaluations, 1);
    EXPECT_LE(r.spectrum_min, ref.w.front());
    EXPECT_GE(r.spectrum_max, ref.w.back());
  }
}

// With filter_eps the errors stay within c * eps and shrink with it.
TEST(BlockSparseIterations, DensityMatrixFilteredErrorsScaleWithEps) {
  TestExecSpace exec;
  const auto gh = make_h(), gs = make_s();
  const auto ref = dense_ref(gh, gs);
  const int N = widest_gap(ref.w);
  const auto pref = projector(ref.c, ref.n, N);
  const BlockDistribution d(kSizes, kSizes);
  const auto H = bs_test::build<Matrix>(d, gh);
  const auto S = bs_test::build<Matrix>(d, gs);
  for (auto method : {kess::DensityMethod::sign, kess::DensityMethod::trs4}) {
    double last = INFINITY;
    for (double eps : {1e-4, 1e-6, 1e-8}) {
      kess::BlockDensityOptions o;
      o.method = method;
      o.filter_eps = eps;
      const auto r = kess::density_matrix(exec, H, S, N, o);
      const std::string what = std::string(kess::to_string(method)) + " eps " + std::to_string(eps);
      const double err = bs_test::frob(minus(r.P.to_dense(), pref));
      EXPECT_LE(err, 100 * eps) << what;
      EXPECT_LT(err, last) << what;
      EXPECT_NEAR(r.trace_ps, N, 100 * eps) << what;
      EXPECT_LE(r.idempotency, 100 * eps) << what;
      EXPECT_GT(r.mu, ref.w[N - 1]) << what;
      EXPECT_LT(r.mu, ref.w[N]) << what;
      last = err;
    }
  }
}

// No electrons: P = 0; all orbitals filled: P = S^-1.
TEST(BlockSparseIterations, DensityMatrixEmptyAndFull) {
  TestExecSpace exec;
  const auto gh = make_h(), gs = make_s();
  const std::int64_t n = gh.m();
  const BlockDistribution d(kSizes, kSizes);
  const auto H = bs_test::build<Matrix>(d, gh);
  const auto S = bs_test::build<Matrix>(d, gs);
  const Dense sinv = spectral(gs.dense(), n, [](double x) { return 1 / x; });
  for (auto method : {kess::DensityMethod::sign, kess::DensityMethod::trs4}) {
    kess::BlockDensityOptions o;
    o.method = method;
    const auto r0 = kess::density_matrix(exec, H, S, 0, o);
    EXPECT_EQ(r0.P.blocks(), 0);
    EXPECT_EQ(r0.trace_ps, 0.0);
    const auto rn = kess::density_matrix(exec, H, S, double(n), o);
    EXPECT_LE(bs_test::max_diff(rn.P.to_dense(), sinv), 1e-10);
    EXPECT_NEAR(rn.trace_ps, double(n), 1e-9 * n);
  }
}

TEST(BlockSparseIterations, BadInputs) {
  TestExecSpace exec;
  using kess::ErrorKind;
  const auto gh = make_h(), gs = make_s();
  const std::int64_t n = gh.m();
  const BlockDistribution d(kSizes, kSizes);
  const auto H = bs_test::build<Matrix>(d, gh);
  const auto S = bs_test::build<Matrix>(d, gs);
  // Electrons: negative, more than the orbitals, not whole.
  auto e = kess_test::expect_error([&] { kess::density_matrix(exec, H, S, -2.0); },
                                   ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "n_electrons must be >= 0")) << e.what();
  e = kess_test::expect_error([&] { kess::density_matrix(exec, H, S, double(n + 1)); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "exceeds the " + std::to_string(n) + " orbitals")) << e.what();
  e = kess_test::expect_error([&] { kess::density_matrix(exec, H, S, 4.5); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "whole number")) << e.what();
  // Non-square diagonal blocks.
  const BlockDistribution rect({2, 3}, {3, 2});
  const auto R = Matrix::from_dense(rect, std::vector<double>(25, 1.0).data(), 5);
  e = kess_test::expect_error([&] { kess::sign(exec, R); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "non-square diagonal blocks")) << e.what();
  e = kess_test::expect_error([&] { kess::inverse_sqrt(exec, R); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "non-square diagonal blocks")) << e.what();
  e = kess_test::expect_error([&] { kess::density_matrix(exec, R, R, 1.0); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "non-square diagonal blocks")) << e.what();
  // H and S on different distributions.
  const BlockDistribution other(std::vector<int>(kSizes.rbegin(), kSizes.rend()),
                                std::vector<int>(kSizes.rbegin(), kSizes.rend()));
  const auto S2 = kess::identity(exec, other);
  e = kess_test::expect_error([&] { kess::density_matrix(exec, H, S2, 4.0); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "same block sizes and distribution")) << e.what();
  // A mu bracket that does not hold N (both ends below the HOMO).
  const auto ref = dense_ref(gh, gs);
  const int N = widest_gap(ref.w);
  kess::BlockDensityOptions o;
  o.mu_min = ref.w.front() - 2;
  o.mu_max = ref.w.front() - 1;
  e = kess_test::expect_error([&] { kess::density_matrix(exec, H, S, N, o); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "mu cannot bracket")) << e.what();
  // Degenerate levels at the Fermi level: Tr(PS) jumps over N.
  {
    const std::vector<int> s3 = {2, 3, 2};
    const BlockDistribution d3(s3, s3);
    const double diag[7] = {-1, -1, 1, 1, 1, 1, 2};
    Dense hd(49, 0.0);
    for (int i = 0; i < 7; ++i) hd[i + 7 * i] = diag[i];
    const auto H3 = Matrix::from_dense(d3, hd.data(), 7);
    const auto I3 = kess::identity(exec, d3);
    e = kess_test::expect_error([&] { kess::density_matrix(exec, H3, I3, 3.0); },
                                ErrorKind::invalid_argument);
    EXPECT_TRUE(kess_test::contains(e, "degenerate levels")) << e.what();
    // The same N fits once the levels split.
    hd[2 + 7 * 2] = 0.5;
    const auto r = kess::density_matrix(exec, Matrix::from_dense(d3, hd.data(), 7), I3, 3.0);
    EXPECT_GT(r.mu, 0.5);
    EXPECT_LT(r.mu, 1.0);
  }
  // S not positive definite (one negative diagonal entry); H not symmetric.
  {
    auto sd = gs.dense();
    sd[5 + 5 * n] = -0.5;
    const auto Sbad = Matrix::from_dense(d, sd.data(), n);
    e = kess_test::expect_error([&] { kess::inverse_sqrt(exec, Sbad); },
                                ErrorKind::not_positive_definite);
    EXPECT_TRUE(kess_test::contains(e, "not positive definite")) << e.what();
    e = kess_test::expect_error([&] { kess::density_matrix(exec, H, Sbad, 10.0); },
                                ErrorKind::not_positive_definite);
    auto hd = gh.dense();
    hd[1 + 0 * n] += 0.1;
    const auto Hbad = Matrix::from_dense(d, hd.data(), n);
    e = kess_test::expect_error([&] { kess::density_matrix(exec, Hbad, S, 10.0); },
                                ErrorKind::not_symmetric);
    EXPECT_TRUE(kess_test::contains(e, "H is not symmetric")) << e.what();
  }
  // Options; the sign of zero; a sign that cannot converge in 2 steps.
  kess::BlockInverseSqrtOptions io;
  io.order = 4;
  e = kess_test::expect_error([&] { kess::inverse_sqrt(exec, S, io); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "order must be 2 or 3")) << e.what();
  kess::BlockSignOptions so;
  so.filter_eps = -1;
  e = kess_test::expect_error([&] { kess::sign(exec, H, so); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "filter_eps")) << e.what();
  e = kess_test::expect_error([&] { kess::sign(exec, Matrix(d)); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "A is zero")) << e.what();
  so = {};
  so.max_iterations = 2;
  e = kess_test::expect_error([&] { kess::sign(exec, H, so); }, ErrorKind::no_convergence);
  EXPECT_TRUE(kess_test::contains(e, "no convergence in 2 iterations")) << e.what();
}

}  // namespace
