#include <kess/core/tridiag_bisect.hpp>

#include <kess/core/host_parallel.hpp>
#include <kess/core/host_simd.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <vector>

namespace kess::core::detail {

namespace {
using simd::splat;
using simd::v8d;

constexpr int kChains = 3;             // independent 8-wide recurrences a pass (the divisions of
constexpr int kLanes = 8 * kChains;    // one chain wait on each other: latency, not throughput)

/// For each of the kLanes shifts x, the number of eigenvalues below it (dlaebz's count:
/// q = d_i - x - e_{i-1}^2 / q, |q| < pivmin taken as -pivmin, a row counted where q <= 0).
KESS_HOST_CLONES void sturm_counts(int n, const double* d, const double* e2, double pivmin,
                                   const double* x, double* count) {
  typedef long long v8l __attribute__((vector_size(64)));
  const v8d vpiv = splat(pivmin), vneg = splat(-pivmin), zero{};
  v8d vx[kChains], q[kChains];
  v8l c[kChains];
  for (int k = 0; k < kChains; ++k) {
    vx[k] = simd::vload(x + 8 * k);
    q[k] = splat(d[0]) - vx[k];
    q[k] = (q[k] < 0 ? -q[k] : q[k]) < vpiv ? vneg : q[k];
    c[k] = (q[k] <= zero) ? v8l{} - 1 : v8l{};
  }
  for (int i = 1; i < n; ++i) {
    const v8d di = splat(d[i]), ei = splat(e2[i - 1]);
    for (int k = 0; k < kChains; ++k) {
      q[k] = (di - ei / q[k]) - vx[k];
      q[k] = (q[k] < 0 ? -q[k] : q[k]) < vpiv ? vneg : q[k];
      c[k] += (q[k] <= zero) ? v8l{} - 1 : v8l{};
    }
  }
  for (int k = 0; k < kChains; ++k)
    for (int l = 0; l < 8; ++l) count[8 * k + l] = double(-c[k][l]);
}
}  // namespace

void tridiag_bisect(int n, const double* d, const double* e, int j0, int j1, double* w,
                    int threads) {
  if (j1 <= j0) return;
  if (n == 1) {
    w[0] = d[0];
    return;
  }
  // T scaled by a power of two to a largest entry in [1, 2) (exact; e_i^2 neither overflows nor
  // underflows for matrices of any scale), the eigenvalues scaled back at the end.
  double tmax = 0;
  for (int i = 0; i < n; ++i) tmax = std::max({tmax, std::fabs(d[i]), i + 1 < n ? std::fabs(e[i]) : 0.0});
  if (tmax == 0) {
    std::fill(w, w + (j1 - j0), 0.0);
    return;
  }
  const int scale_exp = std::ilogb(tmax);
  std::vector<double> ds(n), es(n - 1), e2(n - 1);
  for (int i = 0; i < n; ++i) ds[i] = std::ldexp(d[i], -scale_exp);
  for (int i = 0; i + 1 < n; ++i) es[i] = std::ldexp(e[i], -scale_exp);
  // Gershgorin bounds and the pivot safeguard as dstebz forms them.
  double emax2 = 0, gl = ds[0], gu = ds[0];
  for (int i = 0; i < n; ++i) {
    const double r = (i > 0 ? std::fabs(es[i - 1]) : 0.0) + (i + 1 < n ? std::fabs(es[i]) : 0.0);
    gl = std::min(gl, ds[i] - r);
    gu = std::max(gu, ds[i] + r);
    if (i + 1 < n) {
      e2[i] = es[i] * es[i];
      emax2 = std::max(emax2, e2[i]);
    }
  }
  const double tnorm = std::max(std::fabs(gl), std::fabs(gu));
  const double ulp = DBL_EPSILON, pivmin = DBL_MIN * std::max(1.0, emax2);
  gl -= 2 * ulp * tnorm * n + 2 * pivmin;
  gu += 2 * ulp * tnorm * n + 2 * pivmin;
  const double atol = 2 * ulp * tnorm;
  const int groups = (j1 - j0 + kLanes - 1) / kLanes;
  host_parallel_for(groups, threads, [&](int g) {
    alignas(64) double lo[kLanes], hi[kLanes], mid[kLanes], cnt[kLanes];
    int target[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      target[l] = std::min(j1 - 1, j0 + kLanes * g + l);  // lanes past j1 repeat the last one
      lo[l] = gl;
      hi[l] = gu;
    }
    // Invariant: count(lo) <= target < count(hi). Each pass halves every lane's interval until
    // it is within 2 ulp of max(|lo|, |hi|) or of ||T||: at most ~60 passes.
    for (int pass = 0; pass < 2100; ++pass) {
      bool done = true;
      for (int l = 0; l < kLanes; ++l) {
        const double width = hi[l] - lo[l];
        const double tol = std::max(atol, 2 * ulp * std::max(std::fabs(lo[l]), std::fabs(hi[l])));
        mid[l] = 0.5 * (lo[l] + hi[l]);
        if (width > tol && mid[l] > lo[l] && mid[l] < hi[l]) done = false;
      }
      if (done) break;
      sturm_counts(n, ds.data(), e2.data(), pivmin, mid, cnt);
      for (int l = 0; l < kLanes; ++l) {
        if (cnt[l] > target[l])
          hi[l] = mid[l];
        else
          lo[l] = mid[l];
      }
    }
    for (int l = 0; l < kLanes && j0 + kLanes * g + l < j1; ++l)
      w[kLanes * g + l] = std::ldexp(0.5 * (lo[l] + hi[l]), scale_exp);
  });
  // Ascending (rounding of the midpoints of neighbouring intervals).
  std::sort(w, w + (j1 - j0));
}

}  // namespace kess::core::detail
