// The matrix sign function by the scaled Newton iteration (Köhler 2017, papers/002, "Motivation"):
//   X_{k+1} = 1/2 (mu_k X_k + mu_k^-1 X_k^-1),            X_0 = A     -> sign(A)
//   X_{k+1} = 1/2 (mu_k X_k + mu_k^-1 B X_k^-1 B),        X_0 = A     -> B sign(B^-1 A)  (pencil)
// with determinant scaling mu_k = (|det X_k| / |det B|)^(-1/n) (B = I for the standard form) or
// norm scaling mu_k = sqrt(||X_k^-1|| / ||X_k||) (Frobenius norms; pencil: ||B X_k^-1 B||),
// switched off once the iteration is in its quadratic phase (relative change <= 1e-2; Higham,
// Functions of Matrices, §5.5 and §5.8). The inverses come from kess::inverse (2 n^3 flops an
// iteration); the pencil form uses kess::solve for X_k^-1 B (3 n^3) and one GEMM (2 n^3).
//
// Stopping (works for non-normal matrices, where the relative change can stall above the
// tolerance): with delta_k = ||X_{k+1} - X_k||_1 the iteration stops when
//   (a) delta_k <= tol ||X_{k+1}||_1, or
//   (b) scaling is off and delta_k <= sqrt(tol ||X_{k+1}||_1 / ||X_k^-1||_1): by quadratic
//       convergence ||X_{k+1} - S|| ~ 1/2 ||X_k^-1|| delta_k^2 <= tol ||X_{k+1}|| (Higham (5.45)), or
//   (c) the relative change has reached the rounding floor: it is <= sqrt(tol) and did not
//       decrease from the previous iteration.
// Eigenvalues on (or numerically on) the imaginary axis: sign(A) does not exist; the iteration
// either meets a singular X_k or wanders; either way kess::Error (no_convergence) with the
// iteration history in the message, after at most max_iterations.
#pragma once

#include <kess/core/error.hpp>
#include <kess/core/kokkos_compat.hpp>
#include <kess/solvers/gauss_jordan.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace kess {

enum class SignScaling { none, determinant, norm };

inline const char* to_string(SignScaling s) {
  switch (s) {
    case SignScaling::none: return "none";
    case SignScaling::determinant: return "determinant";
    case SignScaling::norm: return "norm";
  }
  return "?";
}

inline SignScaling parse_sign_scaling(const std::string& s) {
  if (s == "none") return SignScaling::none;
  if (s == "determinant" || s == "det") return SignScaling::determinant;
  if (s == "norm") return SignScaling::norm;
  throw Error(ErrorKind::invalid_argument, "parse_sign_scaling",
              "unknown scaling '" + s + "' (none | determinant | norm)");
}

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

inline std::string NewtonHistory::str() const {
  std::string s;
  const int k0 = static_cast<int>(rel_change.size()) > 12 ? static_cast<int>(rel_change.size()) - 12 : 0;
  if (k0 > 0) s += "...; ";
  for (int k = k0; k < static_cast<int>(rel_change.size()); ++k) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%sk=%d rel=%.2e mu=%.3g", k > k0 ? "; " : "", k + 1,
                  rel_change[k], mu[k]);
    s += buf;
  }
  return s;
}

template <class View>
struct SignResult {
  View X;  ///< sign(A), or B sign(B^-1 A) for the pencil
  NewtonHistory history;
};

namespace detail {

/// ||A||_1 = max_j sum_i |a_ij| on exec.
template <class ExecSpace, class AView>
double norm1(const ExecSpace& exec, const AView& A) {
  const int m = static_cast<int>(A.extent(0));
  double r = 0.0;
  Kokkos::parallel_reduce(
      "kess::sign::norm1", Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(A.extent(1))),
      KOKKOS_LAMBDA(int j, double& mx) {
        double s = 0;
        for (int i = 0; i < m; ++i) s += kx::fabs(A(i, j));
        if (s > mx) mx = s;
      },
      Kokkos::Max<double>(r));
  return r;
}

/// ||A - B||_1 on exec.
template <class ExecSpace, class AView, class BView>
double norm1_diff(const ExecSpace& exec, const AView& A, const BView& B) {
  const int m = static_cast<int>(A.extent(0));
  double r = 0.0;
  Kokkos::parallel_reduce(
      "kess::sign::norm1_diff",
      Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(A.extent(1))),
      KOKKOS_LAMBDA(int j, double& mx) {
        double s = 0;
        for (int i = 0; i < m; ++i) s += kx::fabs(A(i, j) - B(i, j));
        if (s > mx) mx = s;
      },
      Kokkos::Max<double>(r));
  return r;
}

/// ||A||_F on exec.
template <class ExecSpace, class AView>
double norm_fro(const ExecSpace& exec, const AView& A) {
  const int m = static_cast<int>(A.extent(0));
  double r = 0.0;
  Kokkos::parallel_reduce(
      "kess::sign::norm_fro",
      Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(A.extent(1))),
      KOKKOS_LAMBDA(int j, double& acc) {
        for (int i = 0; i < m; ++i) acc += A(i, j) * A(i, j);
      },
      r);
  return std::sqrt(r);
}

/// Y = alpha X + beta Y on exec (entry-wise).
template <class ExecSpace, class XView, class YView>
void axpby(const ExecSpace& exec, double alpha, const XView& X, double beta, const YView& Y) {
  core::gj_for_each(exec, "kess::sign::axpby", static_cast<int>(Y.extent(0)),
                    static_cast<int>(Y.extent(1)),
                    KOKKOS_LAMBDA(int i, int j) { Y(i, j) = alpha * X(i, j) + beta * Y(i, j); });
}

/// Y(i, i) += alpha on exec.
template <class ExecSpace, class YView>
void add_identity(const ExecSpace& exec, double alpha, const YView& Y) {
  Kokkos::parallel_for(
      "kess::sign::add_identity",
      Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(Y.extent(0))),
      KOKKOS_LAMBDA(int i) { Y(i, i) += alpha; });
}

/// The scaling and stopping logic of the Newton iterations (see the header comment).
class NewtonMonitor {
 public:
  NewtonMonitor(const char* fn, std::int64_t n, const SignOptions& opts)
      : fn_(fn), n_(n), opts_(opts) {
    tol_ = opts.tol > 0 ? opts.tol : static_cast<double>(n) * std::numeric_limits<double>::epsilon();
    require_arg(opts.max_iterations >= 1, fn, "option 'max_iterations' must be >= 1");
  }
  /// Scaling is on until the relative change falls below 1e-2.
  bool scaling_on() const {
    return opts_.scaling != SignScaling::none &&
           (h_.rel_change.empty() || h_.rel_change.back() > 1e-2);
  }
  /// Records one iteration; true when the iteration has converged.
  bool record(double mu, double delta, double norm_new, double norm_inv) {
    const double rel = norm_new > 0 ? delta / norm_new : delta;
    const double prev = h_.rel_change.empty() ? std::numeric_limits<double>::infinity()
                                              : h_.rel_change.back();
    h_.rel_change.push_back(rel);
    h_.mu.push_back(mu);
    h_.iterations += 1;
    if (!std::isfinite(rel)) return false;
    if (rel <= tol_) {
      h_.stopped_by = "relative change";
    } else if (mu == 1.0 && norm_inv > 0 && delta <= std::sqrt(tol_ * norm_new / norm_inv)) {
      h_.stopped_by = "quadratic";
    } else if (rel <= std::sqrt(tol_) && rel >= prev) {
      h_.stopped_by = "stagnation";
    } else {
      return false;
    }
    h_.converged = true;
    return true;
  }
  bool exhausted() const { return h_.iterations >= opts_.max_iterations; }
  /// An inversion failed: a singular iterate ends the iteration as a failure, anything else is
  /// rethrown. `name` is the iterate's name in the message ("X", "A").
  void fail_singular(const Error& e, const char* name) {
    if (e.kind() != ErrorKind::singular) throw e;
    fail(std::string(name) + "_" + std::to_string(h_.iterations) + " is singular: " + e.message());
  }
  /// mu_k: determinant scaling from log|det| of the inverted iterate (pencil form: minus log|det B|),
  /// or norm scaling sqrt(||inv||_F / ||X||_F); 1 once scaling is off.
  template <class ExecSpace, class InvView, class XView>
  double mu(const ExecSpace& exec, double log_abs_det, const InvView& inv, const XView& X) const {
    if (!scaling_on()) return 1.0;
    if (opts_.scaling == SignScaling::determinant)
      return std::exp(-log_abs_det / static_cast<double>(n_));
    return std::sqrt(norm_fro(exec, inv) / norm_fro(exec, X));
  }
  /// record(), then whether to stop: converged, or failed because the iterates overflowed or the
  /// iterations ran out (both recorded as failures with the reason).
  bool step(double mu, double delta, double norm_new, double norm_inv) {
    if (record(mu, delta, norm_new, norm_inv)) return true;
    if (!std::isfinite(delta) || !std::isfinite(norm_new)) {
      fail("the iterates overflowed at iteration " + std::to_string(h_.iterations));
      return true;
    }
    if (exhausted()) {
      fail("no convergence after " + std::to_string(opts_.max_iterations) + " iterations");
      return true;
    }
    return false;
  }
  /// Throws no_convergence (with the history) unless opts say otherwise.
  void fail(const std::string& why) {
    h_.converged = false;
    if (opts_.throw_on_failure)
      throw Error(ErrorKind::no_convergence, fn_,
                  why + " (eigenvalues on or near the imaginary axis?); history: " + h_.str());
  }
  double tol() const { return tol_; }
  NewtonHistory& history() { return h_; }

 private:
  const char* fn_;
  std::int64_t n_;
  SignOptions opts_;
  double tol_;
  NewtonHistory h_;
};

template <class ExecSpace, class View>
void sign_static_checks() {
  detail::gj_static_checks<ExecSpace, View>();
}

template <class ExecSpace, class AView>
void sign_check_square(const ExecSpace& exec, const AView& A, const char* fn, const char* name,
                       std::int64_t n) {
  require_arg(static_cast<std::int64_t>(A.extent(0)) == n &&
                  static_cast<std::int64_t>(A.extent(1)) == n,
              fn,
              std::string("argument '") + name + "' must be " + gj_int(n) + " x " + gj_int(n) +
                  ", got " + gj_int(A.extent(0)) + " x " + gj_int(A.extent(1)));
  gj_check_input(exec, A, true, fn, name);
}

}  // namespace detail

/// sign(A) by the scaled Newton iteration. A (n x n) is not modified; the result's X is a new
/// LayoutLeft View in the execution space's memory. Throws kess::Error: invalid_argument (shape,
/// NaN/Inf), no_convergence (with the history) when sign(A) does not exist numerically.
template <class ExecSpace, class AView, detail::enable_if_exec_t<ExecSpace> = 0>
SignResult<Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>> sign(
    const ExecSpace& exec, const AView& A, const SignOptions& opts = {}) {
  detail::sign_static_checks<ExecSpace, AView>();
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const char* fn = "sign";
  kx::ScopedRegion region("kess::sign");
  const std::int64_t n = A.extent(0);
  detail::sign_check_square(exec, A, fn, "A", n);
  SignResult<Mat> res;
  res.X = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string("kess::sign::X")),
              n, n);
  core::gj_copy(exec, res.X, A, "kess::sign::copy_a");
  detail::NewtonMonitor mon(fn, n, opts);
  if (n == 0) {
    mon.history().converged = true;
    res.history = mon.history();
    return res;
  }
  Mat Y(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string("kess::sign::Xinv")), n,
        n);
  GaussJordanOptions gj = opts.gauss_jordan;
  gj.check_finite = false;
  while (true) {
    core::gj_copy(exec, Y, res.X, "kess::sign::copy_x");
    GaussJordanResult inv;
    try {
      inv = inverse(exec, Y, gj);
    } catch (const Error& e) {
      mon.fail_singular(e, "X");
      res.history = mon.history();
      return res;
    }
    const double mu = mon.mu(exec, inv.log_abs_det, Y, res.X);
    const double norm_inv = detail::norm1(exec, Y);
    detail::axpby(exec, 0.5 * mu, res.X, 0.5 / mu, Y);  // Y <- X_{k+1}
    const double delta = detail::norm1_diff(exec, Y, res.X);
    const double norm_new = detail::norm1(exec, Y);
    std::swap(res.X, Y);
    if (mon.step(mu, delta, norm_new, norm_inv)) break;
  }
  kx::fence(exec, "kess::sign");
  res.history = mon.history();
  return res;
}

/// The pencil form: X_{k+1} = 1/2 (mu X_k + mu^-1 B X_k^-1 B), X_0 = A; returns its limit
/// B sign(B^-1 A). A and B (n x n, B nonsingular) are not modified.
template <class ExecSpace, class AView, class BView, detail::enable_if_exec_t<ExecSpace> = 0>
SignResult<Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>> sign(
    const ExecSpace& exec, const AView& A, const BView& B, const SignOptions& opts = {}) {
  detail::sign_static_checks<ExecSpace, AView>();
  detail::sign_static_checks<ExecSpace, BView>();
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const char* fn = "sign";
  kx::ScopedRegion region("kess::sign_pencil");
  const std::int64_t n = A.extent(0);
  detail::sign_check_square(exec, A, fn, "A", n);
  detail::sign_check_square(exec, B, fn, "B", n);
  SignResult<Mat> res;
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  res.X = Mat(alloc("kess::sign::X"), n, n);
  core::gj_copy(exec, res.X, A, "kess::sign::copy_a");
  detail::NewtonMonitor mon(fn, n, opts);
  if (n == 0) {
    mon.history().converged = true;
    res.history = mon.history();
    return res;
  }
  Mat Bc(alloc("kess::sign::B"), n, n), Y(alloc("kess::sign::XinvB"), n, n),
      W(alloc("kess::sign::BXinvB"), n, n);
  core::gj_copy(exec, Bc, B, "kess::sign::copy_b");
  GaussJordanOptions gj = opts.gauss_jordan;
  gj.check_finite = false;
  // log |det B|, once (a solve with no right-hand side: n^3 flops).
  double log_det_b = 0.0;
  {
    Mat none(alloc("kess::sign::none"), n, 0);
    log_det_b = solve(exec, Bc, none, gj).log_abs_det;
  }
  while (true) {
    core::gj_copy(exec, Y, Bc, "kess::sign::copy_b");
    GaussJordanResult sr;
    try {
      sr = solve(exec, res.X, Y, gj);  // Y = X_k^-1 B
    } catch (const Error& e) {
      mon.fail_singular(e, "X");
      res.history = mon.history();
      return res;
    }
    kx::gemm(exec, "N", "N", 1.0, Bc, Y, 0.0, W);  // W = B X_k^-1 B
    const double mu = mon.mu(exec, sr.log_abs_det - log_det_b, W, res.X);
    const double norm_inv = detail::norm1(exec, Y);  // ||(B^-1 X_k)^-1||
    detail::axpby(exec, 0.5 * mu, res.X, 0.5 / mu, W);  // W <- X_{k+1}
    const double delta = detail::norm1_diff(exec, W, res.X);
    const double norm_new = detail::norm1(exec, W);
    std::swap(res.X, W);
    if (mon.step(mu, delta, norm_new, norm_inv)) break;
  }
  kx::fence(exec, "kess::sign");
  res.history = mon.history();
  return res;
}

/// sign(A) on the default instance of A's execution space.
template <class AView, std::enable_if_t<Kokkos::is_view<AView>::value, int> = 0>
auto sign(const AView& A, const SignOptions& opts = {}) {
  return sign(typename AView::execution_space(), A, opts);
}

/// Flops of one Newton iteration: 2 n^3 (inverse); pencil 5 n^3 (solve 3 n^3 + GEMM 2 n^3).
inline double sign_iteration_flops(std::int64_t n, bool pencil) {
  const double dn = static_cast<double>(n);
  return (pencil ? 5.0 : 2.0) * dn * dn * dn;
}

}  // namespace kess
