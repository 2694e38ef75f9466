// DistMatrix: scatter -> gather identity on several grids and ragged shapes, and wrapping
// ScaLAPACK-described local storage without a copy.
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/base/error.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using kess::comm::BlockCyclicMap;
using kess::comm::Communicator;
using kess::comm::Desc;
using kess::comm::Descriptor;
using kess::comm::ProcessGrid;
using HostMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

// The same random m x n matrix on every rank, entries in [1, 2) (never zero).
HostMatrix random_matrix(std::int64_t m, std::int64_t n, unsigned seed) {
  HostMatrix a("a", m, n);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(1.0, 2.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) a(i, j) = dist(gen);
  return a;
}

std::vector<std::pair<int, int>> grid_shapes(int P) {
  std::vector<std::pair<int, int>> shapes{ProcessGrid::squarest_shape(P), {1, P}, {P, 1}};
  return shapes;
}

struct Case {
  std::int64_t m, n;
  int mb, nb;
};

const Case cases[] = {
    {1, 1, 1, 1},                    // 1 x 1
    {7, 5, 2, 3},                    // not multiples of the blocks
    {10, 10, 3, 3},                  // square, ragged last block
    {2, 3, 4, 4},                    // smaller than one block: one rank holds everything
    {3, 2, 1, 1},                    // smaller than the grid: empty local parts
    {0, 4, 2, 2},                    // no rows
    {33, 17, 4, 5}, {64, 48, 8, 8},  // multiples
};

template <class M>
void expect_local_part(const M& A, const HostMatrix& G) {
  const auto& map = A.map();
  auto local = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.local());
  ASSERT_EQ(static_cast<int>(local.extent(0)), map.local_rows());
  ASSERT_EQ(static_cast<int>(local.extent(1)), map.local_cols());
  for (int jl = 0; jl < map.local_cols(); ++jl)
    for (int il = 0; il < map.local_rows(); ++il)
      ASSERT_EQ(local(il, jl), G(map.global_row(il), map.global_col(jl)))
          << "local (" << il << ", " << jl << ")";
}

void expect_equal(const HostMatrix& a, const HostMatrix& b) {
  ASSERT_EQ(a.extent(0), b.extent(0));
  ASSERT_EQ(a.extent(1), b.extent(1));
  for (std::size_t j = 0; j < a.extent(1); ++j)
    for (std::size_t i = 0; i < a.extent(0); ++i)
      ASSERT_EQ(a(i, j), b(i, j)) << "(" << i << ", " << j << ")";
}

TEST(CommDistMatrix, ScatterGatherIdentity) {
  auto world = Communicator::world();
  const int P = world.size(), r = world.rank();
  unsigned seed = 1234;
  for (auto [nprow, npcol] : grid_shapes(P)) {
    ProcessGrid grid(world, nprow, npcol);
    for (const Case& c : cases) {
      for (int src = 0; src < 2; ++src) {
        // Block (0,0) on process (0,0), then on the last process row and column.
        const int rsrc = src * (nprow - 1), csrc = src * (npcol - 1);
        SCOPED_TRACE(testing::Message()
                     << "grid " << nprow << "x" << npcol << ", " << c.m << "x" << c.n << " in "
                     << c.mb << "x" << c.nb << " blocks, src " << rsrc << "," << csrc);
        const HostMatrix G = random_matrix(c.m, c.n, ++seed);
        kess::comm::DistMatrix<double> A(grid, c.m, c.n, c.mb, c.nb, rsrc, csrc);
        EXPECT_EQ(A.local_rows(), BlockCyclicMap::numroc(c.m, c.mb, grid.myrow(), rsrc, nprow));
        EXPECT_EQ(A.local_cols(), BlockCyclicMap::numroc(c.n, c.nb, grid.mycol(), csrc, npcol));
        const Descriptor expected{
            1,    0,    static_cast<int>(c.m),      static_cast<int>(c.n), c.mb, c.nb,
            rsrc, csrc, std::max(1, A.local_rows())};
        EXPECT_EQ(A.descriptor(), expected);
        const int root = static_cast<int>(seed % P);
        // Only the root passes the data; the others an empty View.
        A.scatter(root, r == root ? G : HostMatrix());
        expect_local_part(A, G);
        // Gather to another root.
        const int groot = (root + 1) % P;
        HostMatrix back = A.gather(groot);
        if (r == groot) {
          expect_equal(back, G);
        } else {
          EXPECT_EQ(back.size(), 0u);
        }
      }
    }
  }
}

TEST(CommDistMatrix, AllgatherOnEveryRank) {
  auto world = Communicator::world();
  unsigned seed = 777;
  for (auto [nprow, npcol] : grid_shapes(world.size())) {
    ProcessGrid grid(world, nprow, npcol);
    for (const Case& c : cases) {
      SCOPED_TRACE(testing::Message() << "grid " << nprow << "x" << npcol << ", " << c.m << "x"
                                      << c.n << " in " << c.mb << "x" << c.nb << " blocks");
      const HostMatrix G = random_matrix(c.m, c.n, ++seed);
      kess::comm::DistMatrix<double> A(grid, c.m, c.n, c.mb, c.nb);
      A.scatter(0, world.rank() == 0 ? G : HostMatrix());
      expect_equal(A.allgather(), G);
    }
  }
}

TEST(CommDistMatrix, AliasAndExecutionSpaceOverloads) {
  auto world = Communicator::world();
  auto grid = ProcessGrid::squarest(world);
  const HostMatrix G = random_matrix(9, 9, 77);
  kess::DistMatrix<double> H(grid, 9, 9, 2);  // ARCHITECTURE §1 spelling
  // Zero-filled on construction.
  auto h0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), H.local());
  for (std::size_t j = 0; j < h0.extent(1); ++j)
    for (std::size_t i = 0; i < h0.extent(0); ++i) EXPECT_EQ(h0(i, j), 0.0);
  Kokkos::DefaultExecutionSpace exec;
  H.scatter(exec, 0, G);
  expect_local_part(H, G);
  HostMatrix back = H.gather(exec, 0);
  if (world.rank() == 0) expect_equal(back, G);
}

TEST(CommDistMatrix, ScatterWithWrongGlobalShapeThrowsOnEveryRank) {
  auto world = Communicator::world();
  auto grid = ProcessGrid::squarest(world);
  kess::DistMatrix<double> A(grid, 8, 8, 2);
  const int root = world.size() - 1;
  const HostMatrix wrong = random_matrix(8, 7, 5);  // one column short, on the root only
  try {
    A.scatter(root, world.rank() == root ? wrong : HostMatrix());
    ADD_FAILURE() << "rank " << world.rank() << " did not throw";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("8 x 7"), std::string::npos) << e.what();
  }
  world.barrier();
}

TEST(CommDistMatrix, WrapExistingStorage) {
  auto world = Communicator::world();
  for (auto [nprow, npcol] : grid_shapes(world.size())) {
    SCOPED_TRACE(testing::Message() << "grid " << nprow << "x" << npcol);
    ProcessGrid grid(world, nprow, npcol);
    const int m = 13, n = 11, mb = 3, nb = 2;
    const int lr = BlockCyclicMap::numroc(m, mb, grid.myrow(), 0, nprow);
    const int lc = BlockCyclicMap::numroc(n, nb, grid.mycol(), 0, npcol);
    const int lld = lr + 3;  // padded, as ScaLAPACK callers may have it
    const double sentinel = -777.0;
    std::vector<double> storage(static_cast<std::size_t>(lld) * std::max(1, lc), sentinel);
    // Fill the local part the ScaLAPACK way: entry (i, j) of the global matrix is 1 + i + 100 j.
    BlockCyclicMap map(grid, m, n, mb, nb);
    for (int jl = 0; jl < lc; ++jl)
      for (int il = 0; il < lr; ++il)
        storage[il + static_cast<std::size_t>(jl) * lld] =
            1.0 + map.global_row(il) + 100.0 * map.global_col(jl);
    const Descriptor desc{1, 0, m, n, mb, nb, 0, 0, lld};
    using HostDist = kess::comm::DistMatrix<double, Kokkos::HostSpace>;
    HostDist A = HostDist::wrap(grid, desc, storage.data());
    EXPECT_EQ(A.descriptor(), desc);
    // EXPECT, not ASSERT, before collectives: an early return on one rank would hang the others.
    const bool shape_ok =
        static_cast<int>(A.local().extent(0)) == lr && static_cast<int>(A.local().extent(1)) == lc;
    EXPECT_TRUE(shape_ok) << A.local().extent(0) << " x " << A.local().extent(1);
    if (shape_ok && lr > 0 && lc > 0) {
      EXPECT_EQ(A.local().data(), storage.data());  // no copy
      if (lc > 1) {
        EXPECT_EQ(static_cast<int>(A.local().stride(1)), lld);
      }
      for (int jl = 0; jl < lc; ++jl)
        for (int il = 0; il < lr; ++il)
          EXPECT_EQ(A.local()(il, jl), storage[il + static_cast<std::size_t>(jl) * lld]);
      A.local()(0, 0) = 1.0;  // writes go to the caller's storage
      EXPECT_EQ(storage[0], 1.0);
      storage[0] = 1.0 + map.global_row(0) + 100.0 * map.global_col(0);
    }
    // gather reads through the padded layout.
    HostMatrix full = A.gather(0);
    if (world.rank() == 0) {
      HostMatrix expected("expected", m, n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) expected(i, j) = 1.0 + i + 100.0 * j;
      expect_equal(full, expected);
    }
    // scatter writes through it and leaves the padding alone.
    const HostMatrix G = random_matrix(m, n, 99);
    A.scatter(0, world.rank() == 0 ? G : HostMatrix());
    expect_local_part(A, G);
    for (int jl = 0; jl < lc && shape_ok; ++jl) {
      for (int il = 0; il < lr; ++il)
        EXPECT_EQ(storage[il + static_cast<std::size_t>(jl) * lld],
                  G(map.global_row(il), map.global_col(jl)));
      for (int il = lr; il < lld; ++il)
        EXPECT_EQ(storage[il + static_cast<std::size_t>(jl) * lld], sentinel);
    }
  }
}

TEST(CommDistMatrix, WrapRejectsShortLeadingDimension) {
  auto world = Communicator::world();
  auto grid = ProcessGrid::squarest(world);
  // 16 rows in blocks of 2: every process row holds at least 4 rows.
  const int lr = BlockCyclicMap::numroc(16, 2, grid.myrow(), 0, grid.nprow());
  ASSERT_GE(lr, 4);
  std::vector<double> storage(64 * 16, 1.0);
  try {
    kess::DistMatrix<double, Kokkos::HostSpace>::wrap(grid, {1, 0, 16, 16, 2, 2, 0, 0, lr - 1},
                                                      storage.data());
    ADD_FAILURE() << "lld < local rows accepted";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find("DistMatrix::wrap"), std::string::npos) << what;
    EXPECT_NE(what.find("lld = " + std::to_string(lr - 1)), std::string::npos) << what;
  }
  using HostDist = kess::DistMatrix<double, Kokkos::HostSpace>;
  const Descriptor null_ok{1, 0, 16, 16, 2, 2, 0, 0, lr};
  const Descriptor zero_block{1, 0, 16, 16, 0, 2, 0, 0, lr};
  EXPECT_THROW(HostDist::wrap(grid, null_ok, nullptr), kess::Error);
  EXPECT_THROW(HostDist::wrap(grid, zero_block, storage.data()), kess::Error);
}

}  // namespace
