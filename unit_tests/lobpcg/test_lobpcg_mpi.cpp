// The LOBPCG family distributed over MPI_COMM_WORLD (1, 2, 4 and 6 ranks): CsbMatrix layouts
// (general at any count, MFDn's triangular at 1 and 6), the distributed spmm against a full CSR
// product on the host, and lobpcg against the single-rank solve.
#include <kess/comm/exchange.hpp>
#include <kess/comm/triangular_grid.hpp>
#include <kess/solvers/lobpcg.hpp>

#include "test_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using Mem = Kokkos::DefaultExecutionSpace::memory_space;
using Matrix = kess::CsbMatrix<double, Mem>;
using Block = kess::VectorBlock<double, Mem>;
using kess::comm::Communicator;

// x(i, c): a deterministic block of vectors, the same whatever the layout.
double x_entry(std::int64_t i, std::int64_t c) {
  return std::sin(0.37 * static_cast<double>(i) + 1.3 * static_cast<double>(c)) + 0.1;
}

// The layouts worth testing at this rank count.
std::vector<kess::CsbLayout> layouts(int ranks) {
  std::vector<kess::CsbLayout> l{kess::CsbLayout::general, kess::CsbLayout::automatic};
  if (kess::comm::TriangularGrid::segments_for(ranks) > 0) l.push_back(kess::CsbLayout::triangular);
  return l;
}

// Y = H X with the full matrix on the host (both triangles from the stored one).
std::vector<double> reference_product(const kess::SparseProblem& p, int k) {
  std::vector<double> y(static_cast<std::size_t>(p.n * k), 0.0);
  for (std::size_t e = 0; e < p.vals.size(); ++e) {
    const std::int64_t i = p.rows[e], j = p.cols[e];
    for (int c = 0; c < k; ++c) {
      y[static_cast<std::size_t>(i * k + c)] += p.vals[e] * x_entry(j, c);
      if (i != j) y[static_cast<std::size_t>(j * k + c)] += p.vals[e] * x_entry(i, c);
    }
  }
  return y;
}

// This rank's rows of the test block X.
Block local_x(const Matrix& H, int k) {
  Block X("X", static_cast<std::size_t>(H.vector_rows()), static_cast<std::size_t>(k));
  auto h = Kokkos::create_mirror_view(X);
  for (std::int64_t r = 0; r < H.vector_rows(); ++r) {
    for (int c = 0; c < k; ++c) h(r, c) = x_entry(H.vector_offset() + r, c);
  }
  Kokkos::deep_copy(X, h);
  return X;
}

// Every rank's rows of Y, in global order, on every rank.
std::vector<double> gather_rows(const Matrix& H, const Block& Y) {
  auto h = Kokkos::create_mirror_view(Y);
  Kokkos::deep_copy(h, Y);
  std::vector<double> mine(h.data(), h.data() + h.size());
  std::vector<std::int64_t> offs = kess::comm::allgatherv(H.comm(), std::vector<std::int64_t>{H.vector_offset()});
  std::vector<std::int64_t> counts;
  auto all = kess::comm::allgatherv(H.comm(), mine, &counts);
  // Pieces arrive in rank order; place each at its offset.
  std::vector<double> out(all.size());
  const std::int64_t k = static_cast<std::int64_t>(Y.extent(1));
  std::int64_t at = 0;
  for (std::size_t q = 0; q < counts.size(); ++q) {
    std::copy(all.begin() + at, all.begin() + at + counts[q], out.begin() + offs[q] * k);
    at += counts[q];
  }
  return out;
}

void check_spmm(const kess::SparseProblem& p, const kess::CsbOptions& opts, int k) {
  auto world = Communicator::world();
  const Matrix H = kess::make_csb<double, Mem>(p, opts, world);
  // The vector rows tile [0, n) over the ranks.
  auto rows = kess::comm::allgatherv(world, std::vector<std::int64_t>{H.vector_rows()});
  std::int64_t total = 0;
  for (auto r : rows) total += r;
  ASSERT_EQ(total, p.n);
  EXPECT_EQ(H.stored_nonzeros(), static_cast<std::int64_t>(p.vals.size()));

  Block X = local_x(H, k);
  Block Y("Y", X.extent(0), X.extent(1));
  Kokkos::deep_copy(Y, 7.0);  // overwritten, not accumulated
  kess::spmm(Kokkos::DefaultExecutionSpace(), H, X, Y);
  Kokkos::fence();
  const auto y = gather_rows(H, Y);
  const auto ref = reference_product(p, k);
  ASSERT_EQ(y.size(), ref.size());
  double worst = 0, scale = 1e-300;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    worst = kess_test::worse(worst, std::abs(y[e] - ref[e]));
    scale = std::max(scale, std::abs(ref[e]));
  }
  EXPECT_LT(worst / scale, 1e-13) << p.name << " layout " << kess::to_string(opts.layout)
                                  << " beta " << opts.block_size << " k " << k;
}

TEST(LobpcgMpi, SpmmMatchesFullProductOnEveryLayout) {
  const int ranks = Communicator::world().size();
  for (auto layout : layouts(ranks)) {
    for (int beta : {0, 7, 64}) {
      kess::CsbOptions opts;
      opts.layout = layout;
      opts.block_size = beta;
      check_spmm(kess::gen::laplace2d(13, 11), opts, 3);
      check_spmm(kess::gen::random_sparse(157, 0.05, 3, 1.0), opts, 8);
      check_spmm(kess::gen::heisenberg(10, 2), opts, 16);
    }
  }
}

TEST(LobpcgMpi, TinyMatrixLeavesRanksEmpty) {
  kess::CsbOptions opts;
  check_spmm(kess::gen::laplace1d(3), opts, 2);
}

TEST(LobpcgMpi, TriangularNeedsATriangularRankCount) {
  const int ranks = Communicator::world().size();
  if (kess::comm::TriangularGrid::segments_for(ranks) > 0) GTEST_SKIP() << "a triangular count";
  kess::CsbOptions opts;
  opts.layout = kess::CsbLayout::triangular;
  kess_test::expect_error(
      [&] { kess::make_csb<double, Mem>(kess::gen::laplace1d(20), opts, Communicator::world()); },
      kess::ErrorKind::invalid_argument);
}

TEST(LobpcgMpi, LobpcgMatchesOneRank) {
  auto world = Communicator::world();
  const auto p = kess::gen::laplace2d(24, 20);
  kess::LobpcgOptions o;
  o.nev = 5;
  o.tol = 1e-9;
  o.preconditioner = kess::Preconditioner::jacobi;
  const auto one = kess::lobpcg(Kokkos::DefaultExecutionSpace(),
                                kess::make_csb<double, Mem>(p, {}, Communicator::self()), o);
  ASSERT_TRUE(one.converged);
  for (auto layout : layouts(world.size())) {
    for (auto pre : {kess::Preconditioner::jacobi, kess::Preconditioner::fom}) {
      kess::CsbOptions co;
      co.layout = layout;
      o.preconditioner = pre;
      const Matrix H = kess::make_csb<double, Mem>(p, co, world);
      const auto r = kess::lobpcg(Kokkos::DefaultExecutionSpace(), H, o);
      EXPECT_TRUE(r.converged) << kess::to_string(pre);
      ASSERT_EQ(r.eigenvalues.size(), one.eigenvalues.size());
      for (std::size_t i = 0; i < r.eigenvalues.size(); ++i) {
        EXPECT_NEAR(r.eigenvalues[i], one.eigenvalues[i], 1e-7 * std::abs(one.eigenvalues[i]))
            << i << " " << kess::to_string(pre) << " " << kess::to_string(layout);
      }
      EXPECT_EQ(r.vectors.extent(0), static_cast<std::size_t>(H.vector_rows()));
      // Residuals of the distributed vectors, computed independently: ||H x - lambda x||.
      Block HX("HX", r.vectors.extent(0), r.vectors.extent(1));
      kess::spmm(Kokkos::DefaultExecutionSpace(), H, r.vectors, HX);
      auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), HX);
      auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.vectors);
      std::vector<double> sums(2 * o.nev, 0.0);
      for (std::size_t i = 0; i < x.extent(0); ++i) {
        for (int c = 0; c < o.nev; ++c) {
          const double d = hx(i, c) - r.eigenvalues[c] * x(i, c);
          sums[2 * c] += d * d;
          sums[2 * c + 1] += x(i, c) * x(i, c);
        }
      }
      kess::comm::allreduce(world, sums, kess::comm::ReduceOp::sum);
      for (int c = 0; c < o.nev; ++c) {
        EXPECT_NEAR(sums[2 * c + 1], 1.0, 1e-10);
        EXPECT_LT(std::sqrt(sums[2 * c]), 1e-6) << c;
      }
    }
  }
}

TEST(LobpcgMpi, BadOptionOnOneRankRaisesOnAll) {
  auto world = Communicator::world();
  const Matrix H = kess::make_csb<double, Mem>(kess::gen::laplace1d(40), {}, world);
  kess::LobpcgOptions o;
  o.nev = world.rank() == world.size() - 1 ? 0 : 2;  // bad on the last rank only
  kess_test::expect_error([&] { kess::lobpcg(Kokkos::DefaultExecutionSpace(), H, o); },
                          kess::ErrorKind::invalid_argument);
}

}  // namespace
