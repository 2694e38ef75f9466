// kess::BlockSparseMatrix and kess::multiply on one process, per backend: products against dense
// GEMMs (mixed block sizes 5, 13, 23; transposes; alpha, beta; retain_sparsity), DBCSR's filter
// semantics on hand-made blocks, flop counts, the operations, Matrix Market files, bad inputs.
#include <kess/solvers/block_sparse.hpp>

#include "block_sparse_testing.hpp"
#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

namespace {

using Matrix = kess::BlockSparseMatrix<double, TestMemSpace>;
using kess::BlockDistribution;
constexpr double kEps = std::numeric_limits<double>::epsilon();

// Sum of 2 m n k over the (i, k, j) with A_ik and B_kj present.
std::int64_t expected_flops(const bs_test::Global& a, const bs_test::Global& b) {
  std::int64_t f = 0;
  for (std::size_t p = 0; p < a.rows.size(); ++p) {
    for (std::size_t q = 0; q < b.rows.size(); ++q) {
      if (b.rows[q] != a.cols[p]) continue;
      f += 2LL * a.row_sizes[a.rows[p]] * a.col_sizes[a.cols[p]] * b.col_sizes[b.cols[q]];
    }
  }
  return f;
}

TEST(BlockSparse, MultiplyMatchesDenseProduct) {
  TestExecSpace exec;
  const auto rs = bs_test::sizes(9, {5, 13, 23}), ks = bs_test::sizes(8, {23, 5, 13}),
             cs = bs_test::sizes(7, {13, 23, 5});
  const auto ga = bs_test::random(rs, ks, 0.5, 1), gb = bs_test::random(ks, cs, 0.5, 2);
  BlockDistribution da(rs, ks), db(ks, cs), dc(rs, cs);
  const auto A = Matrix::from_blocks(da, ga.rows, ga.cols, ga.values);
  const auto B = Matrix::from_blocks(db, gb.rows, gb.cols, gb.values);
  Matrix C(dc);
  kess::BlockMultiplyStats st;
  const auto flops = kess::multiply(exec, 1.0, A, B, 0.0, C, {}, &st);
  EXPECT_EQ(flops, expected_flops(ga, gb));
  EXPECT_EQ(st.flops, flops);
  std::vector<double> ref(rs.size() ? static_cast<std::size_t>(ga.m() * gb.n()) : 0, 0.0);
  bs_test::gemm(false, false, ga.m(), gb.n(), ga.n(), 1.0, ga.dense(), ga.m(), gb.dense(), gb.m(),
                0.0, ref, ga.m());
  const double tol = 1e-12 * bs_test::frob(ga.dense()) * bs_test::frob(gb.dense());
  EXPECT_LE(bs_test::max_diff(C.to_dense(), ref), tol);
  // Every C block that has a product is kept at eps = 0, and no other.
  std::int64_t nblk = 0;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    for (std::size_t j = 0; j < cs.size(); ++j) {
      bool any = false;
      for (std::size_t p = 0; p < ga.rows.size() && !any; ++p) {
        if (ga.rows[p] != static_cast<int>(i)) continue;
        for (std::size_t q = 0; q < gb.rows.size() && !any; ++q) {
          any = gb.rows[q] == ga.cols[p] && gb.cols[q] == static_cast<int>(j);
        }
      }
      nblk += any;
    }
  }
  EXPECT_EQ(C.blocks(), nblk);
  EXPECT_EQ(st.c_blocks, nblk);
  // Norms kept with the blocks.
  const auto hv = C.to_dense();
  for (std::int64_t b = 0; b < C.local_blocks(); ++b) EXPECT_GT(C.norms()[b], 0.0);
}

TEST(BlockSparse, AlphaBetaTransposesAndRetainSparsity) {
  TestExecSpace exec;
  const auto rs = bs_test::sizes(6, {13, 5, 23}), ks = bs_test::sizes(5, {5, 23}),
             cs = bs_test::sizes(4, {23, 13});
  const auto ga = bs_test::random(rs, ks, 0.6, 3), gb = bs_test::random(ks, cs, 0.6, 4),
             gc = bs_test::random(rs, cs, 0.4, 5);
  const auto ad = ga.dense(), bd = gb.dense();
  const double tol = 1e-12 * bs_test::frob(ad) * bs_test::frob(bd) + 1e-13 * bs_test::frob(gc.dense());
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    // op(A) = A: store A; op(A) = A^T: store A^T (so that op(A) is the same matrix).
    bs_test::Global sa = ga, sb = gb;
    auto transpose_global = [](const bs_test::Global& g) {
      bs_test::Global h;
      h.row_sizes = g.col_sizes;
      h.col_sizes = g.row_sizes;
      for (std::size_t b = 0; b < g.rows.size(); ++b) {
        const int m = g.row_sizes[g.rows[b]], n = g.col_sizes[g.cols[b]];
        h.rows.push_back(g.cols[b]);
        h.cols.push_back(g.rows[b]);
        for (int r = 0; r < m; ++r)
          for (int c = 0; c < n; ++c) h.values.push_back(g.values[g.offsets[b] + r + c * m]);
        h.offsets.push_back(static_cast<std::int64_t>(h.values.size()));
      }
      return h;
    };
    if (ta) sa = transpose_global(ga);
    if (tb) sb = transpose_global(gb);
    const auto A = Matrix::from_blocks(BlockDistribution(sa.row_sizes, sa.col_sizes), sa.rows,
                                       sa.cols, sa.values);
    const auto B = Matrix::from_blocks(BlockDistribution(sb.row_sizes, sb.col_sizes), sb.rows,
                                       sb.cols, sb.values);
    BlockDistribution dc(rs, cs);
    auto C = Matrix::from_blocks(dc, gc.rows, gc.cols, gc.values);
    kess::BlockMultiplyOptions o;
    o.transpose_a = ta;
    o.transpose_b = tb;
    kess::multiply(exec, 0.7, A, B, -1.3, C, o);
    auto ref = gc.dense();
    bs_test::gemm(false, false, ga.m(), gb.n(), ga.n(), 0.7, ad, ga.m(), bd, gb.m(), -1.3, ref,
                  ga.m());
    EXPECT_LE(bs_test::max_diff(C.to_dense(), ref), tol) << "transposes " << ta << tb;
  }
  // retain_sparsity: only C's blocks take products; the rest of the product is not formed.
  BlockDistribution dc(rs, cs);
  const auto A = Matrix::from_blocks(BlockDistribution(rs, ks), ga.rows, ga.cols, ga.values);
  const auto B = Matrix::from_blocks(BlockDistribution(ks, cs), gb.rows, gb.cols, gb.values);
  auto C = Matrix::from_blocks(dc, gc.rows, gc.cols, gc.values);
  kess::BlockMultiplyOptions o;
  o.retain_sparsity = true;
  kess::multiply(exec, 1.0, A, B, 0.0, C, o);
  EXPECT_EQ(C.blocks(), static_cast<std::int64_t>(gc.rows.size()));
  std::vector<double> full(static_cast<std::size_t>(ga.m() * gb.n()), 0.0);
  bs_test::gemm(false, false, ga.m(), gb.n(), ga.n(), 1.0, ad, ga.m(), bd, gb.m(), 0.0, full,
                ga.m());
  // Mask the full product by C's pattern.
  bs_test::Global mask = gc;
  for (std::size_t b = 0; b < mask.rows.size(); ++b) {
    const int m = rs[mask.rows[b]], n = cs[mask.cols[b]];
    std::int64_t r0 = 0, c0 = 0;
    for (int i = 0; i < mask.rows[b]; ++i) r0 += rs[i];
    for (int j = 0; j < mask.cols[b]; ++j) c0 += cs[j];
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r) mask.values[mask.offsets[b] + r + c * m] = full[(r0 + r) + (c0 + c) * ga.m()];
  }
  EXPECT_LE(bs_test::max_diff(C.to_dense(), mask.dense()), tol);
}

// One block row of A with two blocks (n_0 = 2), eps = 1e-3: products with norm products below
// eps / 2 are skipped, C blocks below eps dropped.
TEST(BlockSparse, FilterFollowsDbcsrSemantics) {
  TestExecSpace exec;
  const std::vector<int> two = {2, 2};
  BlockDistribution d(two, two), d1({2}, two);
  auto e11 = [](double s) { return std::vector<double>{s, 0, 0, 0}; };
  const double eps = 1e-3, thr = eps / 2;
  for (double x : {thr * (1 - 1e-3), thr * (1 + 1e-3)}) {
    const double y = thr * (1 + 1e-3);
    const std::vector<double> av = {1, 0, 0, 0, 1, 0, 0, 0};
    std::vector<double> bv;
    const auto A = Matrix::from_blocks(d1, {0, 0}, {0, 1}, av);
    bv = e11(-x);
    for (double v : e11(y)) bv.push_back(v);
    for (double v : e11(1)) bv.push_back(v);
    const auto B = Matrix::from_blocks(d, {0, 1, 0}, {0, 0, 1}, bv);
    BlockDistribution dc({2}, two);
    Matrix C(dc);
    kess::BlockMultiplyOptions o;
    o.filter_eps = eps;
    kess::BlockMultiplyStats st;
    const auto flops = kess::multiply(exec, 1.0, A, B, 0.0, C, o, &st);
    const bool x_kept = x >= thr;
    EXPECT_EQ(flops, (x_kept ? 3 : 2) * 16) << "x = " << x;
    EXPECT_EQ(st.skipped, x_kept ? 0 : 1);
    // C(0,0) = y - x or y, below eps: dropped; C(0,1) = 1: kept.
    EXPECT_EQ(C.blocks(), 1);
    EXPECT_GE(C.find(0, 1), 0);
    EXPECT_LT(C.find(0, 0), 0);
    // retain_sparsity keeps C(0,0) with what was computed.
    auto R = Matrix::from_blocks(dc, {0, 0}, {0, 1}, std::vector<double>(8, 0.0));
    o.retain_sparsity = true;
    kess::multiply(exec, 1.0, A, B, 0.0, R, o);
    EXPECT_EQ(R.blocks(), 2);
    const auto rd = R.to_dense();
    EXPECT_DOUBLE_EQ(rd[0], x_kept ? y - x : y);
  }
}

// The filter's bound: every C block within 2 eps of the exact product (Frobenius).
TEST(BlockSparse, FilteredProductWithinTwoEps) {
  TestExecSpace exec;
  const int nb = 24;
  const auto s = bs_test::sizes(nb, {5, 13, 23});
  // Decaying blocks: scale 10^(-|i-j|).
  bs_test::Global g;
  g.row_sizes = g.col_sizes = s;
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < nb; ++i) {
    for (int j = 0; j < nb; ++j) {
      if (std::abs(i - j) > 6) continue;
      g.rows.push_back(i);
      g.cols.push_back(j);
      for (int e = 0; e < s[i] * s[j]; ++e) g.values.push_back(u(gen) * std::pow(10.0, -std::abs(i - j)));
      g.offsets.push_back(static_cast<std::int64_t>(g.values.size()));
    }
  }
  BlockDistribution d(s, s);
  const auto A = Matrix::from_blocks(d, g.rows, g.cols, g.values);
  const auto gd = g.dense();
  const std::int64_t n = g.m();
  std::vector<double> exact(static_cast<std::size_t>(n * n), 0.0);
  bs_test::gemm(false, false, n, n, n, 1.0, gd, n, gd, n, 0.0, exact, n);
  for (double eps : {1e-2, 1e-4, 1e-6}) {
    Matrix C(d);
    kess::BlockMultiplyOptions o;
    o.filter_eps = eps;
    kess::BlockMultiplyStats st;
    kess::multiply(exec, 1.0, A, A, 0.0, C, o, &st);
    const auto cd = C.to_dense();
    std::vector<std::int64_t> off(nb + 1, 0);
    for (int i = 0; i < nb; ++i) off[i + 1] = off[i] + s[i];
    double worst = 0;
    for (int i = 0; i < nb; ++i) {
      for (int j = 0; j < nb; ++j) {
        long double e2 = 0;
        for (std::int64_t c = off[j]; c < off[j + 1]; ++c)
          for (std::int64_t r = off[i]; r < off[i + 1]; ++r) {
            const long double diff = cd[r + c * n] - exact[r + c * n];
            e2 += diff * diff;
          }
        worst = std::max(worst, static_cast<double>(std::sqrt(e2)));
      }
    }
    EXPECT_LE(worst, 2 * eps) << "eps " << eps;
    EXPECT_GT(st.skipped, 0) << "eps " << eps;
  }
}

TEST(BlockSparse, Operations) {
  TestExecSpace exec;
  const auto s = bs_test::sizes(7, {5, 23, 13});
  BlockDistribution d(s, s);
  const auto ga = bs_test::random(s, s, 0.5, 11), gb = bs_test::random(s, s, 0.5, 12);
  const auto A = Matrix::from_blocks(d, ga.rows, ga.cols, ga.values);
  auto B = Matrix::from_blocks(d, gb.rows, gb.cols, gb.values);
  const auto ad = ga.dense(), bd = gb.dense();
  const std::int64_t n = ga.m();
  double tr = 0, dt = 0;
  for (std::int64_t i = 0; i < n; ++i) tr += ad[i + i * n];
  for (std::size_t e = 0; e < ad.size(); ++e) dt += ad[e] * bd[e];
  EXPECT_NEAR(kess::trace(exec, A), tr, 1e-13 * n);
  EXPECT_NEAR(kess::dot(exec, A, B), dt, 1e-13 * ad.size());
  EXPECT_NEAR(kess::norm(exec, A), bs_test::frob(ad), 1e-14 * bs_test::frob(ad));
  // add: B = 2 A - 0.5 B on the union pattern.
  kess::add(exec, 2.0, A, -0.5, B);
  std::vector<double> ref(ad.size());
  for (std::size_t e = 0; e < ad.size(); ++e) ref[e] = 2 * ad[e] - 0.5 * bd[e];
  EXPECT_LE(bs_test::max_diff(B.to_dense(), ref), 1e-15 * 4);
  EXPECT_NEAR(kess::norm(exec, B), bs_test::frob(ref), 1e-13 * bs_test::frob(ref));
  // scale, add_identity, identity.
  kess::scale(exec, B, -3.0);
  kess::add_identity(exec, B, 1.5);
  for (std::size_t e = 0; e < ref.size(); ++e) ref[e] *= -3.0;
  for (std::int64_t i = 0; i < n; ++i) ref[i + i * n] += 1.5;
  EXPECT_LE(bs_test::max_diff(B.to_dense(), ref), 1e-14 * 4);
  const auto I = kess::identity(exec, d, 2.0);
  EXPECT_EQ(I.blocks(), 7);
  EXPECT_DOUBLE_EQ(kess::trace(exec, I), 2.0 * n);
  // transpose.
  const auto At = kess::transpose(exec, A);
  const auto atd = At.to_dense();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) ASSERT_EQ(atd[i + j * n], ad[j + i * n]);
  // filter: drops exactly the blocks below eps.
  auto F = A;
  F = Matrix::from_blocks(d, ga.rows, ga.cols, ga.values);
  std::vector<double> norms = F.norms();
  std::sort(norms.begin(), norms.end());
  const double cut = norms[norms.size() / 2];
  kess::filter(exec, F, cut);
  std::int64_t keep = 0;
  for (double x : norms) keep += x >= cut;
  EXPECT_EQ(F.blocks(), keep);
  for (double x : F.norms()) EXPECT_GE(x, cut);
}

TEST(BlockSparse, FromDenseMatrixMarketRoundTrip) {
  TestExecSpace exec;
  const auto rs = bs_test::sizes(5, {5, 13}), cs = bs_test::sizes(4, {23, 5});
  const auto g = bs_test::random(rs, cs, 0.5, 21);
  BlockDistribution d(rs, cs);
  const auto gd = g.dense();
  const auto A = Matrix::from_dense(d, gd.data(), g.m());
  EXPECT_EQ(A.blocks(), static_cast<std::int64_t>(g.rows.size()));
  EXPECT_EQ(A.to_dense(), gd);
  const std::string path = ::testing::TempDir() + "kess_bs_roundtrip.mtx";
  A.write_matrix_market(path);
  const auto R = Matrix::read_matrix_market(d, path);
  EXPECT_EQ(R.blocks(), A.blocks());
  EXPECT_EQ(R.to_dense(), gd);
  // An explicit zero makes its block exist.
  {
    std::ofstream f(path);
    f << "%%MatrixMarket matrix coordinate real general\n" << g.m() << " " << g.n() << " 2\n"
      << "1 1 0\n" << g.m() << " " << g.n() << " 2.5\n";
  }
  const auto Z = Matrix::read_matrix_market(d, path);
  EXPECT_EQ(Z.blocks(), 2);
  EXPECT_GE(Z.find(0, 0), 0);
  EXPECT_EQ(Z.norms()[Z.find(0, 0)], 0.0);
  std::remove(path.c_str());
  (void)exec;
}

TEST(BlockSparse, BadInputs) {
  TestExecSpace exec;
  using kess::ErrorKind;
  const std::vector<int> s = {2, 3};
  BlockDistribution d(s, s);
  std::vector<double> four(4, 1.0);
  // Blocks: duplicates, out of range, wrong value count, NaN.
  auto e = kess_test::expect_error(
      [&] { Matrix::from_blocks(d, {0, 0}, {0, 0}, std::vector<double>(8, 1.0)); },
      ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "listed twice")) << e.what();
  e = kess_test::expect_error([&] { Matrix::from_blocks(d, {2}, {0}, four); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "outside")) << e.what();
  e = kess_test::expect_error([&] { Matrix::from_blocks(d, {0}, {1}, four); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "values has 4")) << e.what();
  e = kess_test::expect_error(
      [&] { Matrix::from_blocks(d, {0}, {0}, {1.0, std::nan(""), 0, 0}); },
      ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "NaN")) << e.what();
  // Distributions.
  e = kess_test::expect_error([&] { BlockDistribution bad({2, 0}, {2}); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "row_sizes[1]")) << e.what();
  // Multiply: inner sizes, C's sizes, eps, aliasing.
  const auto A = Matrix::from_blocks(d, {0}, {0}, four);
  BlockDistribution d2({2, 2}, {2, 3});
  const auto B2 = Matrix::from_blocks(d2, {0}, {0}, four);
  Matrix C(d);
  e = kess_test::expect_error([&] { kess::multiply(exec, 1.0, A, B2, 0.0, C); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "inner block sizes")) << e.what();
  kess::BlockMultiplyOptions o;
  o.filter_eps = -1;
  e = kess_test::expect_error([&] { kess::multiply(exec, 1.0, A, A, 0.0, C, o); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "filter_eps")) << e.what();
  auto Cm = A;
  e = kess_test::expect_error([&] { kess::multiply(exec, 1.0, Cm, A, 0.0, Cm); },
                              ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "C may not be A or B")) << e.what();
  Matrix C2(d2);
  e = kess_test::expect_error([&] { kess::add(exec, 1.0, A, 1.0, C2); },
                              ErrorKind::invalid_argument);
  e = kess_test::expect_error([&] { kess::filter(exec, C, -1.0); }, ErrorKind::invalid_argument);
  BlockDistribution rect({2}, {3});
  e = kess_test::expect_error([&] { kess::identity(exec, rect); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "row sizes against column sizes")) << e.what();
  (void)kEps;
}

}  // namespace
