// Test-matrix generators: counter-based entries (symmetry, grid independence, host = device) and
// the prescribed-spectrum matrices (eigenvalues by LAPACK, orthogonality of Q).
#include <kess/core/base/error.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace {

using kess::gen::DenseHost;

using kess_test::bits;

template <class View>
auto to_host(const View& v) {
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), v);
  Kokkos::deep_copy(h, v);
  return h;
}

TEST(Generators, HashIsSplitmix64AndValuesArePinned) {
  // Reference values from an independent (Python) implementation of the documented hash.
  EXPECT_EQ(kess::gen::splitmix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(kess::gen::splitmix64(1), 0x910a2dec89025cc1ull);
  EXPECT_EQ(kess::gen::random_entry(42, 3, 7), -0.17596092628137372);
  EXPECT_EQ(kess::gen::random_entry(42, 7, 3), -0.17596092628137372);
  EXPECT_EQ(kess::gen::random_general_entry(42, 7, 3), -0.6635586573704815);
  EXPECT_EQ(kess::gen::random_general_entry(42, 3, 7), -0.03559606100706003);
  EXPECT_EQ(kess::gen::to_signed_unit(0), -1.0);
  EXPECT_EQ(kess::gen::to_signed_unit(~0ull), 1.0 - std::ldexp(1.0, -52));
}

TEST(Generators, RandomSymmetricIsSymmetricInRangeAndSeeded) {
  const std::int64_t n = 64;
  DenseHost a = kess::gen::random_symmetric(n, 11);
  DenseHost b = kess::gen::random_symmetric(n, 11);
  DenseHost c = kess::gen::random_symmetric(n, 12);
  double sum = 0.0, sumsq = 0.0;
  std::set<std::uint64_t> distinct;
  std::int64_t same_as_other_seed = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits(a(i, j)), bits(a(j, i))) << i << "," << j;
      ASSERT_GE(a(i, j), -1.0);
      ASSERT_LT(a(i, j), 1.0);
      ASSERT_EQ(bits(a(i, j)), bits(b(i, j)));
      ASSERT_EQ(a(i, j), kess::gen::random_entry(11, i, j));
      same_as_other_seed += a(i, j) == c(i, j);
      sum += a(i, j);
      sumsq += a(i, j) * a(i, j);
      distinct.insert(bits(a(i, j)));
    }
  }
  const double count = static_cast<double>(n * n);
  EXPECT_LT(std::abs(sum / count), 0.06);       // mean of U[-1,1): 0, sd 0.58/64
  EXPECT_NEAR(sumsq / count, 1.0 / 3.0, 0.03);  // E[x^2] = 1/3
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(n * (n + 1) / 2));
  EXPECT_EQ(same_as_other_seed, 0);
}

TEST(Generators, RandomGeneralIsNotSymmetricAndDiffersFromSymmetric) {
  const std::int64_t m = 20, n = 13;
  DenseHost g = kess::gen::random_general(m, n, 5);
  ASSERT_EQ(g.extent(0), static_cast<std::size_t>(m));
  ASSERT_EQ(g.extent(1), static_cast<std::size_t>(n));
  std::int64_t symmetric_pairs = 0, equal_to_symmetric = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(g(i, j), kess::gen::random_general_entry(5, i, j));
      EXPECT_GE(g(i, j), -1.0);
      EXPECT_LT(g(i, j), 1.0);
      if (i < n && j < m && i != j) symmetric_pairs += g(i, j) == g(j, i);
      equal_to_symmetric += g(i, j) == kess::gen::random_entry(5, i, j);
    }
  }
  EXPECT_EQ(symmetric_pairs, 0);
  EXPECT_EQ(equal_to_symmetric, 0);
}

TEST(Generators, RandomSpdIsPositiveDefinite) {
  const int n = 50;
  DenseHost a = kess::gen::random_spd(n, 9);
  for (int j = 0; j < n; ++j) {
    double off = 0.0;
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(bits(a(i, j)), bits(a(j, i)));
      if (i != j) off += std::abs(a(i, j));
    }
    EXPECT_GT(a(j, j) - off, 0.0) << "column " << j << " not diagonally dominant";
  }
  EXPECT_EQ(kess::core::lapack::potrf('L', n, a.data(), n), 0);
}

// ---- device fills
// --------------------------------------------------------------------------------
TEST(Generators, DeviceFillEqualsHostBitForBit) {
  TestExecSpace exec;
  const std::int64_t n = 45;
  Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> a("a", n, n);
  Kokkos::View<double**, Kokkos::LayoutRight, TestMemSpace> r("r", n, n);
  Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> g("g", n, n - 3);
  Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> p("p", n, n);
  kess::gen::fill_random_symmetric(exec, a, 0, 0, 77);
  kess::gen::fill_random_symmetric(exec, r, 0, 0, 77);
  kess::gen::fill_random_general(exec, g, 0, 0, 77);
  kess::gen::fill_random_spd(exec, p, 0, 0, n, 77);
  exec.fence();
  auto ha = to_host(a);
  auto hr = to_host(r);
  auto hg = to_host(g);
  auto hp = to_host(p);
  DenseHost wa = kess::gen::random_symmetric(n, 77);
  DenseHost wg = kess::gen::random_general(n, n - 3, 77);
  DenseHost wp = kess::gen::random_spd(n, 77);
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits(ha(i, j)), bits(wa(i, j))) << i << "," << j;
      ASSERT_EQ(bits(hr(i, j)), bits(wa(i, j))) << i << "," << j;
      ASSERT_EQ(bits(hp(i, j)), bits(wp(i, j))) << i << "," << j;
      if (j < n - 3) {
        ASSERT_EQ(bits(hg(i, j)), bits(wg(i, j))) << i << "," << j;
      }
    }
  }
}

TEST(Generators, OffsetBlocksMatchTheFullMatrix) {
  TestExecSpace exec;
  const std::int64_t n = 53;
  DenseHost full = kess::gen::random_symmetric(n, 3);
  DenseHost full_g = kess::gen::random_general(n, n, 3);
  struct Block {
    std::int64_t i0, j0, m, nc;
  };
  for (Block b : {Block{0, 0, 53, 53}, Block{10, 3, 7, 20}, Block{40, 45, 13, 8},
                  Block{5, 30, 1, 23}, Block{17, 17, 36, 1}}) {
    Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> s("s", b.m, b.nc);
    Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> t("t", b.m, b.nc);
    kess::gen::fill_random_symmetric(exec, s, b.i0, b.j0, 3);
    kess::gen::fill_random_general(exec, t, b.i0, b.j0, 3);
    exec.fence();
    auto hs = to_host(s);
    auto ht = to_host(t);
    for (std::int64_t c = 0; c < b.nc; ++c) {
      for (std::int64_t r = 0; r < b.m; ++r) {
        ASSERT_EQ(bits(hs(r, c)), bits(full(b.i0 + r, b.j0 + c))) << b.i0 + r << "," << b.j0 + c;
        ASSERT_EQ(bits(ht(r, c)), bits(full_g(b.i0 + r, b.j0 + c)));
      }
    }
  }
}

/// Local extent of a block-cyclic dimension (ScaLAPACK numroc with source 0).
int numroc(int n, int nb, int p, int np) {
  int blocks = n / nb, count = (blocks / np) * nb;
  int extra = blocks % np;
  if (p < extra)
    count += nb;
  else if (p == extra)
    count += n % nb;
  return count;
}

TEST(Generators, BlockCyclicGridsReassembleTheSameMatrix) {
  TestExecSpace exec;
  const int n = 61;
  DenseHost full = kess::gen::random_symmetric(n, 21);
  struct Grid {
    int pr, pc, nb, src;  // src: process row and column holding the first block
  };
  for (Grid grid : {Grid{1, 1, 64, 0}, Grid{2, 2, 4, 0}, Grid{2, 3, 5, 0}, Grid{3, 1, 7, 0},
                    Grid{4, 2, 1, 0}, Grid{3, 2, 6, 1}}) {
    DenseHost assembled("assembled", n, n);
    Kokkos::deep_copy(assembled, std::nan(""));
    for (int p = 0; p < grid.pr; ++p) {
      for (int q = 0; q < grid.pc; ++q) {
        const int ml = numroc(n, grid.nb, (p - grid.src + grid.pr) % grid.pr, grid.pr);
        const int nl = numroc(n, grid.nb, (q - grid.src + grid.pc) % grid.pc, grid.pc);
        Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> local("local", ml, nl);
        kess::gen::BlockCyclicMap rmap{grid.nb, p, grid.pr, grid.src};
        kess::gen::BlockCyclicMap cmap{grid.nb, q, grid.pc, grid.src};
        kess::gen::fill_random_symmetric_mapped(exec, local, rmap, cmap, 21);
        exec.fence();
        auto h = to_host(local);
        for (int c = 0; c < nl; ++c) {
          for (int r = 0; r < ml; ++r) {
            const std::int64_t gi = rmap(r), gj = cmap(c);
            ASSERT_LT(gi, n);
            ASSERT_LT(gj, n);
            ASSERT_TRUE(std::isnan(assembled(gi, gj))) << "(" << gi << "," << gj << ") twice";
            assembled(gi, gj) = h(r, c);
          }
        }
      }
    }
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(bits(assembled(i, j)), bits(full(i, j)))
            << "grid " << grid.pr << "x" << grid.pc << " nb " << grid.nb << " src " << grid.src
            << " at " << i << "," << j;
      }
    }
  }
}

// ---- prescribed spectrum
// -------------------------------------------------------------------------
/// max |(Q^T Q - I)_{ij}|
double orthogonality_error(const DenseHost& q) {
  const int n = static_cast<int>(q.extent(0));
  std::vector<double> qtq(static_cast<std::size_t>(n) * n);
  kess::core::lapack::gemm('T', 'N', n, n, n, 1.0, q.data(), n, q.data(), n, 0.0, qtq.data(), n);
  double err = 0.0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      err = kess_test::worse(err, std::abs(qtq[i + j * n] - (i == j ? 1.0 : 0.0)));
  return err;
}

std::vector<double> clustered_spectrum(int n) {
  std::vector<double> lambda;
  for (int k = 0; k < 12; ++k) lambda.push_back(-5.0);                 // multiplicity 12
  for (int k = 0; k < 5; ++k) lambda.push_back(0.0);                   // null space of dim 5
  for (int k = 0; k < 20; ++k) lambda.push_back(1.0);                  // multiplicity 20
  for (int k = 0; k < 3; ++k) lambda.push_back(1.0 + 1e-9 * (k + 1));  // tight cluster next to 1
  for (int k = 0; k < 30; ++k) lambda.push_back(2.5);                  // multiplicity 30
  lambda.push_back(100.0);
  lambda.push_back(-100.0);
  while (static_cast<int>(lambda.size()) < n) {  // the rest spread out
    lambda.push_back(
        50.0 * kess::gen::random_general_entry(1, 0, static_cast<std::int64_t>(lambda.size())));
  }
  // Scramble the order: the generator must not rely on sorted input.
  for (int k = n - 1; k > 0; --k) {
    std::swap(lambda[k], lambda[kess::gen::splitmix64(static_cast<std::uint64_t>(k)) % (k + 1)]);
  }
  return lambda;
}

TEST(Generators, PrescribedSpectrumHasExactlyTheRequestedEigenvalues) {
  const int n = 150;
  std::vector<double> lambda = clustered_spectrum(n);
  DenseHost q;
  DenseHost a = kess::gen::prescribed_spectrum(lambda, 2024, &q);
  ASSERT_EQ(a.extent(0), static_cast<std::size_t>(n));
  ASSERT_EQ(q.extent(0), static_cast<std::size_t>(n));

  // Exactly symmetric and dense.
  double lmax = 0.0;
  for (double l : lambda) lmax = kess_test::worse(lmax, std::abs(l));
  std::int64_t small = 0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(bits(a(i, j)), bits(a(j, i)));
      small += std::abs(a(i, j)) < 1e-6 * lmax;
      small += std::abs(q(i, j)) < 1e-6;
    }
  }
  EXPECT_LT(small, n * n / 100) << "A or Q is not dense";

  // Eigenvalues by LAPACK, against the sorted request (multiplicities included).
  DenseHost work("work", n, n);
  Kokkos::deep_copy(work, a);
  std::vector<double> w(n);
  ASSERT_EQ(kess::core::lapack::syevd('N', 'L', n, work.data(), n, w.data()), 0);
  std::vector<double> sorted = lambda;
  std::sort(sorted.begin(), sorted.end());
  double err = 0.0;
  for (int k = 0; k < n; ++k) err = kess_test::worse(err, std::abs(w[k] - sorted[k]));
  EXPECT_LE(err, 1e-13 * lmax) << "max eigenvalue error " << err;

  // Q is orthogonal and its columns are the eigenvectors: A Q = Q diag(lambda).
  EXPECT_LE(orthogonality_error(q), 1e-13);
  std::vector<double> aq(static_cast<std::size_t>(n) * n);
  kess::core::lapack::gemm('N', 'N', n, n, n, 1.0, a.data(), n, q.data(), n, 0.0, aq.data(), n);
  double res = 0.0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      res = kess_test::worse(res, std::abs(aq[i + j * n] - q(i, j) * lambda[j]));
  EXPECT_LE(res, 1e-13 * lmax);
}

TEST(Generators, PrescribedSpectrumIsDeterministicPerSeed) {
  std::vector<double> lambda = clustered_spectrum(80);
  DenseHost a = kess::gen::prescribed_spectrum(lambda, 1);
  DenseHost b = kess::gen::prescribed_spectrum(lambda, 1);
  DenseHost c = kess::gen::prescribed_spectrum(lambda, 2);
  std::int64_t differ = 0;
  for (int j = 0; j < 80; ++j) {
    for (int i = 0; i < 80; ++i) {
      ASSERT_EQ(bits(a(i, j)), bits(b(i, j)));
      differ += a(i, j) != c(i, j);
    }
  }
  EXPECT_GT(differ, 80 * 80 / 2);
}

TEST(Generators, RandomOrthogonalForManyShapes) {
  for (std::int64_t n : {1, 2, 31, 32, 33, 70}) {
    for (std::int64_t r : {std::int64_t{-1}, std::int64_t{1}, std::int64_t{3}, std::int64_t{65}}) {
      DenseHost q = kess::gen::random_orthogonal(n, 8, r);
      EXPECT_LE(orthogonality_error(q), 1e-14 * static_cast<double>(10 + n))
          << "n " << n << " reflectors " << r;
      if (n > 1) {  // not the identity
        double off = 0.0;
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) off = kess_test::worse(off, i == j ? 0.0 : std::abs(q(i, j)));
        EXPECT_GT(off, 1e-3) << "n " << n << " reflectors " << r;
      }
    }
  }
  // One reflector: Q = I - 2 u u^T / u^T u exactly as documented.
  const std::int64_t n = 9;
  DenseHost q = kess::gen::random_orthogonal(n, 8, 1);
  const std::uint64_t useed = kess::gen::splitmix64(8 ^ kess::gen::detail::kDomainReflector);
  std::vector<double> u(n);
  double uu = 0.0;
  for (int i = 0; i < n; ++i) uu += (u[i] = kess::gen::random_general_entry(useed, 0, i)) * u[i];
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(q(i, j), (i == j ? 1.0 : 0.0) - 2.0 * u[i] * u[j] / uu, 1e-15);
}

TEST(Generators, ArgumentChecks) {
  EXPECT_THROW(kess::gen::random_symmetric(-1, 0), kess::Error);
  EXPECT_THROW(kess::gen::random_general(3, -2, 0), kess::Error);
  EXPECT_THROW(kess::gen::prescribed_spectrum({1.0, std::nan("")}, 0), kess::Error);
  EXPECT_EQ(kess::gen::prescribed_spectrum({}, 0).size(), 0u);
  DenseHost one = kess::gen::prescribed_spectrum({3.5}, 0);
  EXPECT_NEAR(one(0, 0), 3.5, 1e-14);
}

}  // namespace
