// The roots of a divide-and-conquer merge's secular equation on the host: tridiag_dc's root finder
// (secular_root_with: dlaed4's fixed-weight model, then bisection of the bit patterns down to
// adjacent doubles) driven by a secular function summed with explicit 8-wide vectors. dlaed4 does
// one scalar division a term, 3-4 evaluations of k terms a root; the vector sums find the roots
// several times faster (docs/performance/eigh.md). Where an 8-wide division is slow (16 cycles on
// Intel's cores) narrowing every root to adjacent doubles would lose to dlaed4, so the search
// stops at f's rounding bound (HostSecular below). Also the merge's two division loops of the
// Gu-Eisenstat vectors.
#include <kess/solvers/eigh/detail/secular.hpp>

#include <kess/core/host/simd.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh/detail/tridiag_dc.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace kess::detail::eigh {

namespace {
using core::detail::simd::hsum;
using core::detail::simd::splat;
using core::detail::simd::v8d;
using core::detail::simd::vload;
using core::detail::simd::vstore;

/// secular_fd's terms (the same operations on each), summed in eight lanes, then the lanes,
/// then the tail: a fixed order for a given k. With `abs_sum`, also sum |term| into it.
template <bool kAbs>
KESS_HOST_INLINE double secular_fd_impl(int k, const double* d, const double* z, double rho,
                                        double d_o, double tau, double& df, double* abs_sum) {
  v8d s{}, ds{}, as{};
  const v8d vo = splat(d_o), vt = splat(tau), one = splat(1.0);
  int i = 0;
  for (; i + 8 <= k; i += 8) {
    const v8d zi = vload(z + i);
    const v8d inv = one / ((vload(d + i) - vo) - vt), t = zi * zi * inv;
    s += t;
    ds += t * inv;
    if constexpr (kAbs) as += t < 0 ? -t : t;
  }
  double ss = hsum(s), dss = hsum(ds), ass = kAbs ? hsum(as) : 0.0;
  for (; i < k; ++i) {
    const double inv = 1.0 / ((d[i] - d_o) - tau), t = z[i] * z[i] * inv;
    ss += t;
    dss += t * inv;
    if constexpr (kAbs) ass += std::fabs(t);
  }
  df = rho * dss;
  if constexpr (kAbs) *abs_sum = ass;
  return 1.0 + rho * ss;
}

[[maybe_unused]] KESS_HOST_CLONES double secular_fd(int k, const double* d, const double* z,
                                                    double rho, double d_o, double tau,
                                                    double& df) {
  return secular_fd_impl<false>(k, d, z, rho, d_o, tau, df, nullptr);
}

[[maybe_unused]] KESS_HOST_CLONES double secular_fd_abs(int k, const double* d, const double* z,
                                                        double rho, double d_o, double tau,
                                                        double& df, double& abs_sum) {
  return secular_fd_impl<true>(k, d, z, rho, d_o, tau, df, &abs_sum);
}

/// secular_fd for secular_root_with (a host-and-device function template: in CUDA builds its
/// device pass must not see a call of this host-only code). The four-argument form also bounds
/// f's rounding, 2 eps (1 + rho sum |term|) (dlaed4 stops at about 9 eps rho sum |term|): the root
/// finder stops at a point under it instead of narrowing its bracket to adjacent doubles: less
/// than half the evaluations a root, with d_i - lambda_j as close to dlaed4's
/// (docs/performance/eigh.md).
struct HostSecular {
  int k;
  const double *d, *z;
  double rho;
  KOKKOS_INLINE_FUNCTION double operator()(double d_o, double tau, double& df) const {
#if defined(__CUDA_ARCH__)
    df = 0;
    return 0;  // never called on a device
#else
    return secular_fd(k, d, z, rho, d_o, tau, df);
#endif
  }
  KOKKOS_INLINE_FUNCTION double operator()(double d_o, double tau, double& df, double& bound) const {
#if defined(__CUDA_ARCH__)
    df = 0;
    bound = 0;
    return 0;  // never called on a device
#else
    double abs_sum = 0;
    const double f = secular_fd_abs(k, d, z, rho, d_o, tau, df, abs_sum);
    bound = 2 * DBL_EPSILON * (1 + rho * abs_sum);
    return f;
#endif
  }
};
}  // namespace

KESS_HOST_CLONES void secular_products(int k, int j, const double* d, const double* s, double* p) {
  const double dj = d[j];
  const v8d vdj = splat(dj);
  // i < j and i > j with vectors; i = j on its own (no division by d[j] - d[j] = 0).
  for (int lo : {0, j + 1}) {
    const int hi = lo == 0 ? j : k;
    int i = lo;
    for (; i + 8 <= hi; i += 8) vstore(p + i, vload(p + i) * (vload(s + i) / (vload(d + i) - vdj)));
    for (; i < hi; ++i) p[i] *= s[i] / (d[i] - dj);
  }
  p[j] *= s[j];
}

KESS_HOST_CLONES double secular_column(int k, const double* what, const double* s, double* col,
                                       double* sumsq) {
  v8d vbig{};
  int i = 0;
  for (; i + 8 <= k; i += 8) {
    const v8d c = vload(what + i) / vload(s + i);
    vstore(col + i, c);
    const v8d a = c < 0 ? -c : c;
    vbig = vbig < a ? a : vbig;
  }
  double big = 0;
  for (int l = 0; l < 8; ++l) big = std::max(big, vbig[l]);
  for (; i < k; ++i) {
    col[i] = what[i] / s[i];
    big = std::max(big, std::abs(col[i]));
  }
  // sum (col / big)^2 compensated (Neumaier) in eight lanes, then the lanes and the tail (col
  // times 1 / big where that is a normal double: a division is 16 cycles an 8-wide vector on
  // Intel's cores).
  const double inv_big = 1.0 / big;
  const bool by_inverse = inv_big >= DBL_MIN && inv_big <= DBL_MAX;
  const v8d vb = splat(big), vinv = splat(inv_big);
  v8d ss{}, comp{};
  i = 0;
  for (; i + 8 <= k; i += 8) {
    const v8d x = by_inverse ? vload(col + i) * vinv : vload(col + i) / vb, t = x * x, u = ss + t;
    const v8d as = ss < 0 ? -ss : ss;
    comp += as >= t ? (ss - u) + t : (t - u) + ss;
    ss = u;
  }
  double sum = 0, c = 0;
  const auto add = [&](double t) {
    const double u = sum + t;
    c += std::abs(sum) >= std::abs(t) ? (sum - u) + t : (t - u) + sum;
    sum = u;
  };
  for (int l = 0; l < 8; ++l) {
    add(ss[l]);
    c += comp[l];
  }
  for (; i < k; ++i) {
    const double x = by_inverse ? col[i] * inv_big : col[i] / big;
    add(x * x);
  }
  *sumsq = sum + c;
  return big;
}

void secular_roots_host(int k, const double* d, const double* z, double rho, int j0, int j1,
                           int* orig, double* tau) {
  double zz = 0;
  for (int i = 0; i < k; ++i) zz += z[i] * z[i];
  const HostSecular f{k, d, z, rho};
  if (core::detail::host_wide_vectors()) {
    for (int j = j0; j < j1; ++j) secular_root_with(k, j, d, z, rho, zz, f, orig[j], tau[j]);
    return;
  }
  // Narrower vectors do not pay for the root finder against dlaed4 (docs/performance/eigh.md):
  // dlaed4, with its delta read back as (orig, tau); the root finder where dlaed4 reports a
  // failure.
  std::vector<double> delta(k);
  for (int j = j0; j < j1; ++j) {
    double lam = 0;
    if (core::lapack::laed4(k, j + 1, d, z, delta.data(), rho, &lam) == 0) {
      orig[j] = (j == k - 1 || std::abs(delta[j]) <= std::abs(delta[j + 1])) ? j : j + 1;
      tau[j] = -delta[orig[j]];
    } else {
      secular_root_with(k, j, d, z, rho, zz, f, orig[j], tau[j]);
    }
  }
}

}  // namespace kess::detail::eigh
