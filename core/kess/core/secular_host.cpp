// The roots of a divide-and-conquer merge's secular equation on the host: tridiag_dc's root finder
// (dc_secular_root_with: dlaed4's fixed-weight model, then bisection of the bit patterns down to
// adjacent doubles) driven by a secular function summed with explicit 8-wide vectors. dlaed4 does
// one scalar division a term, 3-4 evaluations of k terms a root: the top merge's 3296 roots at
// n = 4000 took 0.088 s on 2 cores, 0.019 s now (docs/benchmarks.md, eigh session 17). Also the
// merge's two division loops of the Gu-Eisenstat vectors.
#include <kess/core/secular_host.hpp>

#include <kess/core/host_simd.hpp>
#include <kess/core/lapack.hpp>
#include <kess/core/tridiag_dc.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kess::core::detail {

namespace {
using simd::hsum;
using simd::splat;
using simd::v8d;
using simd::vload;
using simd::vstore;

/// dc_secular_fd's terms (the same operations on each), summed in eight lanes, then the lanes,
/// then the tail: a fixed order for a given k.
[[maybe_unused]] KESS_HOST_CLONES double secular_fd(int k, const double* d, const double* z,
                                                    double rho, double d_o, double tau,
                                                    double& df) {
  v8d s{}, ds{};
  const v8d vo = splat(d_o), vt = splat(tau), one = splat(1.0);
  int i = 0;
  for (; i + 8 <= k; i += 8) {
    const v8d zi = vload(z + i);
    const v8d inv = one / ((vload(d + i) - vo) - vt), t = zi * zi * inv;
    s += t;
    ds += t * inv;
  }
  double ss = hsum(s), dss = hsum(ds);
  for (; i < k; ++i) {
    const double inv = 1.0 / ((d[i] - d_o) - tau), t = z[i] * z[i] * inv;
    ss += t;
    dss += t * inv;
  }
  df = rho * dss;
  return 1.0 + rho * ss;
}

/// secular_fd for dc_secular_root_with (a host-and-device function template: in CUDA builds its
/// device pass must not see a call of this host-only code).
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
  // sum (col / big)^2 compensated (Neumaier) in eight lanes, then the lanes and the tail.
  const v8d vb = splat(big);
  v8d ss{}, comp{};
  i = 0;
  for (; i + 8 <= k; i += 8) {
    const v8d x = vload(col + i) / vb, t = x * x, u = ss + t;
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
    const double x = col[i] / big;
    add(x * x);
  }
  *sumsq = sum + c;
  return big;
}

void dc_secular_roots_host(int k, const double* d, const double* z, double rho, int j0, int j1,
                           int* orig, double* tau) {
  double zz = 0;
  for (int i = 0; i < k; ++i) zz += z[i] * z[i];
  const HostSecular f{k, d, z, rho};
#if KESS_HOST_WIDE_VECTORS
  for (int j = j0; j < j1; ++j) dc_secular_root_with(k, j, d, z, rho, zz, f, orig[j], tau[j]);
#else
  // Two-wide vectors do not pay for the root finder's ~10 evaluations a root against dlaed4's
  // 3-4 (H100 node's host, CUDA build: 92-98 ms against dlaed4's 69-77 at k = 3296): dlaed4, with
  // its delta read back as (orig, tau); the root finder where dlaed4 reports a failure.
  std::vector<double> delta(k);
  for (int j = j0; j < j1; ++j) {
    double lam = 0;
    if (lapack::laed4(k, j + 1, d, z, delta.data(), rho, &lam) == 0) {
      orig[j] = (j == k - 1 || std::abs(delta[j]) <= std::abs(delta[j + 1])) ? j : j + 1;
      tau[j] = -delta[orig[j]];
    } else {
      dc_secular_root_with(k, j, d, z, rho, zz, f, orig[j], tau[j]);
    }
  }
#endif
}

}  // namespace kess::core::detail
