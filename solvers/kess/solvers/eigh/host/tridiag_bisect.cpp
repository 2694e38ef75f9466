#include <kess/solvers/eigh/detail/tridiag_bisect.hpp>

#include <kess/core/host/parallel.hpp>
#include <kess/core/host/simd.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <vector>

namespace kess::detail::eigh {

// The Sturm counts in vectors of kW lanes: 8 (core/kess/core/host/simd.hpp, cloned per
// instruction set) or, in tridiag_bisect_avx2.cpp's compile of this file (KESS_BISECT_LANES 4,
// -mavx2), 4 — GCC's code for 8-wide vectors on 256-bit registers goes through the stack and is
// several times slower (docs/performance/eigh.md).
// Either way 24 lanes a pass, in kLanes / kW independent recurrences (the divisions of one chain
// wait on each other: latency, not throughput).
constexpr int kLanes = 24;

namespace {
#if defined(KESS_BISECT_LANES) && KESS_BISECT_LANES == 4
constexpr int kW = 4;
typedef core::detail::simd::v4d vd;
typedef long long vl __attribute__((vector_size(32)));
using core::detail::simd::w4::splat;
using core::detail::simd::w4::vload;
#define KESS_BISECT_CLONES
#define KESS_BISECT_COUNTS sturm_counts_avx2
#else
constexpr int kW = 8;
typedef core::detail::simd::v8d vd;
typedef long long vl __attribute__((vector_size(64)));
using core::detail::simd::splat;
using core::detail::simd::vload;
#define KESS_BISECT_CLONES KESS_HOST_CLONES
#define KESS_BISECT_COUNTS sturm_counts_wide
#endif
constexpr int kChains = kLanes / kW;
}  // namespace

/// For each of the kLanes shifts x, the number of eigenvalues below it (dlaebz's count:
/// q = d_i - x - e_{i-1}^2 / q, |q| < pivmin taken as -pivmin, a row counted where q <= 0).
KESS_BISECT_CLONES void KESS_BISECT_COUNTS(int n, const double* d, const double* e2, double pivmin,
                                           const double* x, double* count) {
  const vd vpiv = splat(pivmin), vneg = splat(-pivmin), zero{};
  vd vx[kChains], q[kChains];
  vl c[kChains];
  for (int k = 0; k < kChains; ++k) {
    vx[k] = vload(x + kW * k);
    q[k] = splat(d[0]) - vx[k];
    q[k] = (q[k] < 0 ? -q[k] : q[k]) < vpiv ? vneg : q[k];
    c[k] = (q[k] <= zero) ? vl{} - 1 : vl{};
  }
  for (int i = 1; i < n; ++i) {
    const vd di = splat(d[i]), ei = splat(e2[i - 1]);
    for (int k = 0; k < kChains; ++k) {
      q[k] = (di - ei / q[k]) - vx[k];
      q[k] = (q[k] < 0 ? -q[k] : q[k]) < vpiv ? vneg : q[k];
      c[k] += (q[k] <= zero) ? vl{} - 1 : vl{};
    }
  }
  for (int k = 0; k < kChains; ++k)
    for (int l = 0; l < kW; ++l) count[kW * k + l] = double(-c[k][l]);
}

#if !defined(KESS_BISECT_LANES)
#if defined(KESS_HAVE_BISECT_AVX2)
void sturm_counts_avx2(int n, const double* d, const double* e2, double pivmin, const double* x,
                       double* count);  // tridiag_bisect_avx2.cpp
#endif

namespace {
/// The counts' kernel for this CPU: 8-wide with AVX-512, the 4-wide compile on AVX2 CPUs, else
/// the 8-wide code as the baseline compiles it (eigh does not call the bisection then).
void (*sturm_counts())(int, const double*, const double*, double, const double*, double*) {
#if defined(KESS_HAVE_BISECT_AVX2)
  if (!core::detail::host_wide_vectors() && __builtin_cpu_supports("avx2")) return sturm_counts_avx2;
#endif
  return sturm_counts_wide;
}
}  // namespace

bool tridiag_bisect_fast() {
#if defined(KESS_HAVE_BISECT_AVX2)
  if (__builtin_cpu_supports("avx2")) return true;
#endif
  return core::detail::host_wide_vectors();
}

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
  const auto counts = sturm_counts();
  core::detail::host_parallel_for(groups, threads, [&](int g) {
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
      counts(n, ds.data(), e2.data(), pivmin, mid, cnt);
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

#endif  // !KESS_BISECT_LANES

}  // namespace kess::detail::eigh
