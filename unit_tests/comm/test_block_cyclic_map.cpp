// BlockCyclicMap: ScaLAPACK's numroc and index maps, checked against brute force on every
// process of small grids (no communication: the same on every rank).
#include <kess/comm/dense/block_cyclic_map.hpp>
#include <kess/core/base/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {

using kess::comm::BlockCyclicMap;
using kess::comm::Desc;
using kess::comm::Descriptor;
using kess::comm::GridPosition;

// Rows of [0, n) that process iproc owns, counted one by one.
int brute_force_count(std::int64_t n, int nb, int iproc, int isrc, int nprocs) {
  int count = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if ((isrc + i / nb) % nprocs == iproc) ++count;
  }
  return count;
}

TEST(CommBlockCyclicMap, NumrocMatchesBruteForce) {
  for (int nprocs = 1; nprocs <= 5; ++nprocs) {
    for (int nb = 1; nb <= 7; ++nb) {
      for (std::int64_t n = 0; n <= 45; ++n) {
        for (int isrc = 0; isrc < nprocs; ++isrc) {
          int total = 0;
          for (int p = 0; p < nprocs; ++p) {
            const int got = BlockCyclicMap::numroc(n, nb, p, isrc, nprocs);
            ASSERT_EQ(got, brute_force_count(n, nb, p, isrc, nprocs))
                << "n=" << n << " nb=" << nb << " p=" << p << " isrc=" << isrc
                << " nprocs=" << nprocs;
            total += got;
          }
          ASSERT_EQ(total, n);
        }
      }
    }
  }
}

TEST(CommBlockCyclicMap, NumrocKnownValues) {
  // 9 rows in blocks of 2 over 2 processes: p0 holds blocks 0, 2, 4 (rows 0 1 4 5 8), p1 2 3 6 7.
  EXPECT_EQ(BlockCyclicMap::numroc(9, 2, 0, 0, 2), 5);
  EXPECT_EQ(BlockCyclicMap::numroc(9, 2, 1, 0, 2), 4);
  // Source process 1: p1 gets blocks 0, 2, 4.
  EXPECT_EQ(BlockCyclicMap::numroc(9, 2, 1, 1, 2), 5);
  EXPECT_EQ(BlockCyclicMap::numroc(9, 2, 0, 1, 2), 4);
  // 10 rows in blocks of 3 over 2: p0 rows 0-2, 6-8; p1 rows 3-5, 9.
  EXPECT_EQ(BlockCyclicMap::numroc(10, 3, 0, 0, 2), 6);
  EXPECT_EQ(BlockCyclicMap::numroc(10, 3, 1, 0, 2), 4);
  // Fewer rows than processes.
  EXPECT_EQ(BlockCyclicMap::numroc(2, 1, 3, 0, 4), 0);
  // Large global sizes: 2^33 rows over 4096 processes in blocks of 64.
  EXPECT_EQ(BlockCyclicMap::numroc(std::int64_t(1) << 33, 64, 5, 0, 4096), 1 << 21);
}

// Every global index maps to one (owner, local) pair and back, on every process of the grid.
void check_round_trips(std::int64_t m, std::int64_t n, int mb, int nb, int nprow, int npcol,
                       int rsrc, int csrc) {
  SCOPED_TRACE(testing::Message() << m << "x" << n << " blocks " << mb << "x" << nb << " grid "
                                  << nprow << "x" << npcol << " src " << rsrc << "," << csrc);
  std::vector<BlockCyclicMap> maps;
  for (int pr = 0; pr < nprow; ++pr) {
    for (int pc = 0; pc < npcol; ++pc) {
      maps.emplace_back(m, n, mb, nb, GridPosition{nprow, npcol, pr, pc}, rsrc, csrc);
    }
  }
  const BlockCyclicMap& any = maps.front();
  std::vector<int> seen_rows(static_cast<std::size_t>(m), 0),
      seen_cols(static_cast<std::size_t>(n), 0);
  for (const auto& map : maps) {
    const int pr = map.position().myrow, pc = map.position().mycol;
    EXPECT_EQ(map.local_rows(), brute_force_count(m, mb, pr, rsrc, nprow));
    EXPECT_EQ(map.local_cols(), brute_force_count(n, nb, pc, csrc, npcol));
    EXPECT_EQ(map.local_rows(), any.local_rows(pr));
    EXPECT_EQ(map.local_cols(), any.local_cols(pc));
    EXPECT_EQ(map.lld(), std::max(1, map.local_rows()));
    std::int64_t prev = -1;
    for (int il = 0; il < map.local_rows(); ++il) {
      const std::int64_t i = map.global_row(il);
      ASSERT_GE(i, 0);
      ASSERT_LT(i, m);
      EXPECT_GT(i, prev);  // local order follows global order
      prev = i;
      EXPECT_EQ(i, any.global_row(il, pr));
      EXPECT_EQ(map.row_owner(i), pr);
      EXPECT_EQ(map.local_row(i), il);
      if (pc == 0) ++seen_rows[static_cast<std::size_t>(i)];
    }
    prev = -1;
    for (int jl = 0; jl < map.local_cols(); ++jl) {
      const std::int64_t j = map.global_col(jl);
      ASSERT_GE(j, 0);
      ASSERT_LT(j, n);
      EXPECT_GT(j, prev);
      prev = j;
      EXPECT_EQ(map.col_owner(j), pc);
      EXPECT_EQ(map.local_col(j), jl);
      if (pr == 0) ++seen_cols[static_cast<std::size_t>(j)];
    }
  }
  for (std::int64_t i = 0; i < m; ++i) {
    EXPECT_EQ(seen_rows[static_cast<std::size_t>(i)], 1) << "row " << i;
    const int owner = any.row_owner(i);
    EXPECT_EQ(any.global_row(any.local_row(i), owner), i);
    EXPECT_EQ(owner, (rsrc + i / mb) % nprow);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    EXPECT_EQ(seen_cols[static_cast<std::size_t>(j)], 1) << "col " << j;
    const auto o = any.owner(0, j);
    EXPECT_EQ(o[1], any.col_owner(j));
    EXPECT_EQ(any.global_col(any.local_col(j), o[1]), j);
  }
  // is_local agrees with owner on every process.
  for (const auto& map : maps) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const auto o = map.owner(i, j);
        EXPECT_EQ(map.is_local(i, j), o[0] == map.position().myrow && o[1] == map.position().mycol);
      }
    }
  }
}

TEST(CommBlockCyclicMap, RoundTrips) {
  check_round_trips(16, 16, 4, 4, 2, 2, 0, 0);
  check_round_trips(10, 7, 3, 2, 2, 3, 0, 0);   // not multiples of the blocks
  check_round_trips(10, 7, 3, 2, 2, 3, 1, 2);   // source process not (0,0)
  check_round_trips(33, 17, 4, 5, 3, 1, 2, 0);  // P x 1
  check_round_trips(17, 33, 5, 4, 1, 4, 0, 3);  // 1 x P
  check_round_trips(2, 3, 1, 1, 4, 4, 0, 0);    // smaller than the grid: empty local parts
  check_round_trips(3, 2, 8, 8, 2, 2, 1, 1);    // smaller than one block
  check_round_trips(1, 1, 1, 1, 1, 1, 0, 0);    // 1 x 1
  check_round_trips(0, 5, 2, 2, 2, 2, 0, 0);    // no rows
}

TEST(CommBlockCyclicMap, RaggedShapes) {
  // 10 x 10 in 3 x 3 blocks on 2 x 2: local 6/4 rows, 6/4 cols.
  BlockCyclicMap a(10, 10, 3, 3, GridPosition{2, 2, 1, 0});
  EXPECT_EQ(a.local_rows(), 4);
  EXPECT_EQ(a.local_cols(), 6);
  EXPECT_EQ(a.global_row(3), 9);  // the trailing 1-row block
  EXPECT_EQ(a.global_col(5), 8);
  EXPECT_EQ(a.row_owner(9), 1);
  EXPECT_EQ(a.local_row(9), 3);
  // 2 x 3 on a 4 x 4 grid: processes beyond hold nothing, lld stays 1.
  BlockCyclicMap b(2, 3, 1, 1, GridPosition{4, 4, 3, 3});
  EXPECT_EQ(b.local_rows(), 0);
  EXPECT_EQ(b.local_cols(), 0);
  EXPECT_EQ(b.lld(), 1);
  BlockCyclicMap c(2, 3, 1, 1, GridPosition{4, 4, 1, 2});
  EXPECT_EQ(c.local_rows(), 1);
  EXPECT_EQ(c.local_cols(), 1);
  EXPECT_EQ(c.global_row(0), 1);
  EXPECT_EQ(c.global_col(0), 2);
  // 1 x 1.
  BlockCyclicMap d(1, 1, 64, 64, GridPosition{1, 1, 0, 0});
  EXPECT_EQ(d.local_rows(), 1);
  EXPECT_EQ(d.local_cols(), 1);
  EXPECT_EQ(d.global_row(0), 0);
}

TEST(CommBlockCyclicMap, DescriptorRoundTrip) {
  const GridPosition where{2, 3, 1, 2};
  BlockCyclicMap map(100, 77, 8, 5, where, 1, 2, 60, 42);
  const Descriptor d = map.descriptor();
  const Descriptor expected{1, 42, 100, 77, 8, 5, 1, 2, 60};
  EXPECT_EQ(d, expected);
  BlockCyclicMap back = BlockCyclicMap::from_descriptor(d, where);
  EXPECT_EQ(back.descriptor(), d);
  EXPECT_EQ(back.local_rows(), map.local_rows());
  EXPECT_EQ(back.local_cols(), map.local_cols());
  EXPECT_EQ(back.local_rows(), BlockCyclicMap::numroc(100, 8, 1, 1, 2));
  EXPECT_EQ(back.lld(), 60);
  EXPECT_EQ(back.context(), 42);
  // Default lld: max(1, local rows).
  BlockCyclicMap tight(100, 77, 8, 5, where);
  EXPECT_EQ(tight.descriptor()[Desc::lld], BlockCyclicMap::numroc(100, 8, 1, 0, 2));
}

void expect_invalid(const std::function<void()>& f, const char* needle) {
  try {
    f();
    ADD_FAILURE() << "no kess::Error thrown (expected one mentioning '" << needle << "')";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CommBlockCyclicMap, RejectsBadArguments) {
  const GridPosition where{2, 2, 0, 0};
  expect_invalid([&] { BlockCyclicMap(-1, 4, 2, 2, where); }, "m = -1");
  expect_invalid([&] { BlockCyclicMap(4, 4, 0, 2, where); }, "mb = 0");
  expect_invalid([&] { BlockCyclicMap(4, 4, 2, 2, where, 2, 0); }, "rsrc = 2");
  expect_invalid([&] { BlockCyclicMap(4, 4, 2, 2, where, 0, -1); }, "csrc = -1");
  expect_invalid([&] { BlockCyclicMap(4, 4, 2, 2, GridPosition{2, 2, 2, 0}); }, "outside");
  expect_invalid([&] { BlockCyclicMap(8, 4, 2, 2, where, 0, 0, 3); }, "lld = 3");
  expect_invalid(
      [&] {
        BlockCyclicMap::from_descriptor({2, 0, 4, 4, 2, 2, 0, 0, 2}, where);
      },
      "DTYPE_");
  expect_invalid(
      [&] {
        BlockCyclicMap::from_descriptor({1, 0, 8, 4, 2, 2, 0, 0, 1}, where);
      },
      "lld = 1");
  expect_invalid(
      [&] {
        BlockCyclicMap::from_descriptor({1, 0, 8, 4, 2, 2, 0, 0, -3}, where);
      },
      "lld");
  expect_invalid(
      [&] {
        BlockCyclicMap(std::int64_t(1) << 40, 1, 1 << 30, 1, GridPosition{1, 1, 0, 0});
      },
      "exceed an int");
}

}  // namespace
