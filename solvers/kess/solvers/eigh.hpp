// kess::eigh — dense real symmetric eigensolver, two-stage in the ELPA2 style (Yu et al. 2020,
// docs/references.md) or one-stage, with subsets and the generalized problem A x = lambda B x;
// and kess::hh_chase_apply, the Householder chase kernel of its stage 4.
//
//   1. band_reduce         A -> band B (half-width b), compact-WY panels         (Eq. 6a)
//   2. bulge_chase         B -> tridiagonal T, reflectors recorded               (Eq. 6b)
//   3. tridiagonal solve   T X = X Lambda (divide and conquer, or host LAPACK)   (Eq. 6c)
//   4. hh_chase            Y = Q X, one hh_chase_apply call per sweep index      (Eq. 6d)
//   5. band_backtransform  Z = P Y with the stage-1 compact-WY blocks as GEMMs   (Eq. 6e)
//
// The bodies are compiled once into libkess for each enabled execution space
// (solvers/kess/solvers/eigh/); this header declares them. docs/api/eigh.md and
// docs/design/eigh.md describe the API and the algorithm.
#pragma once

#include <kess/core/base/enum_names.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kess {

enum class EighMethod {
  automatic,  ///< two-stage on device memory spaces, one-stage on host memory spaces (default)
  two_stage,  ///< full -> band -> tridiagonal
  one_stage,  ///< direct tridiagonalization (LAPACK dsytrd on the host)
};

/// Stage-2 implementation of the two-stage path.
enum class EighChase {
  automatic,  ///< team on device memory spaces (b <= 64), host otherwise
  host,       ///< host threads (std::thread pipeline)
  team,       ///< a league of teams on the execution space (b <= 64; on CUDA a dedicated kernel)
};

/// Stage-3 solver of the two-stage path.
enum class EighTridiagonal {
  automatic,       ///< divide_conquer on device memory spaces (vectors wanted), else lapack
  lapack,          ///< host LAPACK: dstedc (all vectors) or dstemr / bisection (the first nev)
  divide_conquer,  ///< kess's divide and conquer (all n vectors; the first nev are kept)
};

/// Where the generalized problem's reduction (B = L L^T, H = L^-1 A L^-T) and back-substitution
/// (x = L^-T y) run.
enum class EighGeneralized {
  automatic,  ///< blas on device memory spaces, lapack on host memory spaces
  lapack,     ///< host LAPACK dpotrf + dsygst and dtrsm (copies to and from device memory)
  blas,       ///< on the execution space: blocked Cholesky and triangular solves (cuBLAS on CUDA)
};

/// The Householder chase kernel (stage 4).
enum class HhChaseVariant {
  /// The published CUDA mapping: one team per column of X, one thread per row of the b-row
  /// window, a team reduction for v^T x, and the window sliding up one row per reflector.
  paper,
  /// Compact-WY blocks of consecutive reflectors, I - W T W^T, applied as two small GEMMs per
  /// block to a tile of columns held in scratch (one team per tile).
  fast,
};

template <>
struct EnumNames<EighMethod> {
  static constexpr const char* what = "eigh method";
  static constexpr EnumName<EighMethod> names[] = {{EighMethod::automatic, "auto"},
                                                   {EighMethod::two_stage, "two-stage"},
                                                   {EighMethod::one_stage, "one-stage"}};
};
template <>
struct EnumNames<EighChase> {
  static constexpr const char* what = "eigh chase";
  static constexpr EnumName<EighChase> names[] = {
      {EighChase::automatic, "auto"}, {EighChase::host, "host"}, {EighChase::team, "team"}};
};
template <>
struct EnumNames<EighTridiagonal> {
  static constexpr const char* what = "eigh tridiagonal solver";
  static constexpr EnumName<EighTridiagonal> names[] = {
      {EighTridiagonal::automatic, "auto"},
      {EighTridiagonal::lapack, "lapack"},
      {EighTridiagonal::divide_conquer, "dc"},
      {EighTridiagonal::divide_conquer, "divide-conquer"}};
};
template <>
struct EnumNames<EighGeneralized> {
  static constexpr const char* what = "eigh generalized reduction";
  static constexpr EnumName<EighGeneralized> names[] = {{EighGeneralized::automatic, "auto"},
                                                        {EighGeneralized::lapack, "lapack"},
                                                        {EighGeneralized::blas, "blas"}};
};
template <>
struct EnumNames<HhChaseVariant> {
  static constexpr const char* what = "hh_chase variant";
  static constexpr EnumName<HhChaseVariant> names[] = {{HhChaseVariant::paper, "paper"},
                                                       {HhChaseVariant::fast, "fast"}};
};

/// The Householder chase kernel's shape. The defaults are automatic: they come from the device
/// (and the band width) at run time.
struct HhChaseTuning {
  int block = 0;             ///< fast: reflectors per compact-WY block (0: automatic)
  int cols_per_team = 0;     ///< fast: columns of X per team (0: automatic)
  /// fast on host backends: the WY blocks formed by host BLAS and applied by kess's vectorized
  /// host kernels, at most 32 reflectors a block (else the portable team kernel, as on GPUs)
  bool host_blas = true;
  /// fast on CUDA devices with FP64 tensor cores (sm_80+), b = 64 and the default block and tile:
  /// the tensor-core (DMMA) kernel
  bool tensor_cores = true;
  /// eigh's stage 4 on CUDA with the register-window tensor-core kernel: blocks a launch in the
  /// schedule over all sweeps; -1: the device's multiprocessors, 0: one hh_chase_apply a sweep
  int round_blocks = -1;
};

struct HhChaseOptions {
  HhChaseVariant variant = HhChaseVariant::fast;
  bool check_input = true;  ///< reject NaN/Inf in V and tau (one pass over V)
  HhChaseTuning tuning{};
};

/// The divide-and-conquer stage 3's shape.
struct TridiagDcTuning {
  int leaf = 32;    ///< largest subproblem solved directly (host dsteqr)
  int threads = 0;  ///< host threads for leaves and secular equations (0: kess's host threads)
  /// Merges with at least this many secular roots solve them on the execution space (one thread a
  /// root) instead of on the host threads. -1: automatic (256 on device memory spaces, never on
  /// host memory spaces, where the host threads' vectorized sums are faster); 0: never.
  int exec_secular_min = -1;
};

/// Performance knobs of eigh's stages; the defaults are automatic (from the device and the size).
struct EighTuning {
  TridiagDcTuning tridiag_dc{};  ///< stage 3 by divide and conquer
  HhChaseTuning hh_chase{};      ///< stage 4
  /// Stage 5: stage-1 panels merged into one compact-WY block (0: 8 on device memory, where
  /// KESS_BT_MERGE overrides it, 1 on host memory).
  int band_backtransform_merge = 0;
};

struct EighOptions {
  std::int64_t nev = -1;  ///< eigenpairs wanted (the nev smallest); -1: all n
  bool vectors = true;    ///< false: eigenvalues only
  int band_width = 0;     ///< band half-width b of the two-stage path; 0: automatic
  EighMethod method = EighMethod::automatic;
  EighChase chase = EighChase::automatic;                    ///< stage 2 of the two-stage path
  EighTridiagonal tridiagonal = EighTridiagonal::automatic;  ///< stage 3 of the two-stage path
  /// Generalized problems: where the Cholesky reduction and the back-substitution run.
  EighGeneralized generalized = EighGeneralized::automatic;
  HhChaseVariant hh_chase = HhChaseVariant::fast;  ///< stage 4 kernel
  /// A is accepted as symmetric when max |A(i,j) - A(j,i)| <= tol * max |A|; kess uses (A + A^T)/2.
  double symmetry_tolerance = 1e-10;
  bool check_input = true;  ///< NaN/Inf and symmetry checks (one pass over A)
  /// eigh may use A's storage as its work matrix (A writable, LayoutLeft without padding, in the
  /// execution space's memory; otherwise A is copied as usual), saving an n x n copy; A's
  /// contents are unspecified afterwards, as with LAPACK's dsyevd. Off: A is left as it was.
  bool overwrite_a = false;
  EighTuning tuning{};
};

/// Seconds per stage (fenced on the caller's instance); zero for stages a path does not run.
struct EighTimings {
  double check = 0;             ///< input checks and the symmetrized work copy
  double band_reduce = 0;       ///< stage 1 (Eq. 6a), including `band_reduce_host`
  double band_reduce_host = 0;  ///<   of which host dgeqrf/dlarft and band assembly
  double bulge_chase = 0;       ///< stage 2 (Eq. 6b)
  double tridiagonal = 0;       ///< stage 3 (Eq. 6c), including host<->device copies of X
  double tridiagonal_host = 0;  ///<   of which host work (divide and conquer: leaves, secular equations)
  double hh_chase = 0;          ///< stage 4 (Eq. 6d)
  double band_backtransform = 0;  ///< stage 5 (Eq. 6e)
  double tridiagonalize = 0;      ///< one-stage: dsytrd with copies
  /// one-stage: Q of dsytrd applied (blocked), with the copy to device memory; with the split
  /// stage 3 the reflectors of its bottom half's rows run inside `tridiagonal`
  double backtransform = 0;
  double cholesky = 0;           ///< generalized: potrf + reduction to standard form, with copies
  double back_substitution = 0;  ///< generalized: L^-T C
  double total = 0;
};

template <class MemSpace>
struct EighResult {
  Kokkos::View<double*, Kokkos::HostSpace> eigenvalues;  ///< nev, ascending
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> eigenvectors;  ///< n x nev (0 x 0 values-only)
  int band_width = 0;             ///< band half-width used (0 for the one-stage path)
  std::string band_width_reason;  ///< why this band width
  EighMethod method = EighMethod::two_stage;  ///< the path taken (never automatic)
  std::string method_reason;                  ///< why this path
  std::string chase;        ///< stage-2 implementation used ("host", "team"; empty when none)
  std::string tridiagonal;  ///< stage-3 solver used ("dc", "dstedc", "dstemr", ...; empty when none)
  std::string generalized;  ///< A x = lambda B x: "lapack" or "blas" (EighGeneralized); else ""
  EighTimings timings;
};

namespace detail::eigh {
// Compiled once per execution space in libkess (solvers/kess/solvers/eigh/detail/eigh.hpp).
template <class ExecSpace>
EighResult<typename ExecSpace::memory_space> standard(const ExecSpace& exec,
                                                      const core::ConstMatrix<ExecSpace>& A,
                                                      const core::Matrix<ExecSpace>& A_writable,
                                                      const EighOptions& opts);
template <class ExecSpace>
EighResult<typename ExecSpace::memory_space> generalized(
    const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
    const core::Matrix<ExecSpace>& A_writable, const core::ConstMatrix<ExecSpace>& B,
    const EighOptions& opts);
template <class ExecSpace>
void hh_chase_apply(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& V,
                    const core::ConstVector<ExecSpace>& tau, const core::Matrix<ExecSpace>& X,
                    const HhChaseOptions& opts);

template <class ExecSpace, class AView>
constexpr void static_checks() {
  static_assert(Kokkos::is_view<AView>::value && AView::rank == 2,
                "kess::eigh: A and B must be rank-2 Views");
  static_assert(std::is_same<typename AView::array_layout, Kokkos::LayoutLeft>::value,
                "kess::eigh: A and B must be LayoutLeft");
  static_assert(std::is_same<typename AView::non_const_value_type, double>::value,
                "kess::eigh: only double is implemented so far");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename AView::memory_space>::accessible,
                "kess::eigh: A and B must be accessible from the execution space");
}
}  // namespace detail::eigh

/// Eigenvalues (ascending) and the first opts.nev eigenvectors of the real symmetric n x n matrix
/// A (LayoutLeft, readable from exec; not modified unless opts.overwrite_a), on `exec`. Throws
/// kess::Error: invalid_argument (shapes, nev, NaN/Inf), not_symmetric (the message names the
/// worst pair). Fences `exec`.
template <class ExecSpace, class AView,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
EighResult<typename ExecSpace::memory_space> eigh(const ExecSpace& exec, const AView& A,
                                                  const EighOptions& opts = {}) {
  detail::eigh::static_checks<ExecSpace, AView>();
  return detail::eigh::standard(exec, core::read_only(exec, A, "kess::eigh::A"),
                                core::writable<ExecSpace>(A), opts);
}

/// Generalized problem A x = lambda B x with B symmetric positive definite: B = L L^T,
/// H = L^-1 A L^-T, eigh of H, x = L^-T y; eigenvectors are B-orthonormal. Where the reduction
/// runs: opts.generalized. Throws kess::Error not_positive_definite naming the failing pivot.
template <class ExecSpace, class AView, class BView,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value &&
                                   Kokkos::is_view<BView>::value>>
EighResult<typename ExecSpace::memory_space> eigh(const ExecSpace& exec, const AView& A,
                                                  const BView& B, const EighOptions& opts = {}) {
  detail::eigh::static_checks<ExecSpace, AView>();
  detail::eigh::static_checks<ExecSpace, BView>();
  return detail::eigh::generalized(exec, core::read_only(exec, A, "kess::eigh::A"),
                                   core::writable<ExecSpace>(A),
                                   core::read_only(exec, B, "kess::eigh::B"), opts);
}

/// Same, on the default instance of A's execution space.
template <class AView, class = std::enable_if_t<Kokkos::is_view<AView>::value>>
EighResult<typename AView::memory_space> eigh(const AView& A, const EighOptions& opts = {}) {
  return eigh(typename AView::execution_space(), A, opts);
}

/// Applies the Householder chase Y = H_0 H_1 ... H_{n-1} X in place (X <- Y) on `exec`
/// (the ELPA2 kernel note in docs/references.md; docs/api/hh_chase_apply.md).
///   V:   b x n, column k is reflector k (V(0, k) = 1 by convention; used as stored)
///   tau: n
///   X:   NR x NC (LayoutLeft, writable), NR = b + n - 1; reflector k acts on rows k .. k+b-1
/// Throws kess::Error (invalid_argument) on inconsistent shapes, b < 1, n < 1, or non-finite
/// V / tau. The work is enqueued on `exec`; the call does not fence it.
template <class ExecSpace, class VView, class TauView, class XView,
          class = std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value>>
void hh_chase_apply(const ExecSpace& exec, const VView& V, const TauView& tau, const XView& X,
                    const HhChaseOptions& opts = {}) {
  static_assert(core::is_double_view<ExecSpace, VView, 2>(), "V must be a rank-2 double View");
  static_assert(core::is_double_view<ExecSpace, TauView, 1>(), "tau must be a rank-1 double View");
  static_assert(core::is_double_view<ExecSpace, XView, 2>(), "X must be a rank-2 double View");
  static_assert(core::is_native_matrix<ExecSpace, XView>() &&
                    !std::is_const<typename XView::value_type>::value,
                "X must be a writable LayoutLeft View in the execution space's memory");
  detail::eigh::hh_chase_apply(exec, core::read_only(exec, V, "kess::hh_chase_apply::V"),
                               core::read_only(exec, tau, "kess::hh_chase_apply::tau"),
                               core::Matrix<ExecSpace>(X), opts);
}

/// Same, on the default instance of X's execution space.
template <class VView, class TauView, class XView,
          class = std::enable_if_t<Kokkos::is_view<VView>::value>>
void hh_chase_apply(const VView& V, const TauView& tau, const XView& X,
                    const HhChaseOptions& opts = {}) {
  hh_chase_apply(typename XView::execution_space(), V, tau, X, opts);
}

/// Flops of the plain algorithm, 4 b n NC (what GFLOP/s figures are counted against).
inline double hh_chase_flops(std::int64_t b, std::int64_t n, std::int64_t nc) {
  return 4.0 * static_cast<double>(b) * static_cast<double>(n) * static_cast<double>(nc);
}

}  // namespace kess
