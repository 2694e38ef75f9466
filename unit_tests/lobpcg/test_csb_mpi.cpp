// kess::CsbMatrix built over MPI_COMM_WORLD (1, 2, 4 and 6 ranks) on every layout: entries listed
// by any rank end up on their owners (to_coo, counts, the parts' bounds, the diagonal on the
// vector rows), full inputs split over ranks are checked for symmetry, a duplicate or a bad entry
// on one rank raises the same error on all, Matrix Market round trips through rank 0.
#include <kess/comm/exchange.hpp>
#include <kess/comm/triangular_grid.hpp>
#include <kess/solvers/lobpcg.hpp>

#include "csb_testing.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Csb = kess::CsbMatrix<double, Mem>;
using csb_test::Coo;
using csb_test::expect_entries;
using csb_test::host;
using csb_test::Lower;
using kess::CooContent;
using kess::ErrorKind;
using kess::comm::Communicator;
using kess_test::contains;
using kess_test::expect_error;

std::vector<kess::CsbLayout> layouts(int ranks) {
  std::vector<kess::CsbLayout> l{kess::CsbLayout::general, kess::CsbLayout::automatic};
  if (kess::comm::TriangularGrid::segments_for(ranks) > 0) l.push_back(kess::CsbLayout::triangular);
  return l;
}

/// The same random lower triangle on every rank (diagonal mostly present).
Lower random_lower(std::int64_t n, double density, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0), v(-1.0, 1.0);
  Lower m;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) {
      if ((i == j && i % 5 != 2) || (i != j && u(rng) < density)) m[{i, j}] = v(rng);
    }
  }
  return m;
}

/// This rank's share of m: entry k goes to rank (k * 7) % ranks, half of them as (j, i); with
/// `full`, the upper halves go to the next rank.
Coo share(const Lower& m, const Communicator& comm, bool full) {
  Coo c;
  int k = 0;
  const int np = comm.size(), me = comm.rank();
  for (const auto& [ij, x] : m) {
    const int owner = (k * 7) % np;
    if (owner == me) {
      if (!full && (k & 1)) {
        c.push(ij.second, ij.first, x);
      } else {
        c.push(ij.first, ij.second, x);
      }
    }
    if (full && ij.first != ij.second && (owner + 1) % np == me) c.push(ij.second, ij.first, x);
    ++k;
  }
  return c;
}

void expect_matrix(const Csb& H, std::int64_t n, const Lower& m) {
  expect_entries(H, m);
  const auto& comm = H.comm();
  // This rank's entries lie in its part; the vector rows tile [0, n).
  const int beta = H.block_size();
  const auto er = host(H.entry_row()), ec = host(H.entry_col());
  const auto& br = H.block_row_host();
  const auto& bc = H.block_col_host();
  const auto& bs = H.block_start_host();
  for (std::size_t b = 0; b < br.size(); ++b) {
    for (std::int64_t e = bs[b]; e < bs[b + 1]; ++e) {
      const std::int64_t li = std::int64_t(br[b]) * beta + er[e];
      const std::int64_t lj = std::int64_t(bc[b]) * beta + ec[e];
      EXPECT_LT(li, H.part_rows());
      EXPECT_LT(lj, H.part_cols());
      EXPECT_GE(H.row_offset() + li, H.col_offset() + lj);
    }
  }
  EXPECT_EQ(kess::comm::allreduce(comm, H.vector_rows(), kess::comm::ReduceOp::sum), n);
  const auto d = host(H.diagonal());
  ASSERT_EQ(std::int64_t(d.size()), H.vector_rows());
  for (std::int64_t i = 0; i < H.vector_rows(); ++i) {
    const auto it = m.find({H.vector_offset() + i, H.vector_offset() + i});
    EXPECT_EQ(d[i], it == m.end() ? 0.0 : it->second) << H.vector_offset() + i;
  }
}

TEST(CsbMpi, EntriesFromAnyRankReachTheirOwners) {
  const auto comm = Communicator::world();
  const std::int64_t n = 61;
  const Lower m = random_lower(n, 0.15, 3);
  for (auto layout : layouts(comm.size())) {
    for (int beta : {0, 4, 9}) {
      SCOPED_TRACE(std::string(kess::to_string(layout)) + " beta " + std::to_string(beta));
      kess::CsbOptions o;
      o.layout = layout;
      o.block_size = beta;
      const Coo c = share(m, comm, false);
      expect_matrix(Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, o, comm), n, m);
      const Coo f = share(m, comm, true);
      expect_matrix(Csb::from_coo(n, f.rows, f.cols, f.vals, CooContent::full, o, comm), n, m);
      // make_csb: every rank passes the whole problem.
      kess::SparseProblem p;
      p.n = n;
      for (const auto& [ij, x] : m) {
        p.rows.push_back(ij.first);
        p.cols.push_back(ij.second);
        p.vals.push_back(x);
      }
      expect_matrix(kess::make_csb<double, Mem>(p, o, comm), n, m);
    }
  }
}

TEST(CsbMpi, ErrorsOnOneRankRaiseOnAll) {
  const auto comm = Communicator::world();
  const int np = comm.size(), last = np - 1;
  const std::int64_t n = 20;
  const Lower m = random_lower(n, 0.3, 5);
  // A pair listed by rank 0 as (7, 3) and by the last rank as (3, 7).
  Coo c = share(m, comm, false);
  if (comm.rank() == 0) c.push(7, 3, 1.0);
  if (comm.rank() == last) c.push(3, 7, 1.0);
  auto e0 = expect_error(
      [&] { Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, {}, comm); },
      ErrorKind::invalid_argument);
  EXPECT_TRUE(contains(e0, "(7, 3)")) << e0.what();
  // A bad index on the last rank only.
  Coo d = share(m, comm, false);
  if (comm.rank() == last) d.push(n, 0, 1.0);
  expect_error([&] { Csb::from_coo(n, d.rows, d.cols, d.vals, CooContent::triangle, {}, comm); },
               ErrorKind::invalid_argument);
  // Full input whose halves sit on different ranks, one half off by 0.5.
  Coo f = share(m, comm, true);
  std::pair<std::int64_t, std::int64_t> bad{-1, -1};
  for (const auto& [ij, x] : m) {
    if (ij.first != ij.second) bad = ij;
  }
  ASSERT_GE(bad.first, 0);
  for (std::size_t k = 0; k < f.vals.size(); ++k) {
    if (f.rows[k] == bad.second && f.cols[k] == bad.first) f.vals[k] += 0.5;
  }
  auto e =
      expect_error([&] { Csb::from_coo(n, f.rows, f.cols, f.vals, CooContent::full, {}, comm); },
                   ErrorKind::not_symmetric);
  EXPECT_TRUE(
      contains(e, "(" + std::to_string(bad.first) + ", " + std::to_string(bad.second) + ")"))
      << e.what();
}

TEST(CsbMpi, MatrixMarketThroughRankZero) {
  const auto comm = Communicator::world();
  const std::int64_t n = 50;
  const Lower m = random_lower(n, 0.2, 9);
  const std::int64_t pid =
      kess::comm::allreduce(comm, comm.rank() == 0 ? std::int64_t(::getpid()) : std::int64_t(0),
                            kess::comm::ReduceOp::max);
  const std::string path = ::testing::TempDir() + "kess_csb_mpi_" + std::to_string(pid) + ".mtx";
  for (auto layout : layouts(comm.size())) {
    kess::CsbOptions o;
    o.layout = layout;
    o.block_size = 8;
    const Coo c = share(m, comm, false);
    const auto H = Csb::from_coo(n, c.rows, c.cols, c.vals, CooContent::triangle, o, comm);
    H.write_matrix_market(path);
    expect_matrix(Csb::read_matrix_market(path, o, comm), n, m);
  }
  if (comm.rank() == 0) std::remove(path.c_str());
  expect_error([&] { Csb::read_matrix_market(path + ".absent", {}, comm); }, ErrorKind::io);
}

}  // namespace
