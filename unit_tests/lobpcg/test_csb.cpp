// kess::CsbMatrix on one process, per backend: COO and CSR builders against an independent sorted
// list (β dividing n or not, 1, above n, automatic), the storage order (blocks by (row, col),
// entries by detail::lobpcg::entry_key), the diagonal, triangle and full inputs, the symmetry check
// naming the worst pair, bad inputs, and Matrix Market round trips.
#include <kess/core/io/matrix_market.hpp>
#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/lobpcg/detail/csb_format.hpp>

#include "csb_testing.hpp"
#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using Csb = kess::CsbMatrix<double, TestMemSpace>;
using csb_test::Coo;
using csb_test::expect_entries;
using csb_test::host;
using csb_test::Lower;
using kess::CooContent;
using kess::ErrorKind;
using kess_test::contains;
using kess_test::expect_error;

/// A random lower triangle of order n: each (i, j), i >= j, present with probability `density`,
/// the diagonal always (some diagonal values exactly 0, kept as structural entries).
Lower random_lower(std::int64_t n, double density, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0), v(-1.0, 1.0);
  Lower m;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      if (i == j) {
        m[{i, j}] = (i % 7 == 3) ? 0.0 : v(rng);
      } else if (u(rng) < density) {
        m[{i, j}] = v(rng);
      }
    }
  }
  return m;
}

/// The entries of m in a shuffled order; with `mixed`, about half listed as (j, i).
Coo listing(const Lower& m, unsigned seed, bool mixed) {
  std::vector<std::tuple<std::int64_t, std::int64_t, double>> e;
  for (const auto& [ij, x] : m) e.emplace_back(ij.first, ij.second, x);
  std::mt19937_64 rng(seed);
  std::shuffle(e.begin(), e.end(), rng);
  Coo c;
  for (const auto& [i, j, x] : e) {
    if (mixed && (rng() & 1)) {
      c.push(j, i, x);
    } else {
      c.push(i, j, x);
    }
  }
  return c;
}

/// Both triangles of m, shuffled.
Coo full_listing(const Lower& m, unsigned seed) {
  Coo c;
  for (const auto& [ij, x] : m) {
    c.push(ij.first, ij.second, x);
    if (ij.first != ij.second) c.push(ij.second, ij.first, x);
  }
  std::vector<std::size_t> p(c.rows.size());
  for (std::size_t k = 0; k < p.size(); ++k) p[k] = k;
  std::mt19937_64 rng(seed);
  std::shuffle(p.begin(), p.end(), rng);
  Coo s;
  for (auto k : p) s.push(c.rows[k], c.cols[k], c.vals[k]);
  return s;
}

/// Checks H against m: to_coo, counts, the storage order, the block index, the diagonal.
void expect_matrix(const Csb& H, std::int64_t n, const Lower& m) {
  expect_entries(H, m);
  EXPECT_EQ(H.rows(), n);
  EXPECT_EQ(H.local_nonzeros(), std::int64_t(m.size()));
  const int beta = H.block_size();
  ASSERT_GE(beta, 1);
  ASSERT_LE(beta, 65536);
  EXPECT_EQ(H.block_rows(), (n + beta - 1) / beta);
  EXPECT_EQ(H.vector_offset(), 0);
  EXPECT_EQ(H.vector_rows(), n);
  EXPECT_TRUE(H.on_diagonal());
  // Blocks: strictly increasing (row, col), in the lower triangle, non-empty, host == device.
  const auto& br = H.block_row_host();
  const auto& bc = H.block_col_host();
  const auto& bs = H.block_start_host();
  ASSERT_EQ(bc.size(), br.size());
  ASSERT_EQ(bs.size(), br.size() + 1);
  EXPECT_EQ(H.local_blocks(), std::int64_t(br.size()));
  EXPECT_EQ(bs.front(), 0);
  EXPECT_EQ(bs.back(), H.local_nonzeros());
  EXPECT_EQ(host(H.block_row()), br);
  EXPECT_EQ(host(H.block_col()), bc);
  EXPECT_EQ(host(H.block_start()), bs);
  std::set<std::pair<int, int>> expected_blocks;
  for (const auto& [ij, x] : m)
    expected_blocks.insert({int(ij.first / beta), int(ij.second / beta)});
  EXPECT_EQ(br.size(), expected_blocks.size());
  const auto er = host(H.entry_row()), ec = host(H.entry_col());
  const auto ev = host(H.entry_value());
  for (std::size_t b = 0; b < br.size(); ++b) {
    if (b > 0) EXPECT_LT(std::make_pair(br[b - 1], bc[b - 1]), std::make_pair(br[b], bc[b]));
    EXPECT_GE(br[b], bc[b]);
    EXPECT_LT(bs[b], bs[b + 1]);
    for (std::int64_t e = bs[b]; e < bs[b + 1]; ++e) {
      EXPECT_LT(er[e], beta);
      EXPECT_LT(ec[e], beta);
      const std::int64_t i = std::int64_t(br[b]) * beta + er[e],
                         j = std::int64_t(bc[b]) * beta + ec[e];
      const auto it = m.find({i, j});
      ASSERT_NE(it, m.end()) << i << ", " << j;
      EXPECT_EQ(kess_test::bits(ev[e]), kess_test::bits(it->second));
      if (e > bs[b]) {
        EXPECT_LT(kess::detail::lobpcg::entry_key(er[e - 1], ec[e - 1]),
                  kess::detail::lobpcg::entry_key(er[e], ec[e]));
      }
    }
  }
  // Diagonal: H's diagonal, 0 where absent.
  const auto d = host(H.diagonal());
  ASSERT_EQ(std::int64_t(d.size()), n);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto it = m.find({i, i});
    EXPECT_EQ(d[i], it == m.end() ? 0.0 : it->second) << i;
  }
  EXPECT_EQ(H.local_bytes(),
            H.local_nonzeros() * 12 + H.local_blocks() * 8 + (H.local_blocks() + 1) * 8);
}

TEST(CsbFormat, EntryKeyOrdersTilesThenRows) {
  using kess::detail::lobpcg::entry_key;
  using kess::detail::lobpcg::entry_of_key;
  constexpr int t = kess::detail::lobpcg::kTile;
  // Inside a tile: row-major; the next tile to the right comes after the whole tile.
  EXPECT_LT(entry_key(0, t - 1), entry_key(1, 0));
  EXPECT_LT(entry_key(t - 1, t - 1), entry_key(0, t));
  EXPECT_LT(entry_key(0, 65535), entry_key(t, 0));
  std::mt19937 rng(3);
  for (int k = 0; k < 1000; ++k) {
    const auto r = static_cast<std::uint16_t>(rng()), c = static_cast<std::uint16_t>(rng());
    std::uint16_t r2, c2;
    entry_of_key(entry_key(r, c), r2, c2);
    EXPECT_EQ(r2, r);
    EXPECT_EQ(c2, c);
  }
}

TEST(CsbMatrix, CooRoundTripForSeveralBlockSizes) {
  const std::int64_t n = 53;
  const Lower m = random_lower(n, 0.2, 1);
  const Coo c = listing(m, 2, /*mixed=*/true);
  for (int beta : {0, 1, 7, 16, 53, 64, 1000}) {
    SCOPED_TRACE("beta " + std::to_string(beta));
    kess::CsbOptions o;
    o.block_size = beta;
    const auto H = Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, o);
    expect_matrix(H, n, m);
    if (beta > 0) EXPECT_EQ(H.block_size(), beta);
  }
  // Automatic: one block for small n.
  EXPECT_EQ(Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle).block_size(), n);
}

TEST(CsbMatrix, LargerBlocksAndTiles) {
  // β above the tile size, so entries of a block span several tiles; missing diagonal entries.
  const std::int64_t n = 700;
  Lower m = random_lower(n, 0.01, 5);
  for (std::int64_t i = 0; i < n; i += 5) m.erase({i, i});
  const Coo c = listing(m, 6, false);
  kess::CsbOptions o;
  o.block_size = 600;
  expect_matrix(Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, o), n, m);
}

TEST(CsbMatrix, FromCsrEqualsFromCoo) {
  const std::int64_t n = 41;
  const Lower m = random_lower(n, 0.3, 7);
  // CSR of the upper triangle (the transpose), then of both triangles.
  for (bool full : {false, true}) {
    std::vector<std::vector<std::pair<std::int64_t, double>>> rows(n);
    for (const auto& [ij, x] : m) {
      rows[ij.second].push_back({ij.first, x});
      if (full && ij.first != ij.second) rows[ij.first].push_back({ij.second, x});
    }
    std::vector<std::int64_t> ptr{0}, cols;
    std::vector<double> vals;
    for (auto& r : rows) {
      std::sort(r.begin(), r.end());
      for (auto& [j, x] : r) {
        cols.push_back(j);
        vals.push_back(x);
      }
      ptr.push_back(std::int64_t(cols.size()));
    }
    kess::CsbOptions o;
    o.block_size = 10;
    const auto H =
        Csb::from_csr(n, ptr, cols, vals, full ? CooContent::full : CooContent::triangle, o);
    expect_matrix(H, n, m);
  }
}

TEST(CsbMatrix, FullAndTriangleInputsGiveTheSameMatrix) {
  const std::int64_t n = 37;
  const Lower m = random_lower(n, 0.25, 11);
  const Coo f = full_listing(m, 12);
  kess::CsbOptions o;
  o.block_size = 8;
  expect_matrix(Csb::from_coo(n, f.rows, f.cols, f.vals, CooContent::full, o), n, m);
  // Asymmetry within the tolerance is accepted (the lower entry kept).
  Coo g = f;
  for (std::size_t k = 0; k < g.vals.size(); ++k) {
    if (g.rows[k] < g.cols[k]) g.vals[k] += 1e-14;
  }
  o.symmetry_tol = 1e-12;
  expect_matrix(Csb::from_coo(n, g.rows, g.cols, g.vals, CooContent::full, o), n, m);
}

TEST(CsbMatrix, NonSymmetricFullInputNamesTheWorstPair) {
  const std::int64_t n = 30;
  const Lower m = random_lower(n, 0.3, 13);
  Coo f = full_listing(m, 14);
  // Two off-diagonal pairs perturbed in their upper halves, by 1e-3 and (the worst) by 0.5.
  std::vector<std::pair<std::int64_t, std::int64_t>> off;
  for (const auto& [ij, x] : m) {
    if (ij.first != ij.second) off.push_back(ij);
  }
  ASSERT_GE(off.size(), 2u);
  const auto a = off[off.size() / 3], b = off[2 * off.size() / 3];
  for (std::size_t k = 0; k < f.vals.size(); ++k) {
    if (f.rows[k] == a.second && f.cols[k] == a.first) f.vals[k] += 1e-3;
    if (f.rows[k] == b.second && f.cols[k] == b.first) f.vals[k] += 0.5;
  }
  const auto e = expect_error([&] { Csb::from_coo(n, f.rows, f.cols, f.vals, CooContent::full); },
                              ErrorKind::not_symmetric);
  const std::string want = "(" + std::to_string(b.first) + ", " + std::to_string(b.second) + ")";
  EXPECT_TRUE(contains(e, want)) << e.what() << " wants " << want;
  EXPECT_TRUE(contains(e, "0-based")) << e.what();
  // A missing partner counts as 0.
  Coo g = full_listing(m, 15);
  for (std::size_t k = 0; k < g.vals.size(); ++k) {
    if (g.rows[k] == a.second && g.cols[k] == a.first) {
      g.rows.erase(g.rows.begin() + k);
      g.cols.erase(g.cols.begin() + k);
      g.vals.erase(g.vals.begin() + k);
      break;
    }
  }
  const auto e2 = expect_error([&] { Csb::from_coo(n, g.rows, g.cols, g.vals, CooContent::full); },
                               ErrorKind::not_symmetric);
  EXPECT_TRUE(contains(e2, "(" + std::to_string(a.first) + ", " + std::to_string(a.second) + ")"))
      << e2.what();
}

TEST(CsbMatrix, BadInputsAreRefused) {
  const std::int64_t n = 10;
  Coo c;
  c.push(0, 0, 1.0);
  c.push(5, 2, 2.0);
  c.push(9, 9, 3.0);
  auto build = [&](const Coo& x, CooContent content = CooContent::triangle, kess::CsbOptions o = {},
                   std::int64_t nn = 10) {
    return Csb::from_coo(nn, x.rows, x.cols, x.vals, content, o);
  };
  expect_matrix(build(c), n, Lower{{{0, 0}, 1.0}, {{5, 2}, 2.0}, {{9, 9}, 3.0}});
  // The same pair twice, in either position.
  Coo d = c;
  d.push(2, 5, 4.0);
  auto e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "(5, 2)")) << e.what();
  EXPECT_TRUE(contains(e, "from_coo")) << e.what();
  d = c;
  d.push(9, 9, 1.0);
  e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "(9, 9)")) << e.what();
  // Full input: the same position twice.
  d = c;
  d.push(2, 5, 2.0);
  d.push(2, 5, 2.0);
  e = expect_error([&] { build(d, CooContent::full); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "(2, 5)")) << e.what();
  // Indices, values, n, β.
  d = c;
  d.rows[1] = 10;
  e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "rows[1]")) << e.what();
  d = c;
  d.cols[2] = -1;
  e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "cols[2]")) << e.what();
  d = c;
  d.vals[0] = std::numeric_limits<double>::quiet_NaN();
  e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "NaN")) << e.what();
  d.vals[0] = std::numeric_limits<double>::infinity();
  e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "Inf")) << e.what();
  d = c;
  d.vals.pop_back();
  e = expect_error([&] { build(d); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "lengths")) << e.what();
  e = expect_error([&] { build(c, CooContent::triangle, {}, 0); }, ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "n = 0")) << e.what();
  for (int beta : {-1, 65537}) {
    kess::CsbOptions o;
    o.block_size = beta;
    e = expect_error([&] { build(c, CooContent::triangle, o); }, ErrorKind::invalid_argument);
    EXPECT_TRUE(contains(e, "block_size")) << e.what();
  }
  kess::CsbOptions big;
  big.block_size = 65536;
  EXPECT_EQ(build(c, CooContent::triangle, big).block_size(), 65536);
  // CSR: a short or decreasing row_ptr.
  std::vector<std::int64_t> ptr{0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3}, cols{0, 2, 9};
  std::vector<double> vals{1.0, 2.0, 3.0};
  expect_matrix(Csb::from_csr(n, ptr, cols, vals, CooContent::triangle), n,
                Lower{{{0, 0}, 1.0}, {{5, 2}, 2.0}, {{9, 9}, 3.0}});
  auto bad = ptr;
  bad.pop_back();
  e = expect_error([&] { Csb::from_csr(n, bad, cols, vals, CooContent::triangle); },
                   ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "row_ptr")) << e.what();
  bad = ptr;
  bad[3] = 2;
  e = expect_error([&] { Csb::from_csr(n, bad, cols, vals, CooContent::triangle); },
                   ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "row_ptr")) << e.what();
  auto badc = cols;
  badc[1] = 11;
  e = expect_error([&] { Csb::from_csr(n, ptr, badc, vals, CooContent::triangle); },
                   ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e, "cols[1]")) << e.what();
}

/// A file name of this test process under the test temporary folder.
std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "kess_csb_" + std::to_string(::getpid()) + "_" + name;
}

TEST(CsbMatrix, MatrixMarketRoundTrips) {
  const std::int64_t n = 45;
  const Lower m = random_lower(n, 0.2, 21);
  const Coo c = listing(m, 22, true);
  kess::CsbOptions o;
  o.block_size = 6;
  const auto H = Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, o);
  // Symmetric file: exactly the stored triangle, by rows, 17 digits (bit-exact back).
  const std::string sym = temp_path("sym.mtx");
  H.write_matrix_market(sym);
  {
    std::ifstream in(sym);
    std::string banner;
    std::getline(in, banner);
    EXPECT_EQ(banner, "%%MatrixMarket matrix coordinate real symmetric");
  }
  const auto h = kess::mm::read_header(sym);
  EXPECT_EQ(h.entries, std::int64_t(m.size()));
  EXPECT_EQ(h.n, n);
  expect_matrix(Csb::read_matrix_market(sym, o), n, m);
  expect_matrix(Csb::read_matrix_market(sym), n, m);
  // General file with both triangles: checked, the lower triangle kept.
  const Coo f = full_listing(m, 23);
  kess::mm::CooMatrix g;
  g.m = g.n = n;
  g.rows = f.rows;
  g.cols = f.cols;
  g.vals = f.vals;
  const std::string gen = temp_path("general.mtx");
  kess::mm::write_coordinate(gen, g);
  expect_matrix(Csb::read_matrix_market(gen, o), n, m);
  // A general file that is not symmetric names the worst pair.
  std::size_t k = 0;
  while (g.rows[k] <= g.cols[k]) ++k;
  g.vals[k] += 0.25;
  kess::mm::write_coordinate(gen, g);
  const auto e = expect_error([&] { Csb::read_matrix_market(gen, o); }, ErrorKind::not_symmetric);
  EXPECT_TRUE(contains(e, "(" + std::to_string(g.rows[k]) + ", " + std::to_string(g.cols[k]) + ")"))
      << e.what();
  // Not square; absent file.
  g.n = n + 1;
  kess::mm::write_coordinate(gen, g);
  expect_error([&] { Csb::read_matrix_market(gen, o); }, ErrorKind::invalid_argument);
  std::remove(gen.c_str());
  const auto e2 = expect_error([&] { Csb::read_matrix_market(gen, o); }, ErrorKind::io);
  EXPECT_TRUE(contains(e2, gen)) << e2.what();
  // Writing into a folder that does not exist fails as io and leaves nothing behind.
  const std::string bad = temp_path("no_such_dir") + "/x.mtx";
  expect_error([&] { H.write_matrix_market(bad); }, ErrorKind::io);
  EXPECT_FALSE(std::ifstream(bad).good());
  std::remove(sym.c_str());
}

TEST(CsbMatrix, MakeCsbOfAGeneratedProblem) {
  const auto p = kess::gen::heisenberg(10, 0, 1.0, true);
  Lower m;
  for (std::size_t e = 0; e < p.rows.size(); ++e) m[{p.rows[e], p.cols[e]}] = p.vals[e];
  for (int beta : {0, 37, 100}) {
    kess::CsbOptions o;
    o.block_size = beta;
    expect_matrix(kess::make_csb<double, TestMemSpace>(p, o), p.n, m);
  }
}

/// Sets KESS_NUM_THREADS for the scope (kess's host threads; read at each call).
class HostThreads {
 public:
  explicit HostThreads(int n) {
    if (const char* v = std::getenv("KESS_NUM_THREADS")) old_ = v;
    ::setenv("KESS_NUM_THREADS", std::to_string(n).c_str(), 1);
  }
  ~HostThreads() {
    if (old_.empty()) {
      ::unsetenv("KESS_NUM_THREADS");
    } else {
      ::setenv("KESS_NUM_THREADS", old_.c_str(), 1);
    }
  }

 private:
  std::string old_;
};

TEST(CsbMatrix, ThreadedBuildEqualsOneThread) {
  // Above 2^16 entries the block rows are sorted in chunks on kess's host threads.
  const std::int64_t n = 1500;
  const Lower m = random_lower(n, 0.08, 31);
  ASSERT_GT(m.size(), 65536u);
  const Coo c = listing(m, 32, true);
  const Coo f = full_listing(m, 33);
  kess::CsbOptions o;
  o.block_size = 100;
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    HostThreads scope(threads);
    expect_matrix(Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, o), n, m);
    expect_matrix(Csb::from_coo(n, f.rows, f.cols, f.vals, CooContent::full, o), n, m);
    // Equal asymmetries (4, exactly) in two pairs: the smaller pair is named whatever the
    // chunking.
    const std::pair<std::int64_t, std::int64_t> a{1400, 1300}, b{90, 10};
    Coo h;
    for (std::size_t k = 0; k < f.vals.size(); ++k) {
      const std::pair<std::int64_t, std::int64_t> lo{std::max(f.rows[k], f.cols[k]),
                                                     std::min(f.rows[k], f.cols[k])};
      if (lo != a && lo != b) h.push(f.rows[k], f.cols[k], f.vals[k]);
    }
    for (auto pr : {a, b}) {
      h.push(pr.first, pr.second, 0.5);
      h.push(pr.second, pr.first, 4.5);
    }
    const auto e =
        expect_error([&] { Csb::from_coo(n, h.rows, h.cols, h.vals, CooContent::full, o); },
                     ErrorKind::not_symmetric);
    EXPECT_TRUE(contains(e, "(90, 10)")) << e.what();
  }
}

}  // namespace
