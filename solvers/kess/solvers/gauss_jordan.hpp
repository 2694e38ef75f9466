// Blocked Gauss-Jordan elimination (Köhler 2017, papers/002): kess::solve (Y = A^-1 B without
// forming A^-1, n^3 + 2 n^2 m flops) and kess::inverse (in place, 2 n^3 flops), with the
// determinant (sign and log|det|) from the pivots.
//
// Algorithm, per block column of width NB (the last one may be narrower):
//  1. LU with partial pivoting of the panel [A22; A32], A22^-1 = U^-1 L1^-1 and L1^-1 (NB x NB):
//     host memory spaces: on the host (LAPACK dgetrf), pivots checked at once; device memory
//     spaces: on the device (core::gj_factor_panel_device: recursive LU, one pipelined kernel a
//     32-column leaf, GEMMs and triangular solves above), pivots checked at the end, and with
//     look-ahead the chain of panels (each with its H, T of the next panel's columns, the
//     look-ahead GEMM) runs on a second, high-priority instance ahead of the updates on the
//     first (on CUDA on a partition of the device), ordered by events (gj_sweep_pipelined).
//     Steps 2-4 and the final permutations are the same for both. The text below describes the
//     host-panel path;
//  2. device: H = [-A12 A22^-1; A22^-1 - I; -L2 L1^-1] (two small GEMMs; - I: the pivot rows keep
//     T, and T + (A22^-1 - I) T = A22^-1 T);
//  3. device: the pivot block row copied out (T); the interchanges are lazy (a row map,
//     no rows are swapped: one pass over the trailing matrix a step saved, no strided swaps on
//     GPUs), H is scattered to physical row order instead;
//  4. device: D(:, cols) += H T, the rank-NB GEMM, first on the next panel's columns (the paper's
//     look-ahead GEMM); the next panel then goes to the host, and only after that fence is the
//     remaining GEMM enqueued, so the host factors panel k+1 while the device updates the rest;
// for the inverse, the panel's columns then become H; at the end the rows go back to logical order
// and the interchanges are undone as a column permutation (A^-1 = (P A)^-1 P).
// The O(n^3) work is GEMMs through core::gemm (KokkosBlas: the host BLAS or cuBLAS).
// Distributed (DistMatrix on a 1 x P grid, column-block-cyclic): the owner of each panel factors
// it and broadcasts H and the interchanges, every rank runs steps 3-4 on its own columns; the
// inverse's final column permutation is exchanged between ranks (see the section at the end).
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/kokkos/instances.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/view_comm.hpp>
#include <kess/core/kokkos/device_partition.hpp>
#include <kess/core/base/error.hpp>
#include <kess/solvers/gauss_jordan/detail/panel.hpp>
#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kess {

/// Where the panel LU of each block column runs.
enum class GaussJordanPanel {
  automatic,  ///< `device` for memory spaces the host cannot read, `host` otherwise
  host,       ///< LAPACK dgetrf on the host (pinned staging copies on CUDA)
  device      ///< kernels on the execution space (recursive LU), no host round trip per panel
};

/// How the device panel picks its pivot rows (the host panel is LAPACK dgetrf: partial pivoting).
enum class GaussJordanPivoting {
  partial,    ///< the largest remaining entry of each column (LAPACK's interchanges), every backend
  tournament  ///< CUDA device panel: tournament pivoting (CALU) in its 32-column leaves of 2048
              ///< to 16384 rows (others: partial). Other interchanges than partial pivoting's,
              ///< |l_ij| may exceed 1; H100: solve and inverse 2-8% faster (docs/gauss_jordan.md)
};

struct GaussJordanOptions {
  /// Block size NB; 0 picks a default: with the host panel 128 (256 from n = 3000 where kess's
  /// host GEMM is not available); with the device panel 512 on devices, 128 on host backends
  /// (docs/gauss_jordan.md, measured optima).
  int block = 0;
  /// Split the rank-NB update into the next panel's columns and the rest (papers/002 look-ahead).
  bool look_ahead = true;
  /// Reject NaN/Inf entries in the inputs (one pass over them).
  bool check_finite = true;
  /// solve: kess may use A's storage as its work matrix (A LayoutLeft and writable), saving an
  /// n x n copy; A's contents are unspecified afterwards (as with LAPACK's dgesv). Off: A is
  /// left as it was.
  bool overwrite_a = false;
  /// A pivot with |u_jj| <= pivot_tolerance * max|a_ij| is numerically singular (kess::Error,
  /// ErrorKind::singular); negative: n * epsilon. 0 rejects exactly zero pivots only.
  double pivot_tolerance = -1.0;
  /// Where the panel factorizations run (local and distributed alike).
  GaussJordanPanel panel = GaussJordanPanel::automatic;
  /// Device panel with look_ahead: the chain of panels (each panel's H, its pivot block row of the
  /// next panel's columns, the look-ahead update, the next panel's factorization) runs on a second
  /// instance of the execution space (a highest-priority CUDA stream), ahead of the trailing
  /// updates on the first, ordered by events only (detail::gj_sweep_pipelined). On host backends
  /// the same order runs on one instance.
  bool panel_stream = true;
  /// Pivot choice of the device panel.
  GaussJordanPivoting pivoting = GaussJordanPivoting::partial;
  /// With panel_stream on CUDA: the multiprocessors the trailing updates leave to the panel chain
  /// (a green context holds the updates: core::partition_device; their share is rounded down to
  /// what the device allows, on Hopper a multiple of 8, so 12 leaves 12 of an H100's 132). 0, or
  /// where partitions cannot be had: the updates and the chain share the whole device.
  int panel_sms = 12;
};

/// What solve/inverse report besides the solution: det(A) = det_sign * exp(log_abs_det).
struct GaussJordanResult {
  std::int64_t n = 0;
  std::int64_t nrhs = 0;  ///< columns of B (0 for inverse)
  int block = 0;          ///< NB used
  int det_sign = 1;       ///< +1 or -1
  double log_abs_det = 0.0;
  double min_abs_pivot = std::numeric_limits<double>::infinity();
  double max_abs_pivot = 0.0;
  double max_abs_a = 0.0;  ///< max |a_ij|, the scale of the pivot tolerance
  /// Wall time of the host steps (panel transfers and factorizations, after the device caught up):
  /// the part of the run that is not the device's GEMMs and interchanges. 0 with the device
  /// panel (its kernels are enqueued with the rest and not timed separately).
  double panel_seconds = 0.0;
  /// det(A) itself (may overflow to +-inf or underflow to 0 for large n: prefer log_abs_det).
  double determinant() const { return det_sign * std::exp(log_abs_det); }
};

/// Flops of solve (n^3 + 2 n^2 m) and of the in-place inverse (2 n^3), the counts rates use.
inline double gauss_jordan_solve_flops(std::int64_t n, std::int64_t m) {
  const double dn = static_cast<double>(n);
  return dn * dn * dn + 2.0 * dn * dn * static_cast<double>(m);
}
inline double gauss_jordan_inverse_flops(std::int64_t n) {
  const double dn = static_cast<double>(n);
  return 2.0 * dn * dn * dn;
}

namespace detail {

template <class T>
using enable_if_exec_t = std::enable_if_t<Kokkos::is_execution_space<T>::value, int>;

enum class GjMode { solve, inverse };

template <class ExecSpace>
constexpr bool gj_host_backend() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                    typename ExecSpace::memory_space>::accessible;
}

/// Widest GEMM of a device update, in columns: between such GEMMs the panel chain's kernels get
/// multiprocessors that one long GEMM keeps (H100, NB 384: solve 16384 369 -> 356 ms, inverse
/// 292 -> 283 ms; 1024 and 4096 columns no better; docs/benchmarks.md, sessions 11 and 14).
/// Host BLAS: one GEMM.
constexpr std::int64_t kGjDeviceGemmColumns = 2048;

/// The host panel's NB: 128; with the BLAS's DGEMM 256 from n = 3000 (2 cores, OpenBLAS, n = 4000:
/// solve 1.40 / 1.44 s with 256 against 1.66 / 1.47 s with 128, inverse 0.92 / 0.97 against
/// 1.15 / 1.01 s; n = 2000 within the spread; docs/gauss_jordan.md). With kess's host GEMM 128 is
/// the better one at 4000 too (solve in A 0.98-1.00 s against 0.99-1.03 s, session 22). With the
/// host panel on an H200: 64 at n = 8192 and 128 at n = 16384 were best (the host panel limits
/// larger NB).
inline int gj_default_block(std::int64_t n) {
  return n >= 3000 && !core::detail::host_gemm_available() ? 256 : 128;
}

/// With the device panel: 512 on devices (H100, pipelined sweep, same run: solve 31.4 / 77.0 /
/// 323 ms at n = 4096 / 8192 / 16384 against 32.1 / 78.3 / 330 ms with 384, inverse 32.5 / 75.8 /
/// 251 against 33.7 / 75.9 / 256 ms; wider blocks lose, docs/benchmarks.md, Gauss-Jordan sessions
/// 14 and 15), 128 on host backends.
template <class ExecSpace>
int gj_default_block_device_panel() {
  return gj_host_backend<ExecSpace>() ? 128 : 512;
}

/// The NB that GaussJordanPanel::automatic gets for order n (the host panel on host backends).
template <class ExecSpace>
int gj_default_block_automatic(std::int64_t n) {
  return gj_host_backend<ExecSpace>() ? gj_default_block(n)
                                      : gj_default_block_device_panel<ExecSpace>();
}

inline std::string gj_int(std::int64_t v) { return std::to_string(v); }

/// A host vector of indices as a View in Mem (copied on exec; exec must be fenced before the
/// vector changes).
template <class Mem, class ExecSpace>
Kokkos::View<int*, Mem> gj_upload(const ExecSpace& exec, const std::vector<int>& v,
                                  const char* label) {
  Kokkos::View<int*, Mem> d(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label)),
                            v.size());
  Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(v.data(), v.size());
  Kokkos::deep_copy(exec, d, h);
  return d;
}

/// In-place inverse: every column's rows back to logical order, D(i, :) <- D(q[i], :) (cycles of
/// the row map q), then (columns = true) the columns permuted by the interchanges all_piv
/// (A^-1 = (P A)^-1 P). Fences `exec`.
template <class ExecSpace, class DView>
void gj_permute_back(const ExecSpace& exec, const DView& D, const std::vector<int>& q,
                     const std::vector<int>& all_piv, bool columns) {
  using Mem = typename DView::memory_space;
  std::vector<int> cycles, offsets;
  core::gj_cycles(q, cycles, offsets);
  if (offsets.size() > 1) {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      // Host: along the cycles, a column at a time (the column stays in cache).
      auto cyc = gj_upload<Mem>(exec, cycles, "kess::gauss_jordan::cycles");
      auto off = gj_upload<Mem>(exec, offsets, "kess::gauss_jordan::cycle_offsets");
      core::gj_permute_rows(exec, D, cyc, off, static_cast<int>(offsets.size()) - 1);
    } else {
      // Devices: a thread walking a column's cycles is a chain of dependent memory round trips
      // (8 ms at n = m = 8192 on an H100); gather blocks of columns through a buffer instead.
      const auto qd = gj_upload<Mem>(exec, q, "kess::gauss_jordan::row_source");
      const std::int64_t n = D.extent(0), m = D.extent(1);
      // Blocks of an eighth of the columns (so that the tests take several), at most 128 MB.
      const std::int64_t cb = kx::min<std::int64_t>(
          m, kx::max<std::int64_t>(32, kx::min<std::int64_t>((m + 7) / 8, (std::int64_t(1) << 24) / n)));
      Kokkos::View<double**, Kokkos::LayoutLeft, Mem> tmp(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::gauss_jordan::row_buffer"), n, cb);
      for (std::int64_t j0 = 0; j0 < m; j0 += cb) {
        const int w = static_cast<int>(kx::min(cb, m - j0)), c0 = static_cast<int>(j0);
        core::gj_for_each(exec, "kess::gauss_jordan::rows_gather", static_cast<int>(n), w,
                          KOKKOS_LAMBDA(int i, int c) { tmp(i, c) = D(qd(i), c0 + c); });
        core::gj_for_each(exec, "kess::gauss_jordan::rows_put", static_cast<int>(n), w,
                          KOKKOS_LAMBDA(int i, int c) { D(i, c0 + c) = tmp(i, c); });
      }
    }
    kx::fence(exec, "kess::gauss_jordan::permute_rows");  // the host vectors are reused
  }
  if (!columns) return;
  core::gj_column_cycles(all_piv, cycles, offsets);
  if (offsets.size() > 1) {
    auto cyc = gj_upload<Mem>(exec, cycles, "kess::gauss_jordan::cycles");
    auto off = gj_upload<Mem>(exec, offsets, "kess::gauss_jordan::cycle_offsets");
    core::gj_permute_columns(exec, D, cyc, off, static_cast<int>(offsets.size()) - 1);
    kx::fence(exec, "kess::gauss_jordan::permute_columns");
  }
}

/// The determinant and pivot range of st into res.
inline void gj_store_pivot_stats(const core::GjPivotStats& st, GaussJordanResult& res) {
  res.det_sign = st.sign;
  res.log_abs_det = st.log_abs_det;
  res.min_abs_pivot = st.min_abs_pivot;
  res.max_abs_pivot = st.max_abs_pivot;
}

/// The end of a sweep: for the in-place inverse, rows back to logical order (the cycles of the
/// row map q) and the columns permuted by the pivots; the row map out when asked; the
/// determinant and pivot range into res. Fences `exec`.
template <class ExecSpace, class DView>
void gj_finish(const ExecSpace& exec, const DView& D, GjMode mode, const std::vector<int>& q,
               const std::vector<int>& all_piv,
               const Kokkos::View<int*, typename DView::memory_space>& rowmap,
               Kokkos::View<int*, typename DView::memory_space>* rowmap_out,
               const core::GjPivotStats& st, GaussJordanResult& res) {
  if (mode == GjMode::inverse) gj_permute_back(exec, D, q, all_piv, true);
  if (rowmap_out) *rowmap_out = rowmap;
  kx::fence(exec, "kess::gauss_jordan::done");
  gj_store_pivot_stats(st, res);
}

/// Pivots below pivot_tolerance * max|A| (default n eps max|A|) are singular.
inline double gj_pivot_floor(const GaussJordanOptions& opts, std::int64_t n, double max_abs_a) {
  const double tol = opts.pivot_tolerance < 0
                         ? static_cast<double>(n) * std::numeric_limits<double>::epsilon()
                         : opts.pivot_tolerance;
  return tol * max_abs_a;
}

/// Work buffers of one sweep: the panel, A12, H (logical and physical row order), the pivot
/// block row T, the NB x NB inverses and the row map.
template <class Mem>
struct GjSweepBuffers {
  Kokkos::View<double*, Mem> pbuf, abuf, tbuf, sbuf;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> hbuf, hpbuf;
  Kokkos::View<int*, Mem> rowmap;
  template <class ExecSpace>
  GjSweepBuffers(const ExecSpace& exec, std::int64_t n, std::int64_t N, int nb) {
    const auto alloc = [&](const char* label) {
      return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
    };
    pbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::panel"), n * nb);
    abuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::A12"), n * nb);
    hbuf = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>(alloc("kess::gauss_jordan::H"), n, nb);
    hpbuf = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>(alloc("kess::gauss_jordan::Hp"), n, nb);
    tbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::T"), static_cast<std::int64_t>(nb) * N);
    sbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::inverses"), 2 * nb * nb);
    rowmap = Kokkos::View<int*, Mem>(alloc("kess::gauss_jordan::rowmap"), n);
  }
};

/// Steps 3-4 of block column k (width b) with H (logical row order) in w.hbuf: H in physical row
/// order, the pivot block row T out of the columns [0, left) and [c0, nA) of D (the columns of A,
/// nA = D.extent(1)) and out of every column of DB (the right-hand sides, updated where they are),
/// and the rank-b update of those columns; in inverse mode the columns [left, c0) (the panel's,
/// where this D holds them) then receive H. la > 0: the next panel's columns are [c0, c0 + la).
/// With look-ahead they are updated first and handoff(rb, la, remaining, true) hands that panel
/// over (rb = k + b; remaining(la) enqueues the rest of the update); otherwise the whole update is
/// enqueued and handoff(rb, la, remaining, false) follows when la > 0.
template <class ExecSpace, class DView, class BView, class Handoff>
void gj_apply_h(const ExecSpace& exec, const DView& D, const BView& DB, GjMode mode,
                const GjSweepBuffers<typename DView::memory_space>& w, std::int64_t k, int b,
                std::int64_t left, std::int64_t c0, std::int64_t la, bool look_ahead,
                const Handoff& handoff) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t nA = D.extent(1), mB = DB.extent(1);
  auto H = Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b));
  auto Hp = Kokkos::subview(w.hpbuf, Kokkos::ALL(), pair(0, b));
  core::gj_scatter_h(exec, H, w.rowmap, Hp);
  // 3. the pivot block row T out of the other columns: A's first, then B's (not on host backends
  //    where kess's host GEMM reads it in place).
  constexpr std::int64_t chunk = gj_host_backend<ExecSpace>() ? 0 : kGjDeviceGemmColumns;
  const bool in_place = chunk == 0 && core::gj_update_in_place_available<ExecSpace>(b);
  const std::int64_t ta = left + (nA - c0), tcols = ta + mB;
  UMat T(w.tbuf.data(), b, tcols);
  if (!in_place) {
    core::gj_extract(exec, D, w.rowmap, k, b, static_cast<int>(left), static_cast<int>(c0),
                     static_cast<int>(nA), Kokkos::subview(T, Kokkos::ALL(), pair(0, ta)));
    if (mB > 0)
      core::gj_extract(exec, DB, w.rowmap, k, b, 0, 0, static_cast<int>(mB),
                       Kokkos::subview(T, Kokkos::ALL(), pair(ta, tcols)));
  }
  // 4. rank-b update (devices: GEMMs of at most kGjDeviceGemmColumns columns).
  const auto update = [&](const auto& Ts, const auto& Cs) {
    const std::int64_t c = Cs.extent(1), step = chunk > 0 ? chunk : c;
    for (std::int64_t j = 0; j < c; j += step)
      core::gj_rank_update(exec, Hp, Kokkos::subview(Ts, Kokkos::ALL(), pair(j, kx::min(c, j + step))),
                           Kokkos::subview(Cs, Kokkos::ALL(), pair(j, kx::min(c, j + step))));
  };
  // remaining(from[, beside]): beside (host work, a std::function<void()>) runs on one of the
  // update's threads where the update reads the pivot rows in place, else before the update.
  const auto remaining = [&](std::int64_t from, const auto&... beside_arg) {
    static_assert(sizeof...(beside_arg) <= 1, "remaining(from[, beside])");
    std::function<void()> beside;
    ((beside = beside_arg), ...);
    if (beside && !in_place) {
      beside();
      beside = nullptr;
    }
    if constexpr (chunk == 0) {
      // Host: the three column ranges in one GEMM call, so H is packed once for all of them (the
      // solve at n = 4000 packed it three times a step per thread).
      const std::int64_t from_t = kx::min(left + from, ta), from_d = kx::min(c0 + from, nA);
      if (in_place)
        core::gj_rank_update_in_place(exec, Hp, w.rowmap, k, beside,
                                      Kokkos::subview(D, Kokkos::ALL(), pair(0, left)),
                                      Kokkos::subview(D, Kokkos::ALL(), pair(from_d, nA)), DB);
      else
        core::gemm_shared_a(exec, 1.0, Hp, 1.0,
                          std::make_pair(Kokkos::subview(T, Kokkos::ALL(), pair(0, left)),
                                         Kokkos::subview(D, Kokkos::ALL(), pair(0, left))),
                          std::make_pair(Kokkos::subview(T, Kokkos::ALL(), pair(from_t, ta)),
                                         Kokkos::subview(D, Kokkos::ALL(), pair(from_d, nA))),
                          std::make_pair(Kokkos::subview(T, Kokkos::ALL(), pair(ta, tcols)), DB));
    } else {
      if (left > 0)
        update(Kokkos::subview(T, Kokkos::ALL(), pair(0, left)),
               Kokkos::subview(D, Kokkos::ALL(), pair(0, left)));
      if (c0 + from < nA)
        update(Kokkos::subview(T, Kokkos::ALL(), pair(left + from, ta)),
               Kokkos::subview(D, Kokkos::ALL(), pair(c0 + from, nA)));
      if (mB > 0) update(Kokkos::subview(T, Kokkos::ALL(), pair(ta, tcols)), DB);
    }
    if (mode == GjMode::inverse && c0 > left)
      core::gj_store_h(exec, Kokkos::subview(D, Kokkos::ALL(), pair(left, c0)), Hp, w.rowmap, k);
  };
  const std::int64_t rb = k + b;
  if (la > 0 && look_ahead) {
    const auto Dla = Kokkos::subview(D, Kokkos::ALL(), pair(c0, c0 + la));
    if (in_place)
      core::gj_rank_update_in_place(exec, Hp, w.rowmap, k, {}, Dla);
    else
      core::gj_rank_update(exec, Hp, Kokkos::subview(T, Kokkos::ALL(), pair(left, left + la)), Dla);
    handoff(rb, la, remaining, true);
  } else {
    remaining(0);
    if (la > 0) handoff(rb, la, remaining, false);
  }
}

/// Steps 2-4 of block column k (width b) on one rank, once the panel's inverses are in w.sbuf:
/// H from the panel (logical order), then gj_apply_h over all of D.
template <class ExecSpace, class DView, class BView, class Handoff>
void gj_update_step(const ExecSpace& exec, const DView& D, const BView& DB, GjMode mode,
                    const GjSweepBuffers<typename DView::memory_space>& w, std::int64_t k, int b,
                    int nb, bool look_ahead, const Handoff& handoff) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t n = D.extent(0);
  UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
  UMat a22inv(w.sbuf.data(), b, b), l1inv(w.sbuf.data() + b * b, b, b);
  // 2. H (logical order).
  core::gj_form_h(exec, A12, k, b, P, a22inv, l1inv,
                  Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b)));
  const std::int64_t rb = k + b;
  const std::int64_t la = kx::min<std::int64_t>(nb, kx::max<std::int64_t>(0, n - rb));
  gj_apply_h(exec, D, DB, mode, w, k, b, mode == GjMode::inverse ? k : 0, rb, la, look_ahead,
             handoff);
}

/// The elimination on [D | DB]: D = A (n x n), DB = B (n x m; m = 0 for the inverse), both
/// LayoutLeft and writable, each updated where it is. solve: DB becomes A^-1 B with its rows in
/// physical order (*rowmap_out, logical -> physical, says where); D is garbage afterwards.
/// inverse: D becomes A^-1.
template <class ExecSpace, class DView, class BView>
GaussJordanResult gauss_jordan_sweep_host_panel(
    const ExecSpace& exec, const DView& D, const BView& DB, GjMode mode,
    const GaussJordanOptions& opts, double max_abs_a, const char* fn,
    Kokkos::View<int*, typename DView::memory_space>* rowmap_out = nullptr) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t n = D.extent(0), N = D.extent(1) + DB.extent(1);
  GaussJordanResult res;
  res.n = n;
  res.nrhs = DB.extent(1);
  res.max_abs_a = max_abs_a;
  const int nb =
      static_cast<int>(kx::min<std::int64_t>(opts.block > 0 ? opts.block : gj_default_block(n), n));
  res.block = nb;
  if (n == 0) return res;
  // Where kess's host GEMM runs the updates, every other BLAS call of the sweep (panels, small
  // products) runs on one OpenBLAS thread: kess's host loops park OpenBLAS's workers, and a
  // threaded call after each would start them again (15 threads a step on a 16-core node, which
  // then spin beside the update; docs/benchmarks.md, session 24).
  // (Only the last step can be narrower than nb, and it has no next panel to factor beside.)
  const bool kess_updates =
      gj_host_backend<ExecSpace>() && core::gj_update_in_place_available<ExecSpace>(nb);
  std::optional<core::lapack::SerialBlasScope> one_blas_thread;
  if (kess_updates) one_blas_thread.emplace();
  const double pivot_floor = gj_pivot_floor(opts, n, max_abs_a);
  const GjSweepBuffers<Mem> w(exec, n, N, nb);
  const auto& pbuf = w.pbuf;
  const auto& abuf = w.abuf;
  const auto& sbuf = w.sbuf;
  const auto& rowmap = w.rowmap;
  auto pbuf_h = core::gj_host_buffer(pbuf, "kess::gauss_jordan::panel_host");
  auto sbuf_h = core::gj_host_buffer(sbuf, "kess::gauss_jordan::inverses_host");
  auto rowmap_h = core::gj_host_buffer(rowmap, "kess::gauss_jordan::rowmap_host");
  std::vector<int> ipiv(nb);
  std::vector<int> all_piv(mode == GjMode::inverse ? n : 0);
  for (std::int64_t i = 0; i < n; ++i) rowmap_h(i) = static_cast<int>(i);
  Kokkos::deep_copy(exec, rowmap, rowmap_h);
  core::GjPivotStats st;
  // The panel starting at column k (logical rows k..n-1) to the host, A12 kept on the device.
  const auto panel_to_host = [&](std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rows = n - k;
    UMat P(pbuf.data(), rows, b), A12(abuf.data(), k, b);
    core::gj_gather_panel(exec, D, rowmap, k, b, A12, P, k);
    Kokkos::deep_copy(exec, Kokkos::subview(pbuf_h, pair(0, rows * b)),
                      Kokkos::subview(pbuf, pair(0, rows * b)));
  };
  panel_to_host(0);
  kx::fence(exec, "kess::gauss_jordan::panel");

  // 1. host: factor the panel at column k (already on the host); the interchanges go into the
  //    row map only (its entries from k on, not those an update of the step before reads).
  const auto factor_panel = [&](std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    Kokkos::Timer panel_timer;
    core::gj_factor_panel_host(fn, static_cast<int>(n - k), b, k, pbuf_h.data(), ipiv.data(),
                               sbuf_h.data(), sbuf_h.data() + b * b, pivot_floor, st);
    for (int i = 0; i < b; ++i) {
      if (ipiv[i] != i) std::swap(rowmap_h(k + i), rowmap_h(k + ipiv[i]));
      if (mode == GjMode::inverse) all_piv[k + i] = static_cast<int>(k) + ipiv[i];
    }
    res.panel_seconds += panel_timer.seconds();
  };
  bool factored = false;  // this step's panel was factored beside the previous update
  for (std::int64_t k = 0; k < n; k += nb) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rows = n - k;
    if (!factored) {
      try {  // on a device the previous step's remaining GEMM runs meanwhile
        factor_panel(k);
      } catch (...) {
        kx::fence(exec, "kess::gauss_jordan::error");  // the previous GEMM still uses the buffers
        throw;
      }
    }
    factored = false;
    Kokkos::deep_copy(exec, Kokkos::subview(pbuf, pair(0, rows * b)),
                      Kokkos::subview(pbuf_h, pair(0, rows * b)));
    Kokkos::deep_copy(exec, Kokkos::subview(sbuf, pair(0, 2 * b * b)),
                      Kokkos::subview(sbuf_h, pair(0, 2 * b * b)));
    Kokkos::deep_copy(exec, rowmap, rowmap_h);
    // 2.-4. H, T and the rank-b update. Look-ahead: after the GEMM on the next panel's columns
    //    that panel goes to the host and the rest of the GEMM is enqueued after the fence, so
    //    that the host factors the next panel while the device runs it. On host backends where
    //    kess's host GEMM runs the update, one of its threads factors that panel (OpenBLAS on one
    //    thread) while the others start on the update, instead of one core factoring it alone.
    gj_update_step(exec, D, DB, mode, w, k, b, nb, opts.look_ahead,
                   [&](std::int64_t rb, std::int64_t la, const auto& remaining, bool ahead) {
                     panel_to_host(rb);
                     kx::fence(exec, "kess::gauss_jordan::panel");
                     if (!ahead) return;
                     if (kess_updates) {
                       remaining(la, std::function<void()>([&, rb] { factor_panel(rb); }));
                       factored = true;
                     } else {
                       remaining(la);
                     }
                   });
  }
  // Back to logical row order: D(i, :) <- D(rowmap(i), :) (solve: done while copying Y out).
  std::vector<int> q;
  if (mode == GjMode::inverse)
    for (std::int64_t i = 0; i < n; ++i) q.push_back(rowmap_h(i));
  gj_finish(exec, D, mode, q, all_piv, rowmap, rowmap_out, st, res);
  return res;
}

/// The device sweep with the panel chain on its own instance (`side`) and the trailing updates
/// on `bulk` (exec, or a partition of the device), in stream order only. Step s's H, its scatter
/// into physical order, the pivot block row T_s of the next panel's columns, the look-ahead update
/// of those columns, the next panel's gather and factorization all run on side, as soon as the
/// previous step's update has reached those columns; bulk extracts the rest of T_s once the panel
/// is done and runs the remaining update of step s. So bulk never waits for the chain between
/// two steps unless the chain is longer than the update. Hp and T alternate between two buffers
/// (step s's update still reads one while step s + 1 fills the other). On entry the work buffers
/// and the row map are initialized on exec; on return exec continues after both instances.
template <class ExecSpace, class DView, class BView, class Factor, class Gather>
void gj_sweep_pipelined(const ExecSpace& exec, const ExecSpace& side, const ExecSpace& bulk,
                        const DView& D, const BView& DB, GjMode mode,
                        const GjSweepBuffers<typename DView::memory_space>& w, int nb,
                        const Factor& factor, const Gather& gather) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  using Mark = kx::StreamMark<ExecSpace>;
  const std::int64_t n = D.extent(0), nA = D.extent(1), mB = DB.extent(1);
  const std::int64_t steps = (n + nb - 1) / nb;
  // The second buffers of Hp and T.
  const auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> hp2(alloc("kess::gauss_jordan::Hp2"), n, nb);
  Kokkos::View<double*, Mem> t2(alloc("kess::gauss_jordan::T2"), w.tbuf.extent(0));
  std::vector<Mark> sready(steps), la_done(steps), r_done(steps);
  Mark init;
  init.record(exec);
  init.wait(side);
  if (&bulk != &exec) init.wait(bulk);
  // Widths of the update's GEMMs: at most kGjDeviceGemmColumns (and at least the next panel's
  // width, so that the first one covers the columns of the next look-ahead).
  const std::int64_t chunk = kx::max<std::int64_t>(kGjDeviceGemmColumns, nb);
  gather(side, 0);
  factor(side, 0);
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t k = s * nb;
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rb = k + b;
    const std::int64_t la = kx::min<std::int64_t>(nb, n - rb);
    const std::int64_t left = mode == GjMode::inverse ? k : 0, c0 = rb;
    const std::int64_t ta = left + (nA - c0), tcols = ta + mB;
    const auto hp_all = s % 2 == 0 ? w.hpbuf : hp2;
    const auto Hp = Kokkos::subview(hp_all, Kokkos::ALL(), pair(0, b));
    UMat T((s % 2 == 0 ? w.tbuf : t2).data(), b, tcols);
    const auto Tcols = [&](std::int64_t c, std::int64_t e) {
      return Kokkos::subview(T, Kokkos::ALL(), pair(c, e));
    };
    // side: H_s, into physical order once step s - 2's update is done with its buffer.
    {
      UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
      UMat a22inv(w.sbuf.data(), b, b), l1inv(w.sbuf.data() + b * b, b, b);
      const auto H = Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b));
      core::gj_form_h(side, A12, k, b, P, a22inv, l1inv, H);
      if (s >= 2) r_done[s - 2].wait(side);
      core::gj_scatter_h(side, H, w.rowmap, Hp);
    }
    // side: T_s of the next panel's columns (all of T_0: no update before it).
    const auto extract_a = [&](const ExecSpace& on, std::int64_t d0, std::int64_t d1,
                               std::int64_t t0) {
      if (d1 > d0)
        core::gj_extract(on, D, w.rowmap, k, b, 0, static_cast<int>(d0), static_cast<int>(d1),
                         Tcols(t0, t0 + (d1 - d0)));
    };
    const auto extract_rest = [&](const ExecSpace& on) {
      if (left > 0)
        core::gj_extract(on, D, w.rowmap, k, b, static_cast<int>(left), 0, 0, Tcols(0, left));
      extract_a(on, c0 + la, nA, left + la);
      if (mB > 0)
        core::gj_extract(on, DB, w.rowmap, k, b, 0, 0, static_cast<int>(mB), Tcols(ta, tcols));
    };
    if (s > 0) la_done[s - 1].wait(side);
    extract_a(side, c0, c0 + la, left);
    if (s == 0) extract_rest(side);
    sready[s].record(side);
    // side: the look-ahead update, the next panel gathered and factored.
    if (la > 0) {
      core::gj_rank_update(side, Hp, Tcols(left, left + la),
                           Kokkos::subview(D, Kokkos::ALL(), pair(c0, c0 + la)));
      gather(side, rb);
      factor(side, rb);
    }
    // bulk: the rest of T_s, then the update: the columns right of the look-ahead first (the
    // next step's look-ahead waits for their first GEMM), then those left of the panel, B's.
    sready[s].wait(bulk);
    if (s > 0) extract_rest(bulk);
    const auto update = [&](std::int64_t t0, const auto& C, bool mark_first) {
      const std::int64_t c = C.extent(1);
      for (std::int64_t j = 0; j < c; j += chunk) {
        const std::int64_t e = kx::min(c, j + chunk);
        core::gj_rank_update(bulk, Hp, Tcols(t0 + j, t0 + e),
                             Kokkos::subview(C, Kokkos::ALL(), pair(j, e)));
        if (mark_first && j == 0) la_done[s].record(bulk);
      }
      if (mark_first && c == 0) la_done[s].record(bulk);
    };
    update(left + la, Kokkos::subview(D, Kokkos::ALL(), pair(c0 + la, nA)), true);
    if (left > 0) update(0, Kokkos::subview(D, Kokkos::ALL(), pair(0, left)), false);
    if (mB > 0) update(ta, DB, false);
    if (mode == GjMode::inverse && c0 > left)
      core::gj_store_h(bulk, Kokkos::subview(D, Kokkos::ALL(), pair(left, c0)), Hp, w.rowmap, k);
    r_done[s].record(bulk);
  }
  Mark end_side, end_bulk;
  end_side.record(side);
  end_side.wait(exec);
  if (&bulk != &exec) {
    end_bulk.record(bulk);
    end_bulk.wait(exec);
  }
  // The marks' events may be destroyed now: waits already enqueued stay valid.
}

/// The same elimination with the panel LU on the execution space (gj_factor_panel_device): with
/// look-ahead and panel_stream the pipelined order of gj_sweep_pipelined, otherwise every step on
/// `exec` in the classic order; no fence inside the sweep either way. The pivots are checked on
/// the host at the end, in column order, so the first bad one is reported as by the host path.
template <class ExecSpace, class DView, class BView>
GaussJordanResult gauss_jordan_sweep_device_panel(
    const ExecSpace& exec, const DView& D, const BView& DB, GjMode mode,
    const GaussJordanOptions& opts, double max_abs_a, const char* fn,
    Kokkos::View<int*, typename DView::memory_space>* rowmap_out = nullptr) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t n = D.extent(0), N = D.extent(1) + DB.extent(1);
  GaussJordanResult res;
  res.n = n;
  res.nrhs = DB.extent(1);
  res.max_abs_a = max_abs_a;
  const int nb = static_cast<int>(kx::min<std::int64_t>(
      opts.block > 0 ? opts.block : gj_default_block_device_panel<ExecSpace>(), n));
  res.block = nb;
  if (n == 0) return res;
  const double pivot_floor = gj_pivot_floor(opts, n, max_abs_a);
  const auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  const GjSweepBuffers<Mem> w(exec, n, N, nb);
  const auto& pbuf = w.pbuf;
  const auto& abuf = w.abuf;
  const auto& sbuf = w.sbuf;
  const auto& rowmap = w.rowmap;
  Kokkos::View<double*, Mem> diag(alloc("kess::gauss_jordan::pivots"), n);
  Kokkos::View<int*, Mem> piv(alloc("kess::gauss_jordan::interchanges"), n);
  core::GjDevicePanelWork<Mem> work(n, nb);
  work.tournament_leaves = opts.pivoting == GaussJordanPivoting::tournament;
  Kokkos::parallel_for(
      "kess::gauss_jordan::rowmap_init", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(std::int64_t i) { rowmap(i) = static_cast<int>(i); });
  const auto gather_on = [&](const ExecSpace& on, std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    UMat P(pbuf.data(), n - k, b), A12(abuf.data(), k, b);
    core::gj_gather_panel(on, D, rowmap, k, b, A12, P, k);
  };
  // 1. the panel LU (device); the interchanges go into the row map (device).
  const auto factor = [&](const ExecSpace& on, std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    UMat P(pbuf.data(), n - k, b);
    UMat a22inv(sbuf.data(), b, b), l1inv(sbuf.data() + b * b, b, b);
    core::gj_factor_panel_device(on, P, k, a22inv, l1inv, work, diag, piv, rowmap);
  };
  if (opts.look_ahead && opts.panel_stream && n > nb) {
    // The panel chain on a second instance (devices), the updates on exec or a partition of it.
    ExecSpace side = exec;
    std::optional<ExecSpace> part;  // GaussJordanOptions::panel_sms
    if constexpr (!gj_host_backend<ExecSpace>()) {
      kx::fence(exec, "kess::gauss_jordan::init");  // work buffers are initialized on exec
      side = core::gj_instances::panel_instance(exec);
      if (opts.panel_sms > 0) part = core::partition_device(exec, opts.panel_sms);
    }
    gj_sweep_pipelined(exec, side, part ? *part : exec, D, DB, mode, w, nb, factor, gather_on);
  } else {
    gather_on(exec, 0);
    factor(exec, 0);
    for (std::int64_t k = 0; k < n; k += nb) {
      const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
      // 2.-4. H, T and the rank-b update: the next panel's columns first, that panel gathered
      //    and factored, then the rest.
      gj_update_step(exec, D, DB, mode, w, k, b, nb, opts.look_ahead,
                     [&](std::int64_t rb, std::int64_t la, const auto& remaining, bool ahead) {
                       gather_on(exec, rb);
                       factor(exec, rb);
                       if (ahead) remaining(la);
                     });
    }
  }
  // The pivots, checked in column order (the first bad one is reported).
  auto diag_h = Kokkos::create_mirror_view(diag);
  auto piv_h = Kokkos::create_mirror_view(piv);
  auto rowmap_h = Kokkos::create_mirror_view(rowmap);
  Kokkos::deep_copy(exec, diag_h, diag);
  Kokkos::deep_copy(exec, piv_h, piv);
  Kokkos::deep_copy(exec, rowmap_h, rowmap);
  kx::fence(exec, "kess::gauss_jordan::pivots");
  core::GjPivotStats st;
  for (std::int64_t j = 0; j < n; ++j)
    core::gj_check_pivot(fn, j, diag_h(j), piv_h(j) != j, pivot_floor, st);
  std::vector<int> q, all_piv;
  if (mode == GjMode::inverse)
    for (std::int64_t i = 0; i < n; ++i) {
      q.push_back(rowmap_h(i));
      all_piv.push_back(piv_h(i));
    }
  gj_finish(exec, D, mode, q, all_piv, rowmap, rowmap_out, st, res);
  return res;
}

/// The elimination (see gauss_jordan_sweep_host_panel), the panel LU where opts.panel says.
template <class ExecSpace, class DView, class BView>
GaussJordanResult gauss_jordan_sweep(
    const ExecSpace& exec, const DView& D, const BView& DB, GjMode mode,
    const GaussJordanOptions& opts, double max_abs_a, const char* fn,
    Kokkos::View<int*, typename DView::memory_space>* rowmap_out = nullptr) {
  const bool device = opts.panel == GaussJordanPanel::device ||
                      (opts.panel == GaussJordanPanel::automatic && !gj_host_backend<ExecSpace>());
  if (device)
    return gauss_jordan_sweep_device_panel(exec, D, DB, mode, opts, max_abs_a, fn, rowmap_out);
  return gauss_jordan_sweep_host_panel(exec, D, DB, mode, opts, max_abs_a, fn, rowmap_out);
}

/// No right-hand sides (the inverse): an n x 0 matrix in D's memory space.
template <class DView>
auto gj_no_rhs(const DView& D) {
  using V = Kokkos::View<double**, Kokkos::LayoutLeft, typename DView::memory_space,
                         Kokkos::MemoryUnmanaged>;
  return V(D.data(), static_cast<std::size_t>(D.extent(0)), 0);
}

template <class ExecSpace, class View>
double gj_check_input(const ExecSpace& exec, const View& A, bool check_finite, const char* fn,
                      const char* name) {
  std::int64_t bad = 0;
  double mx = 0.0;
  core::gj_scan_finite(exec, A, bad, mx, "kess::gauss_jordan::check_input");
  if (check_finite)
    require_arg(bad == 0, fn,
                std::string("argument '") + name + "': " + gj_int(bad) +
                    " entries are NaN or Inf");
  return mx;
}

/// f(W) with W = X itself when `in_place` and kess can work in X (kx::can_work_in), else with a fresh
/// LayoutLeft copy of X in Mem (the columns of A that solve eliminates on).
template <class Mem, class ExecSpace, class XView, class F>
void gj_on_work(const ExecSpace& exec, const XView& X, bool in_place, const char* label,
                const F& f) {
  if constexpr (kx::can_work_in<XView, Mem>()) {
    if (in_place) {
      f(X);
      return;
    }
  }
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> W(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label)), X.extent(0),
      X.extent(1));
  core::gj_copy(exec, W, X, label);
  f(W);
}

/// The right-hand sides of solve: sweep(DB) runs the elimination on DB — B itself where kess can
/// work in it, else a LayoutLeft copy — and returns the final row map (logical -> physical) on
/// the host; B then holds its rows in logical order.
template <class Mem, class ExecSpace, class BView, class Sweep>
void gj_on_rhs(const ExecSpace& exec, const BView& B, const Sweep& sweep) {
  gj_on_work<Mem>(exec, B, true, "kess::solve::B_work", [&](const auto& DB) {
    const std::vector<int> q = sweep(DB);
    if (DB.data() == B.data())  // in place: along the row map's cycles
      gj_permute_back(exec, B, q, {}, false);
    else if (!q.empty())
      core::gj_gather_rows(exec, B, DB, gj_upload<Mem>(exec, q, "kess::solve::rowmap"), 0);
  });
}

template <class ExecSpace, class View>
void gj_static_checks() {
  static_assert(Kokkos::is_view<View>::value && View::rank == 2,
                "kess Gauss-Jordan: matrices must be rank-2 Kokkos Views");
  static_assert(std::is_same<typename View::non_const_value_type, double>::value,
                "kess Gauss-Jordan: only double is implemented so far");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible,
                "kess Gauss-Jordan: the View must be accessible from the execution space");
}

}  // namespace detail

/// Solves A Y = B by blocked Gauss-Jordan elimination with partial pivoting; B (n x m) is
/// overwritten with Y = A^-1 B (in place when B is LayoutLeft, through an n x m work copy
/// otherwise). A (n x n) is not modified: it is copied into an n x n work matrix, unless
/// opts.overwrite_a allows kess to work in A's own storage (A LayoutLeft and writable; its
/// contents are unspecified afterwards). Returns the determinant of A and pivot statistics.
/// Throws kess::Error: invalid_argument for shapes or NaN/Inf entries (or overwrite_a with a
/// read-only A), singular for a zero or numerically zero pivot (the message names the 0-based
/// column and the pivot's magnitude). Input errors are raised before anything is written; after a
/// singular pivot B (updated in place) and, with overwrite_a, A hold partial results (dgesv, which
/// factors before it solves, leaves B as it was: keep a copy of B if you need it then). Runs on
/// `exec` and fences it (the panel factorizations
/// run where opts.panel says: by default on the device for device memory spaces, on a second
/// instance of exec's space beside the trailing GEMM; on the host between the GEMMs otherwise).
template <class ExecSpace, class AView, class BView, detail::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult solve(const ExecSpace& exec, const AView& A, const BView& B,
                        const GaussJordanOptions& opts = {}) {
  detail::gj_static_checks<ExecSpace, AView>();
  detail::gj_static_checks<ExecSpace, BView>();
  static_assert(!std::is_const<typename BView::value_type>::value, "kess::solve: B must be writable");
  const char* fn = "solve";
  kx::ScopedRegion region("kess::solve");
  const std::int64_t n = A.extent(0), m = B.extent(1);
  require_arg(A.extent(1) == A.extent(0), fn,
              "argument 'A' must be square, got " + detail::gj_int(A.extent(0)) + " x " +
                  detail::gj_int(A.extent(1)));
  require_arg(static_cast<std::int64_t>(B.extent(0)) == n, fn,
              "argument 'B' has " + detail::gj_int(B.extent(0)) + " rows, A has " +
                  detail::gj_int(n));
  require_arg(opts.block >= 0, fn, "option 'block' = " + detail::gj_int(opts.block) + " < 0");
  require_arg(n + m < (std::int64_t(1) << 31), fn, "sizes exceed the 32-bit local index range");
  constexpr bool a_writable = !std::is_const<typename AView::value_type>::value;
  require_arg(!opts.overwrite_a || a_writable, fn,
              "option 'overwrite_a' needs a writable A (a View of non-const double)");
  const double max_a = detail::gj_check_input(exec, A, opts.check_finite, fn, "A");
  if (opts.check_finite) detail::gj_check_input(exec, B, true, fn, "B");
  using Mem = typename ExecSpace::memory_space;
  // The elimination on A's columns (A itself with overwrite_a, or a copy) and B's.
  GaussJordanResult res;
  detail::gj_on_work<Mem>(exec, A, opts.overwrite_a, "kess::solve::A_work", [&](const auto& D) {
    detail::gj_on_rhs<Mem>(exec, B, [&](const auto& DB) {
      Kokkos::View<int*, Mem> rowmap;
      res = detail::gauss_jordan_sweep(exec, D, DB, detail::GjMode::solve, opts, max_a, fn, &rowmap);
      std::vector<int> q(n);
      if (n > 0) {
        auto rowmap_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rowmap);
        q.assign(rowmap_h.data(), rowmap_h.data() + n);
      }
      return q;
    });
  });
  kx::fence(exec, "kess::solve");
  return res;
}

/// Same, on the default instance of A's execution space.
template <class AView, class BView, std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
GaussJordanResult solve(const AView& A, const BView& B, const GaussJordanOptions& opts = {}) {
  return solve(typename AView::execution_space(), A, B, opts);
}

/// Inverts A in place (A <- A^-1) by Gauss-Jordan elimination with partial pivoting (2 n^3
/// flops). A must be LayoutLeft. Returns the determinant of the input A. Errors as for solve.
template <class ExecSpace, class AView, detail::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult inverse(const ExecSpace& exec, const AView& A,
                          const GaussJordanOptions& opts = {}) {
  detail::gj_static_checks<ExecSpace, AView>();
  static_assert(std::is_same<typename AView::array_layout, Kokkos::LayoutLeft>::value,
                "kess::inverse: A must be LayoutLeft");
  static_assert(!std::is_const<typename AView::value_type>::value,
                "kess::inverse: A must be writable");
  const char* fn = "inverse";
  kx::ScopedRegion region("kess::inverse");
  require_arg(A.extent(1) == A.extent(0), fn,
              "argument 'A' must be square, got " + detail::gj_int(A.extent(0)) + " x " +
                  detail::gj_int(A.extent(1)));
  require_arg(opts.block >= 0, fn, "option 'block' = " + detail::gj_int(opts.block) + " < 0");
  require_arg(A.extent(0) < (std::size_t(1) << 31), fn, "sizes exceed the 32-bit local index range");
  const double max_a = detail::gj_check_input(exec, A, opts.check_finite, fn, "A");
  return detail::gauss_jordan_sweep(exec, A, detail::gj_no_rhs(A), detail::GjMode::inverse, opts,
                                    max_a, fn);
}

/// Same, on the default instance of A's execution space.
template <class AView, std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
GaussJordanResult inverse(const AView& A, const GaussJordanOptions& opts = {}) {
  return inverse(typename AView::execution_space(), A, opts);
}

// ---- distributed: column-block-cyclic over the ranks of a 1 x P grid ------------------------------

namespace detail {

/// The distributed Gauss-Jordan needs every row of a column on one rank: a 1 x P grid.
inline void gj_require_row_grid(const comm::ProcessGrid& grid, const char* fn) {
  require_arg(grid.nprow() == 1, fn,
              "the distributed Gauss-Jordan needs a 1 x P process grid (column-block-cyclic), got " +
                  gj_int(grid.nprow()) + " x " + gj_int(grid.npcol()));
}

/// NaN/Inf in this rank's part `A` of a distributed argument: with check_finite every rank throws
/// (invalid_argument) when any rank finds one (comm::agree). Returns max |a_ij| over all ranks.
template <class ExecSpace, class View>
double gj_dist_check_input(const ExecSpace& exec, const comm::Communicator& cm, const View& A,
                           bool check_finite, const char* name) {
  std::int64_t bad = 0;
  double mx = 0.0;
  core::gj_scan_finite(exec, A, bad, mx, "kess::gauss_jordan::check_input");
  if (check_finite)
    comm::agree(cm, bad == 0,
                std::string("argument '") + name + "': " + gj_int(bad) +
                    " local entries are NaN or Inf",
                ErrorKind::invalid_argument);
  Kokkos::View<double*, Kokkos::HostSpace> v("kess::gauss_jordan::max_abs", 1);
  v(0) = mx;
  comm::allreduce(Kokkos::DefaultHostExecutionSpace(), cm, v, comm::ReduceOp::max);
  return v(0);
}

/// The distributed elimination on this rank's columns: D (n x lca, its columns of A in increasing
/// global order, as `map` places them) and, for solve, DB (its columns of B; n x 0 otherwise). Per block
/// column the owner of the panel gathers and factors it (on the host, or on the device: see
/// `factor_device` below) and forms H; H (n x b, logical row order) and the interchanges (with the step's determinant factors) are broadcast; every
/// rank then updates its own columns (gj_apply_h). Look-ahead: the next panel's owner first
/// updates that panel's columns and factors it, then the rest of its columns, so the panel work
/// overlaps the other ranks' updates (with look_ahead off it factors after its whole update).
/// The row map is replicated, so no row moves. On return q is
/// the final row map and, in inverse mode, all_piv the interchanges (0-based, global); res gets
/// the determinant and the panel time. A bad pivot on the owner is agreed: every rank throws
/// kess::Error (singular) with the owner's message. Fences `exec`.
template <class ExecSpace, class DView, class BView>
void gauss_jordan_sweep_dist(const ExecSpace& exec, const comm::ProcessGrid& grid,
                             const comm::BlockCyclicMap& map, const DView& D, const BView& DB,
                             GjMode mode,
                             const GaussJordanOptions& opts, const char* fn,
                             GaussJordanResult& res, std::vector<int>& q,
                             std::vector<int>& all_piv) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  const comm::Communicator& cm = grid.comm();
  const int me = cm.rank();
  const std::int64_t n = D.extent(0);
  const int lca = static_cast<int>(D.extent(1));
  const int lc = lca + static_cast<int>(DB.extent(1));
  const int nb = map.col_block();
  const double pivot_floor = gj_pivot_floor(opts, n, res.max_abs_a);
  std::vector<std::int64_t> gcol(lca);  // global column of each local column of A (increasing)
  for (int j = 0; j < lca; ++j) gcol[j] = map.global_col(j);
  const auto first_local_at = [&](std::int64_t col) {
    return static_cast<std::int64_t>(std::lower_bound(gcol.begin(), gcol.end(), col) - gcol.begin());
  };
  const auto owner_of = [&](std::int64_t col) { return grid.rank_of(0, map.col_owner(col)); };
  const GjSweepBuffers<Mem> w(exec, n, lc, nb);
  Kokkos::View<double*, Kokkos::HostSpace> info("kess::gauss_jordan::step_info", nb + 4);
  auto pbuf_h = core::gj_host_buffer(w.pbuf, "kess::gauss_jordan::panel_host");
  auto sbuf_h = core::gj_host_buffer(w.sbuf, "kess::gauss_jordan::inverses_host");
  auto rowmap_h = core::gj_host_buffer(w.rowmap, "kess::gauss_jordan::rowmap_host");
  std::vector<int> ipiv(nb);
  all_piv.assign(mode == GjMode::inverse ? n : 0, 0);
  for (std::int64_t i = 0; i < n; ++i) rowmap_h(i) = static_cast<int>(i);
  // Where the row map lives on the device, every step's interchanges (relative to the step) go
  // there in their own segment of steppiv, which the host never rewrites, and a one-thread kernel
  // applies them to w.rowmap in stream order: the host copy of the row map (needed at the end) is
  // never copied, so nothing has to fence exec for the host to reuse a buffer. (Host backends:
  // rowmap_h is w.rowmap.)
  const bool rowmap_on_host = rowmap_h.data() == w.rowmap.data();
  if (!rowmap_on_host) {
    const auto rowmap = w.rowmap;
    Kokkos::parallel_for(
        "kess::gauss_jordan::rowmap_identity",
        Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(n)),
        KOKKOS_LAMBDA(int i) { rowmap(i) = i; });
  }
  Kokkos::View<int*, Mem> steppiv("kess::gauss_jordan::step_interchanges", n);
  auto steppiv_h = core::gj_host_buffer(steppiv, "kess::gauss_jordan::step_interchanges_host");
  // H goes to the other ranks through page-locked staging kept for the whole sweep (where MPI
  // cannot read device memory).
  auto hstage = core::gj_host_buffer(Kokkos::View<double*, Mem>(w.hbuf.data(), w.hbuf.size()),
                                     "kess::gauss_jordan::H_staging");
  core::GjPivotStats st;

  // The owner of block column k factors its panel and forms H in w.hbuf (logical row order) and
  // the step's info; a failure is kept in ok/why until the ranks agree on it. The next panel's
  // owner does this right after its look-ahead update, so that the other ranks' updates run
  // meanwhile. Host panel: LAPACK on a host copy, then the rest of the owner's update. Device
  // panel (as the local sweep: opts.panel, automatic = device on device backends): the panel LU
  // on the device, its pivots and interchanges copied back for the checks and the broadcast;
  // with panel_stream on a device backend it runs on a second instance beside the rest of the
  // owner's update.
  const bool device = opts.panel == GaussJordanPanel::device ||
                      (opts.panel == GaussJordanPanel::automatic && !gj_host_backend<ExecSpace>());
  core::GjDevicePanelWork<Mem> pwork;
  Kokkos::View<double*, Mem> pdiag;
  Kokkos::View<int*, Mem> ppiv, pmap;  // pmap: the panel LU's own row map (unused here)
  ExecSpace side = exec;
  bool overlap = false;
  if (device) {
    pwork = core::GjDevicePanelWork<Mem>(n, nb);
    pwork.tournament_leaves = opts.pivoting == GaussJordanPivoting::tournament;
    pdiag = Kokkos::View<double*, Mem>("kess::gauss_jordan::panel_pivots", nb);
    ppiv = Kokkos::View<int*, Mem>("kess::gauss_jordan::panel_interchanges", nb);
    pmap = Kokkos::View<int*, Mem>("kess::gauss_jordan::panel_rowmap", n);
    if constexpr (!gj_host_backend<ExecSpace>()) {
      if (opts.look_ahead && opts.panel_stream) {
        kx::fence(exec, "kess::gauss_jordan::init");  // work arrays are initialized on exec
        side = core::gj_instances::panel_instance(exec);
        overlap = true;
      }
    }
  }
  auto pdiag_h = Kokkos::create_mirror_view(pdiag);
  auto ppiv_h = Kokkos::create_mirror_view(ppiv);
  bool ok = true;
  std::string why;
  const auto gather_device = [&](std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
    core::gj_gather_panel(exec, D, w.rowmap, k, b, A12, P, map.local_col(k));
  };
  const auto factor_device = [&](const ExecSpace& on, std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
    UMat a22inv(w.sbuf.data(), b, b), l1inv(w.sbuf.data() + b * b, b, b);
    Kokkos::Timer panel_timer;
    core::gj_factor_panel_device(on, P, 0, a22inv, l1inv, pwork, pdiag, ppiv, pmap);
    Kokkos::deep_copy(on, pdiag_h, pdiag);
    Kokkos::deep_copy(on, ppiv_h, ppiv);
    kx::fence(on, "kess::gauss_jordan::panel_pivots");
    core::GjPivotStats step;
    try {
      for (int i = 0; i < b; ++i)
        core::gj_check_pivot(fn, k + i, pdiag_h(i), ppiv_h(i) != i, pivot_floor, step);
    } catch (const Error& e) {
      ok = false;
      why = e.message();
      return;
    }
    for (int i = 0; i < b; ++i) info(i) = ppiv_h(i);
    info(nb) = step.sign;
    info(nb + 1) = step.log_abs_det;
    info(nb + 2) = step.min_abs_pivot;
    info(nb + 3) = step.max_abs_pivot;
    core::gj_form_h(on, A12, k, b, P, a22inv, l1inv,
                    Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b)));
    res.panel_seconds += panel_timer.seconds();
  };
  const auto factor = [&](std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rows = n - k;
    UMat P(w.pbuf.data(), rows, b), A12(w.abuf.data(), k, b);
    core::gj_gather_panel(exec, D, w.rowmap, k, b, A12, P, map.local_col(k));
    Kokkos::deep_copy(exec, Kokkos::subview(pbuf_h, pair(0, rows * b)),
                      Kokkos::subview(w.pbuf, pair(0, rows * b)));
    kx::fence(exec, "kess::gauss_jordan::panel");
    Kokkos::Timer panel_timer;
    core::GjPivotStats step;
    try {
      core::gj_factor_panel_host(fn, static_cast<int>(rows), b, k, pbuf_h.data(), ipiv.data(),
                                 sbuf_h.data(), sbuf_h.data() + b * b, pivot_floor, step);
    } catch (const Error& e) {
      ok = false;
      why = e.message();
      return;
    }
    for (int i = 0; i < b; ++i) info(i) = ipiv[i];
    info(nb) = step.sign;
    info(nb + 1) = step.log_abs_det;
    info(nb + 2) = step.min_abs_pivot;
    info(nb + 3) = step.max_abs_pivot;
    Kokkos::deep_copy(exec, Kokkos::subview(w.pbuf, pair(0, rows * b)),
                      Kokkos::subview(pbuf_h, pair(0, rows * b)));
    Kokkos::deep_copy(exec, Kokkos::subview(w.sbuf, pair(0, 2 * b * b)),
                      Kokkos::subview(sbuf_h, pair(0, 2 * b * b)));
    UMat a22inv(w.sbuf.data(), b, b), l1inv(w.sbuf.data() + b * b, b, b);
    core::gj_form_h(exec, A12, k, b, P, a22inv, l1inv,
                    Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b)));
    res.panel_seconds += panel_timer.seconds();
  };
  if (owner_of(0) == me) {
    if (device) {
      gather_device(0);
      factor_device(exec, 0);
    } else {
      factor(0);
    }
  }

  for (std::int64_t k = 0; k < n; k += nb) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rb = k + b;
    const int owner = owner_of(k);
    auto H = Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b));  // leading columns: contiguous
    try {
      comm::agree(cm, ok, why, ErrorKind::singular);
    } catch (...) {
      kx::fence(exec, "kess::gauss_jordan::error");  // the previous update still uses the buffers
      throw;
    }
    // 3. H and the interchanges to every rank.
    comm::bcast(HostExec(), cm, info, owner);
    comm::bcast(exec, cm, H, owner, hstage);
    st.sign *= static_cast<int>(info(nb));
    st.log_abs_det += info(nb + 1);
    st.min_abs_pivot = std::min(st.min_abs_pivot, info(nb + 2));
    st.max_abs_pivot = std::max(st.max_abs_pivot, info(nb + 3));
    for (int i = 0; i < b; ++i) {
      const int p = static_cast<int>(info(i));
      if (p != i) std::swap(rowmap_h(k + i), rowmap_h(k + p));
      if (mode == GjMode::inverse) all_piv[k + i] = static_cast<int>(k) + p;
      steppiv_h(k + i) = p;
    }
    if (!rowmap_on_host) {
      const auto seg = pair(k, rb);
      Kokkos::deep_copy(exec, Kokkos::subview(steppiv, seg), Kokkos::subview(steppiv_h, seg));
      const auto rowmap = w.rowmap;
      const auto sp = steppiv;
      const int kk = static_cast<int>(k);
      Kokkos::parallel_for(
          "kess::gauss_jordan::rowmap_interchanges", Kokkos::RangePolicy<ExecSpace>(exec, 0, 1),
          KOKKOS_LAMBDA(int) {
            for (int i = 0; i < b; ++i) {
              const int p = sp(kk + i);
              if (p != i) {
                const int t = rowmap(kk + i);
                rowmap(kk + i) = rowmap(kk + p);
                rowmap(kk + p) = t;
              }
            }
          });
    }
    // 4. every rank: its columns left of the panel (inverse), right of it, all of its B.
    const std::int64_t left = mode == GjMode::inverse ? first_local_at(k) : 0;
    const std::int64_t c0 = first_local_at(rb);
    const bool next_mine = rb < n && owner_of(rb) == me;
    const std::int64_t la = next_mine ? kx::min<std::int64_t>(nb, n - rb) : 0;
    gj_apply_h(exec, D, DB, mode, w, k, b, left, c0, la, opts.look_ahead,
               [&](std::int64_t next, std::int64_t cols, const auto& remaining, bool ahead) {
                 // la > 0: the next panel is mine (H of this step is in Hp by now).
                 if (!device) {
                   factor(next);
                   if (ahead) remaining(cols);
                   return;
                 }
                 gather_device(next);
                 if (ahead && overlap) {
                   // Stream order as the local device sweep: the panel after its gather, the
                   // rest of this update beside it, the next step after its H.
                   kx::stream_wait(side, exec);
                   remaining(cols);
                   factor_device(side, next);
                   kx::stream_wait(exec, side);
                 } else {
                   factor_device(exec, next);
                   if (ahead) remaining(cols);
                 }
               });
    // info is host memory, read before the next step's factorization rewrites it; w.hbuf is
    // rewritten by the next panel only after gj_apply_h has scattered it (stream order, or the
    // side instance's wait on exec).
  }
  q.assign(n, 0);
  for (std::int64_t i = 0; i < n; ++i) q[i] = rowmap_h(i);
  kx::fence(exec, "kess::gauss_jordan::done");
  gj_store_pivot_stats(st, res);
}

/// The final column permutation of the distributed in-place inverse, X(:, j) = X_s(:, src[j])
/// (core::gj_column_source of the interchanges), across ranks: every rank packs the columns that
/// leave it (by destination rank, in global order), the ranks exchange them around a ring
/// (step s: to rank me + s, from rank me - s; comm::sendrecv), and every rank puts what it
/// received and its own moved columns in place. All ranks know all interchanges, so the sizes
/// agree without being sent. Fences `exec`.
template <class ExecSpace, class DView>
void gj_dist_permute_columns(const ExecSpace& exec, const comm::ProcessGrid& grid,
                             const comm::BlockCyclicMap& map, const DView& D,
                             const std::vector<int>& all_piv) {
  using Mem = typename DView::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const int P = grid.npcol(), me = grid.mycol();
  const std::vector<int> src = core::gj_column_source(all_piv);
  // out[p]: my local columns that go to process column p; in[p]: my local columns that p fills.
  std::vector<std::vector<int>> out(P), in(P);
  for (std::size_t j = 0; j < src.size(); ++j) {
    if (src[j] == static_cast<int>(j)) continue;
    const int p = map.col_owner(j), o = map.col_owner(src[j]);
    if (o == me) out[p].push_back(map.local_col(src[j]));
    if (p == me) in[o].push_back(map.local_col(j));
  }
  std::vector<int> sidx, ridx;
  std::vector<std::int64_t> soff(1, 0), roff(1, 0);
  for (int p = 0; p < P; ++p) {
    sidx.insert(sidx.end(), out[p].begin(), out[p].end());
    ridx.insert(ridx.end(), in[p].begin(), in[p].end());
    soff.push_back(sidx.size());
    roff.push_back(ridx.size());
  }
  const std::int64_t n = D.extent(0);
  const auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  Mat S(alloc("kess::inverse::columns_out"), n, sidx.size());
  Mat R(alloc("kess::inverse::columns_in"), n, ridx.size());
  if (!sidx.empty())
    core::gj_gather_columns(exec, S, D, gj_upload<Mem>(exec, sidx, "kess::inverse::out_index"));
  Kokkos::deep_copy(exec, Kokkos::subview(R, Kokkos::ALL(), pair(roff[me], roff[me + 1])),
                    Kokkos::subview(S, Kokkos::ALL(), pair(soff[me], soff[me + 1])));
  for (int s = 1; s < P; ++s) {
    const int to = (me + s) % P, from = (me - s + P) % P;
    comm::sendrecv(exec, grid.comm(), Kokkos::subview(S, Kokkos::ALL(), pair(soff[to], soff[to + 1])),
                   grid.rank_of(0, to),
                   Kokkos::subview(R, Kokkos::ALL(), pair(roff[from], roff[from + 1])),
                   grid.rank_of(0, from), /*tag=*/0x676a);
  }
  if (!ridx.empty())
    core::gj_scatter_columns(exec, D, R, gj_upload<Mem>(exec, ridx, "kess::inverse::in_index"));
  kx::fence(exec, "kess::inverse::permute_columns");
}

}  // namespace detail

/// Solves A Y = B for A (n x n) and B (n x m) distributed column-block-cyclically: DistMatrix on a
/// 1 x P ProcessGrid (every rank holds all rows of its column blocks), A's column block is NB.
/// B is overwritten with Y (same distribution). Per block column the owner of the panel factors
/// it (opts.panel: host LAPACK or on the device, as the local sweep), forms H and broadcasts H
/// (n x NB) and the interchanges; every rank then updates its
/// own columns of [A | B] with one rank-NB GEMM (the next panel's owner does the look-ahead part
/// first). Pivoting is lazy (a replicated row map), so no rows move between or within ranks.
/// Collective over A.grid().comm(); errors are agreed (every rank throws the same kind together:
/// invalid_argument for shapes/NaN/Inf, singular naming the column and the pivot's magnitude).
/// The determinant is returned on every rank. opts.block is ignored (NB = A's column block).
/// On a 1 x 1 grid this is the local solve on the rank's Views (NB = A's column block).
template <class ExecSpace, class Mem, detail::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult solve(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& A,
                        const comm::DistMatrix<double, Mem>& B, const GaussJordanOptions& opts = {}) {
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, Mem>::accessible,
                "kess::solve: the DistMatrix memory must be accessible from the execution space");
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const char* fn = "solve";
  kx::ScopedRegion region("kess::solve_distributed");
  const auto& grid = A.grid();
  grid.comm().require_valid(fn);
  const std::int64_t n = A.rows(), m = B.cols();
  detail::gj_require_row_grid(grid, fn);
  require_arg(B.grid().nprow() == 1 && B.grid().npcol() == grid.npcol(), fn,
              "argument 'B' must live on the same 1 x P grid as A");
  require_arg(A.cols() == n, fn,
              "argument 'A' must be square, got " + detail::gj_int(n) + " x " +
                  detail::gj_int(A.cols()));
  require_arg(B.rows() == n, fn,
              "argument 'B' has " + detail::gj_int(B.rows()) + " rows, A has " + detail::gj_int(n));
  GaussJordanResult res;
  res.n = n;
  res.nrhs = m;
  res.block = A.map().col_block();
  if (n == 0) return res;
  const auto a_loc = Kokkos::subview(A.local(), pair(0, n), Kokkos::ALL());
  const auto b_loc = Kokkos::subview(B.local(), pair(0, n), Kokkos::ALL());
  if (grid.npcol() == 1) {
    // One rank holds everything: the local solve, NB = A's column block (no broadcasts, no host
    // waits for the pivots; the distributed sweep ran 1.16x / 1.04x its time on an H100 at
    // n = 8192 / 16384, docs/benchmarks.md).
    GaussJordanOptions local = opts;
    local.block = static_cast<int>(res.block);
    GaussJordanResult r = solve(exec, a_loc, b_loc, local);
    r.block = res.block;  // the distribution's NB, as on more ranks
    return r;
  }
  const int lca = A.local_cols(), lcb = B.local_cols();
  const auto a_cols = Kokkos::subview(a_loc, Kokkos::ALL(), pair(0, lca));
  const auto b_cols = Kokkos::subview(b_loc, Kokkos::ALL(), pair(0, lcb));
  res.max_abs_a = detail::gj_dist_check_input(exec, grid.comm(), a_cols, opts.check_finite, "A");
  if (opts.check_finite) detail::gj_dist_check_input(exec, grid.comm(), b_cols, true, "B");
  // This rank's columns of A (in place with overwrite_a, else a copy) and of B.
  detail::gj_on_work<Mem>(exec, a_cols, opts.overwrite_a, "kess::solve::A_work", [&](const auto& D) {
    detail::gj_on_rhs<Mem>(exec, b_cols, [&](const auto& DB) {
      std::vector<int> q, piv;
      detail::gauss_jordan_sweep_dist(exec, grid, A.map(), D, DB, detail::GjMode::solve, opts, fn,
                                      res, q, piv);
      return q;
    });
  });
  kx::fence(exec, "kess::solve");
  return res;
}

/// Inverts A in place (A <- A^-1, 2 n^3 flops) for A (n x n) distributed column-block-cyclically
/// on a 1 x P ProcessGrid (NB = A's column block; opts.block is ignored). Per block column the
/// owner of the panel factors it (opts.panel: host LAPACK or on the device, as the local sweep) and
/// broadcasts H and the interchanges; every rank updates all of its columns but the panel's and the owner stores H in the panel's columns (the local
/// inverse's sweep on each rank's columns). At the end every rank puts its rows back in logical
/// order (local) and the columns are permuted by the interchanges across ranks
/// (detail::gj_dist_permute_columns). Returns det(A) on every rank. Collective over
/// A.grid().comm(); errors agreed as for the distributed solve (singular names the column and the
/// pivot's magnitude on every rank; NaN/Inf on any rank: invalid_argument on all). On a 1 x 1
/// grid this is the local inverse, in place on the rank's View.
template <class ExecSpace, class Mem, detail::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult inverse(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& A,
                          const GaussJordanOptions& opts = {}) {
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, Mem>::accessible,
                "kess::inverse: the DistMatrix memory must be accessible from the execution space");
  const char* fn = "inverse";
  kx::ScopedRegion region("kess::inverse_distributed");
  const auto& grid = A.grid();
  grid.comm().require_valid(fn);
  const std::int64_t n = A.rows();
  detail::gj_require_row_grid(grid, fn);
  require_arg(A.cols() == n, fn,
              "argument 'A' must be square, got " + detail::gj_int(n) + " x " +
                  detail::gj_int(A.cols()));
  require_arg(n < (std::int64_t(1) << 31), fn, "sizes exceed the 32-bit local index range");
  GaussJordanResult res;
  res.n = n;
  res.block = A.map().col_block();
  if (n == 0) return res;
  const auto& D = A.local();  // n x local_cols (every row is local on a 1 x P grid), in place
  if (grid.npcol() == 1) {  // one rank holds everything: the local inverse (as solve above)
    GaussJordanOptions local = opts;
    local.block = static_cast<int>(res.block);
    GaussJordanResult r = inverse(exec, D, local);
    r.block = res.block;
    return r;
  }
  res.max_abs_a = detail::gj_dist_check_input(exec, grid.comm(), D, opts.check_finite, "A");
  std::vector<int> q, piv;
  detail::gauss_jordan_sweep_dist(exec, grid, A.map(),
                                  Kokkos::subview(D, Kokkos::ALL(), Kokkos::make_pair(0, A.local_cols())),
                                  detail::gj_no_rhs(D), detail::GjMode::inverse, opts, fn, res, q, piv);
  detail::gj_permute_back(exec, D, q, piv, false);
  detail::gj_dist_permute_columns(exec, grid, A.map(), D, piv);
  kx::fence(exec, "kess::inverse");
  return res;
}

}  // namespace kess
