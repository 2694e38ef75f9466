// Householder reflector coefficients with LAPACK dlarfg's conventions, shared by the host and
// device kernels of stages 1 and 2 of the eigensolver (band_reduce.hpp, bulge_chase.hpp,
// cuda/bulge_chase.hpp), and the compact-WY T from a Gram matrix for the host's blocked
// back-transformations (hh_chase.hpp, eigh.cpp).
#pragma once

#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace kess::core {

/// Householder reflector coefficients with dlarfg's convention from alpha = x(0) and the tail's
/// norm given as amax * sqrt(ssq) (amax = max |x(1:)|, ssq = sum (x(i)/amax)^2, so nothing
/// overflows or underflows): beta = -sign(alpha) ||x||, tau = (beta - alpha) / beta and
/// scal = 1 / (alpha - beta) for v(1:) = scal x(1:). amax = 0: tau = 0, beta = alpha (H = I).
KOKKOS_INLINE_FUNCTION void householder_coefficients(double alpha, double amax, double ssq,
                                                     double& beta, double& tau, double& scal) {
  beta = alpha;
  tau = 0;
  scal = 0;
  if (!(amax > 0)) return;
  const double xn = amax * kx::sqrt(ssq);
  const double big = kx::max(kx::fabs(alpha), xn), small = kx::min(kx::fabs(alpha), xn);
  const double r = small / big;
  const double h = big * kx::sqrt(1.0 + r * r);
  beta = alpha >= 0 ? -h : h;
  tau = (beta - alpha) / beta;
  scal = 1.0 / (alpha - beta);
}

/// Host: the upper triangular T (k x k, leading dimension ldt) of the compact-WY form
/// I - V T V^T of k forward reflectors, from their Gram matrix G = V^T V (upper part used,
/// leading dimension ldg) and tau, by dlarft's recurrence T(j, j) = tau_j,
/// T(0:j, j) = -tau_j T(0:j, 0:j) G(0:j, j). Entries below the diagonal are not written.
inline void compact_wy_t_from_gram(int k, const double* tau, const double* G, int ldg, double* T,
                                   int ldt) {
  for (int j = 0; j < k; ++j) {
    const double tj = tau[j];
    for (int i = 0; i < j; ++i) {
      double acc = 0;
      for (int l = i; l < j; ++l) acc += T[i + std::size_t(l) * ldt] * G[l + std::size_t(j) * ldg];
      T[i + std::size_t(j) * ldt] = -tj * acc;
    }
    T[j + std::size_t(j) * ldt] = tj;
  }
}
}  // namespace kess::core
