// comm::TriangularGrid (MFDn's layout of a stored triangle) on MPI_COMM_WORLD: 1 and 6 ranks form
// grids (nd = 1, 3); 2 and 4 ranks are refused on every rank.
#include <kess/comm/exchange.hpp>
#include <kess/comm/triangular_grid.hpp>
#include <kess/core/base/error.hpp>

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace {

using kess::comm::Communicator;
using kess::comm::TriangularGrid;

TEST(CommTriangularGrid, SegmentsFor) {
  EXPECT_EQ(TriangularGrid::segments_for(1), 1);
  EXPECT_EQ(TriangularGrid::segments_for(6), 3);
  EXPECT_EQ(TriangularGrid::segments_for(15), 5);
  EXPECT_EQ(TriangularGrid::segments_for(28), 7);
  EXPECT_EQ(TriangularGrid::segments_for(3), 0);   // nd = 2 is even
  EXPECT_EQ(TriangularGrid::segments_for(10), 0);  // nd = 4
  EXPECT_EQ(TriangularGrid::segments_for(2), 0);
  EXPECT_EQ(TriangularGrid::segments_for(4), 0);
}

TEST(CommTriangularGrid, EveryPairOnceAndGroupsOfNd) {
  auto world = Communicator::world();
  if (TriangularGrid::segments_for(world.size()) == 0) {
    try {
      TriangularGrid g(world);
      ADD_FAILURE() << "no error for " << world.size() << " ranks";
    } catch (const kess::Error& e) {
      EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("nd(nd+1)/2"), std::string::npos) << e.what();
    }
    return;
  }
  TriangularGrid g(world);
  const int nd = g.segments();
  EXPECT_EQ(g.rank_of(g.column(), g.offset()), world.rank());
  // Every unordered pair of segments is held by exactly one rank.
  const int lo = std::min(g.row(), g.column()), hi = std::max(g.row(), g.column());
  auto pairs = kess::comm::allgatherv(world, std::vector<int>{hi * nd + lo});
  std::set<int> seen(pairs.begin(), pairs.end());
  EXPECT_EQ(static_cast<int>(seen.size()), nd * (nd + 1) / 2);
  // Each group has nd ranks; the owners (column s) come first, in order of d.
  // Distinct segments in ascending order on every rank, as collectives on several groups must go.
  std::set<int> mine{g.column(), g.row()};
  for (int s : mine) {
    const Communicator& grp = g.group(s);
    EXPECT_EQ(grp.size(), nd);
    auto cols = kess::comm::allgatherv(grp, std::vector<int>{g.column() == s ? g.offset() : -1});
    for (int q = 0; q < nd; ++q) EXPECT_EQ(cols[q], q < g.column_size() ? q : -1) << "segment " << s;
  }
  EXPECT_THROW(g.group((g.row() + 1) % nd == g.column() ? -1 : (g.row() + 1) % nd),
               kess::Error);
}

}  // namespace
