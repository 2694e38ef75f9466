// The body of kess::eigh (solvers/kess/solvers/eigh.hpp): input checks, the choice of path and
// band width, the five stages of the two-stage path (Yu et al. 2020, Eq. 6a-6e) or the one-stage
// path (LAPACK dsytrd + the same stage 3 + Q by blocks on the host), and the generalized problem's
// reduction. Compiled once per enabled execution space (eigh/host/instantiate_*.cpp,
// eigh/cuda/instantiate.cpp); docs/design/eigh.md describes the algorithm.
#pragma once

#include <kess/solvers/eigh.hpp>
#include <kess/solvers/eigh/detail/band_backtransform_impl.hpp>
#include <kess/solvers/eigh/detail/band_reduce_impl.hpp>
#include <kess/solvers/eigh/detail/bulge_chase_impl.hpp>
#include <kess/solvers/eigh/detail/hh_chase_impl.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/linalg/cholesky.hpp>
#include <kess/core/base/error.hpp>
#include <kess/solvers/eigh/detail/hh_chase_apply.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh/detail/tridiag_dc_impl.hpp>
#include <kess/solvers/eigh/detail/one_stage.hpp>
#include <kess/solvers/eigh/detail/tridiag_split.hpp>
#include <kess/solvers/eigh/detail/tridiagonal.hpp>
#include <kess/core/kokkos/views.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace kess::detail::eigh {

/// Automatic band half-width for an n x n problem (host: CPU defaults; else GPU defaults), with
/// the reason in words.
int auto_band_width(std::int64_t n, bool host, std::string* reason = nullptr);

template <class ExecSpace>
constexpr bool is_host() {
  return std::is_same<typename ExecSpace::memory_space, Kokkos::HostSpace>::value;
}

/// W = (A + A^T) / 2 for the n x n A on exec's memory; W may be A itself (each pair (i, j),
/// (j, i) by the work item of its lower entry).
template <class ExecSpace, class WView, class AView>
void symmetrize(const ExecSpace& exec, const WView& W, const AView& A) {
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  const std::int64_t n = A.extent(0);
  Kokkos::parallel_for(
      "kess::eigh::symmetrize", Policy(exec, 0, n * n), KOKKOS_LAMBDA(std::int64_t k) {
        const std::int64_t i = k % n, j = k / n;
        if (i < j) return;
        const double s = 0.5 * (A(i, j) + A(j, i));
        W(i, j) = s;
        W(j, i) = s;
      });
}

/// Shape, NaN/Inf and symmetry checks of the square matrix A; returns a symmetrized work matrix:
/// A itself (A_writable), symmetrized in place, when `overwrite`, A is writable and has no padding
/// between its columns (A's entries are read once to check them before any is written, so errors
/// report A's own values), else a copy. `lower_only`: a copy on the host needs just its lower
/// triangle (dsytrd('L') of the one-stage path reads no other entry): the strictly upper tiles
/// are neither written nor touched.
template <class ExecSpace>
core::Matrix<ExecSpace> checked_copy(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                                     const core::Matrix<ExecSpace>& A_writable, const char* fn,
                                     const char* arg, bool check, double tol,
                                     bool overwrite = false, bool lower_only = false) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  const std::int64_t n = A.extent(0);
  require_arg(A.extent(0) == A.extent(1), fn,
              std::string("argument '") + arg + "': " + std::to_string(A.extent(0)) + " x " +
                  std::to_string(A.extent(1)) + " is not square");
  require_arg(n < (std::int64_t(1) << 31), fn, std::string("argument '") + arg + "': too large");
  Mat W;
  bool in_place = false;
  if (overwrite && A_writable.data() != nullptr && A_writable.data() == A.data() &&
      (n <= 1 || std::int64_t(A.stride(1)) == n)) {
    W = Mat(A_writable.data(), n, n);
    in_place = true;
  }
  if (!in_place)
    W = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::eigh::A_work"), n, n);
  if (n == 0) return W;
  const std::int64_t nn = n * n;
  std::int64_t first_bad = nn;
  double amax = 0;
  using Loc = Kokkos::MaxLoc<double, std::int64_t>;
  typename Loc::value_type worst;
  worst.val = 0;
  worst.loc = 0;
  // The errors, once first_bad, amax and worst are known (A still as given).
  const auto report = [&] {
    if (!check) return;
    // (the Min reducer starts from the largest int64, not from nn)
    require_arg(first_bad >= nn, fn,
                std::string("argument '") + arg + "': entry (" + std::to_string(first_bad % n) +
                    ", " + std::to_string(first_bad / n) + ") is NaN or Inf");
    if (!(worst.val <= tol * amax)) {
      const std::int64_t i = worst.loc % n, j = worst.loc / n;
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);  // error path only
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "argument '%s' is not symmetric: worst pair (%lld, %lld) = %.17g vs (%lld, "
                    "%lld) = %.17g, |difference| = %.3g > %.3g * max|%s| = %.3g",
                    arg, (long long)i, (long long)j, double(h(i, j)), (long long)j, (long long)i,
                    double(h(j, i)), worst.val, tol, arg, tol * amax);
      throw Error(ErrorKind::not_symmetric, fn, buf);
    }
  };
  if constexpr (is_host<ExecSpace>()) {
    // Host: one pass over pairs of 64 x 64 tiles, each transposed through a local buffer (several
    // times faster than a flat index with a 64-bit division per entry and a stride-n partner).
    // Each tile pair writes its own max|a| (inf when an entry is not finite) and max|a - a^T|;
    // the locations are searched again only on the error path. In place: a pass that only
    // checks, then one that writes the tile pairs that are not exactly symmetric (none for most
    // callers' matrices). A lower-only copy skips the upper tiles' writes and most of their pages
    // (n = 4000: 48 of 128 MB never touched).
    constexpr int tb = 64;
    const bool upper = in_place || !lower_only;
    const int nt = int((n + tb - 1) / tb);
    std::vector<double> tile_amax(std::size_t(nt) * nt, 0.0), tile_dmax(std::size_t(nt) * nt, 0.0);
    const auto tile_pair = [&](int t, bool measure, bool write) {
      const int ti = t % nt, tj = t / nt;
      if (ti < tj) return;  // each pair of tiles once, from the lower one
      const std::int64_t i0 = std::int64_t(ti) * tb, j0 = std::int64_t(tj) * tb;
      const int mi = int(std::min<std::int64_t>(tb, n - i0)), mj = int(std::min<std::int64_t>(tb, n - j0));
      double y[tb * tb], w[tb * tb];  // y(i, j) = A(j0 + j, i0 + i); w = the symmetrized tile
      for (int i = 0; i < mi; ++i)
        for (int j = 0; j < mj; ++j) y[j * tb + i] = A(j0 + j, i0 + i);
      double am = 0, dm = 0;
      bool finite = true;
      for (int j = 0; j < mj; ++j)
        for (int i = 0; i < mi; ++i) {
          const double a = A(i0 + i, j0 + j), at = y[j * tb + i];
          if (measure) {
            const double fa = std::fabs(a), fat = std::fabs(at), d = std::fabs(a - at);
            finite = finite && fa <= DBL_MAX && fat <= DBL_MAX;
            am = fa > am ? fa : am;
            am = fat > am ? fat : am;
            dm = d > dm ? d : dm;
          }
          if (write) {
            const double sym = 0.5 * (a + at);
            W(i0 + i, j0 + j) = sym;
            w[i * tb + j] = sym;
          }
        }
      if (write && upper)  // (a diagonal tile is whole after the loop above)
        for (int i = 0; i < mi; ++i)
          for (int j = 0; j < mj; ++j) W(j0 + j, i0 + i) = w[i * tb + j];
      if (measure) {
        tile_amax[t] = finite ? am : HUGE_VAL;
        tile_dmax[t] = dm;
      }
    };
    // On host backends the pass (and the first touch of W) runs over kess's host threads
    // (Kokkos::Serial would keep it on one core).
    const auto pass = [&](bool measure, bool write) {
      // (writing only: just the tile pairs that are not exactly symmetric already)
      const auto one = [&](int t) {
        if (measure || tile_dmax[t] > 0) tile_pair(t, measure, write);
      };
      if (!core::detail::host_backend_for<ExecSpace>(
              nt * nt, tb * tb, [&](std::int64_t t) { one(static_cast<int>(t)); }))
        Kokkos::parallel_for("kess::eigh::symmetrize",
                             Kokkos::RangePolicy<ExecSpace>(exec, 0, nt * nt), one);
      kx::fence(exec, "kess::eigh::symmetrize");
    };
    pass(true, !in_place);
    for (std::size_t t = 0; t < tile_amax.size(); ++t) {
      amax = std::max(amax, tile_amax[t]);
      worst.val = std::max(worst.val, tile_dmax[t]);
    }
    if (check && !(amax <= DBL_MAX)) {  // error path: the first entry that is not finite
      for (std::int64_t k = 0; k < nn && first_bad == nn; ++k)
        if (!std::isfinite(A(k % n, k / n))) first_bad = k;
    } else if (check && !(worst.val <= tol * amax)) {  // error path: the worst pair
      worst.val = -1;
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = j + 1; i < n; ++i)
          if (std::fabs(A(i, j) - A(j, i)) > worst.val) {
            worst.val = std::fabs(A(i, j) - A(j, i));
            worst.loc = j * n + i;
          }
    }
    report();
    if (in_place) pass(false, true);
  } else {
    using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
    if (check) {
      Kokkos::parallel_reduce(
          "kess::eigh::check_finite", Policy(exec, 0, nn),
          KOKKOS_LAMBDA(std::int64_t k, std::int64_t & f) {
            if (!kx::isfinite(A(k % n, k / n)) && k < f) f = k;
          },
          Kokkos::Min<std::int64_t>(first_bad));
      Kokkos::parallel_reduce(
          "kess::eigh::check_norm", Policy(exec, 0, nn),
          KOKKOS_LAMBDA(std::int64_t k, double& m) {
            const double a = kx::fabs(A(k % n, k / n));
            if (a > m) m = a;
          },
          Kokkos::Max<double>(amax));
      Kokkos::parallel_reduce(
          "kess::eigh::check_symmetry", Policy(exec, 0, nn),
          KOKKOS_LAMBDA(std::int64_t k, typename Loc::value_type & r) {
            const std::int64_t i = k % n, j = k / n;
            if (i > j) {
              const double d = kx::fabs(A(i, j) - A(j, i));
              if (d > r.val) {
                r.val = d;
                r.loc = k;
              }
            }
          },
          Loc(worst));
    }
    report();
    if (in_place)
      symmetrize(exec, W, A);
    else  // coalesced writes
      Kokkos::parallel_for(
          "kess::eigh::symmetrize", Policy(exec, 0, nn), KOKKOS_LAMBDA(std::int64_t k) {
            const std::int64_t i = k % n, j = k / n;
            W(i, j) = 0.5 * (A(i, j) + A(j, i));
          });
  }
  return W;
}

/// LAPACK's drivers' scaling (dsyevx): a matrix whose largest entry lies outside [sqrt(safmin /
/// eps), min(sqrt(eps / safmin), safmin^-1/4)] is multiplied by a power of two into that range before the reductions
/// (their norms, the tridiagonal's splitting test and the secular equation would underflow or
/// overflow), and the eigenvalues are divided by it afterwards. W's lower triangle is read (the
/// host one-stage path's copy has no other); all of W is scaled. Returns the factor (1: none).
template <class ExecSpace, class Mat>
double scale_into_safe_range(const ExecSpace& exec, const Mat& W) {
  const std::int64_t n = W.extent(0), nn = n * n;
  if (nn == 0) return 1.0;
  double amax = 0;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_reduce(
      "kess::eigh::max_abs", Policy(exec, 0, nn),
      KOKKOS_LAMBDA(std::int64_t k, double& m) {
        const std::int64_t i = k % n, j = k / n;
        const double a = i >= j ? kx::fabs(W(i, j)) : 0.0;
        if (a > m) m = a;
      },
      Kokkos::Max<double>(amax));
  // (rmax as dsyevx and dsyevr: the subsets' inverse iteration needs the smaller bound)
  const double smlnum = DBL_MIN / DBL_EPSILON, rmin = std::sqrt(smlnum),
               rmax = std::min(std::sqrt(1 / smlnum), 1 / std::sqrt(std::sqrt(DBL_MIN)));
  if (!(amax > 0) || (amax >= rmin && amax <= rmax)) return 1.0;
  // the power of two that brings amax to about rmin (or rmax): exact, no rounding of W
  const double sigma = std::ldexp(1.0, std::ilogb(amax < rmin ? rmin : rmax) - std::ilogb(amax));
  Kokkos::parallel_for(
      "kess::eigh::scale", Policy(exec, 0, nn),
      KOKKOS_LAMBDA(std::int64_t k) { W(k % n, k / n) *= sigma; });
  return sigma;
}

/// The eigenvalues of the scaled matrix back to those of the caller's (scale_into_safe_range).
template <class Result>
void unscale_eigenvalues(Result& res, double sigma) {
  if (sigma == 1.0) return;
  for (std::size_t i = 0; i < res.eigenvalues.extent(0); ++i) res.eigenvalues(i) /= sigma;
}

/// The path eigh takes (EighOptions::method resolved), and why, in *reason.
inline EighMethod choose_method(const EighOptions& opts, int n, int nev, bool host_memory,
                              std::string* reason = nullptr) {
  // On CPUs the one-stage path (dsytrd: half of its flops in memory-bound symv) wins while the
  // two-stage path's extra back-transformation (stage 4) costs more than it saves; with a subset of
  // at most n/4 vectors of a large matrix (n >= 3000) the two-stage path is faster
  // (docs/design/eigh.md, docs/performance/eigh.md).
  const bool vec = opts.vectors && nev > 0;
  const bool host_subset = vec && std::int64_t(nev) * 4 <= n && n >= 3000;
  if (reason)
    *reason = opts.method != EighMethod::automatic ? "as asked"
              : !host_memory ? "automatic: device memory, where two-stage is the faster path"
              : host_subset
                  ? "automatic: host memory, at most n/4 vectors and n >= 3000, where two-stage "
                    "is the faster path"
                  : "automatic: host memory, where one-stage is the faster path (two-stage "
                    "only for at most n/4 vectors and n >= 3000)";
  return opts.method != EighMethod::automatic ? opts.method
         : host_memory && !host_subset        ? EighMethod::one_stage
                                              : EighMethod::two_stage;
}

/// The standard problem on the symmetrized work matrix W (overwritten).
template <class ExecSpace>
void standard_on(const ExecSpace& exec,
                   const Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>& W,
                   const EighOptions& opts, int nev, EighResult<typename ExecSpace::memory_space>& res) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using HMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  const int n = W.extent(0);
  const bool vec = opts.vectors && nev > 0;
  res.eigenvalues = Kokkos::View<double*, Kokkos::HostSpace>("kess::eigh::eigenvalues", nev);
  constexpr bool host_memory = std::is_same<Mem, Kokkos::HostSpace>::value;
  res.method = choose_method(opts, n, nev, host_memory, &res.method_reason);
  auto& t = res.timings;
  Kokkos::Timer timer;
  auto lap = [&](const char* label) {
    kx::fence(exec, label);
    const double s = timer.seconds();
    timer.reset();
    return s;
  };
  if (n == 0 || nev == 0) {
    res.eigenvectors = Mat("kess::eigh::eigenvectors", vec ? n : 0, vec ? nev : 0);
    return;
  }
  std::vector<double> d, e, wv(static_cast<std::size_t>(n));

  if (res.method == EighMethod::one_stage) {
    res.band_width = 0;
    res.band_width_reason = "one-stage path (no band)";
    auto Wh = Kokkos::create_mirror_view(W);
    Kokkos::deep_copy(Wh, W);
    d.resize(n);
    e.resize(std::max(1, n - 1));
    std::vector<double> tau(std::max(1, n - 1));
    core::lapack::sytrd('L', n, Wh.data(), n, d.data(), e.data(), tau.data());
    t.tridiagonalize = lap("kess::eigh::tridiagonalize");
    HMat Zh(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::eigh::Z_host"), vec ? n : 1,
            vec ? (nev == n ? n : nev) : 1);
    // Q = Q_top diag(I, X): the reflectors that touch only the rows of the split stage 3's bottom
    // half (X) go to that half's own vectors during stage 3 (stedc_split, which
    // calls this for column ranges, from two threads at once; the first call makes X's blocks);
    // Q_top after stage 3, from reflector q_last down. Not called on the other stage-3 paths.
    int q_last = n - 1;  // written once inside call_once, read after stage 3's threads joined
    std::unique_ptr<SytrdQBlocks> x_blocks;
    std::once_flag x_made;
    const auto bottom = [&](int rows, int cols, double* m, int ld) {
      const int row0 = n - rows;
      std::call_once(x_made, [&] {
        x_blocks = std::make_unique<SytrdQBlocks>(n, Wh.data(), n, tau.data(), row0 - 1, n - 1);
        q_last = row0 - 1;
      });
      x_blocks->apply(cols, m, ld, row0);
    };
    res.tridiagonal = tridiagonal(n, nev, vec, d, e, wv.data(), Zh.data(), vec ? n : 1,
                                       vec ? BottomRowsTransform(bottom) : nullptr);
    t.tridiagonal = lap("kess::eigh::tridiagonal");
    if (vec) {
      apply_sytrd_q(n, nev, Wh.data(), n, tau.data(), Zh.data(), n, 0, q_last);
      if constexpr (host_memory) {
        res.eigenvectors = Zh;  // n x nev already: no copy on host memory
      } else {
        res.eigenvectors = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::eigh::eigenvectors"), n, nev);
        Kokkos::deep_copy(exec, res.eigenvectors, Kokkos::subview(Zh, Kokkos::ALL, Kokkos::make_pair(0, nev)));
      }
      t.backtransform = lap("kess::eigh::backtransform");
    } else {
      res.eigenvectors = Mat("kess::eigh::eigenvectors", 0, 0);
    }
    for (int i = 0; i < nev; ++i) res.eigenvalues(i) = wv[i];
    return;
  }

  // ---- two-stage ----
  int b = opts.band_width;
  if (b <= 0) {
    b = auto_band_width(n, is_host<ExecSpace>(), &res.band_width_reason);
  } else {
    res.band_width_reason = "requested";
  }
  if (b > n - 1) {
    res.band_width_reason += "; capped at n - 1 = " + std::to_string(std::max(1, n - 1));
    b = std::max(1, n - 1);
  }
  res.band_width = b;
  BandMatrix band;
  double host_s = 0;
  auto brefl = band_reduce(exec, W, b, band, &host_s);
  t.band_reduce = lap("kess::eigh::band_reduce");
  t.band_reduce_host = host_s;

  ChaseReflectors crefl;
  ChaseReflectorsOn<Mem> drefl;
  const bool team_chase = b >= 2 && b <= bulge_chase_team_max_b &&
                          (opts.chase == EighChase::team ||
                           (opts.chase == EighChase::automatic && !is_host<ExecSpace>()));
  res.chase = team_chase ? "team" : "host";
  if (team_chase)
    bulge_chase_team(exec, band, d, e, &crefl, vec ? &drefl : nullptr);
  else
    bulge_chase(band, d, e, vec ? &crefl : nullptr);
  t.bulge_chase = lap("kess::eigh::bulge_chase");

  // X of T in the top n rows of a (n + b) x nev matrix (the bottom rows pad stage 4).
  const int ld = n + b;
  const bool use_dc = vec && (opts.tridiagonal == EighTridiagonal::divide_conquer ||
                              (opts.tridiagonal == EighTridiagonal::automatic &&
                               !is_host<ExecSpace>()));
  Mat Y;
  if (use_dc) {
    res.tridiagonal = "dc";
    Y = Mat(Kokkos::view_alloc(exec, "kess::eigh::Y"), ld, nev);  // zero padding rows
    TridiagDcStats st;
    if (nev == n) {
      tridiag_dc(exec, d, e, wv.data(), Kokkos::subview(Y, Kokkos::make_pair(0, n), Kokkos::ALL),
                 opts.tuning.tridiag_dc, &st);
    } else {
      Mat X(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::eigh::X"), n, n);
      tridiag_dc(exec, d, e, wv.data(), X, opts.tuning.tridiag_dc, &st);
      core::copy2d(exec, "kess::eigh::copy_x", Kokkos::subview(Y, Kokkos::make_pair(0, n), Kokkos::ALL),
                           Kokkos::subview(X, Kokkos::ALL, Kokkos::make_pair(0, nev)));
    }
    t.tridiagonal_host = st.host_seconds;
    for (int i = 0; i < nev; ++i) res.eigenvalues(i) = wv[i];
    t.tridiagonal = lap("kess::eigh::tridiagonal");
  } else {
    HMat Zh(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::eigh::X_host"), vec ? ld : 1,
            vec ? (nev == n ? n : nev) : 1);
    res.tridiagonal = tridiagonal(n, nev, vec, d, e, wv.data(), Zh.data(), vec ? ld : 1);
    for (int i = 0; i < nev; ++i) res.eigenvalues(i) = wv[i];
    if (!vec) {
      t.tridiagonal = lap("kess::eigh::tridiagonal");
      res.eigenvectors = Mat("kess::eigh::eigenvectors", 0, 0);
      return;
    }
    for (int j = 0; j < nev; ++j)
      for (int i = n; i < ld; ++i) Zh(i, j) = 0.0;
    Y = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::eigh::Y"), ld, nev);
    Kokkos::deep_copy(exec, Y, Kokkos::subview(Zh, Kokkos::ALL, Kokkos::make_pair(0, nev)));
    t.tridiagonal = lap("kess::eigh::tridiagonal");
  }

  if (crefl.sweeps() > 0) {
    HhChaseOptions hh;
    hh.variant = opts.hh_chase;
    hh.tuning = opts.tuning.hh_chase;
    if (team_chase) {
      hh_chase(exec, crefl, drefl.V, drefl.tau, Y, hh);
    } else {
      auto Vd = Kokkos::create_mirror_view_and_copy(Mem(), crefl.V);
      auto taud = Kokkos::create_mirror_view_and_copy(Mem(), crefl.tau);
      hh_chase(exec, crefl, Vd, taud, Y, hh);
    }
  }
  Mat Z(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::eigh::eigenvectors"), n, nev);
  core::copy2d(exec, "kess::eigh::copy_vectors", Z,
                       Kokkos::subview(Y, Kokkos::make_pair(0, n), Kokkos::ALL));
  t.hh_chase = lap("kess::eigh::hh_chase");

  band_backtransform(exec, brefl, Z, opts.tuning.band_backtransform_merge);
  t.band_backtransform = lap("kess::eigh::band_backtransform");
  res.eigenvectors = Z;
}

inline int checked_nev(std::int64_t n, std::int64_t nev, const char* fn) {
  if (nev < 0 && nev != -1) nev = -2;
  require_arg(nev == -1 || (nev >= 0 && nev <= n), fn,
              "argument 'opts.nev' = " + std::to_string(nev) + " is outside 0 .. n = " +
                  std::to_string(n) + " (or -1 for all)");
  return static_cast<int>(nev < 0 ? n : nev);
}

/// Throws kess::Error not_positive_definite for B's Cholesky pivot `info` (1-based, dpotrf's
/// convention) with the value `pivot` found there.
[[noreturn]] void not_positive_definite(const char* fn, int info, double pivot);
/// Refuses B whose Cholesky factor L has (max l_ii / min l_ii)^2 > 1/(n eps): that lower bound on
/// cond(B) means the standard form L^-1 A L^-T carries no correct digit of the eigenvalues.
void require_well_conditioned_b(const char* fn, std::int64_t n, double lmin, double lmax);

/// The generalized problem's reduction on exec: Bw = L L^T (core::potrf_blocked; L in Bw's lower
/// triangle, its upper triangle scratch) and W = L^-1 W L^-T (two triangular solves, n^3 flops
/// each, against dsygst's n^3 in all: the solves keep to exec's BLAS), symmetrized.
template <class ExecSpace, class Mat>
void reduce_generalized_blas(const ExecSpace& exec, const Mat& W, const Mat& Bw,
                                  const char* fn) {
  double pivot = 0;
  const int info = core::potrf_blocked(exec, Bw, 256, &pivot);
  if (info > 0) not_positive_definite(fn, info, pivot);
  const std::int64_t n = W.extent(0);
  if (n == 0) return;
  using MinMax = Kokkos::MinMax<double>;
  typename MinMax::value_type range;
  Kokkos::parallel_reduce(
      "kess::eigh::cholesky_diagonal",
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, n),
      KOKKOS_LAMBDA(std::int64_t i, typename MinMax::value_type& r) {
        const double d = Bw(i, i);
        if (d < r.min_val) r.min_val = d;
        if (d > r.max_val) r.max_val = d;
      },
      MinMax(range));
  require_well_conditioned_b(fn, n, range.min_val, range.max_val);
  core::trsm(exec, "L", "L", "N", "N", 1.0, Bw, W);
  core::trsm(exec, "R", "L", "T", "N", 1.0, Bw, W);
  symmetrize(exec, W, W);
}

template <class ExecSpace>
EighResult<typename ExecSpace::memory_space> standard(const ExecSpace& exec,
                                                      const core::ConstMatrix<ExecSpace>& A,
                                                      const core::Matrix<ExecSpace>& A_writable,
                                                      const EighOptions& opts) {
  kx::ScopedRegion region("kess::eigh");
  const char* fn = "eigh";
  Kokkos::Timer total;
  EighResult<typename ExecSpace::memory_space> res;
  // The one-stage path on host memory reads only W's lower triangle (nev and n are checked
  // below, after the shape; a wrong one only changes this guess).
  constexpr bool host_memory = is_host<ExecSpace>();
  const int n_guess = int(std::min<std::int64_t>(A.extent(0), INT_MAX));
  const bool lower_only =
      host_memory &&
      choose_method(opts, n_guess, opts.nev >= 0 && opts.nev <= n_guess ? int(opts.nev) : n_guess,
                    host_memory) == EighMethod::one_stage;
  auto W = checked_copy(exec, A, A_writable, fn, "A", opts.check_input, opts.symmetry_tolerance,
                        opts.overwrite_a, lower_only);
  const int nev = checked_nev(A.extent(0), opts.nev, fn);
  require_arg(opts.band_width >= 0, fn,
              "argument 'opts.band_width' = " + std::to_string(opts.band_width) + " must be >= 0");
  const double sigma = scale_into_safe_range(exec, W);
  kx::fence(exec, "kess::eigh::check");
  res.timings.check = total.seconds();
  standard_on(exec, W, opts, nev, res);
  unscale_eigenvalues(res, sigma);
  res.timings.total = total.seconds();
  return res;
}

template <class ExecSpace>
EighResult<typename ExecSpace::memory_space> generalized(
    const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
    const core::Matrix<ExecSpace>& A_writable, const core::ConstMatrix<ExecSpace>& B,
    const EighOptions& opts) {
  using Mem = typename ExecSpace::memory_space;
  kx::ScopedRegion region("kess::eigh_generalized");
  const char* fn = "eigh";
  Kokkos::Timer total, timer;
  EighResult<Mem> res;
  auto W = checked_copy(exec, A, A_writable, fn, "A", opts.check_input, opts.symmetry_tolerance,
                        opts.overwrite_a);
  auto Bw = checked_copy(exec, B, core::Matrix<ExecSpace>(), fn, "B", opts.check_input,
                         opts.symmetry_tolerance);
  require_arg(B.extent(0) == A.extent(0), fn,
              "argument 'B': " + std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)) +
                  " does not match A (" + std::to_string(A.extent(0)) + " x " +
                  std::to_string(A.extent(1)) + ")");
  const int nev = checked_nev(A.extent(0), opts.nev, fn);
  kx::fence(exec, "kess::eigh::check");
  res.timings.check = timer.seconds();
  timer.reset();
  const int n = A.extent(0);
  const bool blas =
      opts.generalized == EighGeneralized::blas ||
      (opts.generalized == EighGeneralized::automatic && !is_host<ExecSpace>());
  res.generalized = to_string(blas ? EighGeneralized::blas : EighGeneralized::lapack);
  decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Bw)) Lh;
  if (blas) {
    reduce_generalized_blas(exec, W, Bw, fn);
  } else {
    Lh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Bw);
    auto Hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), W);
    if (n > 0) {
      const int info = core::lapack::potrf('L', n, Lh.data(), n);
      if (info > 0) not_positive_definite(fn, info, Lh(info - 1, info - 1));
      double lmin = Lh(0, 0), lmax = Lh(0, 0);
      for (int i = 1; i < n; ++i) {
        lmin = std::min(lmin, Lh(i, i));
        lmax = std::max(lmax, Lh(i, i));
      }
      require_well_conditioned_b(fn, n, lmin, lmax);
      core::lapack::sygst(1, 'L', n, Hh.data(), n, Lh.data(), n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) Hh(i, j) = Hh(j, i);
      Kokkos::deep_copy(exec, W, Hh);
    }
  }
  const double sigma = scale_into_safe_range(exec, W);
  kx::fence(exec, "kess::eigh::cholesky");
  res.timings.cholesky = timer.seconds();
  standard_on(exec, W, opts, nev, res);
  unscale_eigenvalues(res, sigma);
  timer.reset();
  if (res.eigenvectors.extent(1) > 0) {
    if (blas) {
      core::trsm(exec, "L", "L", "T", "N", 1.0, Bw, res.eigenvectors);
    } else {
      auto Ch = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), res.eigenvectors);
      core::lapack::trsm('L', 'L', 'T', 'N', n, nev, 1.0, Lh.data(), n, Ch.data(), n);
      Kokkos::deep_copy(exec, res.eigenvectors, Ch);
    }
    kx::fence(exec, "kess::eigh::back_substitution");
  }
  res.timings.back_substitution = timer.seconds();
  res.timings.total = total.seconds();
  return res;
}

// The entry points and the stages that tests and benchmarks call on their own: every template with
// device lambdas is instantiated in exactly one translation unit (nvcc's extended lambdas keep
// per-unit state, so two instantiations of one function in a program must not be mixed).
#define KESS_EIGH_TEMPLATES(Exec)                                                                  \
  template EighResult<Exec::memory_space> standard<Exec>(                                          \
      const Exec&, const core::ConstMatrix<Exec>&, const core::Matrix<Exec>&, const EighOptions&); \
  template EighResult<Exec::memory_space> generalized<Exec>(                                       \
      const Exec&, const core::ConstMatrix<Exec>&, const core::Matrix<Exec>&,                      \
      const core::ConstMatrix<Exec>&, const EighOptions&);                                         \
  template void hh_chase_apply<Exec>(const Exec&, const core::ConstMatrix<Exec>&,                  \
                                            const core::ConstVector<Exec>&,                        \
                                            const core::Matrix<Exec>&, const HhChaseOptions&);     \
  template BandReflectors<Exec::memory_space> band_reduce<Exec>(                                   \
      const Exec&, const core::Matrix<Exec>&, int, BandMatrix&, double*, PanelQR,                  \
      core::PanelKernel);                                                                          \
  template void band_backtransform<Exec>(                                                          \
      const Exec&, const BandReflectors<Exec::memory_space>&, const core::Matrix<Exec>&, int);     \
  template void bulge_chase_team<Exec>(const Exec&, const BandMatrix&,                             \
                                              std::vector<double>&, std::vector<double>&,          \
                                              ChaseReflectors*,                                    \
                                              ChaseReflectorsOn<Exec::memory_space>*, ChaseKernel); \
  template void hh_chase<Exec>(const Exec&, const ChaseReflectors&,                                \
                                      const core::ConstMatrix<Exec>&, const core::ConstVector<Exec>&, \
                                      const core::Matrix<Exec>&, HhChaseOptions);                  \
  template void tridiag_dc<Exec>(const Exec&, std::vector<double>, std::vector<double>,            \
                                        double*, const core::Matrix<Exec>&,                        \
                                        const TridiagDcTuning&, TridiagDcStats*);

}  // namespace kess::detail::eigh
