// The distributed block-sparse multiply and operations at 1, 2 and 4 ranks, on every grid shape
// of the ranks (Cannon on square grids, gathered panels on others), with random placements:
// results and flop counts equal those of one process (1e-13 relative), errors on one rank raised
// on all.
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/solvers/block_sparse.hpp>

#include "block_sparse_testing.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Matrix = kess::BlockSparseMatrix<double>;
using kess::BlockDistribution;
using kess::comm::Communicator;
using kess::comm::ProcessGrid;

TEST(BlockSparseMpi, MultiplyMatchesOneProcessOnEveryGrid) {
  Exec exec;
  const auto world = Communicator::world();
  const auto rs = bs_test::sizes(11, {5, 13, 23}), ks = bs_test::sizes(9, {23, 13, 5}),
             cs = bs_test::sizes(10, {13, 5, 23});
  const auto ga = bs_test::random(rs, ks, 0.5, 31), gb = bs_test::random(ks, cs, 0.5, 32),
             gc = bs_test::random(rs, cs, 0.3, 33);
  for (double eps : {0.0, 1e-1}) {
    // One process.
    const auto A1 = Matrix::from_blocks(BlockDistribution(rs, ks), ga.rows, ga.cols, ga.values);
    const auto B1 = Matrix::from_blocks(BlockDistribution(ks, cs), gb.rows, gb.cols, gb.values);
    auto C1 = Matrix::from_blocks(BlockDistribution(rs, cs), gc.rows, gc.cols, gc.values);
    kess::BlockMultiplyOptions o;
    o.filter_eps = eps;
    const auto f1 = kess::multiply(exec, 1.0, A1, B1, 0.5, C1, o);
    const auto ref = C1.to_dense();
    const double scale = bs_test::frob(ref);
    for (auto [pr, pc] : bs_test::shapes(world.size())) {
      ProcessGrid grid(world, pr, pc);
      unsigned seed = 100 * pr + pc;
      BlockDistribution da(grid, rs, ks, bs_test::placement(rs.size(), pr, seed),
                           bs_test::placement(ks.size(), pc, seed + 1));
      BlockDistribution db(grid, ks, cs, bs_test::placement(ks.size(), pr, seed + 2),
                           bs_test::placement(cs.size(), pc, seed + 3));
      BlockDistribution dc(grid, rs, cs, bs_test::placement(rs.size(), pr, seed + 4),
                           bs_test::placement(cs.size(), pc, seed + 5));
      const auto A = bs_test::build<Matrix>(da, ga);
      const auto B = bs_test::build<Matrix>(db, gb);
      auto C = bs_test::build<Matrix>(dc, gc);
      kess::BlockMultiplyStats st;
      const auto f = kess::multiply(exec, 1.0, A, B, 0.5, C, o, &st);
      EXPECT_EQ(f, f1) << pr << "x" << pc << " eps " << eps;
      EXPECT_EQ(C.blocks(), C1.blocks()) << pr << "x" << pc << " eps " << eps;
      EXPECT_LE(bs_test::max_diff(C.to_dense(), ref), 1e-13 * scale)
          << pr << "x" << pc << " eps " << eps;
      if (pr == pc && pr > 1) EXPECT_EQ(st.steps, pr);
    }
  }
}

TEST(BlockSparseMpi, TransposedOperandsAndOperations) {
  Exec exec;
  const auto world = Communicator::world();
  const auto s = bs_test::sizes(9, {5, 23, 13});
  const auto ga = bs_test::random(s, s, 0.5, 41), gb = bs_test::random(s, s, 0.5, 42);
  const auto ad = ga.dense(), bd = gb.dense();
  const std::int64_t n = ga.m();
  std::vector<double> ref(ad.size(), 0.0);
  bs_test::gemm(true, true, n, n, n, 1.0, ad, n, bd, n, 0.0, ref, n);
  double tr = 0, dt = 0;
  for (std::int64_t i = 0; i < n; ++i) tr += ad[i + i * n];
  for (std::size_t e = 0; e < ad.size(); ++e) dt += ad[e] * bd[e];
  for (auto [pr, pc] : bs_test::shapes(world.size())) {
    ProcessGrid grid(world, pr, pc);
    BlockDistribution d(grid, s, s);
    const auto A = bs_test::build<Matrix>(d, ga);
    const auto B = bs_test::build<Matrix>(d, gb);
    Matrix C(d);
    kess::BlockMultiplyOptions o;
    o.transpose_a = o.transpose_b = true;
    kess::multiply(exec, 1.0, A, B, 0.0, C, o);
    EXPECT_LE(bs_test::max_diff(C.to_dense(), ref), 1e-12 * bs_test::frob(ref)) << pr << "x" << pc;
    EXPECT_NEAR(kess::trace(exec, A), tr, 1e-12 * n);
    EXPECT_NEAR(kess::dot(exec, A, B), dt, 1e-12 * n);
    EXPECT_NEAR(kess::norm(exec, A), bs_test::frob(ad), 1e-13 * bs_test::frob(ad));
    EXPECT_EQ(A.blocks(), static_cast<std::int64_t>(ga.rows.size()));
    // Matrix Market: written by rank 0, read back and scattered.
    const std::string path = ::testing::TempDir() + "kess_bs_mpi_" + std::to_string(pr) + ".mtx";
    A.write_matrix_market(path);
    const auto R = Matrix::read_matrix_market(d, path);
    EXPECT_EQ(R.to_dense(), ad);
    world.barrier();
    if (world.rank() == 0) std::remove(path.c_str());
  }
}

TEST(BlockSparseMpi, AnErrorOnOneRankRaisesOnAll) {
  const auto world = Communicator::world();
  ProcessGrid grid = ProcessGrid::squarest(world);
  const std::vector<int> s = {2, 2, 2};
  BlockDistribution d(grid, s, s);
  // The last rank lists a block with NaN; everyone else a good one.
  const bool last = world.rank() == world.size() - 1;
  std::vector<double> v = {1, 2, 3, last ? std::nan("") : 4.0};
  auto e = kess_test::expect_error(
      [&] { Matrix::from_blocks(d, {0}, {world.rank() % 3}, v); },
      kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "NaN")) << e.what();
  // Different block sizes on one rank.
  if (world.size() == 1) return;
  std::vector<int> mine = s;
  if (last) mine[1] = 3;
  e = kess_test::expect_error([&] { BlockDistribution bad(grid, mine, s); },
                              kess::ErrorKind::invalid_argument);
  EXPECT_TRUE(kess_test::contains(e, "different block sizes")) << e.what();
}

}  // namespace
