// The block-sparse iterations at 1, 2 and 4 ranks on every grid shape with random placements:
// the density matrix (sign and TRS4) equals one process's to rounding (mu in the gap), the
// filtered one stays within c * eps of dense, and a non-positive-definite S raises on every rank.
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/block_sparse.hpp>

#include "block_sparse_testing.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Matrix = kess::BlockSparseMatrix<double>;
using kess::BlockDistribution;
using kess::comm::Communicator;
using kess::comm::ProcessGrid;

const std::vector<int> kSizes = bs_test::sizes(20, {3, 5, 2, 6, 4});

// Dense symmetric, banded in blocks, entries amp * decay^|i-j|, diagonal shift + spread * i / n.
bs_test::Global banded(unsigned seed, double amp, double decay, double shift, double spread) {
  const auto& s = kSizes;
  const int nb = static_cast<int>(s.size());
  bs_test::Global g;
  g.row_sizes = g.col_sizes = s;
  std::vector<std::int64_t> off(nb + 1, 0);
  for (int i = 0; i < nb; ++i) off[i + 1] = off[i] + s[i];
  const std::int64_t n = off[nb];
  std::vector<double> a(static_cast<std::size_t>(n * n), 0.0);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < nb; ++i)
    for (int j = i; j < nb && j - i <= 3; ++j)
      for (std::int64_t c = off[j]; c < off[j + 1]; ++c)
        for (std::int64_t r = off[i]; r < off[i + 1]; ++r) {
          if (i == j && r > c) continue;
          const double x = amp * std::pow(decay, j - i) * u(gen);
          a[r + c * n] = a[c + r * n] = x;
        }
  for (std::int64_t r = 0; r < n; ++r) a[r + r * n] += shift + spread * double(r) / n;
  for (int i = 0; i < nb; ++i)
    for (int j = 0; j < nb; ++j) {
      if (std::abs(i - j) > 3) continue;
      g.rows.push_back(i);
      g.cols.push_back(j);
      for (std::int64_t c = off[j]; c < off[j + 1]; ++c)
        for (std::int64_t r = off[i]; r < off[i + 1]; ++r) g.values.push_back(a[r + c * n]);
      g.offsets.push_back(static_cast<std::int64_t>(g.values.size()));
    }
  return g;
}

TEST(BlockSparseIterationsMpi, DensityMatrixMatchesOneProcessOnEveryGrid) {
  Exec exec;
  const auto world = Communicator::world();
  const auto gh = banded(5, 0.3, 0.4, -1.0, 3.0), gs = banded(6, 0.04, 0.5, 1.0, 0.0);
  const std::int64_t n = gh.m();
  // The dense reference and an N at a clear gap.
  auto h = gh.dense(), s = gs.dense();
  std::vector<double> w(static_cast<std::size_t>(n));
  ASSERT_EQ(
      kess::core::lapack::sygvd(1, 'V', 'L', int(n), h.data(), int(n), s.data(), int(n), w.data()),
      0);
  int N = int(n / 4);
  for (int k = int(n / 4); k <= int(3 * n / 4); ++k)
    if (w[k] - w[k - 1] > w[N] - w[N - 1]) N = k;
  std::vector<double> pref(static_cast<std::size_t>(n * n), 0.0);
  bs_test::gemm(false, true, n, n, N, 1.0, h, n, h, n, 0.0, pref, n);
  const BlockDistribution d1(kSizes, kSizes);
  const auto H1 = Matrix::from_blocks(d1, gh.rows, gh.cols, gh.values);
  const auto S1 = Matrix::from_blocks(d1, gs.rows, gs.cols, gs.values);
  for (auto method : {kess::DensityMethod::sign, kess::DensityMethod::trs4}) {
    kess::BlockDensityOptions o;
    o.method = method;
    const auto r1 = kess::density_matrix(exec, H1, S1, N, o);
    const auto p1 = r1.P.to_dense();
    EXPECT_LE(bs_test::max_diff(p1, pref), 1e-10);
    for (auto [pr, pc] : bs_test::shapes(world.size())) {
      ProcessGrid grid(world, pr, pc);
      const unsigned seed = 10 * pr + pc;
      BlockDistribution d(grid, kSizes, kSizes, bs_test::placement(kSizes.size(), pr, seed),
                          bs_test::placement(kSizes.size(), pc, seed + 1));
      const auto H = bs_test::build<Matrix>(d, gh);
      const auto S = bs_test::build<Matrix>(d, gs);
      const auto r = kess::density_matrix(exec, H, S, N, o);
      const std::string what = std::string(kess::to_string(method)) + " " + std::to_string(pr) +
                               "x" + std::to_string(pc);
      EXPECT_LE(bs_test::max_diff(r.P.to_dense(), p1), 1e-11) << what;
      // mu is any point of the gap: the Lanczos bounds (and so the bracket) differ by rounding.
      EXPECT_GT(r.mu, w[N - 1]) << what;
      EXPECT_LT(r.mu, w[N]) << what;
      EXPECT_NEAR(r.trace_ps, double(N), 1e-9) << what;
      // Filtered: within c * eps of dense.
      kess::BlockDensityOptions f = o;
      f.filter_eps = 1e-6;
      const auto rf = kess::density_matrix(exec, H, S, N, f);
      auto diff = rf.P.to_dense();
      for (std::size_t e = 0; e < diff.size(); ++e) diff[e] -= pref[e];
      EXPECT_LE(bs_test::frob(diff), 100 * f.filter_eps) << what;
      EXPECT_LE(rf.idempotency, 100 * f.filter_eps) << what;
    }
  }
}

TEST(BlockSparseIterationsMpi, NotPositiveDefiniteRaisesOnEveryRank) {
  Exec exec;
  const auto world = Communicator::world();
  auto gs = banded(6, 0.04, 0.5, 1.0, 0.0);
  gs.values[0] = -0.5;  // S(0, 0)
  const auto grid = ProcessGrid::squarest(world);
  const BlockDistribution d(grid, kSizes, kSizes);
  const auto S = bs_test::build<Matrix>(d, gs);
  auto e = kess_test::expect_error([&] { kess::inverse_sqrt(exec, S); },
                                   kess::ErrorKind::not_positive_definite);
  EXPECT_TRUE(kess_test::contains(e, "not positive definite")) << e.what();
}

}  // namespace
