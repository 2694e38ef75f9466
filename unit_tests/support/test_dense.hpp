// Small dense helpers on the host for the tests' references and checks (LAPACK/BLAS underneath).
#pragma once

#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>

#include "test_check.hpp"

namespace kess_test {

using HostMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

inline HostMat zeros(int m, int n) { return HostMat("h", m, n); }

inline HostMat eye(int n) {
  HostMat I("I", n, n);
  for (int i = 0; i < n; ++i) I(i, i) = 1.0;
  return I;
}

inline HostMat copy_of(const HostMat& a) {
  HostMat c("copy", a.extent(0), a.extent(1));
  Kokkos::deep_copy(c, a);
  return c;
}

/// alpha op(A) op(B) on the host.
inline HostMat mul(const HostMat& A, const HostMat& B, char ta = 'N', char tb = 'N',
                   double alpha = 1.0) {
  const int m = ta == 'N' ? A.extent(0) : A.extent(1);
  const int k = ta == 'N' ? A.extent(1) : A.extent(0);
  const int n = tb == 'N' ? B.extent(1) : B.extent(0);
  HostMat C("C", m, n);
  if (m && n && k)
    kess::core::lapack::gemm(ta, tb, m, n, k, alpha, A.data(), std::max<int>(1, A.extent(0)),
                             B.data(), std::max<int>(1, B.extent(0)), 0.0, C.data(),
                             std::max(1, m));
  return C;
}

/// max |a_ij| (NaN if any entry is NaN).
inline double max_abs(const HostMat& A) {
  double m = 0;
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) m = worse(m, std::abs(A(i, j)));
  return m;
}

}  // namespace kess_test
