// kess matrix functions built on Gauss-Jordan: the matrix sign function by the scaled Newton
// iteration (Köhler 2017; Higham 2008, docs/references.md), and the Lyapunov and algebraic Riccati
// equations through it (Roberts 1980); on one rank or on a 1 x P DistMatrix grid.
//
// The bodies are compiled once into libkess for each enabled execution space
// (solvers/kess/solvers/matrix_functions/); this header declares them. docs/api/sign.md,
// lyapunov.md, riccati.md and docs/design/matrix_functions.md describe the API and the algorithms.
#pragma once

#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/core/base/enum_names.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/views.hpp>
#include <kess/solvers/gauss_jordan.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kess {

/// How the Newton iteration scales X_k before each step.
enum class SignScaling {
  none,
  determinant,  ///< mu_k = (|det X_k| / |det B|)^(-1/n) (B = I for the standard form)
  norm,         ///< mu_k = sqrt(||X_k^-1|| / ||X_k||) (Frobenius norms)
};

template <>
struct EnumNames<SignScaling> {
  static constexpr const char* what = "sign scaling";
  static constexpr EnumName<SignScaling> names[] = {{SignScaling::none, "none"},
                                                    {SignScaling::determinant, "determinant"},
                                                    {SignScaling::norm, "norm"},
                                                    {SignScaling::determinant, "det"}};
};

struct SignOptions {
  SignScaling scaling = SignScaling::determinant;
  int max_iterations = 100;
  /// Relative tolerance of the stopping tests; <= 0: n * epsilon.
  double tol = 0.0;
  /// Throw kess::Error (no_convergence) when the iteration fails; false: return converged = false.
  bool throw_on_failure = true;
  /// Options of the inner Gauss-Jordan solves/inversions (block size, ...).
  GaussJordanOptions gauss_jordan{};
};

/// Iteration record shared by sign, lyapunov and riccati.
struct NewtonHistory {
  int iterations = 0;
  bool converged = false;
  /// "relative change" | "quadratic" | "stagnation" | "" (not converged)
  std::string stopped_by;
  std::vector<double> rel_change;  ///< ||X_{k+1} - X_k||_1 / ||X_{k+1}||_1, one per iteration
  std::vector<double> mu;          ///< the scaling factor used in each iteration
  /// "k=1 rel=... mu=...; k=2 ..." (the last 12 iterations)
  std::string str() const;
};

template <class M>
struct SignResult {
  M X;  ///< sign(A), or B sign(B^-1 A) for the pencil
  NewtonHistory history;
};

template <class M>
struct LyapunovResult {
  M X;  ///< the solution of A X + X A^T + Q = 0
  NewtonHistory history;
};

template <class M>
struct RiccatiResult {
  M X;  ///< the stabilizing solution of A^T X + X A - X G X + Q = 0
  NewtonHistory history;
};

/// Flops of one Newton iteration: 2 n^3 (inverse); pencil 5 n^3 (solve 3 n^3 + GEMM 2 n^3).
inline double sign_iteration_flops(std::int64_t n, bool pencil) {
  const double dn = static_cast<double>(n);
  return (pencil ? 5.0 : 2.0) * dn * dn * dn;
}

namespace detail::matrix_functions {
template <class ExecSpace>
using DistMatrix = comm::DistMatrix<double, typename ExecSpace::memory_space>;

// Compiled once per execution space in libkess (solvers/kess/solvers/matrix_functions/detail/).
template <class ExecSpace>
SignResult<core::Matrix<ExecSpace>> sign(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                                         const SignOptions& opts);
template <class ExecSpace>
SignResult<core::Matrix<ExecSpace>> sign_pencil(const ExecSpace& exec,
                                                const core::ConstMatrix<ExecSpace>& A,
                                                const core::ConstMatrix<ExecSpace>& B,
                                                const SignOptions& opts);
template <class ExecSpace>
SignResult<DistMatrix<ExecSpace>> sign_distributed(const ExecSpace& exec,
                                                   const DistMatrix<ExecSpace>& A,
                                                   const SignOptions& opts);
template <class ExecSpace>
SignResult<DistMatrix<ExecSpace>> sign_pencil_distributed(const ExecSpace& exec,
                                                          const DistMatrix<ExecSpace>& A,
                                                          const DistMatrix<ExecSpace>& B,
                                                          const SignOptions& opts);
template <class ExecSpace>
LyapunovResult<core::Matrix<ExecSpace>> lyapunov(const ExecSpace& exec,
                                                 const core::ConstMatrix<ExecSpace>& A,
                                                 const core::ConstMatrix<ExecSpace>& Q,
                                                 const SignOptions& opts);
template <class ExecSpace>
LyapunovResult<DistMatrix<ExecSpace>> lyapunov_distributed(const ExecSpace& exec,
                                                           const DistMatrix<ExecSpace>& A,
                                                           const DistMatrix<ExecSpace>& Q,
                                                           const SignOptions& opts);
template <class ExecSpace>
double lyapunov_residual(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                         const core::ConstMatrix<ExecSpace>& Q, const core::ConstMatrix<ExecSpace>& X);
template <class ExecSpace>
RiccatiResult<core::Matrix<ExecSpace>> riccati(const ExecSpace& exec,
                                               const core::ConstMatrix<ExecSpace>& A,
                                               const core::ConstMatrix<ExecSpace>& G,
                                               const core::ConstMatrix<ExecSpace>& Q,
                                               const SignOptions& opts);
template <class ExecSpace>
RiccatiResult<DistMatrix<ExecSpace>> riccati_distributed(const ExecSpace& exec,
                                                         const DistMatrix<ExecSpace>& A,
                                                         const DistMatrix<ExecSpace>& G,
                                                         const DistMatrix<ExecSpace>& Q,
                                                         const SignOptions& opts);
template <class ExecSpace>
double riccati_residual(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                        const core::ConstMatrix<ExecSpace>& G, const core::ConstMatrix<ExecSpace>& Q,
                        const core::ConstMatrix<ExecSpace>& X);

/// A caller's View as the compiled bodies take it (read-only, LayoutLeft, exec's memory).
template <class ExecSpace, class View>
core::ConstMatrix<ExecSpace> input(const ExecSpace& exec, const View& A, const char* label) {
  gauss_jordan::static_checks<ExecSpace, View>();
  return core::read_only(exec, A, label);
}

template <class ExecSpace, class Mem>
constexpr void dist_checks() {
  static_assert(std::is_same<Mem, typename ExecSpace::memory_space>::value,
                "kess matrix functions: the DistMatrix must live in the execution space's memory");
}
}  // namespace detail::matrix_functions

/// sign(A) by the scaled Newton iteration. A (n x n) is not modified; the result's X is a new
/// LayoutLeft View in the execution space's memory. Throws kess::Error: invalid_argument (shape,
/// NaN/Inf), no_convergence (with the history) when sign(A) does not exist numerically.
template <class ExecSpace, class AView, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
SignResult<core::Matrix<ExecSpace>> sign(const ExecSpace& exec, const AView& A,
                                         const SignOptions& opts = {}) {
  return detail::matrix_functions::sign(
      exec, detail::matrix_functions::input(exec, A, "kess::sign::A"), opts);
}

/// The pencil form: X_{k+1} = 1/2 (mu X_k + mu^-1 B X_k^-1 B), X_0 = A; returns its limit
/// B sign(B^-1 A). A and B (n x n, B nonsingular) are not modified.
template <class ExecSpace, class AView, class BView,
          detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0,
          std::enable_if_t<Kokkos::is_view<BView>::value, int> = 0>
SignResult<core::Matrix<ExecSpace>> sign(const ExecSpace& exec, const AView& A, const BView& B,
                                         const SignOptions& opts = {}) {
  return detail::matrix_functions::sign_pencil(
      exec, detail::matrix_functions::input(exec, A, "kess::sign::A"),
      detail::matrix_functions::input(exec, B, "kess::sign::B"), opts);
}

/// sign(A) on the default instance of A's execution space.
template <class AView, std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
auto sign(const AView& A, const SignOptions& opts = {}) {
  return sign(typename AView::execution_space(), A, opts);
}

/// sign(A) for A (n x n) distributed column-block-cyclically (DistMatrix on a 1 x P grid): the
/// same Newton iteration, scaling and stopping tests as the local sign, on the distributed
/// inverse; norms by allreduce, so every rank takes the same decisions. The result X is a new
/// DistMatrix distributed as A. Collective over A.grid().comm(); errors are agreed.
template <class ExecSpace, class Mem, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
SignResult<comm::DistMatrix<double, Mem>> sign(const ExecSpace& exec,
                                               const comm::DistMatrix<double, Mem>& A,
                                               const SignOptions& opts = {}) {
  detail::matrix_functions::dist_checks<ExecSpace, Mem>();
  return detail::matrix_functions::sign_distributed(exec, A, opts);
}

/// The pencil form for distributed A and B (n x n, distributed alike on a 1 x P grid): the limit
/// B sign(B^-1 A); B is replicated once (n^2 values a rank) for the product B (X_k^-1 B).
template <class ExecSpace, class Mem, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
SignResult<comm::DistMatrix<double, Mem>> sign(const ExecSpace& exec,
                                               const comm::DistMatrix<double, Mem>& A,
                                               const comm::DistMatrix<double, Mem>& B,
                                               const SignOptions& opts = {}) {
  detail::matrix_functions::dist_checks<ExecSpace, Mem>();
  return detail::matrix_functions::sign_pencil_distributed(exec, A, B, opts);
}

/// Solves A X + X A^T + Q = 0 (A stable, n x n; Q n x n). A and Q are not modified.
template <class ExecSpace, class AView, class QView,
          detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0,
          std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
LyapunovResult<core::Matrix<ExecSpace>> lyapunov(const ExecSpace& exec, const AView& A,
                                                 const QView& Q, const SignOptions& opts = {}) {
  using namespace detail::matrix_functions;
  return detail::matrix_functions::lyapunov(exec, input(exec, A, "kess::lyapunov::A"),
                                            input(exec, Q, "kess::lyapunov::Q"), opts);
}

/// Solves A X + X A^T + Q = 0 for A (stable) and Q (n x n) distributed alike on a 1 x P grid,
/// through the distributed sign of Roberts' block matrix [A^T 0; Q -A] (2n x 2n). The result X is
/// distributed as A; errors are agreed across ranks.
template <class ExecSpace, class Mem, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
LyapunovResult<comm::DistMatrix<double, Mem>> lyapunov(const ExecSpace& exec,
                                                       const comm::DistMatrix<double, Mem>& A,
                                                       const comm::DistMatrix<double, Mem>& Q,
                                                       const SignOptions& opts = {}) {
  detail::matrix_functions::dist_checks<ExecSpace, Mem>();
  return detail::matrix_functions::lyapunov_distributed(exec, A, Q, opts);
}

/// ||A X + X A^T + Q||_F / (2 ||A||_F ||X||_F + ||Q||_F), computed on exec (for checks).
template <class ExecSpace, class AView, class QView, class XView>
double lyapunov_residual(const ExecSpace& exec, const AView& A, const QView& Q, const XView& X) {
  using namespace detail::matrix_functions;
  return detail::matrix_functions::lyapunov_residual(exec, input(exec, A, "kess::lyapunov::A"),
                                                     input(exec, Q, "kess::lyapunov::Q"),
                                                     input(exec, X, "kess::lyapunov::X"));
}

/// Solves A^T X + X A - X G X + Q = 0 for the stabilizing X (A, G, Q n x n; G, Q symmetric to
/// 1e-12 relative, else kess::Error not_symmetric). The inputs are not modified.
template <class ExecSpace, class AView, class GView, class QView,
          detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0,
          std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
RiccatiResult<core::Matrix<ExecSpace>> riccati(const ExecSpace& exec, const AView& A,
                                               const GView& G, const QView& Q,
                                               const SignOptions& opts = {}) {
  using namespace detail::matrix_functions;
  return detail::matrix_functions::riccati(exec, input(exec, A, "kess::riccati::A"),
                                           input(exec, G, "kess::riccati::G"),
                                           input(exec, Q, "kess::riccati::Q"), opts);
}

/// Solves A^T X + X A - X G X + Q = 0 for A, G, Q (n x n) distributed alike on a 1 x P grid,
/// through the distributed sign of the Hamiltonian [A -G; -Q -A^T]. Result distributed as A.
template <class ExecSpace, class Mem, detail::gauss_jordan::enable_if_exec_t<ExecSpace> = 0>
RiccatiResult<comm::DistMatrix<double, Mem>> riccati(const ExecSpace& exec,
                                                     const comm::DistMatrix<double, Mem>& A,
                                                     const comm::DistMatrix<double, Mem>& G,
                                                     const comm::DistMatrix<double, Mem>& Q,
                                                     const SignOptions& opts = {}) {
  detail::matrix_functions::dist_checks<ExecSpace, Mem>();
  return detail::matrix_functions::riccati_distributed(exec, A, G, Q, opts);
}

/// ||A^T X + X A - X G X + Q||_F / (2 ||A||_F ||X||_F + ||X||_F^2 ||G||_F + ||Q||_F) on exec.
template <class ExecSpace, class AView, class GView, class QView, class XView>
double riccati_residual(const ExecSpace& exec, const AView& A, const GView& G, const QView& Q,
                        const XView& X) {
  using namespace detail::matrix_functions;
  return detail::matrix_functions::riccati_residual(
      exec, input(exec, A, "kess::riccati::A"), input(exec, G, "kess::riccati::G"),
      input(exec, Q, "kess::riccati::Q"), input(exec, X, "kess::riccati::X"));
}

}  // namespace kess
