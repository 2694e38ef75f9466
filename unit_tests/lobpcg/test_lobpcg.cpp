// kess::lobpcg and kess::FomPreconditioner on one process, per backend: eigenpairs against LAPACK
// (dsyevd, dsygvd) on random sparse matrices, the closed-form spectra of Dirichlet Laplacians
// (with clusters of equal eigenvalues), the largest end, every preconditioner (FOM saving
// iterations), generalized problems, constraints, a run that does not converge, ill-conditioned
// spectra and start blocks, FOM against exact tile solves, and bad inputs.
#include <kess/solvers/lobpcg.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"

#include <kess/core/linalg/lapack.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using Mem = TestMemSpace;
using Csb = kess::CsbMatrix<double, Mem>;
using Block = kess::VectorBlock<double, Mem>;
using kess::LobpcgOptions;
using kess::Preconditioner;
using Dense = std::vector<double>;  // column-major

// One triangle (row >= col) in COO.
struct Coo {
  std::int64_t n = 0;
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;
  void add(std::int64_t i, std::int64_t j, double v) {
    rows.push_back(std::max(i, j));
    cols.push_back(std::min(i, j));
    vals.push_back(v);
  }
};

Coo laplace2d(int nx, int ny) {
  Coo c;
  c.n = static_cast<std::int64_t>(nx) * ny;
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      const std::int64_t i = x + static_cast<std::int64_t>(y) * nx;
      c.add(i, i, 4.0);
      if (x > 0) c.add(i, i - 1, -1.0);
      if (y > 0) c.add(i, i - nx, -1.0);
    }
  return c;
}

// Tridiagonal: diagonal d, off-diagonal e.
Coo tridiagonal(std::int64_t n, double d, double e) {
  Coo c;
  c.n = n;
  for (std::int64_t i = 0; i < n; ++i) {
    c.add(i, i, d);
    if (i > 0) c.add(i, i - 1, e);
  }
  return c;
}

// Random symmetric sparse: about `per_row` off-diagonal entries a row in [-1, 1), diagonal
// uniform in [0, spread) (a spread spectrum, like a CI Hamiltonian).
Coo random_sparse(std::int64_t n, int per_row, double spread, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<std::int64_t> col(0, n - 1);
  std::vector<std::vector<std::int64_t>> seen(static_cast<std::size_t>(n));
  Coo c;
  c.n = n;
  for (std::int64_t i = 0; i < n; ++i) c.add(i, i, spread * 0.5 * (u(g) + 1.0));
  for (std::int64_t i = 0; i < n; ++i)
    for (int e = 0; e < per_row / 2; ++e) {
      const std::int64_t j = col(g);
      const std::int64_t r = std::max(i, j), cc = std::min(i, j);
      if (r == cc) continue;
      auto& s = seen[r];
      if (std::find(s.begin(), s.end(), cc) != s.end()) continue;
      s.push_back(cc);
      c.add(r, cc, u(g));
    }
  return c;
}

Csb make(const Coo& c, int beta = 64) {
  kess::CsbOptions o;
  o.block_size = beta;
  return Csb::from_coo(c.n, c.rows, c.cols, c.vals, kess::CooContent::triangle, o);
}

Dense dense(const Coo& c) {
  Dense a(static_cast<std::size_t>(c.n * c.n), 0.0);
  for (std::size_t e = 0; e < c.vals.size(); ++e) {
    a[c.rows[e] + c.cols[e] * c.n] = c.vals[e];
    a[c.cols[e] + c.rows[e] * c.n] = c.vals[e];
  }
  return a;
}

// All eigenvalues (ascending) and vectors of a dense symmetric matrix (or pencil with b).
std::vector<double> eig(Dense a, int n, Dense* vectors = nullptr, Dense b = {}) {
  std::vector<double> w(static_cast<std::size_t>(n));
  const int info =
      b.empty() ? kess::core::lapack::syevd('V', 'L', n, a.data(), n, w.data())
                : kess::core::lapack::sygvd(1, 'V', 'L', n, a.data(), n, b.data(), n, w.data());
  EXPECT_EQ(info, 0);
  if (vectors) *vectors = a;
  return w;
}

Dense to_host(const Block& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  Dense d(v.extent(0) * v.extent(1));
  for (std::size_t j = 0; j < v.extent(1); ++j)
    for (std::size_t i = 0; i < v.extent(0); ++i) d[i + j * v.extent(0)] = h(i, j);
  return d;
}

Block to_device(const Dense& d, std::int64_t n, int k) {
  Block v("v", n, k);
  auto h = Kokkos::create_mirror_view(v);
  for (int j = 0; j < k; ++j)
    for (std::int64_t i = 0; i < n; ++i) h(i, j) = d[i + j * n];
  Kokkos::deep_copy(v, h);
  return v;
}

double norm_inf(const Dense& a, int n) {
  double m = 0;
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += std::abs(a[i + static_cast<std::size_t>(j) * n]);
    m = std::max(m, s);
  }
  return m;
}

// Checks of a result against dense A (and B): residuals max_i ||A x_i - λ_i B x_i|| / (||A||
// ||x_i||), B-orthonormality max |XᵀBX - I|; both must be small.
void check_pairs(const kess::LobpcgResult<double, Mem>& r, const Dense& A, int n, double res_tol,
                 const Dense& Bm = {}) {
  const int k = static_cast<int>(r.eigenvalues.size());
  ASSERT_EQ(static_cast<int>(r.vectors.extent(1)), k);
  const Dense X = to_host(r.vectors);
  const double an = norm_inf(A, n);
  double worst = 0, orth = 0;
  std::vector<double> bx(static_cast<std::size_t>(n) * k);
  for (int c = 0; c < k; ++c) {
    double rn = 0, xn = 0;
    for (int i = 0; i < n; ++i) {
      double ax = 0, b = 0;
      for (int j = 0; j < n; ++j) {
        ax += A[i + static_cast<std::size_t>(j) * n] * X[j + static_cast<std::size_t>(c) * n];
        b += (Bm.empty() ? (i == j ? 1.0 : 0.0) : Bm[i + static_cast<std::size_t>(j) * n]) *
             X[j + static_cast<std::size_t>(c) * n];
      }
      bx[i + static_cast<std::size_t>(c) * n] = b;
      rn += (ax - r.eigenvalues[c] * b) * (ax - r.eigenvalues[c] * b);
      xn += X[i + static_cast<std::size_t>(c) * n] * X[i + static_cast<std::size_t>(c) * n];
    }
    worst = kess_test::worse(worst, std::sqrt(rn) / (an * std::sqrt(xn)));
  }
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b) {
      double s = 0;
      for (int i = 0; i < n; ++i)
        s += X[i + static_cast<std::size_t>(a) * n] * bx[i + static_cast<std::size_t>(b) * n];
      orth = kess_test::worse(orth, std::abs(s - (a == b ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, res_tol);
  EXPECT_LT(orth, 1e-10);
}

void check_values(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * scale) << "eigenvalue " << i;
}

/// Options for the nev lowest pairs to tolerance tol (block size: the default unless given).
LobpcgOptions options(int nev, double tol, int block_size = LobpcgOptions().block_size) {
  LobpcgOptions o;
  o.nev = nev;
  o.tol = tol;
  o.block_size = block_size;
  return o;
}

TEST(Lobpcg, RandomSparseAgainstSyevd) {
  const Coo c = random_sparse(300, 8, 20.0, 7);
  const Csb H = make(c);
  const Dense A = dense(c);
  const auto ref = eig(A, 300);
  for (auto pc : {Preconditioner::none, Preconditioner::jacobi, Preconditioner::fom}) {
    LobpcgOptions o = options(6, 1e-10);
    o.preconditioner = pc;
    const auto r = kess::lobpcg(TestExecSpace(), H, o);
    SCOPED_TRACE(kess::to_string(pc));
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(r.converged_count, 6);
    EXPECT_EQ(r.block_size, 10);  // automatic: nev + 4
    EXPECT_EQ(r.spmm_count, r.iterations + 1);
    EXPECT_EQ(static_cast<int>(r.history.size()), r.iterations + 1);
    for (double x : r.residuals) EXPECT_LT(x, 1e-10);
    check_values(r.eigenvalues, std::vector<double>(ref.begin(), ref.begin() + 6), 1e-8);
    check_pairs(r, A, 300, 1e-8);
  }
}

TEST(Lobpcg, Laplace2dClusters) {
  // 20 x 20 grid: λ(i, j) = 4 - 2 cos(π i / 21) - 2 cos(π j / 21), pairs (i, j), (j, i) equal;
  // nev = 5 ends inside the cluster λ(1, 3) = λ(3, 1).
  const int g = 20;
  const Coo c = laplace2d(g, g);
  std::vector<double> ref;
  for (int i = 1; i <= g; ++i)
    for (int j = 1; j <= g; ++j)
      ref.push_back(4 - 2 * std::cos(M_PI * i / (g + 1)) - 2 * std::cos(M_PI * j / (g + 1)));
  std::sort(ref.begin(), ref.end());
  ASSERT_NEAR(ref[4], ref[5], 1e-14);  // the cluster is straddled
  LobpcgOptions o = options(5, 1e-10);
  const auto r = kess::lobpcg(TestExecSpace(), make(c), o);
  EXPECT_TRUE(r.converged);
  check_values(r.eigenvalues, std::vector<double>(ref.begin(), ref.begin() + 5), 1e-9);
  check_pairs(r, dense(c), static_cast<int>(c.n), 1e-9);
}

TEST(Lobpcg, Laplace3dGeneratorTripleCluster) {
  // kess::gen::laplace3d(8, 8, 8): λ = Σ_d (2 - 2 cos(π j_d / 9)); the second value has
  // multiplicity 3 and nev = 3 ends inside it. FOM on 64-row tiles.
  const int g = 8;
  const auto p = kess::gen::laplace3d(g, g, g);
  ASSERT_EQ(p.n, g * g * g);
  std::vector<double> ref;
  for (int i = 1; i <= g; ++i)
    for (int j = 1; j <= g; ++j)
      for (int l = 1; l <= g; ++l)
        ref.push_back(6 - 2 * (std::cos(M_PI * i / (g + 1)) + std::cos(M_PI * j / (g + 1)) +
                               std::cos(M_PI * l / (g + 1))));
  std::sort(ref.begin(), ref.end());
  ASSERT_NEAR(ref[1], ref[3], 1e-13);
  kess::CsbOptions co;
  co.block_size = 64;
  const auto H = kess::make_csb<double, Mem>(p, co);
  LobpcgOptions o = options(3, 1e-10);
  const auto r = kess::lobpcg(TestExecSpace(), H, o);
  EXPECT_TRUE(r.converged);
  check_values(r.eigenvalues, std::vector<double>(ref.begin(), ref.begin() + 3), 1e-9);
  Coo c;
  c.n = p.n;
  c.rows = p.rows;
  c.cols = p.cols;
  c.vals = p.vals;
  check_pairs(r, dense(c), static_cast<int>(p.n), 1e-9);
}

TEST(Lobpcg, Largest) {
  const Coo c = random_sparse(250, 6, 10.0, 11);
  const auto ref = eig(dense(c), 250);
  LobpcgOptions o = options(4, 1e-10);
  o.largest = true;
  o.preconditioner = Preconditioner::jacobi;
  const auto r = kess::lobpcg(TestExecSpace(), make(c), o);
  EXPECT_TRUE(r.converged);
  check_values(r.eigenvalues, {ref[249], ref[248], ref[247], ref[246]}, 1e-8);
  check_pairs(r, dense(c), 250, 1e-8);
}

TEST(Lobpcg, FomSavesIterations) {
  const Coo c = laplace2d(30, 30);
  const Csb H = make(c);
  int its[3] = {0, 0, 0};
  std::vector<double> first;
  int idx = 0;
  for (auto pc : {Preconditioner::none, Preconditioner::jacobi, Preconditioner::fom}) {
    LobpcgOptions o = options(4, 1e-8);
    o.preconditioner = pc;
    o.fom_tile = 128;
    const auto r = kess::lobpcg(TestExecSpace(), H, o);
    SCOPED_TRACE(kess::to_string(pc));
    EXPECT_TRUE(r.converged);
    if (first.empty()) first = r.eigenvalues;
    check_values(r.eigenvalues, first, 1e-7);
    its[idx++] = r.iterations;
  }
  RecordProperty("iterations_none", its[0]);
  RecordProperty("iterations_jacobi", its[1]);
  RecordProperty("iterations_fom", its[2]);
  // FOM on 128-row tiles of the Laplacian must cut the iterations by a third at least.
  EXPECT_LT(3 * its[2], 2 * its[0]) << "none " << its[0] << ", fom " << its[2];
}

TEST(Lobpcg, GeneralizedMassMatrix) {
  // H random sparse, S the 1D mass matrix tridiag(1/6, 2/3, 1/6) (SPD), against dsygvd.
  const int n = 200;
  const Coo h = random_sparse(n, 6, 5.0, 3), s = tridiagonal(n, 2.0 / 3.0, 1.0 / 6.0);
  const Dense A = dense(h), B = dense(s);
  const auto ref = eig(A, n, nullptr, B);
  LobpcgOptions o = options(5, 1e-10);
  o.preconditioner = Preconditioner::jacobi;
  const auto r = kess::lobpcg(TestExecSpace(), make(h), make(s), o);
  EXPECT_TRUE(r.converged);
  check_values(r.eigenvalues, std::vector<double>(ref.begin(), ref.begin() + 5), 1e-8);
  check_pairs(r, A, n, 1e-8, B);
}

TEST(Lobpcg, GeneralizedDiagonal) {
  const int n = 240;
  const Coo h = random_sparse(n, 6, 4.0, 5);
  Coo s;
  s.n = n;
  for (int i = 0; i < n; ++i) s.add(i, i, 0.5 + 1.5 * ((i * 37) % n) / double(n));
  const Dense A = dense(h), B = dense(s);
  const auto ref = eig(A, n, nullptr, B);
  for (bool largest : {false, true}) {
    LobpcgOptions o = options(3, 1e-10);
    o.largest = largest;
    const auto r = kess::lobpcg(TestExecSpace(), make(h), make(s), o);
    EXPECT_TRUE(r.converged);
    const std::vector<double> want = largest
                                         ? std::vector<double>{ref[n - 1], ref[n - 2], ref[n - 3]}
                                         : std::vector<double>{ref[0], ref[1], ref[2]};
    check_values(r.eigenvalues, want, 1e-8);
    check_pairs(r, A, n, 1e-8, B);
  }
}

TEST(Lobpcg, ConstraintsGiveTheNextPairs) {
  const int n = 220;
  const Coo c = random_sparse(n, 6, 8.0, 9);
  const Dense A = dense(c);
  Dense V;
  const auto ref = eig(A, n, &V);
  kess::LobpcgVectors<double, Mem> in;
  in.constraints = to_device(V, n, 3);  // the first three columns of V
  LobpcgOptions o = options(4, 1e-10);
  const auto r = kess::lobpcg(TestExecSpace(), make(c), o, in);
  EXPECT_TRUE(r.converged);
  check_values(r.eigenvalues, {ref[3], ref[4], ref[5], ref[6]}, 1e-8);
  check_pairs(r, A, n, 1e-8);
  // and orthogonal to the constraints
  const Dense X = to_host(r.vectors);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 4; ++b) {
      double s = 0;
      for (int i = 0; i < n; ++i)
        s += V[i + static_cast<std::size_t>(a) * n] * X[i + static_cast<std::size_t>(b) * n];
      EXPECT_LT(std::abs(s), 1e-9);
    }
}

TEST(Lobpcg, NoConvergenceReturnsBestFound) {
  const Coo c = laplace2d(25, 25);
  LobpcgOptions o = options(4, 1e-12);
  o.max_iterations = 2;
  o.preconditioner = Preconditioner::none;
  kess::LobpcgResult<double, Mem> r;
  EXPECT_NO_THROW(r = kess::lobpcg(TestExecSpace(), make(c), o));
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.iterations, 2);
  EXPECT_EQ(r.spmm_count, 3);
  ASSERT_EQ(r.eigenvalues.size(), 4u);
  // Rayleigh quotients: finite, above the true ones (Courant–Fischer), ascending.
  const double l0 = 4 - 4 * std::cos(M_PI / 26);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isfinite(r.eigenvalues[i]));
    EXPECT_GE(r.eigenvalues[i], l0 - 1e-12);
    if (i) EXPECT_GE(r.eigenvalues[i], r.eigenvalues[i - 1]);
  }
  EXPECT_GT(r.residuals[0], 1e-12);
}

TEST(Lobpcg, IllConditionedSpectrum) {
  // Diagonal, eigenvalues 1e-10 .. 1 (log-spaced, 40 of them below 1e-8): condition 1e10, the
  // bottom a cluster at the scale of ||H||, reachable only to tol ||H|| in a few hundred steps.
  // No breakdown over those steps: the vectors stay orthonormal, each Ritz value is above the
  // true one (Cauchy interlacing) and inside the cluster, the residuals meet the test.
  const int n = 200;
  Coo c;
  c.n = n;
  std::vector<double> d(n);
  for (int i = 0; i < n; ++i) {
    d[i] = std::pow(10.0, -10.0 + 10.0 * ((i * 53) % n) / (n - 1.0));
    c.add(i, i, d[i]);
  }
  std::vector<double> ref = d;
  std::sort(ref.begin(), ref.end());
  LobpcgOptions o = options(4, 1e-5);
  o.max_iterations = 600;
  o.preconditioner = Preconditioner::none;
  const auto r = kess::lobpcg(TestExecSpace(), make(c), o);
  EXPECT_TRUE(r.converged);
  for (int i = 0; i < 4; ++i) {
    EXPECT_GE(r.eigenvalues[i], ref[i] - 1e-15);
    EXPECT_LT(r.eigenvalues[i], 1e-5);
  }
  check_pairs(r, dense(c), n, 2e-5);
}

TEST(Lobpcg, RepeatedEigenvalue) {
  // Eight uncoupled copies of the 1D Laplacian of order 20: every eigenvalue eight times. X
  // converges inside one eigenspace and [X W P] degenerates; all eight pairs must come out at
  // 2 - 2 cos(π / 21) with orthonormal vectors.
  const int copies = 8, m = 20, n = copies * m;
  Coo c;
  c.n = n;
  for (int b = 0; b < copies; ++b)
    for (int i = 0; i < m; ++i) {
      c.add(b * m + i, b * m + i, 2.0);
      if (i > 0) c.add(b * m + i, b * m + i - 1, -1.0);
    }
  const double l1 = 2 - 2 * std::cos(M_PI / (m + 1));
  for (auto pc : {Preconditioner::none, Preconditioner::jacobi, Preconditioner::fom}) {
    LobpcgOptions o = options(8, 1e-10);
    o.preconditioner = pc;
    const auto r = kess::lobpcg(TestExecSpace(), make(c), o);
    SCOPED_TRACE(kess::to_string(pc));
    EXPECT_TRUE(r.converged);
    check_values(r.eigenvalues, std::vector<double>(8, l1), 1e-10);
    check_pairs(r, dense(c), n, 1e-9);
  }
}

TEST(Lobpcg, NearlyDependentStartBlock) {
  // Initial columns equal up to 1e-13: the start block is rebuilt, no breakdown.
  const int n = 300;
  const Coo c = random_sparse(n, 8, 20.0, 13);
  const auto ref = eig(dense(c), n);
  std::mt19937_64 g(1);
  std::uniform_real_distribution<double> u(-1, 1);
  Dense x0(static_cast<std::size_t>(n) * 6);
  for (int i = 0; i < n; ++i) {
    const double v = u(g);
    for (int j = 0; j < 6; ++j) x0[i + static_cast<std::size_t>(j) * n] = v + 1e-13 * u(g);
  }
  kess::LobpcgVectors<double, Mem> in;
  in.initial = to_device(x0, n, 6);
  LobpcgOptions o = options(5, 1e-10, 8);
  const auto r = kess::lobpcg(TestExecSpace(), make(c), o, in);
  EXPECT_TRUE(r.converged);
  check_values(r.eigenvalues, std::vector<double>(ref.begin(), ref.begin() + 5), 1e-8);
  check_pairs(r, dense(c), n, 1e-8);
}

TEST(Lobpcg, InitialEigenvectorsConvergeAtOnce) {
  const int n = 150;
  const Coo c = random_sparse(n, 6, 6.0, 21);
  Dense V;
  const auto ref = eig(dense(c), n, &V);
  kess::LobpcgVectors<double, Mem> in;
  in.initial = to_device(V, n, 6);
  LobpcgOptions o = options(6, 1e-9, 6);
  const auto r = kess::lobpcg(TestExecSpace(), make(c), o, in);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, 0);
  check_values(r.eigenvalues, std::vector<double>(ref.begin(), ref.begin() + 6), 1e-12);
}

TEST(FomPreconditioner, FullKrylovSolvesTheTilesExactly) {
  // Tiles of 10 rows and 10 FOM steps: Z = (H_tile - θ_c I)^-1 R exactly, per tile and column.
  const int n = 47, tile = 10;
  const Coo c = random_sparse(n, 8, 10.0, 17);
  const Dense A = dense(c);
  const Csb H = make(c, 16);
  const kess::FomPreconditioner<double, Mem> K(H, tile, tile);
  EXPECT_EQ(K.tile(), tile);
  const int k = 3;
  const std::vector<double> theta = {-0.5, 2.5, 7.25};
  std::mt19937_64 g(2);
  std::uniform_real_distribution<double> u(-1, 1);
  Dense r(static_cast<std::size_t>(n) * k);
  for (auto& x : r) x = u(g);
  const Block R = to_device(r, n, k);
  Block Z("Z", n, k);
  K.apply(TestExecSpace(), theta, R, Z);
  TestExecSpace().fence();
  const Dense z = to_host(Z);
  double worst = 0;
  for (int t0 = 0; t0 < n; t0 += tile) {
    const int m = std::min(tile, n - t0);
    for (int col = 0; col < k; ++col) {
      Dense a(static_cast<std::size_t>(m) * m), b(static_cast<std::size_t>(m));
      for (int j = 0; j < m; ++j) {
        for (int i = 0; i < m; ++i)
          a[i + j * m] =
              A[(t0 + i) + static_cast<std::size_t>(t0 + j) * n] - (i == j ? theta[col] : 0.0);
        b[j] = r[t0 + j + static_cast<std::size_t>(col) * n];
      }
      std::vector<int> piv(m);
      ASSERT_EQ(kess::core::lapack::gesv(m, 1, a.data(), m, piv.data(), b.data(), m), 0);
      for (int i = 0; i < m; ++i)
        worst =
            kess_test::worse(worst, std::abs(z[t0 + i + static_cast<std::size_t>(col) * n] - b[i]) /
                                        (1.0 + std::abs(b[i])));
    }
  }
  EXPECT_LT(worst, 1e-8);
}

// Residuals of the returned pairs recomputed with spmm, ||H x - λ x|| / ((||H||_est + |λ|) ||x||)
// (the documented test): each below tol for a converged run and equal to the reported one.
std::vector<double> recomputed_residuals(const Csb& H, const kess::LobpcgResult<double, Mem>& r) {
  const int k = static_cast<int>(r.eigenvalues.size());
  Block hx("hx", H.vector_rows(), k);
  kess::spmm(TestExecSpace(), H, kess::VectorBlock<double, Mem>(r.vectors), hx);
  const Dense X = to_host(r.vectors), HX = to_host(hx);
  const std::int64_t n = H.vector_rows();
  std::vector<double> out;
  for (int c = 0; c < k; ++c) {
    double rn = 0, xn = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double d = HX[i + c * n] - r.eigenvalues[c] * X[i + c * n];
      rn += d * d;
      xn += X[i + c * n] * X[i + c * n];
    }
    out.push_back(std::sqrt(rn) / ((r.norm_estimate + std::abs(r.eigenvalues[c])) * std::sqrt(xn)));
  }
  return out;
}

TEST(Lobpcg, ReturnedPairsMeetTheTestWhenRecomputed) {
  // Heisenberg L = 10 (|λ_1| close to ||H||: the |λ| term of the test matters), a Laplacian and a
  // random matrix, every preconditioner, both ends.
  const auto heis = kess::gen::heisenberg(10);
  Coo hc;
  hc.n = heis.n;
  hc.rows = heis.rows;
  hc.cols = heis.cols;
  hc.vals = heis.vals;
  const Coo cases[] = {hc, laplace2d(24, 24), random_sparse(400, 8, 20.0, 3)};
  for (const Coo& c : cases)
    for (auto pc : {Preconditioner::none, Preconditioner::jacobi, Preconditioner::fom})
      for (bool largest : {false, true}) {
        const Csb H = make(c, 32);
        LobpcgOptions o = options(3, 1e-8);
        o.largest = largest;
        o.preconditioner = pc;
        const auto r = kess::lobpcg(TestExecSpace(), H, o);
        SCOPED_TRACE(std::string(kess::to_string(pc)) + (largest ? " largest" : " smallest") +
                     " n " + std::to_string(c.n));
        ASSERT_TRUE(r.converged);
        const auto rec = recomputed_residuals(H, r);
        for (int i = 0; i < o.nev; ++i) {
          EXPECT_LT(rec[i], o.tol) << "pair " << i;
          EXPECT_NEAR(rec[i], r.residuals[i], 1e-3 * r.residuals[i] + 1e-14) << "pair " << i;
        }
      }
}

TEST(Lobpcg, NormEstimateIsTheInfinityNorm) {
  // ||H||_est = max_i Σ_j |h_ij| >= ||H||_2, whatever the run: the 24² Laplacian (8 against
  // λ_max = 4 + 4 cos(π / 25)), and a random matrix against its dense ∞-norm and spectrum.
  {
    const Csb H = make(laplace2d(24, 24), 32);
    LobpcgOptions o;
    o.nev = 2;
    o.preconditioner = Preconditioner::none;
    const auto r = kess::lobpcg(TestExecSpace(), H, o);
    EXPECT_NEAR(r.norm_estimate, 8.0, 1e-13);
    EXPECT_GE(r.norm_estimate, 4.0 + 4.0 * std::cos(M_PI / 25.0));
  }
  {
    const Coo c = random_sparse(300, 8, 20.0, 11);
    const Dense A = dense(c);
    const auto w = eig(A, 300);
    for (bool largest : {false, true}) {
      LobpcgOptions o;
      o.nev = 2;
      o.largest = largest;
      const auto r = kess::lobpcg(TestExecSpace(), make(c, 64), o);
      EXPECT_NEAR(r.norm_estimate, norm_inf(A, 300), 1e-12 * norm_inf(A, 300));
      EXPECT_GE(r.norm_estimate, std::max(std::abs(w.front()), std::abs(w.back())));
    }
  }
}

TEST(Lobpcg, BadInputs) {
  using kess::ErrorKind;
  using kess_test::expect_error;
  const int n = 60;
  const Coo c = random_sparse(n, 4, 3.0, 1);
  const Csb H = make(c);
  const TestExecSpace ex;
  const auto run = [&](LobpcgOptions o, kess::LobpcgVectors<double, Mem> v = {}) {
    return kess::lobpcg(ex, H, o, v);
  };
  LobpcgOptions o;
  o.nev = 0;
  auto e = expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "lobpcg")) << e.what();
  EXPECT_TRUE(kess_test::contains(e, "nev")) << e.what();
  o.nev = n + 1;
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.nev = 4;
  o.block_size = 3;
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.block_size = n + 1;
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.block_size = 0;
  o.tol = 0;
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.tol = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.tol = 1e-8;
  o.max_iterations = 0;
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.max_iterations = 10;
  o.fom_iterations = 0;
  expect_error([&] { run(o); }, ErrorKind::invalid_argument);
  o.fom_iterations = 4;
  kess::LobpcgVectors<double, Mem> v;
  v.initial = Block("x", n - 1, 2);
  expect_error([&] { run(o, v); }, ErrorKind::invalid_argument);
  v.initial = Block("x", n, 9);  // block size 8
  expect_error([&] { run(o, v); }, ErrorKind::invalid_argument);
  {
    Dense x(static_cast<std::size_t>(n) * 2, 1.0);
    x[5] = std::numeric_limits<double>::quiet_NaN();
    v.initial = to_device(x, n, 2);
    e = expect_error([&] { run(o, v); }, ErrorKind::invalid_argument);
    EXPECT_TRUE(kess_test::contains(e, "NaN")) << e.what();
  }
  v.initial = {};
  v.constraints = Block("y", n + 2, 1);
  expect_error([&] { run(o, v); }, ErrorKind::invalid_argument);
  v.constraints = Block("y", n, n - 7);  // with the block of 8: too many
  expect_error([&] { run(o, v); }, ErrorKind::invalid_argument);
  // S of another order; S not positive definite.
  const Csb S1 = make(tridiagonal(n + 1, 2.0, 0.5));
  expect_error([&] { kess::lobpcg(ex, H, S1, o); }, ErrorKind::invalid_argument);
  Coo s = tridiagonal(n, 2.0, 0.5);
  for (std::size_t e = 0; e < s.vals.size(); ++e)
    if (s.rows[e] == 7 && s.cols[e] == 7) s.vals[e] = -1.0;
  expect_error([&] { kess::lobpcg(ex, H, make(s), o); }, ErrorKind::not_positive_definite);
  // An indefinite S with a positive diagonal, found on the start block: xᵀSx < 0 for the
  // alternating vector.
  {
    Dense x(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) x[i] = i % 2 ? -1.0 : 1.0;
    kess::LobpcgVectors<double, Mem> w;
    w.initial = to_device(x, n, 1);
    expect_error([&] { kess::lobpcg(ex, H, make(tridiagonal(n, 1.0, 2.0)), o, w); },
                 ErrorKind::not_positive_definite);
  }
  expect_error([&] { kess::FomPreconditioner<double, Mem>(H, 16, 0); },
               ErrorKind::invalid_argument);
  expect_error([&] { kess::FomPreconditioner<double, Mem>(H, -1, 4); },
               ErrorKind::invalid_argument);
}

}  // namespace
