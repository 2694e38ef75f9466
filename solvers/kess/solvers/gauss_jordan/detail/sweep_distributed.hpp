// Gauss-Jordan distributed column-block-cyclically over a 1 x P grid: the owner of each panel
// factors it and broadcasts H and the interchanges, every rank updates its own columns; the
// distributed inverse's final column permutation across ranks.
#pragma once

#include <kess/comm/exchange.hpp>
#include <kess/solvers/gauss_jordan/detail/sweep.hpp>

#include <climits>
#include <exception>

namespace kess::detail::gauss_jordan {

/// Whether an exception's text is an allocation failure: Kokkos reports one as a
/// std::runtime_error ("... failed to allocate ...", "Allocation of size ... failed").
inline bool allocation_failure_text(const std::string& what) {
  for (const char* s : {"failed to allocate", "insufficient memory", "out of memory",
                        "Out of memory", "Allocation of size"})
    if (what.find(s) != std::string::npos) return true;
  return false;
}

/// An exception this rank caught where the other ranks cannot see it, kept until the ranks agree
/// on it (agree_failure) before the next collective: the first one's kind and message.
struct LocalFailure {
  bool failed = false;
  ErrorKind kind = ErrorKind::device;
  std::string message;

  /// Records the exception being handled (call it in a catch block). A kess::Error keeps its
  /// kind and message; std::bad_alloc and Kokkos's allocation failures are out_of_memory;
  /// anything else is device (the runtime refused). `context` says what this rank was doing.
  void record(const char* context) noexcept {
    if (failed) return;
    failed = true;
    try {
      try {
        throw;
      } catch (const Error& e) {
        kind = e.kind();
        message = e.message();
      } catch (const std::bad_alloc& e) {
        kind = ErrorKind::out_of_memory;
        message = std::string(context) + ": out of memory (" + e.what() + ")";
      } catch (const std::exception& e) {
        kind = allocation_failure_text(e.what()) ? ErrorKind::out_of_memory : ErrorKind::device;
        message = std::string(context) + ": " + e.what();
      } catch (...) {
        kind = ErrorKind::device;
        message = std::string(context) + ": an unknown exception";
      }
    } catch (...) {  // no memory left for the message
      message.clear();
    }
  }
};

/// Runs f() unless this rank has already failed, recording its exception in `failure` instead of
/// letting it leave this rank alone.
template <class F>
void guarded(LocalFailure& failure, const char* context, const F& f) noexcept {
  if (failure.failed) return;
  try {
    f();
  } catch (...) {
    failure.record(context);
  }
}

/// Collective over cm: returns when no rank has failed; otherwise every rank throws kess::Error
/// (comm::agree's message: the failing ranks and the first one's message) of the first failing
/// rank's kind. One allreduce when nothing failed (the first failing rank and its kind ride in it).
inline void agree_failure(const comm::Communicator& cm, const LocalFailure& failure) {
  constexpr int kinds = 16;  // > the number of ErrorKinds
  const int mine = failure.failed ? cm.rank() * kinds + static_cast<int>(failure.kind) : INT_MAX;
  const int first = comm::allreduce(cm, mine, comm::ReduceOp::min);
  if (first == INT_MAX) return;
  comm::agree(cm, !failure.failed, failure.message, static_cast<ErrorKind>(first % kinds));
}

/// The distributed Gauss-Jordan needs every row of a column on one rank: a 1 x P grid.
inline void require_row_grid(const comm::ProcessGrid& grid, const char* fn) {
  require_arg(grid.nprow() == 1, fn,
              "the distributed Gauss-Jordan needs a 1 x P process grid (column-block-cyclic), got " +
                  itos(grid.nprow()) + " x " + itos(grid.npcol()));
}

/// NaN/Inf in this rank's part `A` of a distributed argument: with check_input every rank throws
/// (invalid_argument) when any rank finds one (comm::agree). Returns max |a_ij| over all ranks.
template <class ExecSpace, class View>
double dist_scan_input(const ExecSpace& exec, const comm::Communicator& cm, const View& A,
                           bool check_input, const char* name) {
  std::int64_t bad = 0;
  double mx = 0.0;
  scan_finite(exec, A, bad, mx, "kess::gauss_jordan::check_input");
  if (check_input)
    comm::agree(cm, bad == 0,
                std::string("argument '") + name + "': " + itos(bad) +
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
/// rank then updates its own columns (apply_h). Look-ahead: the next panel's owner first
/// updates that panel's columns and factors it, then the rest of its columns, so the panel work
/// overlaps the other ranks' updates (with look_ahead off it factors after its whole update).
/// The row map is replicated, so no row moves. On return q is
/// the final row map and, in inverse mode, all_piv the interchanges (0-based, global); res gets
/// the determinant and the panel time. Fences `exec`.
/// Errors: every exception of this rank's own work (allocations, the panel, the updates) is
/// caught into `failure` and agreed at the next step's agreement (agree_failure, the one
/// collective of a step besides the broadcasts; the setup's failures at step 0's), so every rank
/// throws kess::Error together: a bad pivot singular with the owner's message, an allocation
/// out_of_memory. The first collective is step 0's agreement: a rank that failed before the
/// sweep joins it with agree_failure instead of calling the sweep. A failure of the last step's
/// update or after it is left in `failure` for the caller's next agreement.
template <class ExecSpace, class DView, class BView>
void sweep_distributed(const ExecSpace& exec, const comm::ProcessGrid& grid,
                             const comm::BlockCyclicMap& map, const DView& D, const BView& DB,
                             Mode mode,
                             const GaussJordanOptions& opts, const char* fn,
                             GaussJordanResult& res, std::vector<int>& q,
                             std::vector<int>& all_piv, LocalFailure& failure) {
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
  const double pivot_floor = pivot_threshold(opts, n, res.max_abs_a);
  const bool fail_setup = core::settings::fault_injection("gj_setup_alloc");
  const bool fail_panel = core::settings::fault_injection("gj_panel");
  std::vector<std::int64_t> gcol;  // global column of each local column of A (increasing)
  const auto first_local_at = [&](std::int64_t col) {
    return static_cast<std::int64_t>(std::lower_bound(gcol.begin(), gcol.end(), col) - gcol.begin());
  };
  const auto owner_of = [&](std::int64_t col) { return grid.rank_of(0, map.col_owner(col)); };
  // The work buffers; allocated below, where a failure is caught.
  SweepBuffers<Mem> w;
  Kokkos::View<double*, Kokkos::HostSpace> info;
  decltype(host_buffer(w.pbuf, "")) pbuf_h, sbuf_h;
  decltype(host_buffer(w.rowmap, "")) rowmap_h;
  std::vector<int> ipiv;
  Kokkos::View<int*, Mem> steppiv;
  decltype(host_buffer(steppiv, "")) steppiv_h;
  decltype(host_buffer(w.pbuf, "")) hstage, l1stage;
  bool rowmap_on_host = true;
  // The owner of block column k factors its panel and forms H in w.hbuf (logical row order) and
  // the step's info; a failure is kept in `failure` until the ranks agree on it. The next panel's
  // owner does this right after its look-ahead update, so that the other ranks' updates run
  // meanwhile. Host panel: LAPACK on a host copy, then the rest of the owner's update. Device
  // panel (as the local sweep: opts.panel, automatic = device on device backends): the panel LU
  // on the device, its pivots and interchanges copied back for the checks and the broadcast;
  // with panel_stream on a device backend it runs on a second instance beside the rest of the
  // owner's update.
  const bool device = opts.panel == GaussJordanPanel::device ||
                      (opts.panel == GaussJordanPanel::automatic && !host_backend<ExecSpace>());
  DevicePanelWork<Mem> pwork;
  Kokkos::View<double*, Mem> pdiag;
  Kokkos::View<int*, Mem> ppiv, pmap;  // pmap: the panel LU's own row map (unused here)
  typename Kokkos::View<double*, Mem>::HostMirror pdiag_h;
  typename Kokkos::View<int*, Mem>::HostMirror ppiv_h;
  ExecSpace side = exec;
  bool overlap = false;
  guarded(failure, "allocating the Gauss-Jordan work buffers", [&] {
    gcol.resize(lca);
    for (int j = 0; j < lca; ++j) gcol[j] = map.global_col(j);
    w = SweepBuffers<Mem>(exec, n, lc, nb);
    info = Kokkos::View<double*, Kokkos::HostSpace>("kess::gauss_jordan::step_info", nb + 4);
    pbuf_h = host_buffer(w.pbuf, "kess::gauss_jordan::panel_host");
    sbuf_h = host_buffer(w.sbuf, "kess::gauss_jordan::pivot_factors_host");
    rowmap_h = host_buffer(w.rowmap, "kess::gauss_jordan::rowmap_host");
    ipiv.resize(nb);
    all_piv.assign(mode == Mode::inverse ? n : 0, 0);
    steppiv = Kokkos::View<int*, Mem>("kess::gauss_jordan::step_interchanges", n);
    steppiv_h = host_buffer(steppiv, "kess::gauss_jordan::step_interchanges_host");
    // H goes to the other ranks through page-locked staging kept for the whole sweep (where MPI
    // cannot read device memory).
    hstage = host_buffer(Kokkos::View<double*, Mem>(w.hbuf.data(), w.hbuf.size()),
                         "kess::gauss_jordan::H_staging");
    l1stage = host_buffer(Kokkos::View<double*, Mem>(w.sbuf.data() + nb * nb, nb * nb),
                          "kess::gauss_jordan::L1_staging");
    if (device) {
      pwork = DevicePanelWork<Mem>(n, nb);
      pwork.tournament_leaves = opts.pivoting == GaussJordanPivoting::tournament;
      pdiag = Kokkos::View<double*, Mem>("kess::gauss_jordan::panel_pivots", nb);
      ppiv = Kokkos::View<int*, Mem>("kess::gauss_jordan::panel_interchanges", nb);
      pmap = Kokkos::View<int*, Mem>("kess::gauss_jordan::panel_rowmap", n);
    }
    pdiag_h = Kokkos::create_mirror_view(pdiag);
    ppiv_h = Kokkos::create_mirror_view(ppiv);
    if (fail_setup) throw std::bad_alloc();
    for (std::int64_t i = 0; i < n; ++i) rowmap_h(i) = static_cast<int>(i);
    // Where the row map lives on the device, every step's interchanges (relative to the step) go
    // there in their own segment of steppiv, which the host never rewrites, and a one-thread
    // kernel applies them to w.rowmap in stream order: the host copy of the row map (needed at
    // the end) is never copied, so nothing has to fence exec for the host to reuse a buffer.
    // (Host backends: rowmap_h is w.rowmap.)
    rowmap_on_host = rowmap_h.data() == w.rowmap.data();
    if (!rowmap_on_host) {
      const auto rowmap = w.rowmap;
      Kokkos::parallel_for(
          "kess::gauss_jordan::rowmap_identity",
          Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(n)),
          KOKKOS_LAMBDA(int i) { rowmap(i) = i; });
    }
    if constexpr (!host_backend<ExecSpace>()) {
      if (device && opts.look_ahead && opts.tuning.panel_stream) {
        kx::fence(exec, "kess::gauss_jordan::init");  // work arrays are initialized on exec
        side = panel_instance(exec);
        overlap = true;
      }
    }
  });
  PivotStats st;
  const auto gather_device = [&](std::int64_t k) {
    guarded(failure, "gathering the panel", [&] {
      const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
      UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
      gather_panel(exec, D, w.rowmap, k, b, A12, P, map.local_col(k));
    });
  };
  const auto factor_device = [&](const ExecSpace& on, std::int64_t k) {
    guarded(failure, "factoring the panel", [&] {
      const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
      UMat P(w.pbuf.data(), n - k, b), A12(w.abuf.data(), k, b);
      UMat uinv(w.sbuf.data(), b, b), l1(w.sbuf.data() + b * b, b, b);
      Kokkos::Timer panel_timer;
      if (fail_panel) throw_injected_panel_fault(k);
      factor_panel_device(on, P, 0, uinv, l1, pwork, pdiag, ppiv, pmap);
      Kokkos::deep_copy(on, pdiag_h, pdiag);
      Kokkos::deep_copy(on, ppiv_h, ppiv);
      kx::fence(on, "kess::gauss_jordan::panel_pivots");
      PivotStats step;
      for (int i = 0; i < b; ++i)
        check_pivot(fn, k + i, pdiag_h(i), ppiv_h(i) != i, pivot_floor, step);
      for (int i = 0; i < b; ++i) info(i) = ppiv_h(i);
      info(nb) = step.sign;
      info(nb + 1) = step.log_abs_det;
      info(nb + 2) = step.min_abs_pivot;
      info(nb + 3) = step.max_abs_pivot;
      form_h(on, A12, k, b, P, uinv, l1, Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b)));
      res.panel_seconds += panel_timer.seconds();
    });
  };
  const auto factor = [&](std::int64_t k) {
    guarded(failure, "factoring the panel", [&] {
      const int b = static_cast<int>(kx::min<std::int64_t>(nb, n - k));
      const std::int64_t rows = n - k;
      UMat P(w.pbuf.data(), rows, b), A12(w.abuf.data(), k, b);
      gather_panel(exec, D, w.rowmap, k, b, A12, P, map.local_col(k));
      Kokkos::deep_copy(exec, Kokkos::subview(pbuf_h, pair(0, rows * b)),
                        Kokkos::subview(w.pbuf, pair(0, rows * b)));
      kx::fence(exec, "kess::gauss_jordan::panel");
      Kokkos::Timer panel_timer;
      if (fail_panel) throw_injected_panel_fault(k);
      PivotStats step;
      factor_panel_host(fn, static_cast<int>(rows), b, k, pbuf_h.data(), ipiv.data(),
                        sbuf_h.data(), sbuf_h.data() + b * b, pivot_floor, step);
      for (int i = 0; i < b; ++i) info(i) = ipiv[i];
      info(nb) = step.sign;
      info(nb + 1) = step.log_abs_det;
      info(nb + 2) = step.min_abs_pivot;
      info(nb + 3) = step.max_abs_pivot;
      Kokkos::deep_copy(exec, Kokkos::subview(w.pbuf, pair(0, rows * b)),
                        Kokkos::subview(pbuf_h, pair(0, rows * b)));
      Kokkos::deep_copy(exec, Kokkos::subview(w.sbuf, pair(0, 2 * b * b)),
                        Kokkos::subview(sbuf_h, pair(0, 2 * b * b)));
      UMat uinv(w.sbuf.data(), b, b), l1(w.sbuf.data() + b * b, b, b);
      form_h(exec, A12, k, b, P, uinv, l1, Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b)));
      res.panel_seconds += panel_timer.seconds();
    });
  };
  if (!failure.failed && owner_of(0) == me) {
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
    try {
      agree_failure(cm, failure);
    } catch (...) {
      kx::fence(exec, "kess::gauss_jordan::error");  // the previous update still uses the buffers
      throw;
    }
    auto H = Kokkos::subview(w.hbuf, Kokkos::ALL(), pair(0, b));  // leading columns: contiguous
    // 3. H, L1 and the interchanges to every rank.
    comm::bcast(HostExec(), cm, info, owner);
    comm::bcast(exec, cm, H, owner, hstage);
    comm::bcast(exec, cm, Kokkos::subview(w.sbuf, pair(b * b, 2 * b * b)), owner, l1stage);
    guarded(failure, "updating the local columns", [&] {
      st.sign *= static_cast<int>(info(nb));
      st.log_abs_det += info(nb + 1);
      st.min_abs_pivot = std::min(st.min_abs_pivot, info(nb + 2));
      st.max_abs_pivot = std::max(st.max_abs_pivot, info(nb + 3));
      for (int i = 0; i < b; ++i) {
        const int p = static_cast<int>(info(i));
        if (p != i) std::swap(rowmap_h(k + i), rowmap_h(k + p));
        if (mode == Mode::inverse) all_piv[k + i] = static_cast<int>(k) + p;
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
      const std::int64_t left = mode == Mode::inverse ? first_local_at(k) : 0;
      const std::int64_t c0 = first_local_at(rb);
      const bool next_mine = rb < n && owner_of(rb) == me;
      const std::int64_t la = next_mine ? kx::min<std::int64_t>(nb, n - rb) : 0;
      apply_h(exec, D, DB, mode, w, k, b, left, c0, la, opts.look_ahead,
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
    });
    // info is host memory, read before the next step's factorization rewrites it; w.hbuf is
    // rewritten by the next panel only after apply_h has scattered it (stream order, or the
    // side instance's wait on exec).
  }
  guarded(failure, "finishing the sweep", [&] {
    q.assign(n, 0);
    for (std::int64_t i = 0; i < n; ++i) q[i] = rowmap_h(i);
    kx::fence(exec, "kess::gauss_jordan::done");
  });
  store_pivot_stats(st, res);
}

/// The final column permutation of the distributed in-place inverse, X(:, j) = X_s(:, src[j])
/// (column_source of the interchanges), across ranks: every rank packs the columns that
/// leave it (by destination rank, in global order), the ranks exchange them around a ring
/// (step s: to rank me + s, from rank me - s; comm::sendrecv), and every rank puts what it
/// received and its own moved columns in place. All ranks know all interchanges, so the sizes
/// agree without being sent. The ranks agree on `failure` (this rank's, from the sweep on, and
/// the buffers' allocation here) before the ring. Fences `exec`.
template <class ExecSpace, class DView>
void dist_permute_columns(const ExecSpace& exec, const comm::ProcessGrid& grid,
                             const comm::BlockCyclicMap& map, const DView& D,
                             const std::vector<int>& all_piv, LocalFailure& failure) {
  using Mem = typename DView::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const int P = grid.npcol(), me = grid.mycol();
  std::vector<int> sidx, ridx;  // kept until the fence: upload copies from them on exec
  std::vector<std::int64_t> soff(1, 0), roff(1, 0);
  Mat S, R;
  Kokkos::View<int*, Mem> rindex;
  guarded(failure, "packing the columns of the inverse", [&] {
    const std::vector<int> src = column_source(all_piv);
    // out[p]: my local columns that go to process column p; in[p]: my local columns that p fills.
    std::vector<std::vector<int>> out(P), in(P);
    for (std::size_t j = 0; j < src.size(); ++j) {
      if (src[j] == static_cast<int>(j)) continue;
      const int p = map.col_owner(j), o = map.col_owner(src[j]);
      if (o == me) out[p].push_back(map.local_col(src[j]));
      if (p == me) in[o].push_back(map.local_col(j));
    }
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
    S = Mat(alloc("kess::inverse::columns_out"), n, sidx.size());
    R = Mat(alloc("kess::inverse::columns_in"), n, ridx.size());
    if (!ridx.empty()) rindex = upload<Mem>(exec, ridx, "kess::inverse::in_index");
    if (!sidx.empty())
      gather_columns(exec, S, D, upload<Mem>(exec, sidx, "kess::inverse::out_index"));
    Kokkos::deep_copy(exec, Kokkos::subview(R, Kokkos::ALL(), pair(roff[me], roff[me + 1])),
                      Kokkos::subview(S, Kokkos::ALL(), pair(soff[me], soff[me + 1])));
  });
  try {
    agree_failure(grid.comm(), failure);
  } catch (...) {
    kx::fence(exec, "kess::inverse::error");  // the gather may still read D
    throw;
  }
  for (int s = 1; s < P; ++s) {
    const int to = (me + s) % P, from = (me - s + P) % P;
    comm::sendrecv(exec, grid.comm(), Kokkos::subview(S, Kokkos::ALL(), pair(soff[to], soff[to + 1])),
                   grid.rank_of(0, to),
                   Kokkos::subview(R, Kokkos::ALL(), pair(roff[from], roff[from + 1])),
                   grid.rank_of(0, from), /*tag=*/0x676a);
  }
  if (rindex.extent(0) > 0) scatter_columns(exec, D, R, rindex);
  kx::fence(exec, "kess::inverse::permute_columns");
}

}  // namespace kess::detail::gauss_jordan
