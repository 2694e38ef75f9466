// kess::core::potrf_blocked (the Cholesky factorization of the generalized eigenproblem on the
// execution space) against LAPACK dpotrf on the host: the factor, its backward error, and the
// failing pivot of a matrix that is not positive definite.
#include <kess/core/linalg/cholesky.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>

#include "test_backend.hpp"
#include "test_check.hpp"
#include "test_dense.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

namespace {

using kess_test::HostMat;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;

/// potrf_blocked on a device copy of B; the factor (lower triangle, zeros above) into L.
int blocked(const HostMat& B, int nb, HostMat& L, double* pivot) {
  TestExecSpace exec;
  const int n = B.extent(0);
  DevMat d("kess::test::B", n, n);
  Kokkos::deep_copy(d, B);
  const int info = kess::core::potrf_blocked(exec, d, nb, pivot);
  L = HostMat("L", n, n);
  Kokkos::deep_copy(L, d);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < j; ++i) L(i, j) = 0;
  return info;
}

/// max |L L^T - B| / max |B|
double backward_error(const HostMat& L, const HostMat& B) {
  const HostMat LLt = kess_test::mul(L, L, 'N', 'T');
  double e = 0;
  for (std::size_t j = 0; j < B.extent(1); ++j)
    for (std::size_t i = 0; i < B.extent(0); ++i)
      e = kess_test::worse(e, std::abs(LLt(i, j) - B(i, j)));
  return e / kess_test::max_abs(B);
}

TEST(Cholesky, BlockedMatchesDpotrf) {
  struct Case {
    int n, nb;
    bool graded;  // eigenvalues 1e-8 .. 1 (condition 1e8) instead of a diagonally dominant B
  };
  for (const Case c :
       {Case{1, 256, false}, Case{5, 2, false}, Case{100, 32, false}, Case{257, 64, false},
        Case{600, 256, false}, Case{700, 128, true}, Case{300, 256, true}}) {
    const int n = c.n;
    SCOPED_TRACE("n=" + std::to_string(n) + " nb=" + std::to_string(c.nb) +
                 (c.graded ? " graded" : ""));
    HostMat B;
    if (c.graded) {
      std::vector<double> lambda(n);
      for (int i = 0; i < n; ++i) lambda[i] = std::pow(10.0, -8.0 * i / std::max(1, n - 1));
      B = kess::gen::prescribed_spectrum(lambda, 33);
    } else {
      B = kess::gen::random_spd(n, 31);
    }
    HostMat ref = kess_test::copy_of(B);
    ASSERT_EQ(kess::core::lapack::potrf('L', n, ref.data(), n), 0);
    HostMat L;
    double pivot = -7;
    ASSERT_EQ(blocked(B, c.nb, L, &pivot), 0);
    EXPECT_EQ(pivot, -7.0);  // untouched on success
    EXPECT_LE(backward_error(L, B), 10.0 * n * DBL_EPSILON);
    if (!c.graded) {  // well conditioned: the factors agree entry by entry
      double d = 0, lmax = 0;
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) {
          d = kess_test::worse(d, std::abs(L(i, j) - ref(i, j)));
          lmax = kess_test::worse(lmax, std::abs(ref(i, j)));
        }
      EXPECT_LE(d, 1e-13 * lmax);
    }
  }
}

TEST(Cholesky, BlockedReportsTheFailingPivotOfDpotrf) {
  // B(k, k) made negative: the leading minor of order k + 1 is the first that is not positive,
  // in the first block, on a block boundary, inside a later block and in the last column.
  struct Case {
    int n, nb, k;
  };
  for (const Case c : {Case{300, 64, 0}, Case{300, 64, 10}, Case{300, 64, 128}, Case{600, 256, 300},
                       Case{600, 256, 599}, Case{257, 256, 256}}) {
    SCOPED_TRACE("n=" + std::to_string(c.n) + " nb=" + std::to_string(c.nb) +
                 " k=" + std::to_string(c.k));
    HostMat B = kess::gen::random_spd(c.n, 34);
    B(c.k, c.k) = -1.0;
    HostMat ref = kess_test::copy_of(B);
    const int info_ref = kess::core::lapack::potrf('L', c.n, ref.data(), c.n);
    ASSERT_EQ(info_ref, c.k + 1);
    HostMat L;
    double pivot = 0;
    EXPECT_EQ(blocked(B, c.nb, L, &pivot), info_ref);
    EXPECT_LT(pivot, 0.0);
    EXPECT_LE(std::abs(pivot - ref(c.k, c.k)), 1e-12 * std::abs(ref(c.k, c.k)));
  }
}

}  // namespace
