// tridiag_dc — all eigenpairs of a real symmetric tridiagonal matrix by divide and conquer
// (Cuppen's method with Gu-Eisenstat eigenvectors, the algorithm of LAPACK's dstedc), written so
// that the O(n^3) part runs as GEMMs on the execution space and only O(n^2) work stays on the host.
//
// T is torn at the middle into T1 and T2 minus a rank-one piece, recursively down to leaves of at
// most `leaf` rows (host dsteqr); a merge of two solved halves [Q1 0; 0 Q2] then needs
//   host:   the rank-one vector z (two rows of Q, copied back), deflation (small z components and
//           close poles, the latter removed by Givens rotations), the roots of the secular
//           equation (secular_roots_host, spread over host threads; large merges on the
//           execution space by default on GPUs), each root recorded as lambda_j = d_orig(j) +
//           tau_j, the representation LAPACK's dlaed4 iterates on;
//   device: the rotations, the Gu-Eisenstat vector z^ and the k x k eigenvector matrix S of
//           diag(d) + rho z z^T (S(i,j) = z^_i / (d_i - lambda_j), d_i - lambda_j recomputed as
//           (d_i - d_orig(j)) - tau_j, as accurate as dlaed4's delta), and the two GEMMs
//           Q1 S1 and Q2 S2 over the non-deflated columns grouped as in LAPACK's dlaed3 (columns
//           living in the top half, in both halves after a rotation, in the bottom half).
// Columns are never sorted inside the tree (each merge writes its k roots, then its deflated
// columns); one gather at the end puts eigenvalues in ascending order.
//
// docs/design/eigh.md ("Stage 3") gives the accuracy argument.
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/views.hpp>
#include <kess/solvers/eigh.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kess::detail::eigh {

/// Host seconds and counts of one tridiag_dc call (diagnostics for benchmarks).
struct TridiagDcStats {
  double host_seconds = 0;    ///< leaves, deflation and secular equations (host)
  std::int64_t merges = 0;
  std::int64_t deflated = 0;  ///< columns deflated over all merges
  std::int64_t rotations = 0;
};


/// What the host decides for one merge of a block of s = n1 + n2 columns.
struct MergePlan {
  int k = 0;                        ///< non-deflated columns (= secular roots)
  int n_top = 0, n_mixed = 0;       ///< of the k compact columns: top-only, then mixed, then bottom-only
  std::vector<int> rot_i, rot_j;    ///< Givens rotations on block columns, in order
  std::vector<double> rot_c, rot_s; ///<   (x_i, x_j) <- (c x_i + s x_j, c x_j - s x_i)
  std::vector<int> gather;          ///< s: compact column c <- block column gather[c] (k roots' poles, then deflated)
  std::vector<double> pole;         ///< k: d_i of the secular equation, ascending
  std::vector<double> weight;       ///< k: z_i (its sign gives z^_i's)
  std::vector<int> row;             ///< k: compact position (row of S) of pole i
  std::vector<int> orig;            ///< k: root j = pole[orig[j]] + tau[j]
  std::vector<double> tau;          ///< k
  std::vector<double> explicit_s;   ///< k x k S for k <= 2 (empty otherwise)
  std::vector<double> values;       ///< s: eigenvalues of the merged block in its new column order
  std::int64_t rotations = 0;
  double rho = 0;                   ///< of the secular equation 1 + rho sum z_i^2 / (d_i - lambda)
  bool roots_pending = false;       ///< the k roots (orig, tau, values[0:k]) are left to the caller
};

/// Host part of a merge: D (s current eigenvalues of the two halves, in their column order), z
/// (the rank-one vector as read from Q: last row of Q1, first row of Q2), beta (the off-diagonal
/// torn out), n1 (size of the top half).
/// With k >= roots_min (and k >= 3) the secular equations are not solved: roots_pending is set.
MergePlan merge_plan(const std::vector<double>& D, std::vector<double> z, int n1, double beta,
                          int threads, int roots_min = 0);

/// f(tau) = 1 + rho sum_i z_i^2 / ((d_i - d_o) - tau), the secular function at lambda = d_o + tau
/// with the differences formed as dlaed4 forms them, and its derivative
/// df/dtau = rho sum_i z_i^2 / ((d_i - d_o) - tau)^2 into df.
KOKKOS_INLINE_FUNCTION double secular_fd(int k, const double* d, const double* z, double rho,
                                            double d_o, double tau, double& df) {
  double s = 0, ds = 0;
  for (int i = 0; i < k; ++i) {
    const double inv = 1.0 / ((d[i] - d_o) - tau), t = z[i] * z[i] * inv;
    s += t;
    ds += t * inv;
  }
  df = rho * ds;
  return 1.0 + rho * s;
}

/// Whether a secular functor also offers f(d_o, tau, df, bound), bound >= |f|'s rounding.
template <class F, class = void>
struct secular_bounds_rounding : std::false_type {};
template <class F>
struct secular_bounds_rounding<F, std::void_t<decltype(std::declval<const F&>()(
                                      0.0, 0.0, std::declval<double&>(), std::declval<double&>()))>>
    : std::true_type {};

/// Root j (0-based) of 1 + rho sum z_i^2 / (d_i - lambda) = 0 (d ascending and distinct, z_i != 0,
/// rho > 0, zz = sum z_i^2) as lambda = d[orig] + tau, orig the nearer pole (chosen by the sign of
/// f half-way between d_j and d_j+1; j = k-1: orig = k-1, tau in (0, rho zz]). tau is pinned to
/// adjacent doubles with full relative accuracy of d_i - lambda = (d_i - d_orig) - tau as in
/// dlaed4, and the end with the smaller |f| is returned. The search keeps a bracket over the bit
/// patterns of u = |tau| (doubles of one sign are ordered like their bits) and picks each trial
/// point from a model of f as in dlaed4's fixed-weight method (u = |tau|, D the distance to the
/// other pole on the root's side, R = rho z_other^2 exact):
///     f(u) ~ c - S / u + R / (D - u),   c and S fitted to f and f' at the last point,
/// whose root in (0, D) is that of c u^2 - (c D + S + R) u + S D (the last root: S / c); the
/// loop below says how trial points follow from it and when bisection of the bit patterns takes
/// over. About 10 evaluations a root (bisection alone: up to 64), never more than 48 + 64.
/// `f(d_o, tau, df)` returns the secular function and sets df = df/dtau (secular_fd, or a
/// team-parallel sum of it); every caller of one root takes the same decisions. A functor that
/// also offers f(d_o, tau, df, bound) (secular_bounds_rounding: the host's, host/secular.cpp)
/// ends the search instead at the first point where |f| <= bound, taking the model's estimates
/// themselves as trial points and halving brackets wider than a factor of two by value: 4-6
/// evaluations a root, as dlaed4 stops.
template <class F>
KOKKOS_INLINE_FUNCTION void secular_root_with(int k, int j, const double* d, const double* z,
                                                 double rho, double zz, const F& secular,
                                                 int& orig, double& tau) {
  double lo, hi;  // f(d_o + lo) < 0 <= f(d_o + hi)
  int other = -1;  // the neighbouring pole on the root's side, at distance D
  double D = 0, u_last = 0, f_last = 0, df_last = 0;  // the last evaluation (df_last = df/dtau)
  if (j < k - 1) {
    const double half = 0.5 * (d[j + 1] - d[j]);
    const double fh = secular(d[j], half, df_last);
    if (fh >= 0) {
      orig = j;
      other = j + 1;
      lo = 0;
      hi = half;
    } else {
      orig = j + 1;
      other = j;
      // The midpoint seen from d_j+1, as dlaed4 takes it: not (d_j + half) - d_j+1, whose
      // rounding of d_j + half (an ulp of d) can cut off a root within that ulp of the midpoint.
      lo = -half;
      hi = 0;
    }
    D = d[j + 1] - d[j];
    u_last = hi > 0 ? hi : -lo;  // f there, up to the rounding of the other origin
    f_last = fh;
  } else {
    orig = j;
    lo = 0;
    hi = rho * zz;
  }
  const double d_o = d[orig];
  constexpr bool kStops = secular_bounds_rounding<F>::value;
  double f_hi = 0;  // the last root: f at the bracket's outer end, for the first model step
  if (other < 0) {
    f_hi = secular(d_o, hi, df_last);
    if (f_hi == 0) {
      tau = hi;
      return;
    }
    u_last = hi;
    f_last = f_hi;
  }
  const bool neg = hi <= 0;  // tau = -u, u in [0, -lo]: f decreases in u
  const double R = other >= 0 ? rho * z[other] * z[other] : 0.0;
  union Bits {
    double x;
    std::int64_t i;
  };
  // The model's root from the last evaluation; false where it has none worth trying. In u, the
  // negative side is the mirror image: -f has the same form as f on the positive side.
  auto model = [&](double& ustar) {
    const double u = u_last;
    if (!(u > 0) || (other >= 0 && !(u < D))) return false;
    const double g = neg ? -f_last : f_last;  // increasing in u
    const double q = other >= 0 ? R / (D - u) : 0.0;
    double S = (df_last - q / (D - u)) * u * u;  // df/du of the rest = df/dtau either side
    if (!(S > 0)) return false;
    const double c = g + S / u - q;
    if (other < 0) {
      if (!(c > 0)) return false;
      ustar = S / c;
    } else {
      const double B = c * D + S + R;
      double disc = B * B - 4 * c * S * D;
      disc = disc > 0 ? disc : 0.0;
      const double sq = kx::sqrt(disc);
      ustar = B >= 0 ? 2 * S * D / (B + sq) : (B - sq) / (2 * c);
    }
    return kx::isfinite(ustar) && ustar > 0;
  };
  Bits a, b;
  a.x = neg ? 0.0 : lo;   // the end at the pole (|f| infinite)
  b.x = neg ? -lo : hi;
  double fa = neg ? 1.0 : -1.0, fb = other < 0 ? f_hi : (neg ? -1.0 : 1.0);  // signs until evaluated
  // The evaluation so far (half-way between the poles, or the last root's outer end) is at the
  // b side of the root: last_at_a = false.
  bool fa_known = false, fb_known = other < 0, last_at_a = false;
  // Model steps are taken while they converge (each step at most half the one before, or a few
  // doubles long); the trial point goes past the model's estimate by step / 1024 (one double at
  // least), four times more after each evaluation that stays on the same side of the root.
  // Otherwise, and in brackets of a few doubles, the bit patterns are bisected.
  std::int64_t prev_step = -1;  // < 0: no model step to compare with
  int same_side = 0, model_tries = 0;  // after 48 model tries only bisection: <= 48 + 64 steps
  bool prev_at_a = false;
  while (b.i - a.i > 1) {
    Bits m;
    m.i = a.i + (b.i - a.i) / 2;
    // (with kStops: while the bracket spans more than a factor of two, halve it by value, not by
    // bit pattern, which from the pole's end at u = 0 tries 1e-157, 1e-81, ...)
    if (kStops && b.x > 2 * a.x) m.x = 0.5 * (a.x + b.x);
    double us;
    bool by_model = false;
    if (b.i - a.i > 4 && ++model_tries <= 48 && model(us)) {
      Bits e, l;
      e.x = us;
      l.x = u_last;
      const std::int64_t step = e.i - l.i, abs_step = step < 0 ? -step : step;
      if (prev_step < 0 || (kStops ? abs_step < prev_step : 2 * abs_step <= prev_step) ||
          abs_step <= 64) {
        const int ss = same_side < 5 ? same_side : 5;
        const std::int64_t far = abs_step >> (10 - 2 * ss), least = std::int64_t(1) << (2 * ss);
        std::int64_t trial = e.i + (last_at_a ? 1 : -1) * (kStops ? 0 : (far > least ? far : least));
        // An estimate a few doubles outside the bracket (rounding of f at the last point, next
        // to the root): the double just inside.
        if (trial <= a.i && trial > a.i - 16) trial = a.i + 1;
        if (trial >= b.i && trial < b.i + 16) trial = b.i - 1;
        if (trial > a.i && trial < b.i) {
          m.i = trial;
          by_model = true;
          prev_step = abs_step;
        }
      }
    }
    if (!by_model) prev_step = -1;
    const double t = neg ? -m.x : m.x;
    double df = 0, f = 0;
    if constexpr (kStops) {
      // A host functor that also bounds f's rounding: a point where |f| is under that bound is
      // as good a root as the evaluation can tell apart (dlaed4's test).
      double bound = 0;
      f = secular(d_o, t, df, bound);
      if (kx::fabs(f) <= bound) {
        tau = t;
        return;
      }
    } else {
      f = secular(d_o, t, df);
    }
    if (f == 0) {
      tau = t;
      return;
    }
    // Positive tau: f < 0 means the root is further out; negative tau (u = -tau): f >= 0 means
    // the root is further from the pole.
    prev_at_a = last_at_a;
    last_at_a = (f < 0) != neg;
    same_side = last_at_a == prev_at_a ? same_side + 1 : 0;
    if (last_at_a) {
      a = m;
      fa = f;
      fa_known = true;
    } else {
      b = m;
      fb = f;
      fb_known = true;
    }
    u_last = m.x;
    f_last = f;
    df_last = df;
  }
  double dummy = 0;
  if (!fb_known) fb = secular(d_o, neg ? -b.x : b.x, dummy);
  if (!fa_known && a.x != 0) fa = secular(d_o, neg ? -a.x : a.x, dummy);
  const bool take_a = fa_known || a.x != 0 ? kx::fabs(fa) < kx::fabs(fb) : false;
  tau = take_a ? (neg ? -a.x : a.x) : (neg ? -b.x : b.x);
}

/// secular_root_with one thread's sum.
KOKKOS_INLINE_FUNCTION void secular_root(int k, int j, const double* d, const double* z,
                                            double rho, double zz, int& orig, double& tau) {
  secular_root_with(
      k, j, d, z, rho, zz,
      [&](double d_o, double t, double& df) { return secular_fd(k, d, z, rho, d_o, t, df); },
      orig, tau);
}

/// Eigenpairs of the leaves: for each leaf [off, off + size), dsteqr of (d, e) restricted to it;
/// values into w[off ..], vectors packed column-major (size x size) at packed[offset_of_leaf].
void solve_leaves(const std::vector<int>& off, const std::vector<int>& size,
                     const std::vector<std::int64_t>& packed_at, const std::vector<double>& d,
                     const std::vector<double>& e, double* w, double* packed, int threads);

/// All eigenvalues (ascending, into w: n host doubles) and eigenvectors (into Z: n x n, exec's
/// memory, any layout) of the symmetric tridiagonal matrix with diagonal d (n) and off-diagonal e
/// (n - 1). Throws kess::Error (invalid_argument: sizes, NaN/Inf; no_convergence: a secular
/// equation or leaf that did not converge). Fences `exec`.
template <class ExecSpace>
void tridiag_dc(const ExecSpace& exec, std::vector<double> d, std::vector<double> e, double* w,
                const core::Matrix<ExecSpace>& Z, const TridiagDcTuning& opts = {},
                TridiagDcStats* stats = nullptr);

}  // namespace kess::detail::eigh
