// kess::spmm on one process, per backend: Y = H X from the stored lower triangle against a full
// CSR reference built on the host from the same triangle (elementwise, relative to |H| |X|; never
// bitwise: the atomics reorder sums), for k in {1, 3, 8, 16, 32, 40}, ragged n, empty blocks and
// rows, missing diagonal entries, beta = 1 and beta > n, the generators, and bad arguments.
#include <kess/solvers/lobpcg.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using Matrix = kess::CsbMatrix<double, TestMemSpace>;
using Block = kess::VectorBlock<double, TestMemSpace>;
using HostBlock = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;

// A lower triangle (row >= col) as COO.
struct Triangle {
  std::int64_t n = 0;
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;
};

// Random lower triangle: each (i, j), j < i, present with probability p; diagonal entries present
// with probability pd; rows listed in `empty_rows` have no entry at all (nor their columns).
Triangle random_triangle(std::int64_t n, double p, double pd, unsigned seed,
                         const std::set<std::int64_t>& empty_rows = {}) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0, 1), val(-1, 1);
  Triangle t;
  t.n = n;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      const double q = u(gen);
      if (empty_rows.count(i) || empty_rows.count(j)) continue;
      if (q >= (i == j ? pd : p)) continue;
      t.rows.push_back(i);
      t.cols.push_back(j);
      t.vals.push_back(val(gen));
    }
  }
  return t;
}

// Full CSR of the symmetric matrix whose lower triangle t lists.
struct Csr {
  std::vector<std::int64_t> ptr, col;
  std::vector<double> val;
};
Csr full_csr(std::int64_t n, const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c,
             const std::vector<double>& v) {
  std::vector<std::vector<std::pair<std::int64_t, double>>> rows(static_cast<std::size_t>(n));
  for (std::size_t e = 0; e < r.size(); ++e) {
    rows[r[e]].push_back({c[e], v[e]});
    if (r[e] != c[e]) rows[c[e]].push_back({r[e], v[e]});
  }
  Csr a;
  a.ptr.push_back(0);
  for (auto& row : rows) {
    for (auto& [j, x] : row) {
      a.col.push_back(j);
      a.val.push_back(x);
    }
    a.ptr.push_back(static_cast<std::int64_t>(a.col.size()));
  }
  return a;
}

HostBlock random_block(std::int64_t n, int k, unsigned seed) {
  HostBlock x("x", n, k);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::int64_t i = 0; i < n; ++i)
    for (int q = 0; q < k; ++q) x(i, q) = u(gen);
  return x;
}

// Y = H X on the device; Y starts as NaN so that every entry must be overwritten.
HostBlock device_spmm(const Matrix& H, const HostBlock& xh) {
  TestExecSpace exec;
  const std::int64_t n = std::int64_t(xh.extent(0));
  const int k = static_cast<int>(xh.extent(1));
  Block x("x", n, k), y("y", n, k);
  Kokkos::deep_copy(x, xh);
  Kokkos::deep_copy(y, std::numeric_limits<double>::quiet_NaN());
  kess::spmm(exec, H, Kokkos::View<const double**, Kokkos::LayoutRight, TestMemSpace>(x), y);
  exec.fence();
  HostBlock yh("y", n, k);
  Kokkos::deep_copy(yh, y);
  return yh;
}

// Largest |Y - A X| / (|A| |X|) over the entries (|A||X| bounds the rounding of any summation
// order); 0/0 counts as 0, NaN anywhere as NaN.
double max_rel_error(const Csr& a, const HostBlock& x, const HostBlock& y) {
  double worst = 0;
  const std::int64_t n = std::int64_t(x.extent(0));
  const int k = static_cast<int>(x.extent(1));
  for (std::int64_t i = 0; i < n; ++i) {
    for (int q = 0; q < k; ++q) {
      double s = 0, m = 0;
      for (std::int64_t p = a.ptr[i]; p < a.ptr[i + 1]; ++p) {
        s += a.val[p] * x(a.col[p], q);
        m += std::fabs(a.val[p] * x(a.col[p], q));
      }
      const double d = std::fabs(y(i, q) - s);
      worst = kess_test::worse(worst, d == 0 ? 0.0 : (m > 0 ? d / m : d));
    }
  }
  return worst;
}

// The check of one matrix for several k.
void check(const Triangle& t, int beta, const std::vector<int>& ks, const std::string& what) {
  kess::CsbOptions o;
  o.block_size = beta;
  const auto H = Matrix::from_coo(t.n, t.rows, t.cols, t.vals, kess::CooContent::triangle, o);
  const auto a = full_csr(t.n, t.rows, t.cols, t.vals);
  for (int k : ks) {
    const auto x = random_block(t.n, k, 17u + static_cast<unsigned>(k));
    const auto y = device_spmm(H, x);
    EXPECT_LE(max_rel_error(a, x, y), 1e-14)
        << what << ", n = " << t.n << ", beta = " << H.block_size() << ", k = " << k;
  }
}

const std::vector<int> kAllK{1, 3, 8, 16, 32, 40};

TEST(Spmm, RandomRaggedAllK) {
  // n = 103 with beta = 16: 7 block rows, the last one ragged (7 rows).
  const auto t = random_triangle(103, 0.08, 0.7, 1);
  check(t, 16, kAllK, "random, ragged");
}

TEST(Spmm, BlockSizeOneAndLargerThanN) {
  const auto t = random_triangle(37, 0.2, 0.5, 2);
  check(t, 1, {1, 8, 16}, "beta = 1");
  check(t, 100, {1, 3, 8, 16, 32}, "beta > n");
  check(t, 0, {8}, "automatic beta");
}

TEST(Spmm, EmptyBlocksRowsAndDiagonal) {
  // Rows 8..23 (two whole block rows of 8) and row 40 have no entries; no diagonal at all.
  std::set<std::int64_t> empty{40};
  for (std::int64_t i = 8; i < 24; ++i) empty.insert(i);
  const auto t = random_triangle(61, 0.15, 0.0, 3, empty);
  check(t, 8, {1, 3, 8, 16}, "empty blocks, no diagonal");
}

TEST(Spmm, DiagonalOnlyAndSingleEntry) {
  Triangle d;
  d.n = 19;
  for (std::int64_t i = 0; i < d.n; ++i) {
    d.rows.push_back(i);
    d.cols.push_back(i);
    d.vals.push_back(1.0 + double(i));
  }
  check(d, 4, {1, 8, 16}, "diagonal only");
  Triangle s;
  s.n = 50;
  s.rows = {49};
  s.cols = {0};
  s.vals = {-2.5};
  check(s, 7, {1, 3, 16}, "one off-diagonal entry");
}

TEST(Spmm, DenseRowsLongRuns) {
  // Long runs of one row inside a tile (the row part's register accumulation) and long columns
  // (the transposed part's atomics on one row of Y).
  const auto t = random_triangle(300, 0.9, 1.0, 4);
  check(t, 128, {1, 8, 16, 32}, "dense");
}

TEST(Spmm, Generators) {
  const std::vector<kess::SparseProblem> problems{
      kess::gen::laplace1d(50), kess::gen::laplace2d(13, 11), kess::gen::laplace3d(5, 6, 7),
      kess::gen::random_sparse(500, 0.02, 5, 0.5)};
  for (const auto& p : problems) {
    Triangle t{p.n, p.rows, p.cols, p.vals};
    for (int beta : {0, 32, 97}) check(t, beta, {1, 8, 16}, p.name);
  }
}

TEST(Spmm, LaplacianOfOnesIsRowSums) {
  // Independent of any reference: the 2D Dirichlet Laplacian times the ones vector is 4 minus the
  // neighbour count, i.e. 0 inside, 1 on edges, 2 at corners.
  const int nx = 9, ny = 7;
  const auto H = kess::make_csb<double, TestMemSpace>(kess::gen::laplace2d(nx, ny), [] {
    kess::CsbOptions o;
    o.block_size = 10;
    return o;
  }());
  HostBlock x("x", nx * ny, 8);
  Kokkos::deep_copy(x, 1.0);
  const auto y = device_spmm(H, x);
  // Whatever the grid order: every value is 0, 1 or 2, the 2s are the 4 corners, and the values
  // add up to the boundary points counted once per side they lie on.
  double sum = 0;
  int corners = 0;
  for (int i = 0; i < nx * ny; ++i) {
    for (int q = 0; q < 8; ++q) {
      const double v = y(i, q), r = std::round(v);
      EXPECT_NEAR(v, r, 1e-14) << i;
      EXPECT_TRUE(r == 0 || r == 1 || r == 2) << i << ": " << v;
      if (q == 0) {
        sum += r;
        corners += r == 2;
      }
    }
  }
  EXPECT_EQ(sum, 2.0 * (nx + ny));
  EXPECT_EQ(corners, 4);
}

TEST(Spmm, BadArguments) {
  TestExecSpace exec;
  const auto t = random_triangle(20, 0.2, 1.0, 6);
  const auto H = Matrix::from_coo(t.n, t.rows, t.cols, t.vals, kess::CooContent::triangle);
  using CX = Kokkos::View<const double**, Kokkos::LayoutRight, TestMemSpace>;
  Block x("x", 20, 8), y("y", 20, 8), short_x("x", 19, 8), short_y("y", 21, 8), y4("y", 20, 4),
      x0("x", 20, 0), y0("y", 20, 0);
  auto e = kess_test::expect_error([&] { kess::spmm(exec, H, CX(short_x), y); },
                                   kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "kess::spmm") && kess_test::contains(e, "X has 19 rows"))
      << e.what();
  e = kess_test::expect_error([&] { kess::spmm(exec, H, CX(x), short_y); },
                              kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "Y has 21 rows")) << e.what();
  e = kess_test::expect_error([&] { kess::spmm(exec, H, CX(x), y4); },
                              kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "Y has 4 columns")) << e.what();
  e = kess_test::expect_error([&] { kess::spmm(exec, H, CX(x0), y0); },
                              kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "k must be >= 1")) << e.what();
  e = kess_test::expect_error([&] { kess::spmm(exec, H, CX(y), y); },
                              kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "same View")) << e.what();
  e = kess_test::expect_error([&] { kess::spmm(exec, Matrix(), CX(x), y); },
                              kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "H is empty")) << e.what();
}

}  // namespace
