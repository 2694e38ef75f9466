// Householder reflector coefficients with LAPACK dlarfg's conventions, shared by the host and
// device kernels of stages 1 and 2 of the eigensolver (band_reduce.hpp, bulge_chase.hpp,
// bulge_chase_cuda.hpp).
#pragma once

#include <kess/core/kokkos_compat.hpp>

#include <Kokkos_Core.hpp>

namespace kess::detail {

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
}  // namespace kess::detail
