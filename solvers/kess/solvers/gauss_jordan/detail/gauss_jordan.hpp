// The bodies of kess::solve and kess::inverse (gauss_jordan.hpp), local and distributed, compiled
// once per enabled execution space (gauss_jordan/host/instantiate_*.cpp, gauss_jordan/cuda/).
#pragma once

#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/gauss_jordan/detail/sweep.hpp>
#include <kess/solvers/gauss_jordan/detail/sweep_distributed.hpp>

namespace kess::detail::gauss_jordan {

template <class ExecSpace>
GaussJordanResult solve(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                        const core::Matrix<ExecSpace>& A_writable, const core::Matrix<ExecSpace>& B,
                        const GaussJordanOptions& opts) {
  const char* fn = "solve";
  kx::ScopedRegion region("kess::solve");
  const std::int64_t n = A.extent(0), m = B.extent(1);
  require_arg(A.extent(1) == A.extent(0), fn,
              "argument 'A' must be square, got " + itos(A.extent(0)) + " x " +
                  itos(A.extent(1)));
  require_arg(static_cast<std::int64_t>(B.extent(0)) == n, fn,
              "argument 'B' has " + itos(B.extent(0)) + " rows, A has " +
                  itos(n));
  require_arg(opts.block >= 0, fn, "option 'block' = " + itos(opts.block) + " < 0");
  require_arg(n + m < (std::int64_t(1) << 31), fn, "sizes exceed the 32-bit local index range");
  const double max_a = scan_input(exec, A, opts.check_input, fn, "A");
  if (opts.check_input) scan_input(exec, B, true, fn, "B");
  using Mem = typename ExecSpace::memory_space;
  // The elimination on A's columns (A itself with overwrite_a, or a copy) and B's.
  GaussJordanResult res;
  const auto eliminate = [&](const core::Matrix<ExecSpace>& D) {
    on_rhs<Mem>(exec, B, [&](const auto& DB) {
      Kokkos::View<int*, Mem> rowmap;
      res = run_sweep(exec, D, DB, Mode::solve, opts, max_a, fn, &rowmap);
      std::vector<int> q(n);
      if (n > 0) {
        auto rowmap_h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rowmap);
        q.assign(rowmap_h.data(), rowmap_h.data() + n);
      }
      return q;
    });
  };
  if (opts.overwrite_a && A_writable.data() == A.data() && A_writable.data() != nullptr) {
    eliminate(A_writable);
  } else {
    core::Matrix<ExecSpace> W(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string("kess::solve::A_work")), n, n);
    copy_matrix(exec, W, A, "kess::solve::A_work");
    eliminate(W);
  }
  kx::fence(exec, "kess::solve");
  return res;
}

template <class ExecSpace>
GaussJordanResult inverse(const ExecSpace& exec, const core::Matrix<ExecSpace>& A,
                          const GaussJordanOptions& opts) {
  const char* fn = "inverse";
  kx::ScopedRegion region("kess::inverse");
  require_arg(A.extent(1) == A.extent(0), fn,
              "argument 'A' must be square, got " + itos(A.extent(0)) + " x " +
                  itos(A.extent(1)));
  require_arg(opts.block >= 0, fn, "option 'block' = " + itos(opts.block) + " < 0");
  require_arg(A.extent(0) < (std::size_t(1) << 31), fn, "sizes exceed the 32-bit local index range");
  const double max_a = scan_input(exec, A, opts.check_input, fn, "A");
  return run_sweep(exec, A, no_rhs(A), Mode::inverse, opts,
                                    max_a, fn);
}

/// f(), the local solve or inverse of a distributed call on one rank: an exception other than
/// kess::Error becomes kess::Error as on more ranks (comm::agree's message, out_of_memory for an
/// allocation failure).
template <class F>
void local_as_error(const comm::Communicator& cm, const char* context, const F& f) {
  try {
    f();
  } catch (const Error&) {
    throw;
  } catch (...) {
    LocalFailure failure;
    failure.record(context);
    agree_failure(cm, failure);
  }
}

template <class ExecSpace>
GaussJordanResult solve_distributed(
    const ExecSpace& exec, const comm::DistMatrix<double, typename ExecSpace::memory_space>& A,
    const comm::DistMatrix<double, typename ExecSpace::memory_space>& B,
    const GaussJordanOptions& opts) {
  using Mem = typename ExecSpace::memory_space;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const char* fn = "solve";
  kx::ScopedRegion region("kess::solve_distributed");
  const auto& grid = A.grid();
  grid.comm().require_valid(fn);
  const std::int64_t n = A.rows(), m = B.cols();
  require_row_grid(grid, fn);
  require_arg(B.grid().nprow() == 1 && B.grid().npcol() == grid.npcol(), fn,
              "argument 'B' must live on the same 1 x P grid as A");
  require_arg(A.cols() == n, fn,
              "argument 'A' must be square, got " + itos(n) + " x " +
                  itos(A.cols()));
  require_arg(B.rows() == n, fn,
              "argument 'B' has " + itos(B.rows()) + " rows, A has " + itos(n));
  GaussJordanResult res;
  res.n = n;
  res.nrhs = m;
  res.block = A.map().col_block();
  if (n == 0) return res;
  const auto a_loc = Kokkos::subview(A.local(), pair(0, n), Kokkos::ALL());
  const auto b_loc = Kokkos::subview(B.local(), pair(0, n), Kokkos::ALL());
  if (grid.npcol() == 1) {
    // One rank holds everything: the local solve, NB = A's column block (no broadcasts, no host
    // waits for the pivots, which make the distributed sweep slower even on one rank).
    GaussJordanOptions local = opts;
    local.block = static_cast<int>(res.block);
    GaussJordanResult r;
    local_as_error(grid.comm(), "solving on one rank", [&] {
      r = solve(exec, core::ConstMatrix<ExecSpace>(a_loc), core::Matrix<ExecSpace>(a_loc),
                core::Matrix<ExecSpace>(b_loc), local);
    });
    r.block = res.block;  // the distribution's NB, as on more ranks
    return r;
  }
  const int lca = A.local_cols(), lcb = B.local_cols();
  const auto a_cols = Kokkos::subview(a_loc, Kokkos::ALL(), pair(0, lca));
  const auto b_cols = Kokkos::subview(b_loc, Kokkos::ALL(), pair(0, lcb));
  res.max_abs_a = dist_scan_input(exec, grid.comm(), a_cols, opts.check_input, "A");
  if (opts.check_input) dist_scan_input(exec, grid.comm(), b_cols, true, "B");
  // This rank's columns of A (in place with overwrite_a, else a copy) and of B. A failure of
  // this rank outside the sweep's own agreements joins the agreement the others reach next:
  // while copying, the sweep's first (step 0's); after the sweep, the last one below.
  LocalFailure failure;
  enum class Stage { copying, sweeping, after } stage = Stage::copying;
  try {
    on_work<Mem>(exec, a_cols, opts.overwrite_a, "kess::solve::A_work", [&](const auto& D) {
      if (D.data() != a_cols.data() && core::settings::fault_injection("gj_setup_alloc"))
        throw std::bad_alloc();  // test hook: as if the copy of A could not be allocated
      on_rhs<Mem>(exec, b_cols, [&](const auto& DB) {
        std::vector<int> q, piv;
        stage = Stage::sweeping;
        sweep_distributed(exec, grid, A.map(), D, DB, Mode::solve, opts, fn, res, q, piv,
                          failure);
        stage = Stage::after;
        if (failure.failed) q.clear();  // no row order to restore
        return q;
      });
    });
    kx::fence(exec, "kess::solve");
  } catch (...) {
    if (stage == Stage::sweeping) throw;  // agreed in the sweep: every rank throws it
    failure.record("copying the columns of A and B");
  }
  agree_failure(grid.comm(), failure);
  return res;
}

template <class ExecSpace>
GaussJordanResult inverse_distributed(
    const ExecSpace& exec, const comm::DistMatrix<double, typename ExecSpace::memory_space>& A,
    const GaussJordanOptions& opts) {
  const char* fn = "inverse";
  kx::ScopedRegion region("kess::inverse_distributed");
  const auto& grid = A.grid();
  grid.comm().require_valid(fn);
  const std::int64_t n = A.rows();
  require_row_grid(grid, fn);
  require_arg(A.cols() == n, fn,
              "argument 'A' must be square, got " + itos(n) + " x " +
                  itos(A.cols()));
  require_arg(n < (std::int64_t(1) << 31), fn, "sizes exceed the 32-bit local index range");
  GaussJordanResult res;
  res.n = n;
  res.block = A.map().col_block();
  if (n == 0) return res;
  const auto& D = A.local();  // n x local_cols (every row is local on a 1 x P grid), in place
  if (grid.npcol() == 1) {  // one rank holds everything: the local inverse (as solve above)
    GaussJordanOptions local = opts;
    local.block = static_cast<int>(res.block);
    GaussJordanResult r;
    local_as_error(grid.comm(), "inverting on one rank",
                   [&] { r = inverse(exec, core::Matrix<ExecSpace>(D), local); });
    r.block = res.block;
    return r;
  }
  res.max_abs_a = dist_scan_input(exec, grid.comm(), D, opts.check_input, "A");
  std::vector<int> q, piv;
  // A failure of this rank after the sweep's last agreement is agreed before the column exchange.
  LocalFailure failure;
  sweep_distributed(exec, grid, A.map(),
                                  Kokkos::subview(D, Kokkos::ALL(), Kokkos::make_pair(0, A.local_cols())),
                                  no_rhs(D), Mode::inverse, opts, fn, res, q, piv, failure);
  guarded(failure, "restoring the row order", [&] { permute_back(exec, D, q, piv, false); });
  dist_permute_columns(exec, grid, A.map(), D, piv, failure);
  kx::fence(exec, "kess::inverse");
  return res;
}

#define KESS_GAUSS_JORDAN_TEMPLATES(Exec)                                                          \
  template GaussJordanResult solve<Exec>(const Exec&, const core::ConstMatrix<Exec>&,              \
                                                const core::Matrix<Exec>&, const core::Matrix<Exec>&, \
                                                const GaussJordanOptions&);                        \
  template GaussJordanResult inverse<Exec>(const Exec&, const core::Matrix<Exec>&,                 \
                                                  const GaussJordanOptions&);                      \
  template GaussJordanResult solve_distributed<Exec>(                                              \
      const Exec&, const comm::DistMatrix<double, Exec::memory_space>&,                            \
      const comm::DistMatrix<double, Exec::memory_space>&, const GaussJordanOptions&);             \
  template GaussJordanResult inverse_distributed<Exec>(                                            \
      const Exec&, const comm::DistMatrix<double, Exec::memory_space>&, const GaussJordanOptions&); \
  template class PanelLu<Exec>;

}  // namespace kess::detail::gauss_jordan
