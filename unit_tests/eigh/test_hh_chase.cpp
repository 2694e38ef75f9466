// hh_chase_apply against a plain host loop (the definition), on the backend this binary was
// compiled for, for both variants.
#include <kess/solvers/eigh.hpp>
#include <kess/core/host/simd.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using HostVec = Kokkos::View<double*, Kokkos::HostSpace>;

struct Problem {
  HostMat V, X;
  HostVec tau;
};

// Real Householder reflectors (v(0) = 1, tau = 2 / v^T v) and a dense random X, never zero.
Problem make_problem(int b, int n, int nc, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Problem p{HostMat("V", b, n), HostMat("X", b + n - 1, nc), HostVec("tau", n)};
  for (int k = 0; k < n; ++k) {
    double vtv = 1.0;
    p.V(0, k) = 1.0;
    for (int i = 1; i < b; ++i) {
      p.V(i, k) = u(rng);
      vtv += p.V(i, k) * p.V(i, k);
    }
    p.tau(k) = 2.0 / vtv;
  }
  for (int j = 0; j < nc; ++j)
    for (int i = 0; i < b + n - 1; ++i) p.X(i, j) = u(rng) + (u(rng) > 0 ? 0.5 : -0.5);
  return p;
}

// The definition: for k = n-1 .. 0, rows k..k+b-1 of every column x <- x - tau_k v_k (v_k^T x).
HostMat reference(const Problem& p) {
  const int b = p.V.extent(0), n = p.V.extent(1), nc = p.X.extent(1);
  HostMat Y("Y", p.X.extent(0), nc);
  Kokkos::deep_copy(Y, p.X);
  for (int k = n - 1; k >= 0; --k)
    for (int j = 0; j < nc; ++j) {
      double d = 0;
      for (int i = 0; i < b; ++i) d += p.V(i, k) * Y(k + i, j);
      for (int i = 0; i < b; ++i) Y(k + i, j) -= p.tau(k) * d * p.V(i, k);
    }
  return Y;
}

HostMat run_kernel(const Problem& p, const kess::HhChaseOptions& opts) {
  TestExecSpace exec;
  auto V = Kokkos::create_mirror_view_and_copy(TestMemSpace(), p.V);
  auto tau = Kokkos::create_mirror_view_and_copy(TestMemSpace(), p.tau);
  Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> X("X", p.X.extent(0), p.X.extent(1));
  Kokkos::deep_copy(X, p.X);
  kess::hh_chase_apply(exec, V, tau, X, opts);
  exec.fence();
  auto out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
  HostMat Y("Y", p.X.extent(0), p.X.extent(1));
  Kokkos::deep_copy(Y, out);
  return Y;
}

double max_abs_diff(const HostMat& A, const HostMat& B) {
  double d = 0;
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) d = kess_test::worse(d, std::abs(A(i, j) - B(i, j)));
  return d;
}

class HhChase : public ::testing::TestWithParam<std::tuple<int, int, int, kess::HhChaseVariant>> {};

TEST_P(HhChase, MatchesHostLoop) {
  const auto [b, n, nc, variant] = GetParam();
  const Problem p = make_problem(b, n, nc, 1000u * b + 10u * n + nc);
  const HostMat ref = reference(p);
  kess::HhChaseOptions opts;
  opts.variant = variant;
  const HostMat got = run_kernel(p, opts);
  // Orthogonal transformations of O(1) data: rounding grows like sqrt(n b) eps at most.
  const double tol = 1e-13 * std::sqrt(double(n) * b) * 10;
  EXPECT_LE(max_abs_diff(got, ref), tol) << "b=" << b << " n=" << n << " nc=" << nc;
  if (nc > 0 && n > 1) {
    // The transformation must have done something (guards against a no-op kernel).
    EXPECT_GT(max_abs_diff(got, p.X), 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllShapes, HhChase,
    ::testing::Combine(::testing::Values(1, 2, 3, 16, 32, 64, 128), ::testing::Values(1, 2, 7, 300),
                       ::testing::Values(0, 1, 5, 200),
                       ::testing::Values(kess::HhChaseVariant::paper, kess::HhChaseVariant::fast)),
    [](const auto& info) {
      return "b" + std::to_string(std::get<0>(info.param)) + "_n" +
             std::to_string(std::get<1>(info.param)) + "_nc" +
             std::to_string(std::get<2>(info.param)) + "_" +
             kess::to_string(std::get<3>(info.param));
    });

// Block sizes that do not divide n and column tiles that do not divide NC; general (non-unit
// norm) tau values.
TEST(HhChaseFast, OddBlocksAndTiles) {
  for (int m : {1, 3, 5, 8, 32, 50}) {
    for (int c : {1, 3, 7, 16}) {
      Problem p = make_problem(17, 61, 29, 7u * m + c);
      for (int k = 0; k < 61; ++k) p.tau(k) *= 0.37 + 0.01 * (k % 13);
      const HostMat ref = reference(p);
      kess::HhChaseOptions opts;
      opts.tuning.block = m;
      opts.tuning.cols_per_team = c;
      EXPECT_LE(max_abs_diff(run_kernel(p, opts), ref), 1e-12) << "m=" << m << " c=" << c;
    }
  }
}

// The shapes with compile-time kernels on GPUs (b = 32, 64, 128 with the default options), with
// partial blocks and partial column tiles.
TEST(HhChaseFast, DefaultShapesRaggedColumns) {
  for (int b : {32, 64, 128})
    for (int n : {33, 100, 513})
      for (int nc : {8, 13, 37}) {
        const Problem p = make_problem(b, n, nc, 31u * b + 7u * n + nc);
        EXPECT_LE(max_abs_diff(run_kernel(p, {}), reference(p)), 1e-12)
            << "b=" << b << " n=" << n << " nc=" << nc;
      }
}

// b = 64 with the default block: on CUDA devices with FP64 tensor cores this is the MMA kernel
// (hh_chase_mma.hpp), 32 columns a thread block; elsewhere the portable kernels. Partial blocks,
// partial column tiles, general tau, and X as a row range of a taller matrix (leading dimension
// larger than its rows, as stage 4 of the eigensolver passes it). The tensor cores on and off
// must both match the definition.
TEST(HhChaseFast, TensorCoreShape) {
  for (int n : {1, 2, 31, 32, 33, 100, 513})
    for (int nc : {1, 31, 32, 33, 70})
      for (bool tc : {true, false}) {
        Problem p = make_problem(64, n, nc, 101u * n + 3u * nc + tc);
        for (int k = 0; k < n; ++k) p.tau(k) *= 0.5 + 0.05 * (k % 11);
        const HostMat ref = reference(p);
        kess::HhChaseOptions opts;
        opts.tuning.tensor_cores = tc;
        TestExecSpace exec;
        auto V = Kokkos::create_mirror_view_and_copy(TestMemSpace(), p.V);
        auto tau = Kokkos::create_mirror_view_and_copy(TestMemSpace(), p.tau);
        const int nr = static_cast<int>(p.X.extent(0)), pad = 5;
        Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> big("big", nr + 2 * pad, nc);
        auto X = Kokkos::subview(big, Kokkos::make_pair(pad, pad + nr), Kokkos::ALL());
        auto bigh = Kokkos::create_mirror_view(big);
        for (int j = 0; j < nc; ++j)
          for (int i = 0; i < nr + 2 * pad; ++i)
            bigh(i, j) = (i >= pad && i < pad + nr) ? p.X(i - pad, j) : 1e300;  // sentinels
        Kokkos::deep_copy(big, bigh);
        kess::hh_chase_apply(exec, V, tau, X, opts);
        exec.fence();
        Kokkos::deep_copy(bigh, big);
        double d = 0;
        bool sentinels = true;
        for (int j = 0; j < nc; ++j)
          for (int i = 0; i < nr + 2 * pad; ++i) {
            if (i >= pad && i < pad + nr)
              d = kess_test::worse(d, std::abs(bigh(i, j) - ref(i - pad, j)));
            else
              sentinels = sentinels && bigh(i, j) == 1e300;
          }
        EXPECT_LE(d, 1e-12) << "n=" << n << " nc=" << nc << " tensor_cores=" << tc;
        EXPECT_TRUE(sentinels) << "rows outside X were written: n=" << n << " nc=" << nc;
      }
}

// Blocks of reflectors that only partly cover their window's groups of 8 rows (b around 8m/8 - 7,
// where the host kernel's row segments change), blocks wider than b, hundreds of columns (several
// chunks and ragged strips), and X as the top rows of a taller matrix: rows below it must not
// change, although the last blocks' windows run past X. On host backends both the register tiles
// and the OpenBLAS path of CPUs without AVX-512.
TEST(HhChaseFast, BandsChunksAndRowsBelow) {
  const std::vector<std::pair<int, int>> shapes = {{17, 0}, {24, 8}, {25, 0}, {25, 32}, {40, 17}, {96, 0}, {5, 32}};
  for (int vectors : {1, 0})
  for (const auto& [b, m] : shapes)
    for (int n : {70, 129})
      for (int nc : {11, 530}) {
        const Problem p = make_problem(b, n, nc, 17u * b + 5u * n + nc + m);
        const int rows = b + n - 1, below = 9;
        HostMat big("big", rows + below, nc);
        for (int j = 0; j < nc; ++j)
          for (int i = 0; i < rows + below; ++i) big(i, j) = i < rows ? p.X(i, j) : 7.25 + j;
        Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace> Xd("X", rows + below, nc);
        Kokkos::deep_copy(Xd, big);
        auto V = Kokkos::create_mirror_view_and_copy(TestMemSpace(), p.V);
        auto tau = Kokkos::create_mirror_view_and_copy(TestMemSpace(), p.tau);
        kess::HhChaseOptions opts;
        opts.tuning.block = m;
        TestExecSpace exec;
        kess::core::detail::set_host_wide_vectors(vectors);
        kess::hh_chase_apply(exec, V, tau, Kokkos::subview(Xd, Kokkos::make_pair(0, rows), Kokkos::ALL), opts);
        exec.fence();
        kess::core::detail::set_host_wide_vectors(-1);
        Kokkos::deep_copy(big, Xd);
        const HostMat ref = reference(p);
        double d = 0, moved = 0;
        for (int j = 0; j < nc; ++j) {
          for (int i = 0; i < rows; ++i) d = kess_test::worse(d, std::abs(big(i, j) - ref(i, j)));
          for (int i = rows; i < rows + below; ++i) moved = kess_test::worse(moved, std::abs(big(i, j) - (7.25 + j)));
        }
        EXPECT_LE(d, 1e-12) << "b=" << b << " m=" << m << " n=" << n << " nc=" << nc << " vectors=" << vectors;
        EXPECT_EQ(moved, 0.0) << "b=" << b << " m=" << m << " n=" << n << " nc=" << nc << " vectors=" << vectors;
      }
}

// Enough columns (16400 = 128 blocks of 128 and 16 more) that a compute-capability-9.0 GPU of up
// to 143 multiprocessors picks the 8-warp tensor-core kernel, with idle warps in the last block;
// elsewhere the usual kernels.
TEST(HhChaseFast, TensorCoreWide) {
  for (int n : {33, 97}) {
    const Problem p = make_problem(64, n, 16400, 7u * n + 1u);
    EXPECT_LE(max_abs_diff(run_kernel(p, {}), reference(p)), 1e-12) << "n=" << n;
  }
}

// On host backends `fast` normally goes through host BLAS; the portable team kernel (what GPUs
// run for shapes without a compile-time kernel) must agree too.
TEST(HhChaseFast, PortableTeamKernel) {
  for (int b : {1, 5, 64})
    for (int n : {1, 40, 300})
      for (int m : {0, 7, 16}) {
        const Problem p = make_problem(b, n, 23, 5u * b + 3u * n + m);
        kess::HhChaseOptions opts;
        opts.tuning.host_blas = false;
        opts.tuning.block = m;
        EXPECT_LE(max_abs_diff(run_kernel(p, opts), reference(p)), 1e-12)
            << "b=" << b << " n=" << n << " m=" << m;
      }
}

TEST(HhChase, PreservesColumnNorms) {
  const Problem p = make_problem(64, 300, 40, 42);
  for (auto variant : {kess::HhChaseVariant::paper, kess::HhChaseVariant::fast}) {
    kess::HhChaseOptions opts;
    opts.variant = variant;
    const HostMat Y = run_kernel(p, opts);
    for (int j = 0; j < 40; ++j) {
      double a = 0, b = 0;
      for (size_t i = 0; i < Y.extent(0); ++i) {
        a += p.X(i, j) * p.X(i, j);
        b += Y(i, j) * Y(i, j);
      }
      EXPECT_NEAR(std::sqrt(a), std::sqrt(b), 1e-12 * std::sqrt(a));
    }
  }
}

TEST(HhChase, RejectsBadInput) {
  using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;
  using DevVec = Kokkos::View<double*, TestMemSpace>;
  TestExecSpace exec;
  auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const kess::Error& e) {
      EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  DevMat V("V", 4, 10), X("X", 13, 3);
  DevVec tau("tau", 10);
  Kokkos::deep_copy(V, 0.5);
  Kokkos::deep_copy(tau, 1.0);
  expect_error([&] { kess::hh_chase_apply(exec, V, tau, DevMat("X", 12, 3)); }, "'X'");
  expect_error([&] { kess::hh_chase_apply(exec, V, DevVec("t", 9), X); }, "'tau'");
  expect_error([&] { kess::hh_chase_apply(exec, DevMat("V", 0, 10), tau, X); }, "b = ");
  expect_error([&] { kess::hh_chase_apply(exec, DevMat("V", 4, 0), DevVec("t", 0), X); }, "n = ");
  auto tau_h = Kokkos::create_mirror_view(tau);
  Kokkos::deep_copy(tau_h, 1.0);
  tau_h(7) = std::nan("");
  Kokkos::deep_copy(tau, tau_h);
  expect_error([&] { kess::hh_chase_apply(exec, V, tau, X); }, "k = 7");
  Kokkos::deep_copy(tau, 1.0);
  auto V_h = Kokkos::create_mirror_view(V);
  Kokkos::deep_copy(V_h, 0.5);
  V_h(2, 3) = INFINITY;
  Kokkos::deep_copy(V, V_h);
  expect_error([&] { kess::hh_chase_apply(exec, V, tau, X); }, "'V'");
  EXPECT_THROW(kess::from_string<kess::HhChaseVariant>("quick"), kess::Error);
}

}  // namespace
