// kess::gen's sparse problems against independent references: Laplacian spectra in closed form,
// Heisenberg sectors against the dense 2^L Hamiltonian built from Pauli matrices and against the
// closed-form nonzero counts, Hubbard against hand-computed and free-fermion (U = 0) spectra (the
// ring's fermionic sign), the pairing model's matrix, random_sparse's structure and determinism.
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/lobpcg.hpp>

#include "test_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

using kess::SparseProblem;
const double kPi = std::acos(-1.0);

/// Lower triangle, rows ascending, columns ascending inside a row, no duplicates.
void expect_well_formed(const SparseProblem& p) {
  ASSERT_EQ(p.cols.size(), p.rows.size());
  ASSERT_EQ(p.vals.size(), p.rows.size());
  for (std::size_t e = 0; e < p.rows.size(); ++e) {
    ASSERT_GE(p.cols[e], 0);
    ASSERT_LE(p.cols[e], p.rows[e]);
    ASSERT_LT(p.rows[e], p.n);
    if (e > 0) {
      ASSERT_TRUE(p.rows[e - 1] < p.rows[e] ||
                  (p.rows[e - 1] == p.rows[e] && p.cols[e - 1] < p.cols[e]))
          << p.name << " entry " << e;
    }
    ASSERT_TRUE(std::isfinite(p.vals[e]));
  }
}

/// The full dense matrix (column-major).
std::vector<double> dense(const SparseProblem& p) {
  std::vector<double> a(std::size_t(p.n * p.n), 0.0);
  for (std::size_t e = 0; e < p.rows.size(); ++e) {
    a[std::size_t(p.rows[e] + p.cols[e] * p.n)] = p.vals[e];
    a[std::size_t(p.cols[e] + p.rows[e] * p.n)] = p.vals[e];
  }
  return a;
}

/// Ascending eigenvalues of a dense symmetric matrix of order n.
std::vector<double> eigenvalues(std::vector<double> a, int n) {
  std::vector<double> w(static_cast<std::size_t>(n));
  EXPECT_EQ(kess::core::lapack::syevd('N', 'L', n, a.data(), n, w.data()), 0);
  return w;
}

std::vector<double> spectrum(const SparseProblem& p) {
  return eigenvalues(dense(p), static_cast<int>(p.n));
}

void expect_same_spectrum(std::vector<double> got, std::vector<double> want, double tol) {
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], tol) << k;
}

double binom(int a, int b) {
  if (b < 0 || b > a) return 0;
  double c = 1;
  for (int m = 1; m <= b; ++m) c = c * (a - b + m) / m;
  return c;
}

TEST(SparseGenerators, LaplacianSpectraAreClosedForm) {
  auto lam = [](std::int64_t n, std::int64_t j) { return 2 - 2 * std::cos(kPi * j / (n + 1)); };
  const auto p1 = kess::gen::laplace1d(9);
  expect_well_formed(p1);
  EXPECT_EQ(p1.n, 9);
  EXPECT_EQ(p1.rows.size(), 9u + 8u);
  std::vector<double> w1;
  for (int j = 1; j <= 9; ++j) w1.push_back(lam(9, j));
  expect_same_spectrum(spectrum(p1), w1, 1e-12);

  const auto p2 = kess::gen::laplace2d(4, 5);
  expect_well_formed(p2);
  EXPECT_EQ(p2.n, 20);
  EXPECT_EQ(p2.rows.size(), 20u + 3u * 5u + 4u * 4u);
  std::vector<double> w2;
  for (int i = 1; i <= 4; ++i) {
    for (int j = 1; j <= 5; ++j) w2.push_back(lam(4, i) + lam(5, j));
  }
  expect_same_spectrum(spectrum(p2), w2, 1e-12);
  // Natural ordering, x fastest: point (x, y) = (1, 2) is row 1 + 4 * 2 = 9, whose lower
  // neighbours are rows 5 (y - 1) and 8 (x - 1).
  std::vector<std::int64_t> c9;
  for (std::size_t e = 0; e < p2.rows.size(); ++e) {
    if (p2.rows[e] == 9) c9.push_back(p2.cols[e]);
  }
  EXPECT_EQ(c9, (std::vector<std::int64_t>{5, 8, 9}));

  const auto p3 = kess::gen::laplace3d(3, 4, 2);
  expect_well_formed(p3);
  EXPECT_EQ(p3.n, 24);
  std::vector<double> w3;
  for (int i = 1; i <= 3; ++i) {
    for (int j = 1; j <= 4; ++j) {
      for (int k = 1; k <= 2; ++k) w3.push_back(lam(3, i) + lam(4, j) + lam(2, k));
    }
  }
  expect_same_spectrum(spectrum(p3), w3, 1e-12);
  kess_test::expect_error([] { kess::gen::laplace2d(0, 3); }, kess::ErrorKind::invalid_argument);
}

/// The spin-1/2 Heisenberg Hamiltonian on all 2^L states, from Pauli matrices: sum over bonds of
/// J/4 (X_a X_b + Y_a Y_b + Z_a Z_b); independent of the generator's bases and ranking.
std::vector<double> heisenberg_full(int L, double J, bool periodic) {
  const int N = 1 << L;
  std::vector<double> h(std::size_t(N) * N, 0.0);
  std::vector<std::pair<int, int>> bonds;
  for (int i = 0; i + 1 < L; ++i) bonds.push_back({i, i + 1});
  if (periodic && L >= 3) bonds.push_back({L - 1, 0});
  for (int s = 0; s < N; ++s) {
    for (auto [a, b] : bonds) {
      const int za = (s >> a) & 1 ? 1 : -1, zb = (s >> b) & 1 ? 1 : -1;
      h[std::size_t(s) + std::size_t(s) * N] += 0.25 * J * za * zb;  // Z Z
      // X X + Y Y flips both: (1 - za zb) / 2 * 2 = 2 when antiparallel, 0 otherwise.
      const int t = s ^ (1 << a) ^ (1 << b);
      h[std::size_t(t) + std::size_t(s) * N] += 0.25 * J * (1 - za * zb);
    }
  }
  return h;
}

TEST(SparseGenerators, HeisenbergSectorsMatchTheFullHamiltonian) {
  for (int L : {2, 3, 5, 6}) {
    for (bool periodic : {false, true}) {
      SCOPED_TRACE("L " + std::to_string(L) + (periodic ? " ring" : " open"));
      const double J = 1.3;
      std::vector<double> all;
      for (int sz2 = -L; sz2 <= L; sz2 += 2) {
        const auto p = kess::gen::heisenberg(L, sz2, J, periodic);
        expect_well_formed(p);
        EXPECT_EQ(p.n, std::int64_t(binom(L, (L + sz2) / 2)));
        const auto w = spectrum(p);
        all.insert(all.end(), w.begin(), w.end());
      }
      expect_same_spectrum(all, eigenvalues(heisenberg_full(L, J, periodic), 1 << L), 1e-12);
    }
  }
}

TEST(SparseGenerators, HeisenbergKnownGroundEnergies) {
  // 4-site ring: -2 J; 4-site open chain: -(3/4 + sqrt(3)/2) J; 2 sites: singlet -3/4 J.
  EXPECT_NEAR(spectrum(kess::gen::heisenberg(4, 0, 1.0, true))[0], -2.0, 1e-13);
  EXPECT_NEAR(spectrum(kess::gen::heisenberg(4, 0, 2.0, true))[0], -4.0, 1e-13);
  EXPECT_NEAR(spectrum(kess::gen::heisenberg(4, 0, 1.0, false))[0], -0.75 - std::sqrt(3.0) / 2,
              1e-13);
  const auto w2 = spectrum(kess::gen::heisenberg(2, 0, 1.0, false));
  EXPECT_NEAR(w2[0], -0.75, 1e-14);
  EXPECT_NEAR(w2[1], 0.25, 1e-14);
  // The states are the bit patterns in ascending order: L = 4, Sz = 0 starts 0011, 0101, 0110.
  // 0011 -> 0101 swaps sites 1, 2: entry (1, 0) = J/2; its diagonal on the ring: two parallel
  // and two antiparallel bonds, 0 (stored).
  const auto p = kess::gen::heisenberg(4, 0, 1.0, true);
  EXPECT_EQ(p.rows[0], 0);
  EXPECT_EQ(p.cols[0], 0);
  EXPECT_EQ(p.vals[0], 0.0);
  EXPECT_EQ(p.rows[1], 1);
  EXPECT_EQ(p.cols[1], 0);
  EXPECT_EQ(p.vals[1], 0.5);
  for (auto bad : {std::pair<int, int>{4, 1}, {4, 6}, {0, 0}, {63, 1}}) {
    kess_test::expect_error([&] { kess::gen::heisenberg(bad.first, bad.second); },
                            kess::ErrorKind::invalid_argument);
  }
}

TEST(SparseGenerators, HeisenbergNonzeroCounts) {
  // Sz = 0: n = C(L, L/2); each bond is antiparallel in 2 C(L - 2, L/2 - 1) states, each such
  // state-bond pair one off-diagonal entry of the full matrix; every diagonal entry stored.
  for (int L = 8; L <= 12; ++L) {
    for (bool periodic : {true, false}) {
      const int sz2 = L % 2;
      const int up = (L + sz2) / 2;
      const auto p = kess::gen::heisenberg(L, sz2, 1.0, periodic);
      const double n = binom(L, up);
      const int nb = periodic ? L : L - 1;
      const double off = nb * (binom(L - 2, up - 1) + binom(L - 2, up - 1));
      EXPECT_EQ(p.n, std::int64_t(n));
      EXPECT_EQ(double(p.rows.size()), n + off / 2) << L;
      const auto H = kess::make_csb<double, Kokkos::HostSpace>(p);
      EXPECT_EQ(double(H.nonzeros()), n + off) << L;
    }
  }
}

TEST(SparseGenerators, HubbardTwoSites) {
  const double t = 1.0, U = 4.0;
  const auto p = kess::gen::hubbard(2, 1, 1, t, U, false);
  expect_well_formed(p);
  ASSERT_EQ(p.n, 4);
  const auto w = spectrum(p);
  EXPECT_NEAR(w[0], (U - std::sqrt(U * U + 16 * t * t)) / 2, 1e-13);
  // The other three: 0 (the triplet), U, (U + sqrt(U^2 + 16 t^2)) / 2.
  EXPECT_NEAR(w[1], 0.0, 1e-13);
  EXPECT_NEAR(w[2], U, 1e-13);
  EXPECT_NEAR(w[3], (U + std::sqrt(U * U + 16 * t * t)) / 2, 1e-13);
}

/// All sums of k distinct values of e.
std::vector<double> sums(const std::vector<double>& e, int k) {
  std::vector<double> out;
  const int L = static_cast<int>(e.size());
  for (int s = 0; s < (1 << L); ++s) {
    if (__builtin_popcount(s) != k) continue;
    double x = 0;
    for (int p = 0; p < L; ++p) x += (s >> p) & 1 ? e[p] : 0.0;
    out.push_back(x);
  }
  return out;
}

TEST(SparseGenerators, HubbardFreeFermionsAndTheRingSign) {
  // U = 0: eigenvalues are sums of one-particle energies per species. Open chain: -2t cos(pi k /
  // (L + 1)). Ring: fermions on a periodic ring, k = 2 pi m / L for every N; without the boundary
  // hop's sign (-1)^(N - 1) in the bit basis an even N would see an antiperiodic ring instead.
  const double t = 0.7;
  for (bool periodic : {false, true}) {
    for (const auto& c : {std::tuple<int, int, int>{4, 2, 1}, {5, 2, 3}, {6, 3, 2}}) {
      const int L = std::get<0>(c), nu = std::get<1>(c), nd = std::get<2>(c);
      SCOPED_TRACE(std::to_string(L) + " " + std::to_string(nu) + " " + std::to_string(nd) +
                   (periodic ? " ring" : " open"));
      auto one = [&] {
        std::vector<double> e;
        for (int m = 0; m < L; ++m) {
          const double k = !periodic ? kPi * (m + 1) / (L + 1) : 2 * kPi * m / L;
          e.push_back(-2 * t * std::cos(k));
        }
        return e;
      };
      const auto up = sums(one(), nu), down = sums(one(), nd);
      std::vector<double> want;
      for (double a : up) {
        for (double b : down) want.push_back(a + b);
      }
      const auto p = kess::gen::hubbard(L, nu, nd, t, 0.0, periodic);
      expect_well_formed(p);
      EXPECT_EQ(p.n, std::int64_t(up.size() * down.size()));
      expect_same_spectrum(spectrum(p), want, 1e-12);
    }
  }
  // U counts doubly occupied sites: one up and one down fermion on 3 sites, hopping off.
  const auto q = kess::gen::hubbard(3, 1, 1, 0.0, 2.5, false);
  std::vector<double> diag;
  for (std::size_t e = 0; e < q.rows.size(); ++e) {
    if (q.rows[e] == q.cols[e]) diag.push_back(q.vals[e]);
  }
  // Basis up-major: (up site, down site) = (0,0) (0,1) (0,2) (1,0) ...: doubly occupied 0, 4, 8.
  EXPECT_EQ(diag, (std::vector<double>{2.5, 0, 0, 0, 2.5, 0, 0, 0, 2.5}));
}

TEST(SparseGenerators, PairingModel) {
  const double g = 0.3;
  // L = 2, Np = 1: [[2*0 - g, -g], [-g, 2*1 - g]].
  const auto p = kess::gen::pairing(2, 1, g);
  expect_well_formed(p);
  EXPECT_EQ(dense(p), (std::vector<double>{-g, -g, -g, 2 - g}));
  // One pair on L levels: diag(2p) - g (all ones).
  const auto q = kess::gen::pairing(5, 1, g);
  const auto a = dense(q);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) EXPECT_EQ(a[i + 5 * j], (i == j ? 2.0 * i : 0.0) - g);
  }
  // g = 0: sums of 2p over the occupied levels; dimension C(L, Np).
  const auto r = kess::gen::pairing(6, 3, 0.0);
  EXPECT_EQ(r.n, 20);
  std::vector<double> e;
  for (int lev = 0; lev < 6; ++lev) e.push_back(2.0 * lev);
  expect_same_spectrum(spectrum(r), sums(e, 3), 1e-13);
  // Two pairs on 4 levels, hand-built in the same basis (0011, 0101, 0110, 1001, 1010, 1100):
  // diagonal sum(2p - g), -g between patterns that differ by one moved pair.
  const auto s = kess::gen::pairing(4, 2, g);
  const int pats[6] = {3, 5, 6, 9, 10, 12};
  std::vector<double> want(36, 0.0);
  for (int x = 0; x < 6; ++x) {
    for (int y = 0; y < 6; ++y) {
      if (x == y) {
        for (int lev = 0; lev < 4; ++lev)
          want[x + 6 * y] += (pats[x] >> lev) & 1 ? 2.0 * lev - g : 0;
      } else if (__builtin_popcount(pats[x] ^ pats[y]) == 2) {
        want[x + 6 * y] = -g;
      }
    }
  }
  EXPECT_EQ(dense(s), want);
}

TEST(SparseGenerators, RandomSparseIsDeterministicAndHasTheDensity) {
  const std::int64_t n = 3000;
  const double density = 0.01;
  const auto a = kess::gen::random_sparse(n, density, 7, 2.5);
  const auto b = kess::gen::random_sparse(n, density, 7, 2.5);
  const auto c = kess::gen::random_sparse(n, density, 8, 2.5);
  expect_well_formed(a);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.vals, b.vals);
  EXPECT_NE(a.cols, c.cols);
  // Off-diagonal pairs: binomial(n (n - 1) / 2, density); within 6 standard deviations.
  const double pairs = double(n) * (n - 1) / 2, mean = pairs * density;
  const double sd = std::sqrt(pairs * density * (1 - density));
  const double off = double(a.rows.size()) - double(n);
  EXPECT_NEAR(off, mean, 6 * sd);
  std::int64_t diag = 0;
  for (std::size_t e = 0; e < a.rows.size(); ++e) {
    if (a.rows[e] == a.cols[e]) {
      ++diag;
      EXPECT_EQ(a.vals[e], kess::gen::random_entry(7, a.rows[e], a.rows[e]) + 2.5);
    } else {
      EXPECT_GE(a.vals[e], -1.0);
      EXPECT_LT(a.vals[e], 1.0);
      EXPECT_EQ(a.vals[e], kess::gen::random_entry(7, a.rows[e], a.cols[e]));
    }
  }
  EXPECT_EQ(diag, n);
  // The columns of the first rows are spread evenly: each half of [0, i) gets about half.
  std::int64_t low = 0, high = 0;
  for (std::size_t e = 0; e < a.rows.size(); ++e) {
    if (a.rows[e] == a.cols[e]) continue;
    (a.cols[e] < a.rows[e] / 2 ? low : high) += 1;
  }
  EXPECT_NEAR(double(low) / double(low + high), 0.5, 0.03);
  // Density 1: the full lower triangle; density 0: the diagonal.
  EXPECT_EQ(kess::gen::random_sparse(50, 1.0).rows.size(), 50u * 51u / 2u);
  EXPECT_EQ(kess::gen::random_sparse(50, 0.0).rows.size(), 50u);
  kess_test::expect_error([] { kess::gen::random_sparse(10, 1.5); },
                          kess::ErrorKind::invalid_argument);
}

}  // namespace
