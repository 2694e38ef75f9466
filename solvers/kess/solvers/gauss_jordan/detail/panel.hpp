// Local kernels of blocked Gauss-Jordan elimination (Köhler 2017, "Blocked Algorithm").
//
// With D = [A | B] repartitioned around the NB x NB pivot block A22 (columns k .. k+nb-1),
//   D <- D0 + H [A21  I  A23  b2],   H = [-A12 A22^-1; A22^-1; -A32 A22^-1],
// where D0 is D with the pivot block row and the panel column set to zero. Partial pivoting comes
// from the LU factorization P [A22; A32] = [L1; L2] U of the panel (Köhler 2017, "Fine grained
// computation of H"): A22^-1 = U^-1 L1^-1 and A32 A22^-1 = L2 L1^-1.
//
// These are the pieces the solvers in solvers/kess/solvers/gauss_jordan.hpp put together:
//  - factor_panel_host: host LU of the panel (LAPACK dgetrf), pivot checks, determinant,
//    A22^-1 and L1^-1 (NB x NB, host);
//  - factor_panel_device: the same on the execution space (written for GPUs, runs on every
//    backend): recursive column-split LU (GEMM/triangular solve above; a 32-column leaf in one
//    kernel: on CUDA spread over every multiprocessor, slabs of rows in shared memory, pivot
//    candidates exchanged through write-once words (cuda/leaf.hpp); elsewhere
//    pipelined, a team per column holding it in registers, where the rows fit, else one fused
//    kernel a column), A22^-1 and L1^-1 by triangular solves (core::trsm); the pivots and U's
//    diagonal go to device arrays and are checked on the host at the end (check_pivot), so
//    nothing fences between panels; panel_instance: the second (high-priority)
//    instance the next panel is factored on while the trailing update runs;
//  - form_h: H on the device from two small GEMMs, its pivot block A22^-1 - I, so that the
//    update D += H T leaves A22^-1 T in the pivot rows without zeroing them first;
//  - lazy pivoting: the rows of D are never swapped; a logical -> physical row map (rowmap)
//    follows the interchanges, gather_panel reads the panel through it, scatter_h puts H in
//    physical row order and extract copies the pivot block row out (T), so a step reads nb
//    rows of the trailing matrix besides the GEMM instead of swapping 2 nb of them;
//  - rank_update: D(:, cols) += H T, the rank-NB GEMM through core::gemm;
//  - gather_rows / permute_rows / permute_columns: back to logical row order at the end,
//    and the final column permutation of the in-place inverse.
// Every kernel is enqueued on the execution space instance given; none fences. On host backends
// (Kokkos::Serial and Kokkos::OpenMP) the element-wise passes (for_each_entry, extract,
// permute_rows, scan_finite) run over kess's host threads instead
// (core::detail::host_backend_for).
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/solvers/gauss_jordan/detail/panel_lu.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/kokkos/instances.hpp>
#include <kess/core/kokkos/team.hpp>
#include <kess/solvers/gauss_jordan/cuda/leaf.hpp>
#include <kess/core/host/gemm.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace kess::detail::gauss_jordan {

/// Host staging memory for a device memory space (kx::HostStaging: page-locked for CUDA, so that
/// the panel copies run at full speed and asynchronously). Host memory spaces need no staging
/// (the solvers then use the device buffers themselves).
template <class MemSpace>
using StagingSpace = kx::HostStaging<MemSpace>;

/// A second instance of exec's execution space, for the panel factorizations that overlap the
/// trailing update (on CUDA a stream of the highest priority: kx::concurrent_instance).
template <class ExecSpace>
ExecSpace panel_instance(const ExecSpace& exec) {
  return kx::concurrent_instance(exec);
}

/// A host-readable buffer for `dev`: `dev` itself when the host can read it, else a new staging
/// buffer of the same size.
template <class T, class MemSpace>
auto host_buffer(const Kokkos::View<T*, MemSpace>& dev, const char* label) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible) {
    (void)label;
    return dev;
  } else {
    return Kokkos::View<T*, typename StagingSpace<MemSpace>::type>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), dev.extent(0));
  }
}

/// Pivot information accumulated over the panels: det(A) = sign * exp(log_abs_det).
struct PivotStats {
  int sign = 1;
  double log_abs_det = 0.0;
  double min_abs_pivot = std::numeric_limits<double>::infinity();
  double max_abs_pivot = 0.0;
};

inline std::string fmt_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

/// The checks and determinant bookkeeping of one pivot u of global column `col` (`swapped`: its
/// row was interchanged): throws kess::Error (singular) naming the column and the magnitude when
/// u is exactly zero or |u| <= pivot_floor. Shared by the host and the device panel paths.
inline void check_pivot(const char* fn, std::int64_t col, double u, bool swapped,
                           double pivot_floor, PivotStats& st) {
  const double au = std::fabs(u);
  if (u == 0.0)
    throw Error(ErrorKind::singular, fn,
                "the matrix is singular: the pivot of column " + std::to_string(col) +
                    " (0-based) is exactly 0 after partial pivoting");
  if (au <= pivot_floor)
    throw Error(ErrorKind::singular, fn,
                "the matrix is numerically singular: the pivot of column " + std::to_string(col) +
                    " (0-based) has magnitude " + fmt_double(au) + " <= tolerance " +
                    fmt_double(pivot_floor));
  if (swapped) st.sign = -st.sign;
  if (u < 0) st.sign = -st.sign;
  st.log_abs_det += std::log(au);
  st.min_abs_pivot = std::min(st.min_abs_pivot, au);
  st.max_abs_pivot = std::max(st.max_abs_pivot, au);
}

/// Host: LU with partial pivoting of the rows x nb panel P (column-major, leading dimension rows;
/// rows >= nb), the pivot block's global first column being `col0`. On return P holds [L1; L2] \ U,
/// ipiv (nb, 0-based, relative to the panel's first row) the interchanges, uinv (nb x nb, ld nb) =
/// U^-1 and l1 (nb x nb, ld nb) = L1 with its unit diagonal and zeros above. Throws kess::Error
/// (singular) naming the global column and the pivot's magnitude when a pivot is exactly zero or
/// |pivot| <= pivot_floor. Updates the determinant in `st`.
inline void factor_panel_host(const char* fn, int rows, int nb, std::int64_t col0, double* P,
                                 int* ipiv, double* uinv, double* l1, double pivot_floor,
                                 PivotStats& st) {
  const int info = core::lapack::getrf(rows, nb, P, rows, ipiv);
  require(info >= 0, ErrorKind::invalid_argument, fn,
          "LAPACK dgetrf rejected argument " + std::to_string(-info) + " of the panel");
  for (int j = 0; j < nb; ++j) {
    ipiv[j] -= 1;  // 0-based
    check_pivot(fn, col0 + j, P[j + static_cast<std::size_t>(j) * rows], ipiv[j] != j,
                   pivot_floor, st);
  }
  for (int j = 0; j < nb; ++j)
    for (int i = 0; i < nb; ++i) {
      uinv[i + j * nb] = i == j ? 1.0 : 0.0;
      l1[i + j * nb] = i > j ? P[i + static_cast<std::size_t>(j) * rows] : (i == j ? 1.0 : 0.0);
    }
  core::lapack::trsm('L', 'U', 'N', 'N', nb, nb, 1.0, P, rows, uinv, nb);
}

/// f(i, j) for every 0 <= i < m, 0 <= j < n on `exec`: host backends walk the columns (one work
/// item a column, rows inside: LayoutLeft order, no index division); devices take one work item an
/// entry, consecutive items down a column (coalesced).
template <class ExecSpace, class F>
void for_each_entry(const ExecSpace& exec, const char* label, int m, int n, const F& f) {
  if (m <= 0 || n <= 0) return;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename ExecSpace::memory_space>::accessible) {
    if (core::detail::host_backend_for<ExecSpace>(n, m, [&](std::int64_t j) {
          for (int i = 0; i < m; ++i) f(i, static_cast<int>(j));
        }))
      return;
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace>(exec, 0, n), KOKKOS_LAMBDA(int j) {
          for (int i = 0; i < m; ++i) f(i, j);
        });
  } else {
    const std::int64_t total = static_cast<std::int64_t>(m) * n;
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, total),
        KOKKOS_LAMBDA(std::int64_t e) {
          f(static_cast<int>(e % m), static_cast<int>(e / m));
        });
  }
}

/// dst = src on `exec` (same extents, any layouts, both accessible from exec).
template <class ExecSpace, class Dst, class Src>
void copy_matrix(const ExecSpace& exec, const Dst& dst, const Src& src, const char* label) {
  for_each_entry(exec, label, static_cast<int>(dst.extent(0)), static_cast<int>(dst.extent(1)),
              KOKKOS_LAMBDA(int i, int j) { dst(i, j) = src(i, j); });
}

// ---- device panel factorization (every backend; written for GPUs) --------------------------------

/// Team policy of the panel kernels: `device_team` threads a team on devices, the backend's choice
/// on host backends (1 on Serial).
template <class ExecSpace>
Kokkos::TeamPolicy<ExecSpace> team_policy(const ExecSpace& exec, int league, int device_team) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename ExecSpace::memory_space>::accessible) {
    (void)device_team;
    return Kokkos::TeamPolicy<ExecSpace>(exec, league, Kokkos::AUTO);
  } else {
    return Kokkos::TeamPolicy<ExecSpace>(exec, league, device_team);
  }
}

/// A pivot candidate: |value| and its row (kNoRow: none yet).
constexpr int kNoRow = 2147483647;
/// The smallest normal double (LAPACK's sfmin): pivots at least this large are inverted.
constexpr double kSafeMin = 2.2250738585072014e-308;
struct Pivot {
  double mag;
  int row;
};

/// Team reducer for partial pivoting in one pass (LAPACK's idamax): the larger magnitude, the lower
/// row among equals; NaNs never win (they compare false). An empty candidate has row kNoRow.
template <class Space>
struct PivotMax {
  using reducer = PivotMax;
  using value_type = Pivot;
  using result_view_type = Kokkos::View<value_type, Space, Kokkos::MemoryUnmanaged>;
  value_type* ptr;
  KOKKOS_INLINE_FUNCTION explicit PivotMax(value_type& v) : ptr(&v) {}
  KOKKOS_INLINE_FUNCTION static bool better(double mag, int row, double best_mag, int best_row) {
    return mag > best_mag || (mag == best_mag && row < best_row);
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const {
    if (better(src.mag, src.row, dest.mag, dest.row)) dest = src;
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest, const volatile value_type& src) const {
    if (better(src.mag, src.row, dest.mag, dest.row)) {
      dest.mag = src.mag;
      dest.row = src.row;
    }
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.mag = 0.0;
    v.row = kNoRow;
  }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *ptr; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(ptr); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

/// Rows a team owns in the column kernels, and the leaf width of the recursive panel LU.
constexpr int kLuRowsPerTeam = 128;

/// Work arrays of the device panel LU: the step's interchanges (nb, relative to the panel's first
/// row), the per-team partial maxima of the pivot search and the teams-done counter.
/// `ready` and `epoch` belong to the pipelined leaf (lu_leaf_pipelined): column j of the
/// current leaf is published when ready(j) >= epoch (flags are never cleared, the epoch grows).
/// A work object serves one panel at a time.
template <class Mem>
struct DevicePanelWork {
  Kokkos::View<int*, Mem> ipiv;
  Kokkos::View<double*, Mem> part_val;
  Kokkos::View<int*, Mem> part_idx;
  Kokkos::View<int*, Mem> counter;
  Kokkos::View<int*, Mem> ready;
  mutable int epoch = 0;
  bool pipelined_leaves = true;  ///< false: the per-column kernels everywhere (tests)
  bool grid_leaves = true;       ///< CUDA: the grid leaf (cuda/leaf.hpp) where it fits
  /// CUDA: tournament pivoting in the leaves where it fits (lu_leaf_tournament; other pivot
  /// rows than partial pivoting's), before the grid leaf is tried.
  bool tournament_leaves = false;
  int grid_blocks = 0;           ///< the grid leaf's grid size to aim for (0: automatic)
  /// Leaves with fewer rows than this take the pipelined kernel (as fast there as the grid leaf;
  /// docs/performance/gauss_jordan.md).
  int grid_min_rows = 2048;
  int leaf = kLuLeaf;          ///< leaf width of the recursive LU (columns)
  /// The grid leaf's publication buffer (allocated for CUDA device memory only).
  Kokkos::View<long long*, Mem> grid_pub;
  DevicePanelWork() = default;
  DevicePanelWork(std::int64_t n, int nb)
      : ipiv("kess::gauss_jordan::ipiv", nb),
        part_val("kess::gauss_jordan::pivot_partial_val", n / kLuRowsPerTeam + 2),
        part_idx("kess::gauss_jordan::pivot_partial_idx", n / kLuRowsPerTeam + 2),
        counter("kess::gauss_jordan::pivot_counter", 1),
        ready("kess::gauss_jordan::leaf_ready", nb) {
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same<Mem, Kokkos::CudaSpace>::value)
      grid_pub = Kokkos::View<long long*, Mem>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::gauss_jordan::leaf_publication"),
          lu_leaf_grid_words(Kokkos::Cuda()));
#endif
  }
};

/// One column step of the panel LU (P: rows x b, LayoutLeft), one kernel:
///  - eliminate (column j, whose pivot row is in place): rows i > j get l = P(i,j) / P(j,j) (no
///    division by an exactly zero pivot, as LAPACK's dgetf2: the column below is zero then) and
///    P(i, j+1 .. cend-1) -= l P(j, j+1 .. cend-1);
///  - search (column s = j+1 if eliminating, else j; only if s < cend): the pivot of column s among
///    rows s .. rows-1, max |P(i,s)|, the first row among equals (LAPACK's idamax), found as team
///    partial maxima, reduced by the last team to finish (a counter), which then interchanges rows
///    s and p over all b columns and records ipiv(s) = p.
template <class ExecSpace, class PView, class Mem>
void lu_column(const ExecSpace& exec, const PView& P, int b, int j, int cend, bool eliminate,
                  const DevicePanelWork<Mem>& w) {
  const int rows = static_cast<int>(P.extent(0));
  const int s = eliminate ? j + 1 : j;
  const bool search = s < cend;
  const int r0 = s;  // first row touched: j + 1 (eliminate) or j (search only)
  if (!search) {
    // Last column of a leaf: only the multipliers.
    if (r0 >= rows) return;
    Kokkos::parallel_for(
        "kess::gauss_jordan::panel_scale", Kokkos::RangePolicy<ExecSpace>(exec, r0, rows),
        KOKKOS_LAMBDA(int i) {
          const double u = P(j, j);
          if (u != 0.0) P(i, j) = P(i, j) / u;
        });
    return;
  }
  const int league = (rows - r0 + kLuRowsPerTeam - 1) / kLuRowsPerTeam;
  const auto ipiv = w.ipiv;
  const auto part_val = w.part_val;
  const auto part_idx = w.part_idx;
  const auto counter = w.counter;
  using member = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  Kokkos::parallel_for(
      "kess::gauss_jordan::panel_column", team_policy(exec, league, kLuRowsPerTeam),
      KOKKOS_LAMBDA(const member& t) {
        const int lo = r0 + t.league_rank() * kLuRowsPerTeam;
        const int hi = kx::min(lo + kLuRowsPerTeam, rows);
        double tmax = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, lo, hi),
            [&](int i, double& mx) {
              double v;
              if (eliminate) {
                const double u = P(j, j);
                double l = P(i, j);
                if (u != 0.0) {
                  l = l / u;
                  P(i, j) = l;
                }
                v = P(i, s) - l * P(j, s);
                P(i, s) = v;
                for (int c = s + 1; c < cend; ++c) P(i, c) -= l * P(j, c);
              } else {
                v = P(i, s);
              }
              const double a = kx::fabs(v);
              if (a > mx) mx = a;
            },
            Kokkos::Max<double>(tmax));
        Kokkos::memory_fence();
        t.team_barrier();
        int tidx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, lo, hi),
            [&](int i, int& mn) {
              if (kx::fabs(P(i, s)) == tmax && i < mn) mn = i;
            },
            Kokkos::Min<int>(tidx));
        int last = 0;
        Kokkos::single(
            Kokkos::PerTeam(t),
            [&](int& is_last) {
              part_val(t.league_rank()) = tmax;
              part_idx(t.league_rank()) = tidx;
              Kokkos::memory_fence();
              is_last = Kokkos::atomic_fetch_add(&counter(0), 1) == league - 1 ? 1 : 0;
            },
            last);
        if (!last) return;
        // The last team: every other team's rows and partials are written (fence + counter);
        // read them through atomics (past any stale cache line).
        Kokkos::memory_fence();
        double gmax = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, 0, league),
            [&](int q, double& mx) {
              const double v = Kokkos::atomic_fetch_add(&part_val(q), 0.0);
              if (v > mx) mx = v;
            },
            Kokkos::Max<double>(gmax));
        int p = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, 0, league),
            [&](int q, int& mn) {
              const double v = Kokkos::atomic_fetch_add(&part_val(q), 0.0);
              const int idx = Kokkos::atomic_fetch_add(&part_idx(q), 0);
              if (v == gmax && idx < mn) mn = idx;
            },
            Kokkos::Min<int>(p));
        if (p < s || p >= rows) p = s;  // NaN column: no candidate
        if (p != s)
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, 0, b), [&](int c) {
            const double x = Kokkos::atomic_fetch_add(&P(s, c), 0.0);
            const double y = Kokkos::atomic_fetch_add(&P(p, c), 0.0);
            P(s, c) = y;
            P(p, c) = x;
          });
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          ipiv(s) = p;
          counter(0) = 0;
        });
      });
}

/// A leaf (columns c0 .. c0+wd-1 of P, rows c0 .. rows-1) of the panel LU in one kernel: a team per
/// column, the column in the team's registers (thread t holds rows c0 + t + q ts, q < Q). Team c
/// takes the leaf's earlier columns j in order as they are published: it interchanges its rows j
/// and ipiv(j) (through team scratch) and subtracts P(j+1:, j) times its new row j. Then it searches
/// its own pivot (LAPACK's idamax: the largest magnitude, the first row among equals; NaNs never
/// win), interchanges, divides by the pivot (not by an exact zero, as dgetf2), stores its column and
/// ipiv, and publishes (flag in w.ready after a release fence; multipliers read past L1). No team
/// reduces across teams and nothing is launched per column. The leaf's interchanges are applied to
/// the rest of P's rows afterwards (lu_leaf_swaps). Teams only wait for lower columns.
template <int Q, class ExecSpace, class PView, class Mem>
void lu_leaf_pipelined(const ExecSpace& exec, const PView& P, int c0, int wd, int ts,
                          const DevicePanelWork<Mem>& w) {
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<1024, 1>>;
  using member = typename Policy::member_type;
  const int rows = static_cast<int>(P.extent(0));
  const int epoch = ++w.epoch;
  const auto ready = w.ready;
  const auto ipiv = w.ipiv;
  const double* pd = P.data();
  const std::size_t ldp = P.stride(1);
  const int* ipd = ipiv.data();
  const std::size_t scratch = 4 * sizeof(double);
  Policy policy(exec, wd, ts);
  policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
  Kokkos::parallel_for(
      "kess::gauss_jordan::panel_leaf", policy, KOKKOS_LAMBDA(const member& t) {
        double* sh = static_cast<double*>(t.team_scratch(0).get_shmem(scratch));
        volatile int* flag = ready.data();
        const int jc = c0 + t.league_rank(), me = t.team_rank();
        double x[Q];
        for (int q = 0; q < Q; ++q) {
          const int r = c0 + me + q * ts;
          x[q] = r < rows ? P(r, jc) : 0.0;
        }
        // Interchange rows a and p (>= a) of the registers; returns the new x_a on every thread.
        auto interchange = [&](int a, int p) {
          for (int q = 0; q < Q; ++q) {
            const int r = c0 + me + q * ts;
            if (r == a) sh[0] = x[q];
            if (r == p) sh[1] = x[q];
          }
          t.team_barrier();
          for (int q = 0; q < Q; ++q) {
            const int r = c0 + me + q * ts;
            if (r == a) x[q] = sh[1];
            if (r == p && p != a) x[q] = sh[0];
          }
          return sh[1];
        };
        for (int j = c0; j < jc; ++j) {
          Kokkos::single(Kokkos::PerTeam(t), [&]() {
            while (flag[j] < epoch) {
            }
            Kokkos::memory_fence();  // acquire: column j and ipiv(j) are visible
          });
          t.team_barrier();
          const int p = kx::load_uncached(ipd + j);
          const double u = interchange(j, p);
          const double* lj = pd + std::size_t(j) * ldp;
          if (u != 0.0)
            for (int q = 0; q < Q; ++q) {
              const int r = c0 + me + q * ts;
              if (r > j && r < rows) x[q] -= kx::load_uncached(lj + r) * u;
            }
          t.team_barrier();  // everyone has read sh before the next interchange writes it
        }
        // The pivot of column jc among rows jc .. rows-1, in one team reduction.
        Pivot best{0.0, kNoRow};
        for (int q = 0; q < Q; ++q) {
          const int r = c0 + me + q * ts;
          if (r >= jc && r < rows && PivotMax<Kokkos::AnonymousSpace>::better(kx::fabs(x[q]), r, best.mag, best.row)) {
            best.mag = kx::fabs(x[q]);
            best.row = r;
          }
        }
        t.team_reduce(PivotMax<Kokkos::AnonymousSpace>(best));
        const int p = best.row < rows ? best.row : jc;  // NaN column: no candidate
        const double u = interchange(jc, p);
        // Multipliers as LAPACK's dgetf2/dgetrf2: times the reciprocal where it is representable
        // (|u| >= the smallest normal number), else divided; an exact zero pivot divides nothing.
        const bool recip = kx::fabs(u) >= kSafeMin;
        const double ru = recip ? 1.0 / u : 0.0;
        for (int q = 0; q < Q; ++q) {
          const int r = c0 + me + q * ts;
          if (r < rows) P(r, jc) = (r > jc && u != 0.0) ? (recip ? x[q] * ru : x[q] / u) : x[q];
        }
        t.team_barrier();
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          ipiv(jc) = p;
          Kokkos::memory_fence();  // release: the column and ipiv before the flag
          flag[jc] = epoch;
        });
      });
}

/// The interchanges ipiv(c0 .. c0+wd-1) of a leaf, in order, on the rest of P's rows (a thread a
/// column): every column outside the leaf, and, after the pipelined leaf (leaf_swapped false), in
/// the leaf's column j the interchanges of the columns after j (its team stored it before those
/// were known); the grid leaf interchanged whole leaf rows itself (leaf_swapped true).
template <class ExecSpace, class PView, class Mem>
void lu_leaf_swaps(const ExecSpace& exec, const PView& P, int b, int c0, int wd,
                      const DevicePanelWork<Mem>& w, bool leaf_swapped = false) {
  const auto ipiv = w.ipiv;
  const int nc = leaf_swapped ? b - wd : b;
  if (nc <= 0) return;
  Kokkos::parallel_for(
      "kess::gauss_jordan::panel_leaf_swaps", Kokkos::RangePolicy<ExecSpace>(exec, 0, nc),
      KOKKOS_LAMBDA(int cc) {
        const int c = leaf_swapped && cc >= c0 ? cc + wd : cc;
        for (int j = (c >= c0 && c < c0 + wd) ? c + 1 : c0; j < c0 + wd; ++j) {
          const int p = ipiv(j);
          if (p != j) {
            const double tmp = P(j, c);
            P(j, c) = P(p, c);
            P(p, c) = tmp;
          }
        }
      });
}

/// The leaf in one kernel: on CUDA the tournament leaf where it fits and w.tournament_leaves is
/// on, else the grid leaf (both in cuda/leaf.hpp) where it fits and w.grid_leaves is
/// on; else the pipelined kernel where the leaf's rows fit the registers of a team
/// and the device holds all wd teams at once (half of it: the trailing GEMM runs beside); false
/// otherwise.
template <class ExecSpace, class PView, class Mem>
bool lu_leaf_try_pipelined(const ExecSpace& exec, const PView& P, int b, int c0, int wd,
                              const DevicePanelWork<Mem>& w) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value &&
                std::is_same<typename PView::non_const_value_type, double>::value) {
    const bool fits = w.grid_pub.extent(0) > 0 && P.stride(0) == 1 &&
                      static_cast<int>(P.extent(0)) - c0 >= w.grid_min_rows;
    if (fits && w.tournament_leaves &&
        lu_leaf_tournament(exec, P.data(), static_cast<long long>(P.stride(1)),
                              static_cast<int>(P.extent(0)), c0, wd, w.ipiv.data(),
                              w.grid_pub.data(), w.grid_pub.extent(0))) {
      lu_leaf_swaps(exec, P, b, c0, wd, w, true);
      return true;
    }
    if (fits && w.grid_leaves &&
        lu_leaf_grid(exec, P.data(), static_cast<long long>(P.stride(1)),
                        static_cast<int>(P.extent(0)), c0, wd, w.ipiv.data(), w.grid_pub.data(),
                        w.grid_pub.extent(0), w.grid_blocks)) {
      lu_leaf_swaps(exec, P, b, c0, wd, w, true);
      return true;
    }
  }
#endif
  const int rows = static_cast<int>(P.extent(0)) - c0;
  const int ts = kx::column_team_size<ExecSpace>(rows);
  if (!kx::teams_resident(exec, wd, ts) || static_cast<int>(w.ready.extent(0)) < c0 + wd)
    return false;
  switch (kx::column_rows_per_thread(rows, ts)) {
    case 1: lu_leaf_pipelined<1>(exec, P, c0, wd, ts, w); break;
    case 2: lu_leaf_pipelined<2>(exec, P, c0, wd, ts, w); break;
    case 4: lu_leaf_pipelined<4>(exec, P, c0, wd, ts, w); break;
    case 8: lu_leaf_pipelined<8>(exec, P, c0, wd, ts, w); break;
    case 16: lu_leaf_pipelined<16>(exec, P, c0, wd, ts, w); break;
    case 32: lu_leaf_pipelined<32>(exec, P, c0, wd, ts, w); break;
    default: return false;
  }
  lu_leaf_swaps(exec, P, b, c0, wd, w);
  return true;
}

/// B <- T^-1 B in place (T m x m: unit lower triangular, or upper triangular with its diagonal):
/// one core::trsm (cuBLAS dtrsm on CUDA, the host BLAS or Kokkos Kernels' own elsewhere). An exactly
/// zero diagonal entry gives infinities, as dtrsm; the pivots are checked afterwards.
template <class ExecSpace, class Mem>
void panel_trsm(const ExecSpace& exec, bool upper,
             const Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>& T,
             const Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>& B) {
  if (T.extent(0) == 0 || B.extent(1) == 0) return;
  core::trsm(exec, "L", upper ? "U" : "L", "N", upper ? "N" : "U", 1.0, T, B);
}

/// Recursive LU with partial pivoting of the columns c0 .. c0+wd-1 of P (rows x b; columns left
/// of c0 factored, interchanges applied to whole rows of P): left half, U12 = L11^-1 A12,
/// A22 -= L21 U12 (GEMM), right half; leaves of w.leaf columns (one pipelined kernel, or one kernel
/// a column).
template <class ExecSpace, class PView, class Mem>
void lu_recursive(const ExecSpace& exec, const PView& P, int b, int c0, int wd,
                     const DevicePanelWork<Mem>& w) {
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t rows = P.extent(0);
  const int leaf = w.leaf;
  if (wd <= leaf) {
    if (w.pipelined_leaves && lu_leaf_try_pipelined(exec, P, b, c0, wd, w)) return;
    lu_column(exec, P, b, c0, c0 + wd, false, w);
    for (int j = c0; j < c0 + wd; ++j) lu_column(exec, P, b, j, c0 + wd, true, w);
    return;
  }
  const int h = (wd / 2 + leaf - 1) / leaf * leaf;  // whole leaves on the left
  lu_recursive(exec, P, b, c0, h, w);
  using M = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  const M L11 = Kokkos::subview(P, pair(c0, c0 + h), pair(c0, c0 + h));
  const M A12 = Kokkos::subview(P, pair(c0, c0 + h), pair(c0 + h, c0 + wd));
  panel_trsm(exec, false, L11, A12);
  if (c0 + h < rows)
    core::gemm(exec, "N", "N", -1.0, Kokkos::subview(P, pair(c0 + h, rows), pair(c0, c0 + h)), A12,
             1.0, Kokkos::subview(P, pair(c0 + h, rows), pair(c0 + h, c0 + wd)));
  lu_recursive(exec, P, b, c0 + h, wd - h, w);
}

/// Device counterpart of factor_panel_host, enqueued on `exec` (no fence): P (rows x b,
/// LayoutLeft, rows >= b) becomes [L1; L2] \ U, uinv = U^-1 and l1 = L1 (b x b, unit diagonal,
/// zeros above); for i < b: diag(k + i) = u_ii, piv(k + i) = k + the row interchanged with i
/// (0-based, global), and rowmap(k + i) <-> rowmap(k + that row) in order. Pivots are checked
/// later, on the host (check_pivot on diag and piv).
template <class ExecSpace, class PView, class SView, class Mem, class DiagView, class PivView,
          class MapView>
void factor_panel_device(const ExecSpace& exec, const PView& P, std::int64_t k,
                            const SView& uinv, const SView& l1,
                            const DevicePanelWork<Mem>& w, const DiagView& diag,
                            const PivView& piv, const MapView& rowmap) {
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const int b = static_cast<int>(P.extent(1));
  lu_recursive(exec, P, b, 0, b, w);
  using M = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  const M T = Kokkos::subview(P, pair(0, b), pair(0, b));
  const M X = uinv;
  for_each_entry(exec, "kess::gauss_jordan::panel_factors", b, b, KOKKOS_LAMBDA(int i, int c) {
    uinv(i, c) = i == c ? 1.0 : 0.0;
    l1(i, c) = i > c ? T(i, c) : (i == c ? 1.0 : 0.0);
  });
  panel_trsm(exec, true, T, X);
  const auto ipiv = w.ipiv;
  const int kk = static_cast<int>(k);
  Kokkos::parallel_for(
      "kess::gauss_jordan::panel_pivots", Kokkos::RangePolicy<ExecSpace>(exec, 0, 1),
      KOKKOS_LAMBDA(int) {
        for (int i = 0; i < b; ++i) {
          const int p = ipiv(i);
          diag(kk + i) = P(i, i);
          piv(kk + i) = kk + p;
          if (p != i) {
            const int t = rowmap(kk + i);
            rowmap(kk + i) = rowmap(kk + p);
            rowmap(kk + p) = t;
          }
        }
      });
}

template <class ExecSpace>
struct PanelLu<ExecSpace>::Work {
  DevicePanelWork<Mem> w;
};

template <class ExecSpace>
PanelLu<ExecSpace>::PanelLu(std::int64_t rows, int b, const PanelLuOptions& opts)
    : work_(new Work{DevicePanelWork<Mem>(rows, b)}) {
  auto& w = work_->w;
  w.pipelined_leaves = opts.pipelined_leaves;
  w.grid_leaves = opts.grid_leaves;
  w.tournament_leaves = opts.tournament_leaves;
  w.grid_min_rows = opts.grid_min_rows;
  w.leaf = opts.leaf;
}

template <class ExecSpace>
PanelLu<ExecSpace>::~PanelLu() = default;

template <class ExecSpace>
void PanelLu<ExecSpace>::factor(const ExecSpace& exec, const core::Matrix<ExecSpace>& P,
                                const core::Matrix<ExecSpace>& uinv,
                                const core::Matrix<ExecSpace>& l1,
                                const Kokkos::View<double*, Mem>& diag,
                                const Kokkos::View<int*, Mem>& piv,
                                const Kokkos::View<int*, Mem>& rowmap) {
  using UM = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  factor_panel_device(exec, UM(P.data(), P.extent(0), P.extent(1)), 0,
                      UM(uinv.data(), uinv.extent(0), uinv.extent(1)),
                      UM(l1.data(), l1.extent(0), l1.extent(1)), work_->w, diag, piv,
                      rowmap);
}

/// H = [-A12 U^-1; U^-1 - L1; -L2] (n x nb, logical row order) from the panel: A12 (k x nb),
/// P = the factored panel ((n-k) x nb, [L1; L2] \ U), uinv = U^-1 and l1 = L1 (nb x nb). H
/// multiplies W = L1^-1 T (to_w, or kess's host GEMM while it packs the pivot rows), and the
/// pivot rows still hold T: T + (U^-1 - L1) W = L1 W + U^-1 W - L1 W = A22^-1 T. Applying L1^-1
/// and U^-1 by triangular solves, not as A22^-1 = U^-1 L1^-1 formed explicitly, keeps the
/// backward error of the blocked elimination at that of the unblocked one (an explicit L1^-1 can
/// have entries of 2^nb, and the residual grew with the condition number).
template <class ExecSpace, class AView, class PView, class SView, class HView>
void form_h(const ExecSpace& exec, const AView& A12, std::int64_t k, int nb, const PView& P,
               const SView& uinv, const SView& l1, const HView& H) {
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t n = H.extent(0);
  if (k > 0) {
    auto h1 = Kokkos::subview(H, pair(0, k), Kokkos::ALL());
    core::gemm(exec, "N", "N", -1.0, A12, uinv, 0.0, h1);
  }
  const auto hp = Kokkos::subview(H, pair(k, k + nb), Kokkos::ALL());
  for_each_entry(
      exec, "kess::gauss_jordan::h_pivot_block", nb, nb,
      KOKKOS_LAMBDA(int i, int c) {
        hp(i, c) = uinv(i, c) - l1(i, c);
      });
  if (k + nb < n) {
    auto l2 = Kokkos::subview(P, pair(nb, n - k), Kokkos::ALL());
    auto h3 = Kokkos::subview(H, pair(k + nb, n), Kokkos::ALL());
    for_each_entry(exec, "kess::gauss_jordan::h_below", static_cast<int>(n - k - nb), nb,
                   KOKKOS_LAMBDA(int i, int c) { h3(i, c) = -l2(i, c); });
  }
}

/// Lazy pivoting: the rows of D are never interchanged; rowmap(i) is the physical row of logical
/// row i. Gathers the panel (columns col0 .. col0+nb-1 of D, global columns k .. k+nb-1) in
/// logical order: A12 (k x nb) = logical rows 0 .. k-1, P ((n-k) x nb) = logical rows k .. n-1.
template <class ExecSpace, class DView, class MView, class AView, class PView>
void gather_panel(const ExecSpace& exec, const DView& D, const MView& rowmap, std::int64_t k,
                     int nb, const AView& A12, const PView& P, std::int64_t col0) {
  const int kk = static_cast<int>(k), c0 = static_cast<int>(col0);
  for_each_entry(exec, "kess::gauss_jordan::panel_gather", static_cast<int>(D.extent(0)), nb,
              KOKKOS_LAMBDA(int i, int c) {
                const auto v = D(rowmap(i), c0 + c);
                if (i < kk)
                  A12(i, c) = v;
                else
                  P(i - kk, c) = v;
              });
}

/// Hp(rowmap(i), :) = H(i, :): H from logical to physical row order.
template <class ExecSpace, class HView, class MView, class HpView>
void scatter_h(const ExecSpace& exec, const HView& H, const MView& rowmap, const HpView& Hp) {
  for_each_entry(exec, "kess::gauss_jordan::scatter_h", static_cast<int>(H.extent(0)),
              static_cast<int>(H.extent(1)),
              KOKKOS_LAMBDA(int i, int c) { Hp(rowmap(i), c) = H(i, c); });
}

/// For the columns j of D in [0, left) and [right_begin, right_end) (T's columns in that order):
/// copies the pivot block row (logical rows k .. k+nb-1, after this step's interchanges) out:
/// T(r, c) = D(rowmap(k + r), j).
template <class ExecSpace, class DView, class MView, class TView>
void extract(const ExecSpace& exec, const DView& D, const MView& rowmap, std::int64_t k, int nb,
                int left, int right_begin, int right_end, const TView& T) {
  const int ncols = left + (right_end - right_begin);
  const int kk = static_cast<int>(k);
  if constexpr (Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
    // Host: a column's nb pivot rows are nb cache lines on up to nb pages, and the cores keep too
    // few misses in flight to hide them: the rows of the column four ahead are prefetched.
    const auto col_of = [=](int c) { return c < left ? c : c - left + right_begin; };
    const auto column = [=](int c) {
      if (c + 4 < ncols)
        for (int r = 0; r < nb; ++r) __builtin_prefetch(&D(rowmap(kk + r), col_of(c + 4)));
      const int j = col_of(c);
      for (int r = 0; r < nb; ++r) T(r, c) = D(rowmap(kk + r), j);
    };
    if (!core::detail::host_backend_for<ExecSpace>(ncols, nb, [&](std::int64_t c) { column(int(c)); }))
      Kokkos::parallel_for("kess::gauss_jordan::extract",
                           Kokkos::RangePolicy<ExecSpace>(exec, 0, ncols), column);
  } else {
    for_each_entry(
        exec, "kess::gauss_jordan::extract", nb, ncols, KOKKOS_LAMBDA(int r, int c) {
          const int j = c < left ? c : c - left + right_begin;
          T(r, c) = D(rowmap(kk + r), j);
        });
  }
}

/// For the columns j of D in [0, left) and [right_begin, right_end) (T's columns in that order):
/// T = W = L1^-1 times the pivot block row (T: nb x ncols, ld nb; l1: nb x nb, unit lower); D
/// keeps the rows (form_h). Host memory: the host BLAS, per chunk of columns on kess's host threads
/// where the sweep holds OpenBLAS to one thread, else once; devices: core::trsm.
template <class ExecSpace, class DView, class MView, class TView, class LView>
void to_w(const ExecSpace& exec, const DView& D, const MView& rowmap, std::int64_t k, int nb,
          int left, int right_begin, int right_end, const TView& T, const LView& l1) {
  const int ncols = left + (right_end - right_begin);
  if (ncols == 0 || nb == 0) return;
  extract(exec, D, rowmap, k, nb, left, right_begin, right_end, T);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename TView::memory_space>::accessible) {
    exec.fence();
    const int ldt = static_cast<int>(T.stride(1)), ldl = static_cast<int>(l1.stride(1));
    constexpr int chunk = 64;
    const auto solve = [&](std::int64_t q) {
      const int c0 = static_cast<int>(q) * chunk, w = std::min(chunk, ncols - c0);
      core::lapack::trsm('L', 'L', 'N', 'U', nb, w, 1.0, l1.data(), ldl,
                         T.data() + static_cast<std::int64_t>(c0) * ldt, ldt);
    };
    if (!core::lapack::serial_blas_scope_active() ||
        !core::detail::host_backend_for<ExecSpace>((ncols + chunk - 1) / chunk,
                                                   std::int64_t(chunk) * nb * nb, solve))
      core::lapack::trsm('L', 'L', 'N', 'U', nb, ncols, 1.0, l1.data(), ldl, T.data(), ldt);
  } else {
    core::trsm(exec, "L", "L", "N", "U", 1.0, l1, T);
  }
}

/// The inverse's panel columns (logical columns k .. k+nb-1, here Dp, n x nb) receive the step's
/// elimination matrix: (Hp + L1 in the pivot rows) L1^-1, since H multiplies W = L1^-1 T and its
/// pivot block is U^-1 - L1 (form_h).
template <class ExecSpace, class DpView, class HpView, class MView, class LView>
void store_h(const ExecSpace& exec, const DpView& Dp, const HpView& Hp, const MView& rowmap,
                std::int64_t k, const LView& l1) {
  const int kk = static_cast<int>(k), b = static_cast<int>(Dp.extent(1));
  const std::int64_t n = Dp.extent(0);
  if (n == 0 || b == 0) return;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename DpView::memory_space>::accessible) {
    // Host: blocks of rows (independent in X L1 = B), each copied and solved by one thread where
    // the sweep holds OpenBLAS to one thread.
    exec.fence();
    constexpr std::int64_t rows = 256;
    const std::int64_t blocks = (n + rows - 1) / rows;
    const int ldd = static_cast<int>(Dp.stride(1)), ldl = static_cast<int>(l1.stride(1));
    const auto block = [&](std::int64_t q, bool solve) {
      const std::int64_t r0 = q * rows, r1 = std::min(n, r0 + rows);
      for (int c = 0; c < b; ++c)
        for (std::int64_t r = r0; r < r1; ++r) Dp(r, c) = Hp(r, c);
      for (int i = 0; i < b; ++i)  // the pivot rows in this block
        if (const std::int64_t r = rowmap(kk + i); r >= r0 && r < r1)
          for (int c = 0; c < b; ++c) Dp(r, c) += l1(i, c);
      if (solve)
        core::lapack::trsm('R', 'L', 'N', 'U', static_cast<int>(r1 - r0), b, 1.0, l1.data(), ldl,
                           &Dp(r0, 0), ldd);
    };
    const bool per_thread = core::lapack::serial_blas_scope_active();
    if (!core::detail::host_backend_for<ExecSpace>(
            blocks, rows * b, [&](std::int64_t q) { block(q, per_thread); }))
      for (std::int64_t q = 0; q < blocks; ++q) block(q, per_thread);
    if (!per_thread)
      core::lapack::trsm('R', 'L', 'N', 'U', static_cast<int>(n), b, 1.0, l1.data(), ldl,
                         Dp.data(), ldd);
  } else {
    copy_matrix(exec, Dp, Hp, "kess::gauss_jordan::store_h");
    for_each_entry(exec, "kess::gauss_jordan::store_h_pivot_rows", b, b, KOKKOS_LAMBDA(int i, int c) {
      Dp(rowmap(kk + i), c) += l1(i, c);
    });
    core::trsm(exec, "R", "L", "N", "U", 1.0, l1, Dp);
  }
}

/// dst(i, c) = D(rowmap(i), col0 + c): logical row order out of the physical one.
template <class ExecSpace, class DstView, class DView, class MView>
void gather_rows(const ExecSpace& exec, const DstView& dst, const DView& D, const MView& rowmap,
                    std::int64_t col0) {
  const int c0 = static_cast<int>(col0);
  for_each_entry(exec, "kess::gauss_jordan::gather_rows", static_cast<int>(dst.extent(0)),
              static_cast<int>(dst.extent(1)),
              KOKKOS_LAMBDA(int i, int c) { dst(i, c) = D(rowmap(i), c0 + c); });
}

/// C += H T (the rank-nb update, Köhler 2017 "Blocked Algorithm").
template <class ExecSpace, class HView, class TView, class CView>
void rank_update(const ExecSpace& exec, const HView& H, const TView& T, const CView& C) {
  if (C.extent(0) == 0 || C.extent(1) == 0) return;
  core::gemm(exec, "N", "N", 1.0, H, T, 1.0, C);
}

/// Whether rank_update_in_place runs for blocks of width nb on ExecSpace: host memory, kess's
/// host GEMM available, nb <= core::detail::host_gemm_max_gathered_k.
template <class ExecSpace>
bool update_in_place_available(int nb) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename ExecSpace::memory_space>::accessible) {
    return nb <= core::detail::host_gemm_max_gathered_k && core::detail::host_gemm_available();
  } else {
    (void)nb;
    return false;
  }
}

/// C_i += Hp W_i for column ranges C_i (n x c_i, LayoutLeft) of the matrices the sweep updates,
/// W_i = L1^-1 T_i, T_i being the pivot rows rowmap(k), .., rowmap(k + b - 1) of C_i: read and
/// solved with l1 by kess's host GEMM while it packs them (core::detail::HostGemmPart::b_rows,
/// b_solve), so the pivot block row is never copied out (such a copy costs one cache line a
/// value, written and read again). `side` (may be
/// empty): host work run on one of the GEMM's threads beside it
/// (core::detail::host_gemm_parts). Requires update_in_place_available<ExecSpace>(b).
template <class ExecSpace, class HView, class MView, class LView, class... CViews>
void rank_update_in_place(const ExecSpace& exec, const HView& Hp, const MView& rowmap,
                             std::int64_t k, const LView& l1, const std::function<void()>& side,
                             const CViews&... Cs) {
  core::detail::HostGemmPart parts[sizeof...(CViews)];
  int count = 0;
  const auto add = [&](const auto& C) {
    if (C.extent(0) == 0 || C.extent(1) == 0) return;
    const int ld = static_cast<int>(C.stride(1));
    parts[count++] = {C.data(), ld, C.data(), ld, static_cast<int>(C.extent(1)), rowmap.data() + k,
                      l1.data(), static_cast<int>(l1.stride(1))};
  };
  (add(Cs), ...);
  exec.fence();
  if (count == 0 || Hp.extent(1) == 0) {
    if (side) side();
    return;
  }
  core::detail::host_gemm_parts('N', 'N', static_cast<int>(Hp.extent(0)), static_cast<int>(Hp.extent(1)),
                          1.0, Hp.data(), static_cast<int>(Hp.stride(1)), parts, count, 1.0, 0,
                          side);
}

/// Host: the cycles (each of length >= 2, flat, with offsets of cycles.size() + 1 entries) of the
/// permutation "new position j takes the old entry q[j]".
inline void permutation_cycles(const std::vector<int>& q, std::vector<int>& cycles,
                      std::vector<int>& offsets) {
  const int n = static_cast<int>(q.size());
  std::vector<char> seen(n, 0);
  cycles.clear();
  offsets.assign(1, 0);
  for (int j0 = 0; j0 < n; ++j0) {
    if (seen[j0] || q[j0] == j0) continue;
    for (int j = j0; !seen[j]; j = q[j]) {
      seen[j] = 1;
      cycles.push_back(j);
    }
    offsets.push_back(static_cast<int>(cycles.size()));
  }
}

/// Host: the column permutation that turns the in-place Gauss-Jordan result X_s = (P A)^-1 into
/// A^-1 = X_s P (the interchanges piv, 0-based global, undone in reverse order):
/// X(:, j) = X_s(:, q[j]).
inline std::vector<int> column_source(const std::vector<int>& piv) {
  const int n = static_cast<int>(piv.size());
  std::vector<int> q(n);
  for (int j = 0; j < n; ++j) q[j] = j;
  for (int i = n - 1; i >= 0; --i) std::swap(q[i], q[piv[i]]);
  return q;
}

/// The same permutation as cycles (for permute_columns).
inline void column_cycles(const std::vector<int>& piv, std::vector<int>& cycles,
                             std::vector<int>& offsets) {
  permutation_cycles(column_source(piv), cycles, offsets);
}

/// dst(:, c) = src(:, idx(c)) for every c < idx.extent(0) (columns into a contiguous buffer).
template <class ExecSpace, class DstView, class SrcView, class IView>
void gather_columns(const ExecSpace& exec, const DstView& dst, const SrcView& src,
                       const IView& idx) {
  for_each_entry(exec, "kess::gauss_jordan::gather_columns", static_cast<int>(dst.extent(0)),
              static_cast<int>(idx.extent(0)),
              KOKKOS_LAMBDA(int i, int c) { dst(i, c) = src(i, idx(c)); });
}

/// dst(:, idx(c)) = src(:, c) for every c < idx.extent(0) (the inverse of gather_columns).
template <class ExecSpace, class DstView, class SrcView, class IView>
void scatter_columns(const ExecSpace& exec, const DstView& dst, const SrcView& src,
                        const IView& idx) {
  for_each_entry(exec, "kess::gauss_jordan::scatter_columns", static_cast<int>(src.extent(0)),
              static_cast<int>(idx.extent(0)),
              KOKKOS_LAMBDA(int i, int c) { dst(i, idx(c)) = src(i, c); });
}

/// X(c_0, j) <- X(c_1, j) <- ... <- X(c_last, j) <- X(c_0, j) along every cycle, one column per
/// work item: X(i, :) becomes the old X(q[i], :).
template <class ExecSpace, class XView, class CView, class OView>
void permute_rows(const ExecSpace& exec, const XView& X, const CView& cycles,
                     const OView& offsets, int ncycles) {
  if (ncycles == 0 || X.extent(1) == 0) return;
  const auto column = KOKKOS_LAMBDA(int j) {
    for (int c = 0; c < ncycles; ++c) {
      const int b = offsets(c), e = offsets(c + 1);
      const auto t = X(cycles(b), j);
      for (int s = b; s + 1 < e; ++s) X(cycles(s), j) = X(cycles(s + 1), j);
      X(cycles(e - 1), j) = t;
    }
  };
  if (core::detail::host_backend_for<ExecSpace>(X.extent(1), X.extent(0),
                                          [&](std::int64_t j) { column(static_cast<int>(j)); }))
    return;
  Kokkos::parallel_for("kess::gauss_jordan::permute_rows",
                       Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(X.extent(1))),
                       column);
}

/// X(i, c_0) <- X(i, c_1) <- ... <- X(i, c_last) <- X(i, c_0) along every cycle, one row per
/// work item (rows are contiguous in LayoutLeft: coalesced on GPUs).
template <class ExecSpace, class XView, class CView, class OView>
void permute_columns(const ExecSpace& exec, const XView& X, const CView& cycles,
                        const OView& offsets, int ncycles) {
  if (ncycles == 0 || X.extent(0) == 0) return;
  Kokkos::parallel_for(
      "kess::gauss_jordan::permute_columns",
      Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(X.extent(0))),
      KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < ncycles; ++c) {
          const int b = offsets(c), e = offsets(c + 1);
          const auto t = X(i, cycles(b));
          for (int s = b; s + 1 < e; ++s) X(i, cycles(s)) = X(i, cycles(s + 1));
          X(i, cycles(e - 1)) = t;
        }
      });
}

/// Counts the NaN/Inf entries of a rank-2 View and finds max |a_ij| over the finite ones.
template <class ExecSpace, class AView>
void scan_finite(const ExecSpace& exec, const AView& A, std::int64_t& bad, double& max_abs,
                    const char* label) {
  const int m = static_cast<int>(A.extent(0)), n = static_cast<int>(A.extent(1));
  bad = 0;
  max_abs = 0.0;
  if (m == 0 || n == 0) return;
  if constexpr (core::detail::is_host_backend<ExecSpace>()) {  // one pass, over the host threads
    std::vector<std::int64_t> cnt(n, 0);
    std::vector<double> mx(n, 0.0);
    const auto column = [&](int j) {
      std::int64_t c = 0;
      double x = 0;
      for (int i = 0; i < m; ++i) {
        const double v = A(i, j);
        const bool finite = std::isfinite(v);
        c += finite ? 0 : 1;
        const double a = finite ? std::fabs(v) : 0.0;
        x = a > x ? a : x;
      }
      cnt[j] = c;
      mx[j] = x;
    };
    core::detail::host_backend_for<ExecSpace>(n, m, [&](std::int64_t j) { column(static_cast<int>(j)); });
    for (int j = 0; j < n; ++j) {
      bad += cnt[j];
      max_abs = std::max(max_abs, mx[j]);
    }
    return;
  }
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(int j, std::int64_t& cnt) {
        for (int i = 0; i < m; ++i) cnt += kx::isfinite(A(i, j)) ? 0 : 1;
      },
      bad);
  Kokkos::parallel_reduce(
      label, Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(int j, double& mx) {
        for (int i = 0; i < m; ++i) {
          const double v = A(i, j);
          const double a = kx::isfinite(v) ? kx::fabs(v) : 0.0;
          if (a > mx) mx = a;
        }
      },
      Kokkos::Max<double>(max_abs));
}

}  // namespace kess::detail::gauss_jordan
