// The distributed (column-block-cyclic) kess::solve at 1, 2 and 4 ranks against LAPACK dgesv and
// the local version: every rank builds the same global matrices, scatters them onto a 1 x P grid.
#include <kess/comm/communicator.hpp>
#include <kess/comm/dist_matrix.hpp>
#include <kess/comm/process_grid.hpp>
#include <kess/core/generators.hpp>
#include <kess/core/lapack.hpp>
#include <kess/solvers/gauss_jordan.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using Dist = kess::comm::DistMatrix<double>;
constexpr double kEps = std::numeric_limits<double>::epsilon();

double norm_inf(const HostMat& A) {
  double mx = 0;
  for (size_t i = 0; i < A.extent(0); ++i) {
    double s = 0;
    for (size_t j = 0; j < A.extent(1); ++j) s += std::abs(A(i, j));
    mx = std::max(mx, s);
  }
  return mx;
}

double backward_error(const HostMat& A, const HostMat& Y, const HostMat& B) {
  HostMat R("R", B.extent(0), B.extent(1));
  Kokkos::deep_copy(R, B);
  const int n = A.extent(0), m = B.extent(1);
  kess::lapack::gemm('N', 'N', n, m, n, 1.0, A.data(), n, Y.data(), n, -1.0, R.data(), n);
  return norm_inf(R) / (norm_inf(A) * norm_inf(Y) + norm_inf(B));
}

struct Case {
  int n, m, nb;
};

class GaussJordanDist : public ::testing::TestWithParam<Case> {};

TEST_P(GaussJordanDist, MatchesLapackAndLocal) {
  const auto [n, m, nb] = GetParam();
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const HostMat A = kess::gen::random_general(n, n, 100 + n);
  const HostMat B = kess::gen::random_general(n, m, 200 + m);
  Dist Ad(grid, n, n, n, nb), Bd(grid, n, m, n, nb);
  Ad.scatter(0, A);
  Bd.scatter(0, B);
  const auto r = kess::solve(Exec(), Ad, Bd);
  EXPECT_EQ(r.block, nb);
  const HostMat Y = Bd.gather(0);
  // The local version on the same data: the same determinant, the same answer up to rounding.
  HostMat Yl("Yl", n, m);
  Kokkos::deep_copy(Yl, B);
  kess::GaussJordanOptions o;
  o.block = nb;
  const auto rl = kess::solve(Kokkos::DefaultHostExecutionSpace(), A, Yl, o);
  EXPECT_EQ(r.det_sign, rl.det_sign);
  EXPECT_NEAR(r.log_abs_det, rl.log_abs_det, 1e-12 * std::max(1.0, std::abs(rl.log_abs_det)));
  if (world.rank() == 0) {
    EXPECT_LE(backward_error(A, Y, B), 10.0 * n * kEps) << "n=" << n << " m=" << m << " nb=" << nb;
    HostMat Al("Al", n, n), Yg("Yg", n, m);
    Kokkos::deep_copy(Al, A);
    Kokkos::deep_copy(Yg, B);
    std::vector<int> ipiv(n);
    ASSERT_EQ(kess::lapack::gesv(n, m, Al.data(), n, ipiv.data(), Yg.data(), n), 0);
    double d = 0, dl = 0;
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < n; ++i) {
        d = std::max(d, std::abs(Y(i, j) - Yg(i, j)));
        dl = std::max(dl, std::abs(Y(i, j) - Yl(i, j)));
      }
    EXPECT_LE(d, 1e-10 * norm_inf(Yg));
    EXPECT_LE(dl, 1e-12 * norm_inf(Yg));  // same algorithm, same blocks
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GaussJordanDist,
                         ::testing::Values(Case{100, 30, 16},  // 7 blocks over P ranks
                                           Case{20, 5, 8},     // n < NB * ranks at 4 ranks
                                           Case{64, 64, 64},   // one block: one rank does it
                                           Case{1, 1, 4}, Case{130, 7, 7}, Case{97, 150, 10}),
                         [](const auto& info) {
                           return "n" + std::to_string(info.param.n) + "_m" +
                                  std::to_string(info.param.m) + "_nb" +
                                  std::to_string(info.param.nb);
                         });

TEST(GaussJordanDistErrors, AgreedOnEveryRank) {
  auto world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid(world, 1, world.size());
  const int n = 24, nb = 4;
  HostMat A = kess::gen::random_general(n, n, 7);
  for (int i = 0; i < n; ++i) A(i, 17) = 0.0;  // column 17 (block 4: rank 4 % P) is zero
  const HostMat B = kess::gen::random_general(n, 2, 8);
  Dist Ad(grid, n, n, n, nb), Bd(grid, n, 2, n, nb);
  Ad.scatter(0, A);
  Bd.scatter(0, B);
  try {
    kess::solve(Exec(), Ad, Bd);
    ADD_FAILURE() << "no error";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::singular) << e.what();
    EXPECT_NE(std::string(e.what()).find("column 17"), std::string::npos) << e.what();
  }
  // A NaN in one rank's columns only: every rank throws.
  HostMat A2 = kess::gen::random_general(n, n, 9);
  A2(3, n - 1) = std::numeric_limits<double>::quiet_NaN();
  Ad.scatter(0, A2);
  try {
    kess::solve(Exec(), Ad, Bd);
    ADD_FAILURE() << "no error";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument) << e.what();
  }
  // Shapes
  Dist Bbad(grid, n + 1, 2, n + 1, nb);
  EXPECT_THROW(kess::solve(Exec(), Ad, Bbad), kess::Error);
  if (world.size() == 4) {
    kess::comm::ProcessGrid g22(world, 2, 2);
    Dist A22(g22, n, n, nb, nb), B22(g22, n, 2, nb, nb);
    try {
      kess::solve(Exec(), A22, B22);
      ADD_FAILURE() << "no error";
    } catch (const kess::Error& e) {
      EXPECT_NE(std::string(e.what()).find("1 x P"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
