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
      lo = (d[j] + half) - d[j + 1];
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


template <class ExecSpace, class Mat>
void merge_gemm(const ExecSpace& exec, const Mat& A, const Mat& B, const Mat& C) {
  if (C.extent(0) == 0 || C.extent(1) == 0) return;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Mat::memory_space>::accessible) {
    kx::fence(exec, "tridiag_dc::host_gemm");
    core::lapack::gemm('N', 'N', C.extent(0), C.extent(1), A.extent(1), 1.0, A.data(), A.stride(1),
                 B.data(), B.stride(1), 0.0, C.data(), C.stride(1));
  } else {
    core::gemm(exec, "N", "N", 1.0, A, B, 0.0, C);
  }
}


/// All eigenvalues (ascending, into w: n host doubles) and eigenvectors (into Z: n x n, exec's
/// memory, any layout) of the symmetric tridiagonal matrix with diagonal d (n) and off-diagonal e
/// (n - 1). Throws kess::Error (invalid_argument: sizes, NaN/Inf; no_convergence: a secular
/// equation or leaf that did not converge). Fences `exec`.
template <class ExecSpace, class ZView>
void tridiag_dc(const ExecSpace& exec, std::vector<double> d, std::vector<double> e, double* w,
                const ZView& Z, const TridiagDcTuning& opts = {}, TridiagDcStats* stats = nullptr) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename ZView::memory_space>::accessible,
                "tridiag_dc: Z must be accessible from the execution space");
  const char* fn = "tridiag_dc";
  kx::ScopedRegion region("tridiag_dc");
  const int n = static_cast<int>(d.size());
  require_arg(e.size() + 1 == d.size() || (n == 0 && e.empty()), fn,
              "argument 'e' has " + std::to_string(e.size()) + " entries; expected n - 1 = " +
                  std::to_string(n - 1));
  require_arg(Z.extent(0) == std::size_t(n) && Z.extent(1) == std::size_t(n), fn,
              "argument 'Z': " + std::to_string(Z.extent(0)) + " x " + std::to_string(Z.extent(1)) +
                  " does not match n = " + std::to_string(n));
  require_arg(opts.leaf >= 2, fn, "argument 'opts.leaf' = " + std::to_string(opts.leaf) + " must be >= 2");
  double scale = 0;
  for (int i = 0; i < n; ++i) {
    require_arg(std::isfinite(d[i]), fn, "argument 'd': entry " + std::to_string(i) + " is NaN or Inf");
    scale = std::max(scale, std::abs(d[i]));
  }
  for (int i = 0; i + 1 < n; ++i) {
    require_arg(std::isfinite(e[i]), fn, "argument 'e': entry " + std::to_string(i) + " is NaN or Inf");
    scale = std::max(scale, std::abs(e[i]));
  }
  TridiagDcStats st;
  if (n == 0) return;
  Kokkos::Timer host_timer;
  double host_s = 0;
  if (scale == 0) {  // T = 0: eigenvalues 0, Z = I
    for (int i = 0; i < n; ++i) w[i] = 0;
    Kokkos::parallel_for("tridiag_dc::identity", Policy(exec, 0, std::int64_t(n) * n),
                         KOKKOS_LAMBDA(std::int64_t t) { Z(t % n, t / n) = (t % n == t / n) ? 1.0 : 0.0; });
    kx::fence(exec, "tridiag_dc::done");
    if (stats) *stats = st;
    return;
  }
  for (auto& x : d) x /= scale;
  for (auto& x : e) x /= scale;

  // ---- the tree (post-order merges) and Cuppen's tearing ----
  struct Node { int off, size, left, right; };
  std::vector<Node> nodes;
  std::vector<int> leaf_ids, merge_ids;
  std::function<int(int, int)> build = [&](int off, int size) -> int {
    const int id = static_cast<int>(nodes.size());
    nodes.push_back({off, size, -1, -1});
    if (size <= opts.leaf) {
      leaf_ids.push_back(id);
      return id;
    }
    const int n1 = size / 2;
    const int l = build(off, n1);
    const int r = build(off + n1, size - n1);
    nodes[id].left = l;
    nodes[id].right = r;
    merge_ids.push_back(id);
    const double beta = e[off + n1 - 1];
    d[off + n1 - 1] -= std::abs(beta);
    d[off + n1] -= std::abs(beta);
    return id;
  };
  build(0, n);

  // ---- leaves on the host, scattered into the zeroed Q ----
  Mat Q(Kokkos::view_alloc(exec, "tridiag_dc::Q"), n, n);  // zero-initialized
  std::vector<double> values(n);
  {
    std::vector<int> off, size;
    std::vector<std::int64_t> at;
    std::int64_t total = 0;
    for (int id : leaf_ids) {
      off.push_back(nodes[id].off);
      size.push_back(nodes[id].size);
      at.push_back(total);
      total += std::int64_t(nodes[id].size) * nodes[id].size;
    }
    Kokkos::View<double*, Kokkos::HostSpace> packed_h(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "tridiag_dc::leaves_host"), total);
    solve_leaves(off, size, at, d, e, values.data(), packed_h.data(), opts.threads);
    Kokkos::View<std::int64_t*, Kokkos::HostSpace> meta_h("tridiag_dc::leaf_meta_host", 3 * off.size());
    for (std::size_t i = 0; i < off.size(); ++i) {
      meta_h(3 * i) = off[i];
      meta_h(3 * i + 1) = size[i];
      meta_h(3 * i + 2) = at[i];
    }
    auto packed = Kokkos::create_mirror_view_and_copy(Mem(), packed_h);
    auto meta = Kokkos::create_mirror_view_and_copy(Mem(), meta_h);
    const int nleaves = static_cast<int>(off.size());
    Kokkos::parallel_for(
        "tridiag_dc::scatter_leaves",
        Kokkos::TeamPolicy<ExecSpace>(exec, nleaves, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecSpace>::member_type& team) {
          const int l = team.league_rank();
          const int o = static_cast<int>(meta(3 * l)), s = static_cast<int>(meta(3 * l + 1));
          const std::int64_t a = meta(3 * l + 2);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, s * s), [&](int t) {
            Q(o + t % s, o + t / s) = packed(a + t);
          });
        });
    host_s += host_timer.seconds();
  }

  // ---- merges ----
  const int roots_min = opts.exec_secular_min >= 0
                            ? opts.exec_secular_min
                            : (std::is_same<Mem, Kokkos::HostSpace>::value ? 0 : 256);
  int maxs = 0;
  for (int id : merge_ids) maxs = std::max(maxs, nodes[id].size);
  Kokkos::View<double*, Mem> work1(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::Qc"),
                                   std::size_t(std::max(maxs, 1)) * std::max(maxs, 1));
  Kokkos::View<double*, Mem> work2(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::S"),
                                   std::size_t(std::max(maxs, 1)) * std::max(maxs, 1));

  // Merges one tree level at a time (the merges of a level touch disjoint column ranges): the
  // rank-one vectors of the whole level come to the host in one copy, the host plans them (spread
  // over host threads where they are small), their parameters go back in one copy, the device
  // solves the large merges' secular equations and their roots come back in one more copy; then
  // every merge's kernels and GEMMs are enqueued without waiting. Three synchronizations a level
  // instead of two or three a merge (a 16384 x 16384 problem has 511 merges on 9 levels).
  std::vector<int> depth(nodes.size(), 0);
  for (std::size_t id = 0; id < nodes.size(); ++id)  // parents precede their children in `nodes`
    if (nodes[id].left >= 0) depth[nodes[id].left] = depth[nodes[id].right] = depth[id] + 1;
  int max_depth = 0;
  for (int id : merge_ids) max_depth = std::max(max_depth, depth[id]);
  std::vector<std::vector<int>> levels(max_depth + 1);
  for (int id : merge_ids) levels[depth[id]].push_back(id);
  // Per-merge parameter blocks at offsets bd (doubles) and bi (ints):
  // doubles [pole k | weight k | tau k | rot_c nrot | rot_s nrot | explicit S k*k when k <= 2],
  // ints [gather s | row k | orig k | rot_i nrot | rot_j nrot]; z and the roots in zlev at o.
  Kokkos::View<double*, Mem> zlev(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::z_level"), n);
  auto zlev_h = Kokkos::create_mirror_view(zlev);
  Kokkos::View<double*, Mem> pdl(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::params_level"),
                                 6 * std::size_t(n) + 8);
  Kokkos::View<int*, Mem> pil(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::iparams_level"),
                              6 * std::size_t(n) + 8);
  auto pdl_h = Kokkos::create_mirror_view(pdl);
  auto pil_h = Kokkos::create_mirror_view(pil);
  for (int lev = max_depth; lev >= 0; --lev) {
    const std::vector<int>& ids = levels[lev];
    if (ids.empty()) continue;
    const int count = static_cast<int>(ids.size());
    // z of every merge: last row of Q1 and first row of Q2 (device -> host, one copy).
    for (int id : ids) {
      const int o = nodes[id].off, s = nodes[id].size, n1 = nodes[nodes[id].left].size;
      Kokkos::parallel_for(
          "tridiag_dc::extract_z", Policy(exec, 0, s), KOKKOS_LAMBDA(std::int64_t c) {
            zlev(o + c) = c < n1 ? Q(o + n1 - 1, o + c) : Q(o + n1, o + c);
          });
    }
    Kokkos::deep_copy(exec, zlev_h, zlev);
    kx::fence(exec, "tridiag_dc::z_to_host");
    host_timer.reset();
    std::vector<MergePlan> plans(count);
    int smax = 0;
    for (int id : ids) smax = std::max(smax, nodes[id].size);
    // Small merges (k < 256 roots: one host thread each) spread over the host threads; a level of
    // large ones plans them in turn, each with every thread.
    core::detail::host_parallel_for(count, smax < 256 ? opts.threads : 1, [&](int q) {
      const Node& nd = nodes[ids[q]];
      const int o = nd.off, s = nd.size, n1 = nodes[nd.left].size;
      std::vector<double> Dv(values.begin() + o, values.begin() + o + s);
      std::vector<double> zv(zlev_h.data() + o, zlev_h.data() + o + s);
      plans[q] = merge_plan(Dv, std::move(zv), n1, e[o + n1 - 1], opts.threads, roots_min);
    });
    std::vector<std::size_t> bd(count), bi(count);
    std::size_t nd_used = 0, ni_used = 0;
    bool pending = false;
    for (int q = 0; q < count; ++q) {
      const auto& plan = plans[q];
      const int s = nodes[ids[q]].size, k = plan.k, nrot = static_cast<int>(plan.rot_i.size());
      ++st.merges;
      st.deflated += s - k;
      st.rotations += plan.rotations;
      bd[q] = nd_used;
      bi[q] = ni_used;
      nd_used += 3 * k + 2 * nrot + plan.explicit_s.size();
      ni_used += s + 2 * k + 2 * nrot;
      pending = pending || plan.roots_pending;
    }
    if (nd_used > pdl_h.extent(0)) {  // explicit S blocks (k <= 2) can exceed 6n in principle
      pdl = Kokkos::View<double*, Mem>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::params_level"), nd_used);
      pdl_h = Kokkos::create_mirror_view(pdl);
    }
    for (int q = 0; q < count; ++q) {
      const auto& plan = plans[q];
      const int s = nodes[ids[q]].size, k = plan.k, nrot = static_cast<int>(plan.rot_i.size());
      double* dp = pdl_h.data() + bd[q];
      int* ip = pil_h.data() + bi[q];
      for (int i = 0; i < k; ++i) {
        dp[i] = plan.pole[i];
        dp[k + i] = plan.weight[i];
        dp[2 * k + i] = plan.tau[i];
        ip[s + i] = plan.row[i];
        ip[s + k + i] = plan.orig[i];
      }
      for (int r = 0; r < nrot; ++r) {
        dp[3 * k + r] = plan.rot_c[r];
        dp[3 * k + nrot + r] = plan.rot_s[r];
        ip[s + 2 * k + r] = plan.rot_i[r];
        ip[s + 2 * k + nrot + r] = plan.rot_j[r];
      }
      std::copy(plan.explicit_s.begin(), plan.explicit_s.end(), dp + 3 * k + 2 * nrot);
      for (int c = 0; c < s; ++c) ip[c] = plan.gather[c];
    }
    host_s += host_timer.seconds();
    if (nd_used > 0)
      Kokkos::deep_copy(exec, Kokkos::subview(pdl, Kokkos::make_pair(std::size_t(0), nd_used)),
                        Kokkos::subview(pdl_h, Kokkos::make_pair(std::size_t(0), nd_used)));
    Kokkos::deep_copy(exec, Kokkos::subview(pil, Kokkos::make_pair(std::size_t(0), ni_used)),
                      Kokkos::subview(pil_h, Kokkos::make_pair(std::size_t(0), ni_used)));
    if (pending) {
      // The large merges' secular equations on exec, one team a root (every evaluation of the
      // secular function, a k-term sum, is a team reduction): tau and orig into the parameter
      // block (where the host would have put them), lambda_j into zlev for the host's later merges.
      using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;
      const int ts = std::is_same<Mem, Kokkos::HostSpace>::value ? 1 : 64;
      for (int q = 0; q < count; ++q) {
        const auto& plan = plans[q];
        if (!plan.roots_pending) continue;
        const int o = nodes[ids[q]].off, s = nodes[ids[q]].size, k = plan.k;
        double zz = 0;
        for (int i = 0; i < k; ++i) zz += plan.weight[i] * plan.weight[i];
        const double rho = plan.rho;
        const std::size_t b_d = bd[q], b_i = bi[q];
        const auto pd = pdl;
        const auto pi = pil;
        Kokkos::parallel_for(
            "tridiag_dc::secular", TeamPolicy(exec, k, ts),
            KOKKOS_LAMBDA(const typename TeamPolicy::member_type& tm) {
              const int j = tm.league_rank();
              const double* dp = pd.data() + b_d;
              const double* zp = dp + k;
              // f and df/dtau in one team reduction (a complex number carries the two sums).
              auto secular = [&](double d_o, double t, double& df) {
                Kokkos::complex<double> sum(0.0, 0.0);
                Kokkos::parallel_reduce(
                    Kokkos::TeamThreadRange(tm, k),
                    [&](int i, Kokkos::complex<double>& acc) {
                      const double inv = 1.0 / ((dp[i] - d_o) - t), v = zp[i] * zp[i] * inv;
                      acc += Kokkos::complex<double>(v, v * inv);
                    },
                    sum);
                df = rho * sum.imag();
                return 1.0 + rho * sum.real();
              };
              int org = j;
              double t = 0;
              secular_root_with(k, j, dp, zp, rho, zz, secular, org, t);
              Kokkos::single(Kokkos::PerTeam(tm), [&]() {
                pd(b_d + 2 * k + j) = t;
                pi(b_i + s + k + j) = org;
                zlev(o + j) = pd(b_d + org) + t;
              });
            });
      }
      Kokkos::deep_copy(exec, zlev_h, zlev);
      kx::fence(exec, "tridiag_dc::roots_to_host");
      for (int q = 0; q < count; ++q)
        if (plans[q].roots_pending)
          for (int j = 0; j < plans[q].k; ++j) plans[q].values[j] = zlev_h(nodes[ids[q]].off + j);
    }
    for (int q = 0; q < count; ++q)
      std::copy(plans[q].values.begin(), plans[q].values.end(), values.begin() + nodes[ids[q]].off);

    // Every merge's update, enqueued (the work buffers are reused in stream order).
    for (int q = 0; q < count; ++q) {
      const auto& plan = plans[q];
      const Node& nd = nodes[ids[q]];
      const int o = nd.off, s = nd.size, n1 = nodes[nd.left].size;
      const int k = plan.k, nrot = static_cast<int>(plan.rot_i.size());
      const std::size_t b_d = bd[q], b_i = bi[q];
      const auto pd = pdl;
      const auto pi = pil;
      auto Qb = Kokkos::subview(Q, Kokkos::make_pair(o, o + s), Kokkos::make_pair(o, o + s));
      if (nrot > 0) {
        const std::size_t rc = b_d + 3 * k, ri = b_i + s + 2 * k;
        Kokkos::parallel_for(
            "tridiag_dc::rotate", Policy(exec, 0, s), KOKKOS_LAMBDA(std::int64_t row) {
              for (int r = 0; r < nrot; ++r) {
                const int a = pi(ri + r), b = pi(ri + nrot + r);
                const double c = pd(rc + r), sn = pd(rc + nrot + r);
                const double x = Qb(row, a), y = Qb(row, b);
                Qb(row, a) = c * x + sn * y;
                Qb(row, b) = c * y - sn * x;
              }
            });
      }
      UMat Qc(work1.data(), s, s);
      Kokkos::parallel_for(
          "tridiag_dc::gather", Policy(exec, 0, std::int64_t(s) * s), KOKKOS_LAMBDA(std::int64_t t) {
            const int r = static_cast<int>(t % s), c = static_cast<int>(t / s);
            Qc(r, c) = Qb(r, pi(b_i + c));
          });
      if (k > 0) {
        UMat S(work2.data(), k, k);
        if (!plan.explicit_s.empty()) {
          const std::size_t ps = b_d + 3 * k + 2 * nrot;
          Kokkos::parallel_for(
              "tridiag_dc::small_s", Policy(exec, 0, std::int64_t(k) * k),
              KOKKOS_LAMBDA(std::int64_t t) { S(t % k, t / k) = pd(ps + t); });
        } else {
          // z^ (Gu-Eisenstat) into zlev(o ..), then S column by column.
          const std::size_t pw = b_d + k, pt = b_d + 2 * k, prow = b_i + s, porig = b_i + s + k;
          // One team a pole: the k - 1 ratios' product as a team reduction (a thread's factors are
          // spread over the whole range of j, as mixed in size as the sequential product's).
          Kokkos::parallel_for(
              "tridiag_dc::zhat", Kokkos::TeamPolicy<ExecSpace>(exec, k, Kokkos::AUTO),
              KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecSpace>::member_type& team) {
                const int i = team.league_rank();
                const double di = pd(b_d + i);
                auto delta = [&](int j) { return (di - pd(b_d + pi(porig + j))) - pd(pt + j); };
                double prod = 1.0;
                Kokkos::parallel_reduce(
                    Kokkos::TeamThreadRange(team, k),
                    [&](int j, double& p) {
                      if (j != i) p *= delta(j) / (di - pd(b_d + j));
                    },
                    Kokkos::Prod<double>(prod));
                const double wv = delta(i) * prod;
                const double mag = kx::sqrt(wv < 0 ? -wv : 0.0);
                Kokkos::single(Kokkos::PerTeam(team), [&]() { zlev(o + i) = pd(pw + i) < 0 ? -mag : mag; });
              });
          Kokkos::parallel_for(
              "tridiag_dc::vectors", Kokkos::TeamPolicy<ExecSpace>(exec, k, Kokkos::AUTO),
              KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecSpace>::member_type& team) {
                const int j = team.league_rank();
                const double dorig = pd(b_d + pi(porig + j)), tj = pd(pt + j);
                double ss = 0;
                Kokkos::parallel_reduce(
                    Kokkos::TeamThreadRange(team, k),
                    [&](int i, double& acc) {
                      const double v = zlev(o + i) / ((pd(b_d + i) - dorig) - tj);
                      acc += v * v;
                    },
                    ss);
                const double inv = 1.0 / kx::sqrt(ss);
                Kokkos::parallel_for(Kokkos::TeamThreadRange(team, k), [&](int i) {
                  S(pi(prow + i), j) = zlev(o + i) / ((pd(b_d + i) - dorig) - tj) * inv;
                });
              });
        }
        // Out(top) = Qc(top, top|mixed) S(top|mixed, :); Out(bottom) = Qc(bottom, mixed|bottom) S(...).
        const int ntm = plan.n_top + plan.n_mixed, nmb = k - plan.n_top;
        auto out = Kokkos::subview(Q, Kokkos::make_pair(o, o + s), Kokkos::make_pair(o, o + k));
        const auto rows_top = Kokkos::make_pair(0, n1), rows_bot = Kokkos::make_pair(n1, s);
        if (ntm > 0)
          merge_gemm(exec, UMat(Kokkos::subview(Qc, rows_top, Kokkos::make_pair(0, ntm))),
                                UMat(Kokkos::subview(S, Kokkos::make_pair(0, ntm), Kokkos::ALL)),
                                UMat(Kokkos::subview(out, rows_top, Kokkos::ALL)));
        else
          Kokkos::deep_copy(exec, Kokkos::subview(out, rows_top, Kokkos::ALL), 0.0);
        if (nmb > 0)
          merge_gemm(exec, UMat(Kokkos::subview(Qc, rows_bot, Kokkos::make_pair(plan.n_top, k))),
                                UMat(Kokkos::subview(S, Kokkos::make_pair(plan.n_top, k), Kokkos::ALL)),
                                UMat(Kokkos::subview(out, rows_bot, Kokkos::ALL)));
        else
          Kokkos::deep_copy(exec, Kokkos::subview(out, rows_bot, Kokkos::ALL), 0.0);
      }
      if (k < s) {
        Kokkos::parallel_for(
            "tridiag_dc::copy_deflated", Policy(exec, 0, std::int64_t(s) * (s - k)),
            KOKKOS_LAMBDA(std::int64_t t) {
              const int r = static_cast<int>(t % s), c = k + static_cast<int>(t / s);
              Qb(r, c) = Qc(r, c);
            });
      }
    }
  }

  // ---- ascending order ----
  host_timer.reset();
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return values[a] < values[b]; });
  Kokkos::View<int*, Kokkos::HostSpace> perm_h("tridiag_dc::perm_host", n);
  for (int i = 0; i < n; ++i) {
    perm_h(i) = perm[i];
    w[i] = values[perm[i]] * scale;
  }
  host_s += host_timer.seconds();
  auto permd = Kokkos::create_mirror_view_and_copy(Mem(), perm_h);
  Kokkos::parallel_for(
      "tridiag_dc::sort_columns", Policy(exec, 0, std::int64_t(n) * n), KOKKOS_LAMBDA(std::int64_t t) {
        Z(t % n, t / n) = Q(t % n, permd(t / n));
      });
  kx::fence(exec, "tridiag_dc::done");
  st.host_seconds = host_s;
  if (stats) *stats = st;
}

}  // namespace kess::detail::eigh
