// kess::core::detail::host_gemm, kess's own host DGEMM, against a long double triple loop: every
// transpose case, edges of every blocking level (tiles of 24 x 8, blocks of 144 rows, 256 of the
// inner dimension, 1024 columns), A packed and read in place (C of at most 512 columns), BLAS's
// alpha / beta rules (beta = 0 does not read C), leading dimensions larger than the rows, and the
// same bits for every thread count. Also the two doors to it: kess::core::lapack::gemm and kess::core::gemm on host
// Views.
#include <kess/core/host/gemm.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>

#include "test_check.hpp"

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using kess::core::detail::host_gemm;
using kess::core::detail::host_gemm_available;

struct Case {
  char ta, tb;
  int m, n, k, lda, ldb, ldc;
  double alpha, beta;
};

std::vector<double> random_matrix(std::int64_t count, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(count);
  for (auto& v : x) v = u(gen);
  return x;
}

double op(const std::vector<double>& x, int ld, bool trans, int i, int j) {
  return trans ? x[j + std::int64_t(i) * ld] : x[i + std::int64_t(j) * ld];
}

/// Worst |C - C_ref| / bound over C, bound = 4 (k + 2) eps (|alpha| sum |a||b| + |beta| |c|): below
/// 1 for a correct GEMM in double.
double worst_error(const Case& t, const std::vector<double>& a, const std::vector<double>& b,
                   const std::vector<double>& c0, const std::vector<double>& c) {
  const bool ta = t.ta != 'N', tb = t.tb != 'N';
  const double eps = std::numeric_limits<double>::epsilon();
  double worst = 0.0;
  for (int j = 0; j < t.n; ++j)
    for (int i = 0; i < t.m; ++i) {
      long double s = 0.0L, sa = 0.0L;
      for (int p = 0; p < t.k; ++p) {
        const long double x = op(a, t.lda, ta, i, p), y = op(b, t.ldb, tb, p, j);
        s += x * y;
        sa += std::fabs(x * y);
      }
      const double cin = t.beta == 0.0 ? 0.0 : c0[i + std::int64_t(j) * t.ldc];
      const long double ref = t.alpha * s + (long double)t.beta * cin;
      const double bound =
          4.0 * (t.k + 2) * eps * double(std::fabs(t.alpha) * sa + std::fabs(t.beta * cin)) +
          1e-300;
      const double err = double(std::fabs(c[i + std::int64_t(j) * t.ldc] - ref));
      worst = kess_test::worse(worst, err / bound);
    }
  return worst;
}

struct Product {
  std::vector<double> a, b, c0, c;
};

Product run(const Case& t, int threads, unsigned seed = 1) {
  const int arows = t.ta == 'N' ? t.m : t.k, acols = t.ta == 'N' ? t.k : t.m;
  const int brows = t.tb == 'N' ? t.k : t.n, bcols = t.tb == 'N' ? t.n : t.k;
  EXPECT_GE(t.lda, arows);
  EXPECT_GE(t.ldb, brows);
  Product r{random_matrix(std::int64_t(t.lda) * acols, seed),
            random_matrix(std::int64_t(t.ldb) * bcols, seed + 1),
            random_matrix(std::int64_t(t.ldc) * t.n, seed + 2),
            {}};
  r.c = r.c0;
  if (t.beta == 0.0)  // BLAS: C is not read; NaN there must not come through
    for (int j = 0; j < t.n; ++j)
      for (int i = 0; i < t.m; ++i) r.c[i + std::int64_t(j) * t.ldc] = std::nan("");
  host_gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, r.a.data(), t.lda, r.b.data(), t.ldb, t.beta,
            r.c.data(), t.ldc, threads);
  return r;
}

TEST(HostGemm, MatchesLongDoubleEveryTransposeAndEdge) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  const std::vector<Case> cases = {
      {'N', 'N', 203, 45, 517, 203, 517, 203, 1.0, 0.0},    // edges of tiles, MC and KC blocks
      {'N', 'N', 203, 600, 300, 205, 300, 203, 1.0, 1.0},   // A packed (over 512 columns)
      {'N', 'T', 61, 37, 300, 70, 40, 64, -1.0, 1.0},       // padded leading dimensions
      {'T', 'N', 48, 96, 1000, 1003, 1000, 50, 0.5, -2.0},  // several KC blocks, general beta
      {'T', 'T', 25, 9, 257, 260, 9, 25, -0.25, 0.75},      // one row / column past a tile
      {'N', 'N', 24, 8, 1, 24, 1, 24, 2.0, 1.0},            // one tile, k = 1
      {'N', 'N', 1, 1, 5, 1, 5, 1, 1.0, 1.0},               // 1 x 1
      {'N', 'T', 40, 2100, 20, 40, 2100, 41, 1.0, -1.0},    // past two NC blocks of columns
  };
  for (const auto& t : cases) {
    SCOPED_TRACE(::testing::Message() << t.ta << t.tb << " m=" << t.m << " n=" << t.n << " k="
                                      << t.k << " alpha=" << t.alpha << " beta=" << t.beta);
    const Product r = run(t, 0);
    EXPECT_LT(worst_error(t, r.a, r.b, r.c0, r.c), 1.0);
    // Outside the m x n part of C (the padding of ldc) nothing is written.
    for (int j = 0; j < t.n; ++j)
      for (int i = t.m; i < t.ldc; ++i)
        ASSERT_EQ(r.c[i + std::int64_t(j) * t.ldc], r.c0[i + std::int64_t(j) * t.ldc]);
  }
}

TEST(HostGemm, AlphaZeroOrEmptyInnerDimensionScalesC) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  std::vector<double> a(30 * 4, std::nan("")), b(4 * 20, 1.0), c(30 * 20, 3.0);
  host_gemm('N', 'N', 30, 20, 4, 0.0, a.data(), 30, b.data(), 4, 0.5, c.data(), 30);
  for (double x : c) ASSERT_EQ(x, 1.5);
  std::fill(c.begin(), c.end(), std::nan(""));
  host_gemm('N', 'N', 30, 20, 0, 1.0, a.data(), 30, b.data(), 1, 0.0, c.data(), 30);
  for (double x : c) ASSERT_EQ(x, 0.0);
}

TEST(HostGemm, SameBitsForEveryThreadCount) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  // Wide C (split by columns, op(A) packed), tall C (split by rows, A^T packed) and tall C with
  // A read in place (at most 512 columns); piece edges fall inside tiles.
  for (const Case& t : {Case{'N', 'N', 300, 700, 300, 300, 300, 300, -1.0, 1.0},
                        Case{'T', 'N', 1000, 40, 260, 260, 260, 1000, 1.0, 0.0},
                        Case{'N', 'N', 1001, 100, 300, 1003, 300, 1001, -1.0, 1.0}}) {
    const Product one = run(t, 1);
    for (int threads : {2, 3, 7}) {
      const Product r = run(t, threads);
      ASSERT_EQ(r.c, one.c) << "threads " << threads;
    }
    EXPECT_LT(worst_error(t, one.a, one.b, one.c0, one.c), 1.0);
  }
}

TEST(HostGemm, PartsSharingAGiveEachPartItsOwnBits) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  // Three products with one A (Gauss-Jordan's left, right and right-hand-side columns): widths
  // that are not multiples of 8, different leading dimensions, an empty part; A packed (over 512
  // columns in all) and read in place (at most 512), split by columns and by rows.
  using kess::core::detail::HostGemmPart;
  for (const int m : {300, 1200})
    for (const std::vector<int>& widths :
         {std::vector<int>{37, 0, 411, 150}, std::vector<int>{3, 20, 100}}) {
      const int k = 130;
      const std::vector<double> a = random_matrix(std::int64_t(m + 2) * k, 11);
      std::vector<std::vector<double>> b, c0, c, alone;
      std::vector<HostGemmPart> parts;
      for (std::size_t q = 0; q < widths.size(); ++q) {
        const int n = widths[q], ldc = m + 1 + int(q);
        b.push_back(random_matrix(std::int64_t(k + 1) * std::max(n, 1), 20 + q));
        c0.push_back(random_matrix(std::int64_t(ldc) * std::max(n, 1), 30 + q));
      }
      c = c0;
      alone = c0;
      for (std::size_t q = 0; q < widths.size(); ++q)
        parts.push_back({b[q].data(), k + 1, c[q].data(), m + 1 + int(q), widths[q]});
      for (int threads : {1, 2, 3}) {
        c = c0;
        for (std::size_t q = 0; q < widths.size(); ++q) parts[q].c = c[q].data();
        kess::core::detail::host_gemm_parts('N', 'N', m, k, -1.0, a.data(), m + 2, parts.data(),
                                            int(parts.size()), 1.0, threads);
        for (std::size_t q = 0; q < widths.size(); ++q) {
          SCOPED_TRACE(::testing::Message() << "m " << m << " part " << q << " width " << widths[q]
                                            << " threads " << threads);
          if (widths[q] == 0) {
            EXPECT_EQ(c[q], c0[q]);
            continue;
          }
          alone[q] = c0[q];
          host_gemm('N', 'N', m, widths[q], k, -1.0, a.data(), m + 2, b[q].data(), k + 1, 1.0,
                    alone[q].data(), m + 1 + int(q), threads);
          EXPECT_EQ(c[q], alone[q]);
          const Case t{'N', 'N', m, widths[q], k, m + 2, k + 1, m + 1 + int(q), -1.0, 1.0};
          EXPECT_LT(worst_error(t, a, b[q], c0[q], c[q]), 1.0);
        }
      }
    }
}

TEST(HostGemm, GatheredRowsOfCItselfAsB) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  // Gauss-Jordan's update: C += A T with T = k scattered rows of C itself (b_rows, b == c), two
  // parts, C taller than wide (split by columns all the same), k up to the limit of 256. Every
  // entry against the product with T copied out first (same bits: the same packed values), and
  // against a long double reference.
  using kess::core::detail::HostGemmPart;
  for (const int k : {24, 130, kess::core::detail::host_gemm_max_gathered_k})
    for (int threads : {1, 2, 3}) {
      const int m = 700, ldc = m + 3;
      const std::vector<int> widths{45, 260};
      std::vector<int> rows(k);
      for (int p = 0; p < k; ++p) rows[p] = (p * 389 + 17) % m;  // distinct, out of order
      const std::vector<double> a = random_matrix(std::int64_t(m) * k, 41);
      std::vector<std::vector<double>> c0, c, t, copied;
      std::vector<HostGemmPart> parts;
      for (std::size_t q = 0; q < widths.size(); ++q) {
        c0.push_back(random_matrix(std::int64_t(ldc) * widths[q], 50 + q));
        std::vector<double> tq(std::int64_t(k) * widths[q]);
        for (int j = 0; j < widths[q]; ++j)
          for (int p = 0; p < k; ++p)
            tq[p + std::int64_t(j) * k] = c0[q][rows[p] + std::int64_t(j) * ldc];
        t.push_back(tq);
      }
      c = c0;
      copied = c0;
      for (std::size_t q = 0; q < widths.size(); ++q)
        parts.push_back({c[q].data(), ldc, c[q].data(), ldc, widths[q], rows.data()});
      kess::core::detail::host_gemm_parts('N', 'N', m, k, 1.0, a.data(), m, parts.data(),
                                          int(parts.size()), 1.0, threads);
      for (std::size_t q = 0; q < widths.size(); ++q) {
        SCOPED_TRACE(::testing::Message() << "k " << k << " threads " << threads << " part " << q);
        host_gemm('N', 'N', m, widths[q], k, 1.0, a.data(), m, t[q].data(), k, 1.0,
                  copied[q].data(), ldc, threads);
        EXPECT_EQ(c[q], copied[q]);
        const Case tc{'N', 'N', m, widths[q], k, m, k, ldc, 1.0, 1.0};
        EXPECT_LT(worst_error(tc, a, t[q], c0[q], c[q]), 1.0);
      }
    }
  // Beyond one block of the inner dimension (or transposed) the rows would be read after C's
  // update: refused.
  const int big = kess::core::detail::host_gemm_max_gathered_k + 1;
  std::vector<int> rows(big);
  for (int p = 0; p < big; ++p) rows[p] = p;
  std::vector<double> a(std::int64_t(400) * big, 1.0), c(std::int64_t(400) * 40, 1.0);
  const HostGemmPart part{c.data(), 400, c.data(), 400, 40, rows.data()};
  EXPECT_THROW(
      kess::core::detail::host_gemm_parts('N', 'N', 400, big, 1.0, a.data(), 400, &part, 1, 1.0),
      std::logic_error);
}

TEST(HostGemm, GatheredRowsSolvedWithL) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  // Gauss-Jordan's update with the pivot block's L1: C += A W, W = L^-1 T, T = k scattered rows
  // of C itself, solved while packed (b_solve). Against W by a long double forward substitution:
  // within a few GEMM rounding bounds, and far from the product with T itself.
  using kess::core::detail::HostGemmPart;
  for (const int k : {8, 130, kess::core::detail::host_gemm_max_gathered_k})
    for (const int threads : {1, 3}) {
      const int m = 300, n = 77, ldc = m + 1, ldl = k + 2;
      std::vector<int> rows(k);
      for (int p = 0; p < k; ++p) rows[p] = (p * 211 + 5) % m;
      const std::vector<double> a = random_matrix(std::int64_t(m) * k, 7);
      const std::vector<double> c0 = random_matrix(std::int64_t(ldc) * n, 8);
      std::vector<double> l = random_matrix(std::int64_t(ldl) * k, 9);
      for (int j = 0; j < k; ++j)
        for (int i = 0; i < k; ++i)
          l[i + std::int64_t(j) * ldl] = i > j ? l[i + std::int64_t(j) * ldl] / std::sqrt(double(k))
                                               : (i == j ? 1.0 : 0.0);
      std::vector<double> w(std::int64_t(k) * n);
      for (int j = 0; j < n; ++j) {
        std::vector<long double> x(k);
        for (int p = 0; p < k; ++p) x[p] = c0[rows[p] + std::int64_t(j) * ldc];
        for (int p = 0; p < k; ++p)
          for (int q = p + 1; q < k; ++q) x[q] -= (long double)l[q + std::int64_t(p) * ldl] * x[p];
        for (int p = 0; p < k; ++p) w[p + std::int64_t(j) * k] = double(x[p]);
      }
      std::vector<double> c = c0;
      const HostGemmPart part{c.data(), ldc, c.data(), ldc, n, rows.data(), l.data(), ldl};
      kess::core::detail::host_gemm_parts('N', 'N', m, k, 1.0, a.data(), m, &part, 1, 1.0,
                                          threads);
      SCOPED_TRACE(::testing::Message() << "k " << k << " threads " << threads);
      const Case tc{'N', 'N', m, n, k, m, k, ldc, 1.0, 1.0};
      EXPECT_LT(worst_error(tc, a, w, c0, c), 4.0);
      if (k > 8) {  // the unsolved rows give another product
        std::vector<double> t(std::int64_t(k) * n);
        for (int j = 0; j < n; ++j)
          for (int p = 0; p < k; ++p) t[p + std::int64_t(j) * k] = c0[rows[p] + std::int64_t(j) * ldc];
        EXPECT_GT(worst_error(tc, a, t, c0, c), 1e3);
      }
    }
}

TEST(HostGemm, SideWorkBesideTheProduct) {
  if (!host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM not 0)";
  // The caller's work on one thread while the others take the columns in chunks: it runs once,
  // the product has the bits of a call without it (any k, so also where side simply runs first),
  // and an exception from it comes back after the product is complete.
  using kess::core::detail::HostGemmPart;
  const int m = 500, ldc = 503;
  const std::vector<int> widths{70, 1100};
  for (const int k : {128, 300})
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << "k " << k << " threads " << threads);
      const std::vector<double> a = random_matrix(std::int64_t(m) * k, 61);
      std::vector<std::vector<double>> b, c0;
      for (std::size_t q = 0; q < widths.size(); ++q) {
        b.push_back(random_matrix(std::int64_t(k) * widths[q], 70 + q));
        c0.push_back(random_matrix(std::int64_t(ldc) * widths[q], 80 + q));
      }
      auto with = c0, without = c0;
      const auto parts_of = [&](std::vector<std::vector<double>>& c) {
        std::vector<HostGemmPart> p;
        for (std::size_t q = 0; q < widths.size(); ++q)
          p.push_back({b[q].data(), k, c[q].data(), ldc, widths[q]});
        return p;
      };
      auto pw = parts_of(with), po = parts_of(without);
      kess::core::detail::host_gemm_parts('N', 'N', m, k, 1.0, a.data(), m, po.data(), 2, 1.0,
                                          threads);
      std::atomic<int> runs{0};
      kess::core::detail::host_gemm_parts('N', 'N', m, k, 1.0, a.data(), m, pw.data(), 2, 1.0,
                                          threads, [&] { runs.fetch_add(1); });
      EXPECT_EQ(runs.load(), 1);
      for (std::size_t q = 0; q < widths.size(); ++q)
        EXPECT_EQ(with[q], without[q]) << "part " << q;
      auto thrown = c0;
      auto pt = parts_of(thrown);
      EXPECT_THROW(
          kess::core::detail::host_gemm_parts('N', 'N', m, k, 1.0, a.data(), m, pt.data(), 2, 1.0,
                                              threads, [] { throw std::runtime_error("side"); }),
          std::runtime_error);
      for (std::size_t q = 0; q < widths.size(); ++q)
        EXPECT_EQ(thrown[q], without[q]) << "part " << q << ": the product did not complete";
    }
}

TEST(HostGemm, LapackGemmAndKxGemmOnHostViewsReachIt) {
  // Both doors must give the BLAS's answer within rounding whether or not they take kess's kernel.
  const Case t{'N', 'T', 200, 210, 220, 203, 210, 200, -1.0, 1.0};  // 2mnk above 2^23
  const int arows = t.m, acols = t.k, brows = t.n, bcols = t.k;
  std::vector<double> a = random_matrix(std::int64_t(t.lda) * acols, 7);
  std::vector<double> b = random_matrix(std::int64_t(t.ldb) * bcols, 8);
  std::vector<double> c0 = random_matrix(std::int64_t(t.ldc) * t.n, 9), c = c0;
  kess::core::lapack::gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a.data(), t.lda, b.data(), t.ldb, t.beta,
                     c.data(), t.ldc);
  EXPECT_LT(worst_error(t, a, b, c0, c), 1.0);

  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace,
                           Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  // A as a subview of its padded storage (lda = 203 > 200 rows).
  Mat Afull(a.data(), t.lda, acols), B(b.data(), brows, bcols);
  auto A = Kokkos::subview(Afull, Kokkos::make_pair(0, arows), Kokkos::ALL);
  std::vector<double> c2 = c0;
  Mat C(c2.data(), t.m, t.n);
  kess::core::gemm(Kokkos::DefaultHostExecutionSpace(), "N", "T", t.alpha, A, B, t.beta, C);
  EXPECT_LT(worst_error(t, a, b, c0, c2), 1.0);
  if (kess::core::detail::host_gemm_preferred()) {  // both doors took kess's kernel
    std::vector<double> c3 = c0;
    host_gemm(t.ta, t.tb, t.m, t.n, t.k, t.alpha, a.data(), t.lda, b.data(), t.ldb, t.beta,
              c3.data(), t.ldc);
    EXPECT_EQ(c, c3);
    EXPECT_EQ(c2, c3);
  }
}

// While a kess::core::lapack::SerialBlasScope holds OpenBLAS to one thread (Gauss-Jordan's host sweep), large
// products on a thread that runs alone go to kess's kernel on all host threads, also on CPUs where
// OpenBLAS's kernel is otherwise preferred; inside a host loop, and after the scope, they do not.
TEST(HostGemm, TakesProductsWhileOpenBlasIsHeldToOneThread) {
  using kess::core::detail::host_gemm_pays;
  if (kess::core::lapack::blas_threads() == 0) GTEST_SKIP() << "the BLAS here is not OpenBLAS";
  EXPECT_FALSE(kess::core::lapack::serial_blas_scope_active());
  {
    kess::core::lapack::SerialBlasScope scope;
    EXPECT_TRUE(kess::core::lapack::serial_blas_scope_active());
    {
      kess::core::lapack::SerialBlasScope nested;
      EXPECT_TRUE(kess::core::lapack::serial_blas_scope_active());
    }
    EXPECT_TRUE(kess::core::lapack::serial_blas_scope_active());
  }
  EXPECT_FALSE(kess::core::lapack::serial_blas_scope_active());
  if (!kess::core::detail::host_gemm_available())
    GTEST_SKIP() << "kess's host GEMM is off here (it needs an AVX-512F CPU, a GCC build "
                    "and KESS_HOST_GEMM unset or 1)";
  if (kess::core::detail::host_gemm_preferred())
    GTEST_SKIP() << "kess's host GEMM takes every large product on this CPU";
  if (kess::core::detail::host_threads() < 2) GTEST_SKIP() << "one host thread";
  EXPECT_FALSE(host_gemm_pays(1000, 1000, 128));
  {
    kess::core::lapack::SerialBlasScope scope;
    EXPECT_TRUE(host_gemm_pays(1000, 1000, 128));
    EXPECT_FALSE(host_gemm_pays(1000, 1000, 4)) << "too small a product";
    std::atomic<int> taken{0};
    kess::core::detail::host_parallel_for(2, 2, [&](int) {
      if (host_gemm_pays(1000, 1000, 128)) ++taken;
    });
    EXPECT_EQ(taken.load(), 0) << "inside a host loop";
  }
  EXPECT_FALSE(host_gemm_pays(1000, 1000, 128));
}

}  // namespace
