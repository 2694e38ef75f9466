// kess::solve and kess::inverse — blocked Gauss-Jordan elimination with partial pivoting (Köhler
// 2017, docs/references.md): Y = A^-1 B without forming A^-1 (n^3 + 2 n^2 m flops) and the
// in-place inverse (2 n^3 flops), with the determinant from the pivots; on one rank or
// column-block-cyclically distributed over a 1 x P grid.
//
// The bodies are compiled once into libkess for each enabled execution space
// (solvers/kess/solvers/gauss_jordan/); this header declares them. docs/api/solve.md,
// docs/api/inverse.md and docs/design/gauss_jordan.md describe the API and the algorithm.
#pragma once

#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/core/base/enum_names.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/views.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

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
              ///< to 16384 rows (others: partial). Other interchanges than partial pivoting's;
              ///< |l_ij| may exceed 1
};

template <>
struct EnumNames<GaussJordanPanel> {
  static constexpr const char* what = "Gauss-Jordan panel";
  static constexpr EnumName<GaussJordanPanel> names[] = {{GaussJordanPanel::automatic, "auto"},
                                                         {GaussJordanPanel::host, "host"},
                                                         {GaussJordanPanel::device, "device"}};
};
template <>
struct EnumNames<GaussJordanPivoting> {
  static constexpr const char* what = "Gauss-Jordan pivoting";
  static constexpr EnumName<GaussJordanPivoting> names[] = {
      {GaussJordanPivoting::partial, "partial"}, {GaussJordanPivoting::tournament, "tournament"}};
};

/// Performance knobs of the device sweep; the defaults come from the device.
struct GaussJordanTuning {
  /// Device panel with look_ahead: the chain of panels (each panel's H, its pivot block row of the
  /// next panel's columns, the look-ahead update, the next panel's factorization) runs on a second
  /// instance of the execution space (a highest-priority CUDA stream), ahead of the trailing
  /// updates on the first, ordered by events only. On host backends the same order runs on one
  /// instance.
  bool panel_stream = true;
  /// With panel_stream on CUDA: the multiprocessors the trailing updates leave to the panel chain
  /// (a green context holds the updates; their share is rounded down to what the device allows,
  /// on Hopper a multiple of 8). -1: a device's multiprocessors / 11 (e.g. 12 of 132); 0, or
  /// where partitions cannot be had: the updates and the chain share the whole device.
  int panel_sms = -1;
};

struct GaussJordanOptions {
  /// Block size NB; 0 picks a default: with the host panel 128 (256 from n = 3000 where kess's
  /// host GEMM is not available); with the device panel 512 on devices, 128 on host backends.
  int block = 0;
  /// Split the rank-NB update into the next panel's columns and the rest (the look-ahead).
  bool look_ahead = true;
  /// Reject NaN/Inf entries in the inputs (one pass over them).
  bool check_input = true;
  /// solve: kess may use A's storage as its work matrix (A LayoutLeft and writable), saving an
  /// n x n copy; A's contents are unspecified afterwards (as with LAPACK's dgesv). Off: A is
  /// left as it was.
  bool overwrite_a = false;
  /// A pivot with |u_jj| <= pivot_tolerance * max|a_ij| is numerically singular (kess::Error,
  /// ErrorKind::singular); negative: n * epsilon. 0 rejects exactly zero pivots only.
  double pivot_tolerance = -1.0;
  /// Where the panel factorizations run (local and distributed alike).
  GaussJordanPanel panel = GaussJordanPanel::automatic;
  /// Pivot choice of the device panel.
  GaussJordanPivoting pivoting = GaussJordanPivoting::partial;
  GaussJordanTuning tuning{};
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

namespace detail::gauss_jordan {
// Compiled once per execution space in libkess (solvers/kess/solvers/gauss_jordan/detail/).
template <class ExecSpace>
GaussJordanResult solve(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                        const core::Matrix<ExecSpace>& A_writable, const core::Matrix<ExecSpace>& B,
                        const GaussJordanOptions& opts);
template <class ExecSpace>
GaussJordanResult inverse(const ExecSpace& exec, const core::Matrix<ExecSpace>& A,
                          const GaussJordanOptions& opts);
template <class ExecSpace>
GaussJordanResult solve_distributed(
    const ExecSpace& exec, const comm::DistMatrix<double, typename ExecSpace::memory_space>& A,
    const comm::DistMatrix<double, typename ExecSpace::memory_space>& B,
    const GaussJordanOptions& opts);
template <class ExecSpace>
GaussJordanResult inverse_distributed(
    const ExecSpace& exec, const comm::DistMatrix<double, typename ExecSpace::memory_space>& A,
    const GaussJordanOptions& opts);

template <class T>
using enable_if_exec_t = std::enable_if_t<Kokkos::is_execution_space<T>::value, int>;

template <class ExecSpace, class View>
constexpr void static_checks() {
  static_assert(Kokkos::is_view<View>::value && View::rank == 2,
                "kess Gauss-Jordan: matrices must be rank-2 Kokkos Views");
  static_assert(std::is_same<typename View::non_const_value_type, double>::value,
                "kess Gauss-Jordan: only double is implemented so far");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible,
                "kess Gauss-Jordan: the View must be accessible from the execution space");
}

/// f(W) on W = X itself where X is a writable LayoutLeft View in exec's memory, else on a
/// LayoutLeft copy of X that is copied back into X when f returns.
template <class ExecSpace, class XView, class F>
auto in_native_layout(const ExecSpace& exec, const XView& X, const char* label, const F& f) {
  if constexpr (kx::can_work_in<XView, typename ExecSpace::memory_space>()) {
    return f(core::Matrix<ExecSpace>(X));
  } else {
    core::Matrix<ExecSpace> W(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label)),
                              X.extent(0), X.extent(1));
    Kokkos::deep_copy(exec, W, X);
    auto result = f(W);
    Kokkos::deep_copy(exec, X, W);
    exec.fence();
    return result;
  }
}
}  // namespace detail::gauss_jordan

/// Solves A Y = B by blocked Gauss-Jordan elimination with partial pivoting; B (n x m) is
/// overwritten with Y = A^-1 B (in place when B is a LayoutLeft View in exec's memory, through an
/// n x m work copy otherwise). A (n x n) is not modified: it is copied into an n x n work matrix,
/// unless opts.overwrite_a allows kess to work in A's own storage (A LayoutLeft and writable; its
/// contents are unspecified afterwards). Returns the determinant of A and pivot statistics.
/// Throws kess::Error: invalid_argument for shapes or NaN/Inf entries (or overwrite_a with a
/// read-only A), singular for a zero or numerically zero pivot (the message names the 0-based
/// column and the pivot's magnitude). Input errors are raised before anything is written; after a
/// singular pivot B and, with overwrite_a, A hold partial results (dgesv, which factors before it
/// solves, leaves B as it was: keep a copy of B if you need it then). Runs on `exec` and fences it.
template <class ExecSpace, class AView, class BView,
          detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult solve(const ExecSpace& exec, const AView& A, const BView& B,
                        const GaussJordanOptions& opts = {}) {
  detail::gauss_jordan::static_checks<ExecSpace, AView>();
  detail::gauss_jordan::static_checks<ExecSpace, BView>();
  static_assert(!std::is_const<typename BView::value_type>::value, "kess::solve: B must be writable");
  require_arg(!opts.overwrite_a || !std::is_const<typename AView::value_type>::value, "solve",
              "option 'overwrite_a' needs a writable A (a View of non-const double)");
  return detail::gauss_jordan::in_native_layout(exec, B, "kess::solve::B_work", [&](const auto& Bw) {
    return detail::gauss_jordan::solve(exec, core::read_only(exec, A, "kess::solve::A"),
                                       core::writable<ExecSpace>(A), Bw, opts);
  });
}

/// Same, on the default instance of A's execution space.
template <class AView, class BView, std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
GaussJordanResult solve(const AView& A, const BView& B, const GaussJordanOptions& opts = {}) {
  return solve(typename AView::execution_space(), A, B, opts);
}

/// Inverts A in place (A <- A^-1) by Gauss-Jordan elimination with partial pivoting (2 n^3
/// flops). A must be LayoutLeft. Returns the determinant of the input A. Errors as for solve.
template <class ExecSpace, class AView, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult inverse(const ExecSpace& exec, const AView& A,
                          const GaussJordanOptions& opts = {}) {
  detail::gauss_jordan::static_checks<ExecSpace, AView>();
  static_assert(std::is_same<typename AView::array_layout, Kokkos::LayoutLeft>::value,
                "kess::inverse: A must be LayoutLeft");
  static_assert(!std::is_const<typename AView::value_type>::value,
                "kess::inverse: A must be writable");
  return detail::gauss_jordan::in_native_layout(exec, A, "kess::inverse::A_work", [&](const auto& Aw) {
    return detail::gauss_jordan::inverse(exec, Aw, opts);
  });
}

/// Same, on the default instance of A's execution space.
template <class AView, std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
GaussJordanResult inverse(const AView& A, const GaussJordanOptions& opts = {}) {
  return inverse(typename AView::execution_space(), A, opts);
}

/// Solves A Y = B for A (n x n) and B (n x m) distributed column-block-cyclically: DistMatrix on a
/// 1 x P ProcessGrid (every rank holds all rows of its column blocks), A's column block is NB.
/// B is overwritten with Y (same distribution). Per block column the owner of the panel factors
/// it (opts.panel), forms H and broadcasts H (n x NB) and the interchanges; every rank then
/// updates its own columns of [A | B] with one rank-NB GEMM (the next panel's owner does the
/// look-ahead part first). Pivoting is lazy (a replicated row map), so no rows move between or
/// within ranks. Collective over A.grid().comm(); errors are agreed (every rank throws the same
/// kind together: invalid_argument for shapes/NaN/Inf, singular naming the column and the
/// pivot's magnitude). The determinant is returned on every rank. opts.block is ignored (NB = A's
/// column block). On a 1 x 1 grid this is the local solve on the rank's Views.
template <class ExecSpace, class Mem, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult solve(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& A,
                        const comm::DistMatrix<double, Mem>& B, const GaussJordanOptions& opts = {}) {
  static_assert(std::is_same<Mem, typename ExecSpace::memory_space>::value,
                "kess::solve: the DistMatrix must live in the execution space's memory space");
  return detail::gauss_jordan::solve_distributed(exec, A, B, opts);
}

/// Inverts A in place (A <- A^-1, 2 n^3 flops) for A (n x n) distributed column-block-cyclically
/// on a 1 x P ProcessGrid (NB = A's column block; opts.block is ignored). Per block column the
/// owner of the panel factors it and broadcasts H and the interchanges; every rank updates its
/// columns; at the end the rows go back to logical order and the columns are permuted by the
/// interchanges across ranks. Returns det(A) on every rank. Collective over A.grid().comm();
/// errors agreed as for the distributed solve. On a 1 x 1 grid this is the local inverse.
template <class ExecSpace, class Mem, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
GaussJordanResult inverse(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& A,
                          const GaussJordanOptions& opts = {}) {
  static_assert(std::is_same<Mem, typename ExecSpace::memory_space>::value,
                "kess::inverse: the DistMatrix must live in the execution space's memory space");
  return detail::gauss_jordan::inverse_distributed(exec, A, opts);
}

}  // namespace kess
