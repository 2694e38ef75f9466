// Communicator and ProcessGrid on MPI_COMM_WORLD (1, 2 or 4 ranks).
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/comm/view_comm.hpp>
#include <kess/core/base/error.hpp>
#include <kess/kess_config.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <string>
#include <utility>

namespace {

using kess::comm::Communicator;
using kess::comm::ProcessGrid;
using kess::comm::ReduceOp;

// Sum over `comm` of one int per rank.
int sum_over(const Communicator& comm, int value) {
  Kokkos::View<int*, Kokkos::HostSpace> v("v", 1);
  v(0) = value;
  kess::comm::allreduce(comm, v, ReduceOp::sum);
  return v(0);
}

TEST(CommCommunicator, World) {
  auto world = Communicator::world();
  EXPECT_FALSE(world.is_null());
  EXPECT_GE(world.size(), 1);
  EXPECT_GE(world.rank(), 0);
  EXPECT_LT(world.rank(), world.size());
#if KESS_HAVE_MPI
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(world.rank(), rank);
  EXPECT_EQ(world.size(), size);
  EXPECT_EQ(world.native(), MPI_COMM_WORLD);
  // The error rank is set once MPI runs (ScopeGuard).
  EXPECT_EQ(kess::error_rank(), rank);
#else
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.size(), 1);
#endif
  EXPECT_EQ(sum_over(world, 1), world.size());
  world.barrier();
}

#if KESS_HAVE_MPI
TEST(CommCommunicator, WrapDoesNotOwn) {
  MPI_Comm dup = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &dup), MPI_SUCCESS);
  {
    auto wrapped = Communicator::wrap(dup);
    auto copy = wrapped;
    EXPECT_EQ(copy.native(), dup);
    EXPECT_EQ(copy.size(), Communicator::world().size());
  }
  // Still valid after every Communicator on it is gone: usable, and ours to free.
  int size = 0;
  EXPECT_EQ(MPI_Comm_size(dup, &size), MPI_SUCCESS);
  EXPECT_EQ(size, Communicator::world().size());
  EXPECT_EQ(MPI_Comm_free(&dup), MPI_SUCCESS);
  EXPECT_THROW(Communicator::wrap(MPI_COMM_NULL), kess::Error);
}
#endif

TEST(CommCommunicator, Split) {
  auto world = Communicator::world();
  const int P = world.size(), r = world.rank();
  // Two halves by parity, ordered by decreasing world rank.
  auto half = world.split(r % 2, -r);
  const int expected_size = (P + 1 - r % 2) / 2;
  // EXPECT, not ASSERT, before collectives: an early return on one rank would hang the others.
  EXPECT_EQ(half.size(), expected_size);
  // Members of my half with a larger world rank come first.
  int larger = 0;
  for (int q = r + 2; q < P; q += 2) ++larger;
  EXPECT_EQ(half.rank(), larger);
  // The sum of world ranks over my half.
  int expected_sum = 0;
  for (int q = r % 2; q < P; q += 2) expected_sum += q;
  EXPECT_EQ(sum_over(half, r), expected_sum);
  half.barrier();
  // Copies share the communicator; the last one frees it.
  auto copy = half;
  EXPECT_EQ(copy.rank(), half.rank());
#if KESS_HAVE_MPI
  EXPECT_EQ(copy.native(), half.native());
  EXPECT_NE(half.native(), MPI_COMM_WORLD);
#endif
}

TEST(CommCommunicator, NegativeColorGivesNullCommunicator) {
  auto world = Communicator::world();
  // Only rank 0 joins.
  auto solo = world.split(world.rank() == 0 ? 0 : -1, 0);
  if (world.rank() == 0) {
    EXPECT_EQ(solo.size(), 1);
    EXPECT_EQ(solo.rank(), 0);
  } else {
    EXPECT_TRUE(solo.is_null());
    EXPECT_THROW(solo.barrier(), kess::Error);
  }
  Communicator null;
  EXPECT_TRUE(null.is_null());
  try {
    null.barrier();
    ADD_FAILURE() << "barrier on the null communicator did not throw";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::mpi);
    EXPECT_NE(std::string(e.what()).find("null communicator"), std::string::npos);
  }
}

TEST(CommProcessGrid, SquarestShape) {
  EXPECT_EQ(ProcessGrid::squarest_shape(1), std::make_pair(1, 1));
  EXPECT_EQ(ProcessGrid::squarest_shape(2), std::make_pair(1, 2));
  EXPECT_EQ(ProcessGrid::squarest_shape(4), std::make_pair(2, 2));
  EXPECT_EQ(ProcessGrid::squarest_shape(6), std::make_pair(2, 3));
  EXPECT_EQ(ProcessGrid::squarest_shape(7), std::make_pair(1, 7));
  EXPECT_EQ(ProcessGrid::squarest_shape(8), std::make_pair(2, 4));
  EXPECT_EQ(ProcessGrid::squarest_shape(9), std::make_pair(3, 3));
  EXPECT_EQ(ProcessGrid::squarest_shape(12), std::make_pair(3, 4));
  EXPECT_EQ(ProcessGrid::squarest_shape(18), std::make_pair(3, 6));
  EXPECT_EQ(ProcessGrid::squarest_shape(64), std::make_pair(8, 8));
  EXPECT_THROW(ProcessGrid::squarest_shape(0), kess::Error);
  auto world = Communicator::world();
  auto grid = ProcessGrid::squarest(world);
  EXPECT_EQ(std::make_pair(grid.nprow(), grid.npcol()), ProcessGrid::squarest_shape(world.size()));
}

void check_grid(const Communicator& world, int nprow, int npcol) {
  SCOPED_TRACE(testing::Message() << nprow << " x " << npcol);
  ProcessGrid grid(world, nprow, npcol);
  const int r = world.rank();
  EXPECT_EQ(grid.nprow(), nprow);
  EXPECT_EQ(grid.npcol(), npcol);
  EXPECT_EQ(grid.size(), world.size());
  // Row-major placement, BLACS 'R'.
  EXPECT_EQ(grid.myrow(), r / npcol);
  EXPECT_EQ(grid.mycol(), r % npcol);
  EXPECT_EQ(grid.rank_of(grid.myrow(), grid.mycol()), r);
  EXPECT_EQ(grid.row_of(r), grid.myrow());
  EXPECT_EQ(grid.col_of(r), grid.mycol());
  // row_comm: the npcol ranks of my process row, ranked by column.
  EXPECT_EQ(grid.row_comm().size(), npcol);
  EXPECT_EQ(grid.row_comm().rank(), grid.mycol());
  int row_sum = 0;
  for (int c = 0; c < npcol; ++c) row_sum += grid.myrow() * npcol + c;
  EXPECT_EQ(sum_over(grid.row_comm(), r), row_sum);
  // col_comm: the nprow ranks of my process column, ranked by row.
  EXPECT_EQ(grid.col_comm().size(), nprow);
  EXPECT_EQ(grid.col_comm().rank(), grid.myrow());
  int col_sum = 0;
  for (int q = 0; q < nprow; ++q) col_sum += q * npcol + grid.mycol();
  EXPECT_EQ(sum_over(grid.col_comm(), r), col_sum);
}

TEST(CommProcessGrid, AllShapes) {
  auto world = Communicator::world();
  const int P = world.size();
  for (int nprow = 1; nprow <= P; ++nprow) {
    if (P % nprow == 0) check_grid(world, nprow, P / nprow);
  }
}

TEST(CommProcessGrid, RejectsWrongShape) {
  auto world = Communicator::world();
  const int P = world.size();
  try {
    ProcessGrid grid(world, P + 1, 2);
    ADD_FAILURE() << "no error for a grid larger than the communicator";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find("ProcessGrid"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(2 * (P + 1))), std::string::npos) << what;
    EXPECT_NE(what.find("communicator size " + std::to_string(P)), std::string::npos) << what;
  }
  EXPECT_THROW(ProcessGrid(world, 0, P), kess::Error);
  EXPECT_THROW(ProcessGrid(world, P, -1), kess::Error);
  EXPECT_THROW(ProcessGrid(Communicator(), 1, 1), kess::Error);
  // The communicator still works: nothing was left half-done.
  world.barrier();
}

}  // namespace
