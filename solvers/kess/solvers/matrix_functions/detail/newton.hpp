// The scaled Newton iteration of the matrix sign function, shared by sign, lyapunov and riccati
// on one rank and on a 1 x P DistMatrix grid: norms, the iteration's monitor (scaling, stopping
// tests, history) and the loops, written once over an operations object (local or distributed).
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/core/base/settings.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/comm/agree.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/gauss_jordan/detail/sweep_distributed.hpp>
#include <kess/solvers/matrix_functions.hpp>

#include <Kokkos_Core.hpp>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace kess::detail::matrix_functions {


/// ||A||_1 = max_j sum_i |a_ij| on exec; DBL_MAX when a column has an entry that is not finite.
template <class ExecSpace, class AView>
double norm1(const ExecSpace& exec, const AView& A) {
  const int m = static_cast<int>(A.extent(0));
  double r = 0.0;
  Kokkos::parallel_reduce(
      "kess::sign::norm1", Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(A.extent(1))),
      KOKKOS_LAMBDA(int j, double& mx) {
        double s = 0;
        for (int i = 0; i < m; ++i) s += kx::fabs(A(i, j));
        if (!kx::isfinite(s)) s = DBL_MAX;  // a NaN column must not drop out of the max
        if (s > mx) mx = s;
      },
      Kokkos::Max<double>(r));
  return r;
}

/// ||A - B||_1 on exec (DBL_MAX as norm1).
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
        if (!kx::isfinite(s)) s = DBL_MAX;
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
  gauss_jordan::for_each_entry(exec, "kess::sign::axpby", static_cast<int>(Y.extent(0)),
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
  /// or norm scaling sqrt(fro_ratio()) with fro_ratio() = ||inv||_F / ||X||_F (called only then);
  /// 1 once scaling is off.
  template <class FroRatio>
  double mu_from(double log_abs_det, const FroRatio& fro_ratio) const {
    if (!scaling_on()) return 1.0;
    if (opts_.scaling == SignScaling::determinant)
      return std::exp(-log_abs_det / static_cast<double>(n_));
    return std::sqrt(fro_ratio());
  }
  /// The same with the Frobenius norms of the Views inv and X on exec.
  template <class ExecSpace, class InvView, class XView>
  double mu(const ExecSpace& exec, double log_abs_det, const InvView& inv, const XView& X) const {
    return mu_from(log_abs_det, [&] { return matrix_functions::norm_fro(exec, inv) / norm_fro(exec, X); });
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

/// The empty problem's result (n = 0: converged, no iterations).
template <class Result>
Result& sign_converged_empty(Result& res, NewtonMonitor& mon) {
  mon.history().converged = true;
  res.history = mon.history();
  return res;
}

template <class ExecSpace, class View>
void sign_static_checks() {
  gauss_jordan::static_checks<ExecSpace, View>();
}

template <class ExecSpace, class AView>
void sign_check_square(const ExecSpace& exec, const AView& A, const char* fn, const char* name,
                       std::int64_t n) {
  require_arg(static_cast<std::int64_t>(A.extent(0)) == n &&
                  static_cast<std::int64_t>(A.extent(1)) == n,
              fn,
              std::string("argument '") + name + "' must be " + gauss_jordan::itos(n) + " x " + gauss_jordan::itos(n) +
                  ", got " + gauss_jordan::itos(A.extent(0)) + " x " + gauss_jordan::itos(A.extent(1)));
  gauss_jordan::scan_input(exec, A, true, fn, name);
}

/// The matrix operations of the Newton loops (sign_newton, sign_pencil_newton) on one rank:
/// Views in exec's memory space.
template <class ExecSpace, class Mat>
struct LocalNewtonOps {
  ExecSpace exec;
  GaussJordanOptions gj;
  void copy(const Mat& dst, const Mat& src) const {
    gauss_jordan::copy_matrix(exec, dst, src, "kess::sign::copy");
  }
  GaussJordanResult invert(const Mat& Y) const { return kess::inverse(exec, Y, gj); }
  /// Y <- A^-1 Y.
  GaussJordanResult solve(const Mat& A, const Mat& Y) const { return kess::solve(exec, A, Y, gj); }
  /// log |det B| (a solve with no right-hand side: n^3 flops).
  double log_abs_det(const Mat& B) const {
    Mat none(Kokkos::view_alloc(exec, std::string("kess::sign::none")), B.extent(0), 0);
    return kess::solve(exec, B, none, gj).log_abs_det;
  }
  double norm1(const Mat& A) const { return matrix_functions::norm1(exec, A); }
  double norm1_diff(const Mat& A, const Mat& B) const { return matrix_functions::norm1_diff(exec, A, B); }
  double norm_fro(const Mat& A) const { return matrix_functions::norm_fro(exec, A); }
  void axpby(double a, const Mat& X, double b, const Mat& Y) const {
    matrix_functions::axpby(exec, a, X, b, Y);
  }
};

/// The scaled Newton iteration X_{k+1} = 1/2 (mu X_k + mu^-1 X_k^-1) (see the header comment) on
/// whatever `ops` works on (LocalNewtonOps, DistNewtonOps): X holds X_0 on entry and the last
/// iterate on return, Y is work space of the same shape. A singular X_k ends it as a failure
/// (mon.fail_singular).
template <class Ops, class Mat>
void sign_newton(const Ops& ops, NewtonMonitor& mon, Mat& X, Mat& Y) {
  while (true) {
    ops.copy(Y, X);
    GaussJordanResult inv;
    try {
      inv = ops.invert(Y);
    } catch (const Error& e) {
      mon.fail_singular(e, "X");
      return;
    }
    const double mu =
        mon.mu_from(inv.log_abs_det, [&] { return ops.norm_fro(Y) / ops.norm_fro(X); });
    const double norm_inv = ops.norm1(Y);
    ops.axpby(0.5 * mu, X, 0.5 / mu, Y);  // Y <- X_{k+1}
    const double delta = ops.norm1_diff(Y, X);
    const double norm_new = ops.norm1(Y);
    std::swap(X, Y);
    if (mon.step(mu, delta, norm_new, norm_inv)) return;
  }
}

/// The pencil form X_{k+1} = 1/2 (mu X_k + mu^-1 B X_k^-1 B) on `ops`: X holds X_0 on entry and
/// the last iterate on return; Y and W are work space; mult_b(Y, W) computes W = B Y.
template <class Ops, class Mat, class MultB>
void sign_pencil_newton(const Ops& ops, NewtonMonitor& mon, Mat& X, const Mat& B, Mat& Y, Mat& W,
                        const MultB& mult_b) {
  const double log_det_b = ops.log_abs_det(B);
  while (true) {
    ops.copy(Y, B);
    GaussJordanResult sr;
    try {
      sr = ops.solve(X, Y);  // Y = X_k^-1 B
    } catch (const Error& e) {
      mon.fail_singular(e, "X");
      return;
    }
    mult_b(Y, W);  // W = B X_k^-1 B
    const double mu = mon.mu_from(sr.log_abs_det - log_det_b,
                                  [&] { return ops.norm_fro(W) / ops.norm_fro(X); });
    const double norm_inv = ops.norm1(Y);  // ||(B^-1 X_k)^-1||
    ops.axpby(0.5 * mu, X, 0.5 / mu, W);   // W <- X_{k+1}
    const double delta = ops.norm1_diff(W, X);
    const double norm_new = ops.norm1(W);
    std::swap(X, W);
    if (mon.step(mu, delta, norm_new, norm_inv)) return;
  }
}


// ---- distributed: DistMatrix on a 1 x P grid (column-block-cyclic) --------------------------------


/// v reduced over the ranks of cm.
inline double allreduce_value(const comm::Communicator& cm, double v, comm::ReduceOp op) {
  Kokkos::View<double*, Kokkos::HostSpace> h("kess::sign::reduce", 1);
  h(0) = v;
  comm::allreduce(Kokkos::DefaultHostExecutionSpace(), cm, h, op);
  return h(0);
}

/// The Newton loops' operations on DistMatrix on a 1 x P grid: the distributed inverse and solve;
/// every rank holds whole columns, so a 1-norm is the max over the ranks' column sums and the
/// Frobenius norm the root of the summed squares (one allreduce each); copies and axpby are local.
template <class ExecSpace, class Mem>
struct DistNewtonOps {
  using Mat = comm::DistMatrix<double, Mem>;
  ExecSpace exec;
  GaussJordanOptions gj;
  comm::Communicator cm;
  void copy(const Mat& dst, const Mat& src) const {
    gauss_jordan::copy_matrix(exec, dst.local(), src.local(), "kess::sign::copy");
  }
  GaussJordanResult invert(const Mat& Y) const { return kess::inverse(exec, Y, gj); }
  GaussJordanResult solve(const Mat& A, const Mat& Y) const { return kess::solve(exec, A, Y, gj); }
  double log_abs_det(const Mat& B) const {
    const Mat none(B.grid(), B.rows(), 0, kx::max<std::int64_t>(1, B.rows()), B.map().col_block(),
                   0, B.map().csrc());
    return kess::solve(exec, B, none, gj).log_abs_det;
  }
  double norm1(const Mat& A) const {
    return allreduce_value(cm, matrix_functions::norm1(exec, A.local()), comm::ReduceOp::max);
  }
  double norm1_diff(const Mat& A, const Mat& B) const {
    return allreduce_value(cm, matrix_functions::norm1_diff(exec, A.local(), B.local()), comm::ReduceOp::max);
  }
  double norm_fro(const Mat& A) const {
    const double f = matrix_functions::norm_fro(exec, A.local());
    return std::sqrt(allreduce_value(cm, f * f, comm::ReduceOp::sum));
  }
  void axpby(double a, const Mat& X, double b, const Mat& Y) const {
    matrix_functions::axpby(exec, a, X.local(), b, Y.local());
  }
};

/// The test hook KESS_FAULT_INJECT=mf_setup_alloc (core::settings::fault_injection): fails as an
/// allocation of a distributed matrix function's work matrices would.
inline void inject_setup_fault() {
  if (core::settings::fault_injection("mf_setup_alloc")) throw std::bad_alloc();
}

/// The operations of a distributed sign iteration, and res.X = X_0 = A (distributed as A). A
/// failure of the allocation or the copy is recorded in `failure` for the caller to agree on.
template <class ExecSpace, class Mem>
DistNewtonOps<ExecSpace, Mem> dist_sign_start(const ExecSpace& exec,
                                              const comm::DistMatrix<double, Mem>& A,
                                              const SignOptions& opts,
                                              SignResult<comm::DistMatrix<double, Mem>>& res,
                                              gauss_jordan::LocalFailure& failure) {
  DistNewtonOps<ExecSpace, Mem> ops{exec, opts.gauss_jordan, A.grid().comm()};
  ops.gj.check_input = false;
  gauss_jordan::guarded(failure, "allocating the sign iterates", [&] {
    res.X = comm::DistMatrix<double, Mem>(A.grid(), A.map());
    ops.copy(res.X, A);
    inject_setup_fault();
  });
  return ops;
}

/// A new (2n) x (2n) DistMatrix distributed as `like` (n x n: same grid, column block and first
/// column's rank, so that its columns 0..n-1 sit where like's do, as its first local columns),
/// entry (i, j) = f(i, j) for global indices; f is evaluated on the host, for this rank's columns.
template <class ExecSpace, class Mem, class F>
comm::DistMatrix<double, Mem> dist_block_matrix(const ExecSpace& exec,
                                                const comm::DistMatrix<double, Mem>& like,
                                                const F& f) {
  const std::int64_t m = 2 * like.rows();
  comm::DistMatrix<double, Mem> Z(like.grid(), m, m, kx::max<std::int64_t>(1, m),
                                  like.map().col_block(), 0, like.map().csrc());
  inject_setup_fault();
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kess::sign::block_matrix")), m,
      Z.local_cols());
  for (int jl = 0; jl < Z.local_cols(); ++jl) {
    const std::int64_t j = Z.map().global_col(jl);
    for (std::int64_t i = 0; i < m; ++i) h(i, jl) = f(i, j);  // 1 x P: every row is local
  }
  const auto d = Kokkos::create_mirror_view_and_copy(Mem(), h);
  gauss_jordan::copy_matrix(exec, Z.local(), d, "kess::sign::block_matrix");
  kx::fence(exec, "kess::sign::block_matrix");
  return Z;
}

/// Checks of a distributed argument (the same outcome on every rank, except NaN/Inf, which is
/// agreed): a 1 x P grid, n x n, distributed as `like` (same grid width, column block and first
/// column's rank), finite.
template <class ExecSpace, class Mem>
void sign_dist_check(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& A,
                     const comm::DistMatrix<double, Mem>& like, const char* fn, const char* name) {
  A.grid().comm().require_valid(fn);
  gauss_jordan::require_row_grid(A.grid(), fn);
  const std::int64_t n = like.rows();
  require_arg(A.rows() == n && A.cols() == n, fn,
              std::string("argument '") + name + "' must be " + gauss_jordan::itos(n) + " x " + gauss_jordan::itos(n) +
                  ", got " + gauss_jordan::itos(A.rows()) + " x " + gauss_jordan::itos(A.cols()));
  require_arg(A.grid().npcol() == like.grid().npcol() &&
                  A.map().col_block() == like.map().col_block() &&
                  A.map().csrc() == like.map().csrc(),
              fn,
              std::string("argument '") + name +
                  "' must be distributed as the first argument (same 1 x P grid, column block " +
                  gauss_jordan::itos(like.map().col_block()) + ", first column on the same rank)");
  gauss_jordan::dist_scan_input(exec, A.grid().comm(), A.local(), true, name);
}


}  // namespace kess::detail::matrix_functions
