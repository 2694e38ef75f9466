// The roots of a divide-and-conquer merge's secular equation on the host: tridiag_dc's root finder
// (dc_secular_root_with: dlaed4's fixed-weight model, then bisection of the bit patterns down to
// adjacent doubles) driven by a secular function summed with explicit 8-wide vectors. dlaed4 sums
// its k terms one at a time, each with a division that waits for the last: at n = 4000 the top
// merge's 3296 roots took 0.072-0.078 s on 2 cores (docs/benchmarks.md, eigh session 17).
#include <kess/core/secular_host.hpp>

#include <kess/core/tridiag_dc.hpp>

#include <algorithm>
#include <cmath>

namespace kess::core::detail {

namespace {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"  // v8d by value between always-inlined helpers only
#define KESS_SECULAR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KESS_SECULAR_CLONES
#endif
#define KESS_SECULAR_INLINE inline __attribute__((always_inline))
typedef double v8d __attribute__((vector_size(64), aligned(8), may_alias));
KESS_SECULAR_INLINE v8d vload(const double* p) { return *reinterpret_cast<const v8d*>(p); }
KESS_SECULAR_INLINE void vstore(double* p, v8d x) { *reinterpret_cast<v8d*>(p) = x; }
KESS_SECULAR_INLINE v8d splat(double s) { return v8d{} + s; }
KESS_SECULAR_INLINE double hsum(v8d a) {
  return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/// dc_secular_fd's terms (the same operations on each), summed in eight lanes, then the lanes,
/// then the tail: a fixed order for a given k.
KESS_SECULAR_CLONES double secular_fd(int k, const double* d, const double* z, double rho,
                                      double d_o, double tau, double& df) {
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
}  // namespace

KESS_SECULAR_CLONES void secular_products(int k, int j, const double* d, const double* s,
                                          double* p) {
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

KESS_SECULAR_CLONES double secular_column(int k, const double* what, const double* s, double* col,
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
  const auto f = [&](double d_o, double t, double& df) {
    return secular_fd(k, d, z, rho, d_o, t, df);
  };
  for (int j = j0; j < j1; ++j) dc_secular_root_with(k, j, d, z, rho, zz, f, orig[j], tau[j]);
}

}  // namespace kess::core::detail
