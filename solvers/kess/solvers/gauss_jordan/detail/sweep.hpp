// Gauss-Jordan's local sweeps (Köhler 2017): per block column the panel LU (on the host with
// LAPACK, or on the device), H, the pivot block row and the rank-NB update, with look-ahead; the
// device sweep can run its panel chain on a second instance beside the updates. The final row and
// column permutations. docs/design/gauss_jordan.md describes the algorithm.
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/view_comm.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/base/settings.hpp>
#include <kess/core/host/gemm.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/kokkos/device_partition.hpp>
#include <kess/core/kokkos/instances.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/gauss_jordan/detail/defaults.hpp>
#include <kess/solvers/gauss_jordan/detail/panel.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kess::detail::gauss_jordan {


enum class Mode { solve, inverse };

inline std::string itos(std::int64_t v) { return std::to_string(v); }

/// The test hook KESS_FAULT_INJECT=gj_panel (core::settings::fault_injection): fails as a
/// runtime error while factoring the panel of column k would.
[[noreturn]] inline void throw_injected_panel_fault(std::int64_t k) {
  throw std::runtime_error("fault injected (KESS_FAULT_INJECT) at the panel of column " + itos(k));
}

/// A host vector of indices as a View in Mem (copied on exec; exec must be fenced before the
/// vector changes).
template <class Mem, class ExecSpace>
Kokkos::View<int*, Mem> upload(const ExecSpace& exec, const std::vector<int>& v,
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
void permute_back(const ExecSpace& exec, const DView& D, const std::vector<int>& q,
                     const std::vector<int>& all_piv, bool columns) {
  using Mem = typename DView::memory_space;
  std::vector<int> cycles, offsets;
  permutation_cycles(q, cycles, offsets);
  if (offsets.size() > 1) {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      // Host: along the cycles, a column at a time (the column stays in cache).
      auto cyc = upload<Mem>(exec, cycles, "kess::gauss_jordan::cycles");
      auto off = upload<Mem>(exec, offsets, "kess::gauss_jordan::cycle_offsets");
      permute_rows(exec, D, cyc, off, static_cast<int>(offsets.size()) - 1);
    } else {
      // Devices: a thread walking a column's cycles is a chain of dependent memory round trips;
      // gather blocks of columns through a buffer instead.
      const auto qd = upload<Mem>(exec, q, "kess::gauss_jordan::row_source");
      const std::int64_t n = D.extent(0), m = D.extent(1);
      // Blocks of an eighth of the columns (so that the tests take several), at most 128 MB.
      const std::int64_t cb = kx::min<std::int64_t>(
          m, kx::max<std::int64_t>(32, kx::min<std::int64_t>((m + 7) / 8, (std::int64_t(1) << 24) / n)));
      Kokkos::View<double**, Kokkos::LayoutLeft, Mem> tmp(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::gauss_jordan::row_buffer"), n, cb);
      for (std::int64_t j0 = 0; j0 < m; j0 += cb) {
        const int w = static_cast<int>(kx::min(cb, m - j0)), c0 = static_cast<int>(j0);
        for_each_entry(exec, "kess::gauss_jordan::rows_gather", static_cast<int>(n), w,
                          KOKKOS_LAMBDA(int i, int c) { tmp(i, c) = D(qd(i), c0 + c); });
        for_each_entry(exec, "kess::gauss_jordan::rows_put", static_cast<int>(n), w,
                          KOKKOS_LAMBDA(int i, int c) { D(i, c0 + c) = tmp(i, c); });
      }
    }
    kx::fence(exec, "kess::gauss_jordan::permute_rows");  // the host vectors are reused
  }
  if (!columns) return;
  column_cycles(all_piv, cycles, offsets);
  if (offsets.size() > 1) {
    auto cyc = upload<Mem>(exec, cycles, "kess::gauss_jordan::cycles");
    auto off = upload<Mem>(exec, offsets, "kess::gauss_jordan::cycle_offsets");
    permute_columns(exec, D, cyc, off, static_cast<int>(offsets.size()) - 1);
    kx::fence(exec, "kess::gauss_jordan::permute_columns");
  }
}

/// The determinant and pivot range of st into res.
inline void store_pivot_stats(const PivotStats& st, GaussJordanResult& res) {
  res.det_sign = st.sign;
  res.log_abs_det = st.log_abs_det;
  res.min_abs_pivot = st.min_abs_pivot;
  res.max_abs_pivot = st.max_abs_pivot;
}

/// The end of a sweep: for the in-place inverse, rows back to logical order (the cycles of the
/// row map q) and the columns permuted by the pivots; the row map out when asked; the
/// determinant and pivot range into res. Fences `exec`.
template <class ExecSpace, class DView>
void finish(const ExecSpace& exec, const DView& D, Mode mode, const std::vector<int>& q,
               const std::vector<int>& all_piv,
               const Kokkos::View<int*, typename DView::memory_space>& rowmap,
               Kokkos::View<int*, typename DView::memory_space>* rowmap_out,
               const PivotStats& st, GaussJordanResult& res) {
  if (mode == Mode::inverse) permute_back(exec, D, q, all_piv, true);
  if (rowmap_out) *rowmap_out = rowmap;
  kx::fence(exec, "kess::gauss_jordan::done");
  store_pivot_stats(st, res);
}

/// Pivots below pivot_tolerance * max|A| (default n eps max|A|) are singular.
inline double pivot_threshold(const GaussJordanOptions& opts, std::int64_t n, double max_abs_a) {
  const double tol = opts.pivot_tolerance < 0
                         ? static_cast<double>(n) * std::numeric_limits<double>::epsilon()
                         : opts.pivot_tolerance;
  return tol * max_abs_a;
}

/// Work buffers of one sweep: the panel, A12, H (logical and physical row order), the pivot
/// block row T, the pivot block's U^-1 and L1 (NB x NB each), L1's copy for the update (the next
/// panel may be factored into sbuf before the update has read it) and the row map.
template <class Mem>
struct SweepBuffers {
  Kokkos::View<double*, Mem> pbuf, abuf, tbuf, sbuf, lbuf;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> hbuf, hpbuf;
  Kokkos::View<int*, Mem> rowmap;
  SweepBuffers() = default;
  template <class ExecSpace>
  SweepBuffers(const ExecSpace& exec, std::int64_t n, std::int64_t N, int nb) {
    const auto alloc = [&](const char* label) {
      return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
    };
    pbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::panel"), n * nb);
    abuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::A12"), n * nb);
    hbuf = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>(alloc("kess::gauss_jordan::H"), n, nb);
    hpbuf = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>(alloc("kess::gauss_jordan::Hp"), n, nb);
    tbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::T"), static_cast<std::int64_t>(nb) * N);
    sbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::pivot_factors"), 2 * nb * nb);
    lbuf = Kokkos::View<double*, Mem>(alloc("kess::gauss_jordan::L1"), nb * nb);
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
void apply_h(const ExecSpace& exec, const DView& D, const BView& DB, Mode mode,
                const SweepBuffers<typename DView::memory_space>& w, std::int64_t k, int b,
                std::int64_t left, std::int64_t c0, std::int64_t la, bool look_ahead,
                const Handoff& handoff) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t nA = D.extent(1), mB = DB.extent(1);
  auto H = Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b));
  auto Hp = Kokkos::subview(w.hpbuf, Kokkos::ALL(), pair(0, b));
  scatter_h(exec, H, w.rowmap, Hp);
  // 3. W = L1^-1 T of the pivot block row of the other columns, A's first, then B's (not on host
  //    backends where kess's host GEMM reads and solves the rows in place).
  constexpr std::int64_t chunk = host_backend<ExecSpace>() ? 0 : kDeviceGemmColumns;
  const bool in_place = chunk == 0 && update_in_place_available<ExecSpace>(b);
  const std::int64_t ta = left + (nA - c0), tcols = ta + mB;
  UMat T(w.tbuf.data(), b, tcols);
  // L1, kept: the next panel may be factored into sbuf before this update has read it.
  const UMat l1(w.lbuf.data(), b, b);
  copy_matrix(exec, l1, UMat(w.sbuf.data() + b * b, b, b), "kess::gauss_jordan::copy_l1");
  if (!in_place) {
    to_w(exec, D, w.rowmap, k, b, static_cast<int>(left), static_cast<int>(c0),
         static_cast<int>(nA), Kokkos::subview(T, Kokkos::ALL(), pair(0, ta)), l1);
    if (mB > 0)
      to_w(exec, DB, w.rowmap, k, b, 0, 0, static_cast<int>(mB),
           Kokkos::subview(T, Kokkos::ALL(), pair(ta, tcols)), l1);
  }
  // 4. rank-b update (devices: GEMMs of at most kDeviceGemmColumns columns).
  const auto update = [&](const auto& Ts, const auto& Cs) {
    const std::int64_t c = Cs.extent(1), step = chunk > 0 ? chunk : c;
    for (std::int64_t j = 0; j < c; j += step)
      rank_update(exec, Hp, Kokkos::subview(Ts, Kokkos::ALL(), pair(j, kx::min(c, j + step))),
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
        rank_update_in_place(exec, Hp, w.rowmap, k, l1, beside,
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
    if (mode == Mode::inverse && c0 > left)
      store_h(exec, Kokkos::subview(D, Kokkos::ALL(), pair(left, c0)), Hp, w.rowmap, k, l1);
  };
  const std::int64_t rb = k + b;
  if (la > 0 && look_ahead) {
    const auto Dla = Kokkos::subview(D, Kokkos::ALL(), pair(c0, c0 + la));
    if (in_place)
      rank_update_in_place(exec, Hp, w.rowmap, k, l1, {}, Dla);
    else
      rank_update(exec, Hp, Kokkos::subview(T, Kokkos::ALL(), pair(left, left + la)), Dla);
    handoff(rb, la, remaining, true);
  } else {
    remaining(0);
    if (la > 0) handoff(rb, la, remaining, false);
  }
}

/// Steps 2-4 of block column k (width b) on one rank, once U^-1 and L1 are in w.sbuf:
/// H from the panel (logical order), then apply_h over all of D.
template <class ExecSpace, class DView, class BView, class Handoff>
void update_step(const ExecSpace& exec, const DView& D, const BView& DB, Mode mode,
                    const SweepBuffers<typename DView::memory_space>& w, std::int64_t k, int b,
                    int nb, bool look_ahead, const Handoff& handoff) {
  using Mem = typename DView::memory_space;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const std::int64_t n = D.extent(0);
  UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
  UMat uinv(w.sbuf.data(), b, b), l1(w.sbuf.data() + b * b, b, b);
  // 2. H (logical order).
  form_h(exec, A12, k, b, P, uinv, l1, Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b)));
  const std::int64_t rb = k + b;
  const std::int64_t la = kx::min<std::int64_t>(nb, kx::max<std::int64_t>(0, n - rb));
  apply_h(exec, D, DB, mode, w, k, b, mode == Mode::inverse ? k : 0, rb, la, look_ahead,
             handoff);
}

/// The elimination on [D | DB]: D = A (n x n), DB = B (n x m; m = 0 for the inverse), both
/// LayoutLeft and writable, each updated where it is. solve: DB becomes A^-1 B with its rows in
/// physical order (*rowmap_out, logical -> physical, says where); D is garbage afterwards.
/// inverse: D becomes A^-1.
template <class ExecSpace, class DView, class BView>
GaussJordanResult sweep_host_panel(
    const ExecSpace& exec, const DView& D, const BView& DB, Mode mode,
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
      static_cast<int>(kx::min<std::int64_t>(opts.block > 0 ? opts.block : default_block(n), n));
  res.block = nb;
  if (n == 0) return res;
  // Where kess's host GEMM runs the updates, every other BLAS call of the sweep (panels, small
  // products) runs on one OpenBLAS thread: kess's host loops park OpenBLAS's workers, and a
  // threaded call after each would start them again at every step, and the new workers would
  // spin beside the update.
  // (Only the last step can be narrower than nb, and it has no next panel to factor beside.)
  const bool kess_updates =
      host_backend<ExecSpace>() && update_in_place_available<ExecSpace>(nb);
  std::optional<core::lapack::SerialBlasScope> one_blas_thread;
  if (kess_updates) one_blas_thread.emplace();
  const double pivot_floor = pivot_threshold(opts, n, max_abs_a);
  const SweepBuffers<Mem> w(exec, n, N, nb);
  const auto& pbuf = w.pbuf;
  const auto& abuf = w.abuf;
  const auto& sbuf = w.sbuf;
  const auto& rowmap = w.rowmap;
  auto pbuf_h = host_buffer(pbuf, "kess::gauss_jordan::panel_host");
  auto sbuf_h = host_buffer(sbuf, "kess::gauss_jordan::pivot_factors_host");
  auto rowmap_h = host_buffer(rowmap, "kess::gauss_jordan::rowmap_host");
  std::vector<int> ipiv(nb);
  std::vector<int> all_piv(mode == Mode::inverse ? n : 0);
  if (core::settings::fault_injection("gj_setup_alloc")) throw std::bad_alloc();  // test hook
  const bool fail_panel = core::settings::fault_injection("gj_panel");
  for (std::int64_t i = 0; i < n; ++i) rowmap_h(i) = static_cast<int>(i);
  Kokkos::deep_copy(exec, rowmap, rowmap_h);
  PivotStats st;
  // The panel starting at column k (logical rows k..n-1) to the host, A12 kept on the device.
  const auto panel_to_host = [&](std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rows = n - k;
    UMat P(pbuf.data(), rows, b), A12(abuf.data(), k, b);
    gather_panel(exec, D, rowmap, k, b, A12, P, k);
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
    if (fail_panel) throw_injected_panel_fault(k);
    factor_panel_host(fn, static_cast<int>(n - k), b, k, pbuf_h.data(), ipiv.data(),
                               sbuf_h.data(), sbuf_h.data() + b * b, pivot_floor, st);
    for (int i = 0; i < b; ++i) {
      if (ipiv[i] != i) std::swap(rowmap_h(k + i), rowmap_h(k + ipiv[i]));
      if (mode == Mode::inverse) all_piv[k + i] = static_cast<int>(k) + ipiv[i];
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
    update_step(exec, D, DB, mode, w, k, b, nb, opts.look_ahead,
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
  if (mode == Mode::inverse)
    for (std::int64_t i = 0; i < n; ++i) q.push_back(rowmap_h(i));
  finish(exec, D, mode, q, all_piv, rowmap, rowmap_out, st, res);
  return res;
}

/// The device sweep with the panel chain on its own instance (`side`) and the trailing updates
/// on `bulk` (exec, or a partition of the device), in stream order only. Step s's H, its scatter
/// into physical order, the pivot block row T_s of the next panel's columns, the look-ahead update
/// of those columns, the next panel's gather and factorization all run on side, as soon as the
/// previous step's update has reached those columns; bulk extracts the rest of T_s once the panel
/// is done and runs the remaining update of step s. So bulk never waits for the chain between
/// two steps unless the chain is longer than the update. Hp, T and L1 alternate between two buffers
/// (step s's update still reads one while step s + 1 fills the other). On entry the work buffers
/// and the row map are initialized on exec; on return exec continues after both instances.
template <class ExecSpace, class DView, class BView, class Factor, class Gather>
void sweep_pipelined(const ExecSpace& exec, const ExecSpace& side, const ExecSpace& bulk,
                        const DView& D, const BView& DB, Mode mode,
                        const SweepBuffers<typename DView::memory_space>& w, int nb,
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
  // L1 of steps s and s + 1: bulk solves with step s's after side has factored the next panel.
  Kokkos::View<double*, Mem> l1buf(alloc("kess::gauss_jordan::L1"), 2 * nb * nb);
  std::vector<Mark> sready(steps), la_done(steps), r_done(steps);
  Mark init;
  init.record(exec);
  init.wait(side);
  if (&bulk != &exec) init.wait(bulk);
  // Widths of the update's GEMMs: at most kDeviceGemmColumns (and at least the next panel's
  // width, so that the first one covers the columns of the next look-ahead).
  const std::int64_t chunk = kx::max<std::int64_t>(kDeviceGemmColumns, nb);
  gather(side, 0);
  factor(side, 0);
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t k = s * nb;
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    const std::int64_t rb = k + b;
    const std::int64_t la = kx::min<std::int64_t>(nb, n - rb);
    const std::int64_t left = mode == Mode::inverse ? k : 0, c0 = rb;
    const std::int64_t ta = left + (nA - c0), tcols = ta + mB;
    const auto hp_all = s % 2 == 0 ? w.hpbuf : hp2;
    const auto Hp = Kokkos::subview(hp_all, Kokkos::ALL(), pair(0, b));
    UMat T((s % 2 == 0 ? w.tbuf : t2).data(), b, tcols);
    const auto Tcols = [&](std::int64_t c, std::int64_t e) {
      return Kokkos::subview(T, Kokkos::ALL(), pair(c, e));
    };
    const UMat l1(l1buf.data() + (s % 2) * nb * nb, b, b);
    // side: H_s, into physical order, and L1_s once step s - 2's update is done with their buffers.
    {
      UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
      UMat uinv(w.sbuf.data(), b, b), l1_panel(w.sbuf.data() + b * b, b, b);
      const auto H = Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b));
      form_h(side, A12, k, b, P, uinv, l1_panel, H);
      if (s >= 2) r_done[s - 2].wait(side);
      scatter_h(side, H, w.rowmap, Hp);
      copy_matrix(side, l1, l1_panel, "kess::gauss_jordan::copy_l1");
    }
    // side: T_s of the next panel's columns (all of T_0: no update before it).
    const auto extract_a = [&](const ExecSpace& on, std::int64_t d0, std::int64_t d1,
                               std::int64_t t0) {
      if (d1 > d0)
        to_w(on, D, w.rowmap, k, b, 0, static_cast<int>(d0), static_cast<int>(d1),
             Tcols(t0, t0 + (d1 - d0)), l1);
    };
    const auto extract_rest = [&](const ExecSpace& on) {
      if (left > 0)
        to_w(on, D, w.rowmap, k, b, static_cast<int>(left), 0, 0, Tcols(0, left), l1);
      extract_a(on, c0 + la, nA, left + la);
      if (mB > 0)
        to_w(on, DB, w.rowmap, k, b, 0, 0, static_cast<int>(mB), Tcols(ta, tcols), l1);
    };
    if (s > 0) la_done[s - 1].wait(side);
    extract_a(side, c0, c0 + la, left);
    if (s == 0) extract_rest(side);
    sready[s].record(side);
    // side: the look-ahead update, the next panel gathered and factored.
    if (la > 0) {
      rank_update(side, Hp, Tcols(left, left + la),
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
        rank_update(bulk, Hp, Tcols(t0 + j, t0 + e),
                             Kokkos::subview(C, Kokkos::ALL(), pair(j, e)));
        if (mark_first && j == 0) la_done[s].record(bulk);
      }
      if (mark_first && c == 0) la_done[s].record(bulk);
    };
    update(left + la, Kokkos::subview(D, Kokkos::ALL(), pair(c0 + la, nA)), true);
    if (left > 0) update(0, Kokkos::subview(D, Kokkos::ALL(), pair(0, left)), false);
    if (mB > 0) update(ta, DB, false);
    if (mode == Mode::inverse && c0 > left)
      store_h(bulk, Kokkos::subview(D, Kokkos::ALL(), pair(left, c0)), Hp, w.rowmap, k, l1);
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

/// The same elimination with the panel LU on the execution space (factor_panel_device): with
/// look-ahead and panel_stream the pipelined order of sweep_pipelined, otherwise every step on
/// `exec` in the classic order; no fence inside the sweep either way. The pivots are checked on
/// the host at the end, in column order, so the first bad one is reported as by the host path.
template <class ExecSpace, class DView, class BView>
GaussJordanResult sweep_device_panel(
    const ExecSpace& exec, const DView& D, const BView& DB, Mode mode,
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
      opts.block > 0 ? opts.block : default_block_device_panel<ExecSpace>(), n));
  res.block = nb;
  if (n == 0) return res;
  const double pivot_floor = pivot_threshold(opts, n, max_abs_a);
  const auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  const SweepBuffers<Mem> w(exec, n, N, nb);
  const auto& pbuf = w.pbuf;
  const auto& abuf = w.abuf;
  const auto& sbuf = w.sbuf;
  const auto& rowmap = w.rowmap;
  Kokkos::View<double*, Mem> diag(alloc("kess::gauss_jordan::pivots"), n);
  Kokkos::View<int*, Mem> piv(alloc("kess::gauss_jordan::interchanges"), n);
  DevicePanelWork<Mem> work(n, nb);
  work.tournament_leaves = opts.pivoting == GaussJordanPivoting::tournament;
  if (core::settings::fault_injection("gj_setup_alloc")) throw std::bad_alloc();  // test hook
  const bool fail_panel = core::settings::fault_injection("gj_panel");
  Kokkos::parallel_for(
      "kess::gauss_jordan::rowmap_init", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(std::int64_t i) { rowmap(i) = static_cast<int>(i); });
  const auto gather_on = [&](const ExecSpace& on, std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    UMat P(pbuf.data(), n - k, b), A12(abuf.data(), k, b);
    gather_panel(on, D, rowmap, k, b, A12, P, k);
  };
  // 1. the panel LU (device); the interchanges go into the row map (device).
  const auto factor = [&](const ExecSpace& on, std::int64_t k) {
    const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
    UMat P(pbuf.data(), n - k, b);
    UMat uinv(sbuf.data(), b, b), l1(sbuf.data() + b * b, b, b);
    if (fail_panel) throw_injected_panel_fault(k);
    factor_panel_device(on, P, k, uinv, l1, work, diag, piv, rowmap);
  };
  if (opts.look_ahead && opts.tuning.panel_stream && n > nb) {
    // The panel chain on a second instance (devices), the updates on exec or a partition of it.
    ExecSpace side = exec;
    std::optional<ExecSpace> part;  // GaussJordanOptions::panel_sms
    if constexpr (!host_backend<ExecSpace>()) {
      kx::fence(exec, "kess::gauss_jordan::init");  // work buffers are initialized on exec
      side = panel_instance(exec);
      if (const int sms = panel_sms(exec, opts.tuning.panel_sms); sms > 0)
        part = core::partition_device(exec, sms);
    }
    sweep_pipelined(exec, side, part ? *part : exec, D, DB, mode, w, nb, factor, gather_on);
  } else {
    gather_on(exec, 0);
    factor(exec, 0);
    for (std::int64_t k = 0; k < n; k += nb) {
      const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
      // 2.-4. H, T and the rank-b update: the next panel's columns first, that panel gathered
      //    and factored, then the rest.
      update_step(exec, D, DB, mode, w, k, b, nb, opts.look_ahead,
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
  PivotStats st;
  for (std::int64_t j = 0; j < n; ++j)
    check_pivot(fn, j, diag_h(j), piv_h(j) != j, pivot_floor, st);
  std::vector<int> q, all_piv;
  if (mode == Mode::inverse)
    for (std::int64_t i = 0; i < n; ++i) {
      q.push_back(rowmap_h(i));
      all_piv.push_back(piv_h(i));
    }
  finish(exec, D, mode, q, all_piv, rowmap, rowmap_out, st, res);
  return res;
}

/// The elimination (see sweep_host_panel), the panel LU where opts.panel says.
template <class ExecSpace, class DView, class BView>
GaussJordanResult run_sweep(
    const ExecSpace& exec, const DView& D, const BView& DB, Mode mode,
    const GaussJordanOptions& opts, double max_abs_a, const char* fn,
    Kokkos::View<int*, typename DView::memory_space>* rowmap_out = nullptr) {
  const bool device = opts.panel == GaussJordanPanel::device ||
                      (opts.panel == GaussJordanPanel::automatic && !host_backend<ExecSpace>());
  if (device)
    return sweep_device_panel(exec, D, DB, mode, opts, max_abs_a, fn, rowmap_out);
  return sweep_host_panel(exec, D, DB, mode, opts, max_abs_a, fn, rowmap_out);
}

/// No right-hand sides (the inverse): an n x 0 matrix in D's memory space.
template <class DView>
auto no_rhs(const DView& D) {
  using V = Kokkos::View<double**, Kokkos::LayoutLeft, typename DView::memory_space,
                         Kokkos::MemoryUnmanaged>;
  return V(D.data(), static_cast<std::size_t>(D.extent(0)), 0);
}

template <class ExecSpace, class View>
double scan_input(const ExecSpace& exec, const View& A, bool check_input, const char* fn,
                      const char* name) {
  std::int64_t bad = 0;
  double mx = 0.0;
  scan_finite(exec, A, bad, mx, "kess::gauss_jordan::check_input");
  if (check_input)
    require_arg(bad == 0, fn,
                std::string("argument '") + name + "': " + itos(bad) +
                    " entries are NaN or Inf");
  return mx;
}

/// f(W) with W = X itself when `in_place` and kess can work in X (kx::can_work_in), else with a fresh
/// LayoutLeft copy of X in Mem (the columns of A that solve eliminates on).
template <class Mem, class ExecSpace, class XView, class F>
void on_work(const ExecSpace& exec, const XView& X, bool in_place, const char* label,
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
  copy_matrix(exec, W, X, label);
  f(W);
}

/// The right-hand sides of solve: sweep(DB) runs the elimination on DB — B itself where kess can
/// work in it, else a LayoutLeft copy — and returns the final row map (logical -> physical) on
/// the host; B then holds its rows in logical order.
template <class Mem, class ExecSpace, class BView, class Sweep>
void on_rhs(const ExecSpace& exec, const BView& B, const Sweep& sweep) {
  on_work<Mem>(exec, B, true, "kess::solve::B_work", [&](const auto& DB) {
    const std::vector<int> q = sweep(DB);
    if (DB.data() == B.data())  // in place: along the row map's cycles
      permute_back(exec, B, q, {}, false);
    else if (!q.empty())
      gather_rows(exec, B, DB, upload<Mem>(exec, q, "kess::solve::rowmap"), 0);
  });
}


}  // namespace kess::detail::gauss_jordan
