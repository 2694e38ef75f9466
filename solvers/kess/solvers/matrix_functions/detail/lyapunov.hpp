// The continuous Lyapunov equation by the matrix sign function (Roberts 1971; Benner & Quintana-Ortí
// 1999), on top of kess::inverse.
//
// Convention: solves   A X + X A^T + Q = 0   for a stable A (every eigenvalue in the open left
// half-plane); Q symmetric gives a symmetric X, Q positive semidefinite a positive semidefinite X
// (the controllability Gramian for Q = B B^T). For A^T X + X A + Q = 0 (the observability form)
// pass A^T.
//
// Why it works: with Z = [A^T 0; Q -A], sign(Z) = [-I 0; 2X I] exactly when A is stable and X
// solves the equation. Newton's iteration on Z keeps the block structure, so only two n x n
// blocks are iterated (per iteration one inversion, 2 n^3, and two GEMMs, 4 n^3):
//   A_{k+1} = 1/2 (mu A_k + mu^-1 A_k^-1),
//   Q_{k+1} = 1/2 (mu Q_k + mu^-1 A_k^-1 Q_k A_k^-T),     A_0 = A, Q_0 = Q,
// A_k -> sign(A) = -I and X = 1/2 lim Q_k. Scaling and stopping as in kess::sign (on A_k).
// An unstable A is detected at the end: sign(A) != -I (its trace counts the eigenvalues in the
// right half-plane) -> kess::Error (invalid_argument, "A is not stable"); eigenvalues on the
// imaginary axis -> no_convergence.
#pragma once

#include <kess/solvers/matrix_functions/detail/sign.hpp>
#include <kess/core/linalg/gemm.hpp>

namespace kess::detail::matrix_functions {

/// trace(A) on exec.
template <class ExecSpace, class AView>
double trace(const ExecSpace& exec, const AView& A) {
  double t = 0.0;
  Kokkos::parallel_reduce(
      "kess::lyapunov::trace", Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(A.extent(0))),
      KOKKOS_LAMBDA(int i, double& acc) { acc += A(i, i); }, t);
  return t;
}

/// sign(A) = -I for a stable A: trace -n; every eigenvalue in the right half-plane adds 2.
inline void lyapunov_require_stable(const char* fn, double tr, std::int64_t n) {
  const double unstable = (tr + static_cast<double>(n)) / 2.0;
  require_arg(unstable < 0.25, fn,
              "argument 'A' is not stable: sign(A) has trace " + gauss_jordan::fmt_double(tr) +
                  " instead of -n = " + std::to_string(n) + ", i.e. about " +
                  std::to_string(static_cast<long long>(std::llround(unstable))) +
                  " eigenvalues in the right half-plane");
}

/// The sum of the diagonal entries Z(j, j), j < upto, in this rank's columns of Z (1 x P grid).
template <class ExecSpace, class Mem>
double dist_local_trace(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& Z,
                        std::int64_t upto) {
  const auto z = Z.local();
  const auto map = Z.map();
  double t = 0.0;
  Kokkos::parallel_reduce(
      "kess::lyapunov::trace", Kokkos::RangePolicy<ExecSpace>(exec, 0, Z.local_cols()),
      KOKKOS_LAMBDA(int jl, double& acc) {
        const std::int64_t j = map.global_col(jl);
        if (j < upto) acc += z(j, jl);
      },
      t);
  return t;
}

/// Solves A X + X A^T + Q = 0 (A stable, n x n; Q n x n). A and Q are not modified.
template <class ExecSpace>
LyapunovResult<core::Matrix<ExecSpace>> lyapunov(const ExecSpace& exec,
                                                 const core::ConstMatrix<ExecSpace>& A,
                                                 const core::ConstMatrix<ExecSpace>& Q,
                                                 const SignOptions& opts) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const char* fn = "lyapunov";
  kx::ScopedRegion region("kess::lyapunov");
  const std::int64_t n = A.extent(0);
  sign_check_square(exec, A, fn, "A", n);
  sign_check_square(exec, Q, fn, "Q", n);
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  LyapunovResult<Mat> res;
  Mat Ak(alloc("kess::lyapunov::A"), n, n), Ai(alloc("kess::lyapunov::Ainv"), n, n),
      W(alloc("kess::lyapunov::W"), n, n);
  res.X = Mat(alloc("kess::lyapunov::X"), n, n);  // holds Q_k
  gauss_jordan::copy_matrix(exec, Ak, A, "kess::lyapunov::copy_a");
  gauss_jordan::copy_matrix(exec, res.X, Q, "kess::lyapunov::copy_q");
  NewtonMonitor mon(fn, n, opts);
  GaussJordanOptions gj = opts.gauss_jordan;
  gj.check_input = false;
  while (n > 0) {
    gauss_jordan::copy_matrix(exec, Ai, Ak, "kess::lyapunov::copy_a");
    GaussJordanResult inv;
    try {
      inv = kess::inverse(exec, Ai, gj);
    } catch (const Error& e) {
      mon.fail_singular(e, "A");
      res.history = mon.history();
      return res;
    }
    const double mu = mon.mu(exec, inv.log_abs_det, Ai, Ak);
    // Q <- 1/2 mu Q + 1/(2 mu) A_k^-1 Q A_k^-T
    core::gemm(exec, "N", "N", 1.0, Ai, res.X, 0.0, W);
    core::gemm(exec, "N", "T", 0.5 / mu, W, Ai, 0.5 * mu, res.X);
    const double norm_inv = norm1(exec, Ai);
    axpby(exec, 0.5 * mu, Ak, 0.5 / mu, Ai);  // Ai <- A_{k+1}
    const double delta = norm1_diff(exec, Ai, Ak);
    const double norm_new = norm1(exec, Ai);
    std::swap(Ak, Ai);
    if (mon.step(mu, delta, norm_new, norm_inv)) break;
  }
  if (n > 0 && mon.history().converged) lyapunov_require_stable(fn, trace(exec, Ak), n);
  axpby(exec, 0.0, Ak, 0.5, res.X);  // X = Q_inf / 2
  kx::fence(exec, "kess::lyapunov");
  res.history = mon.history();
  return res;
}

/// ||A X + X A^T + Q||_F / (2 ||A||_F ||X||_F + ||Q||_F), computed on exec (for checks).
template <class ExecSpace>
double lyapunov_residual(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                         const core::ConstMatrix<ExecSpace>& Q, const core::ConstMatrix<ExecSpace>& X) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const std::int64_t n = A.extent(0);
  Mat R(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string("kess::lyapunov::R")), n,
        n);
  gauss_jordan::copy_matrix(exec, R, Q, "kess::lyapunov::copy_q");
  core::gemm(exec, "N", "N", 1.0, A, X, 1.0, R);
  core::gemm(exec, "N", "T", 1.0, X, A, 1.0, R);
  const double r = norm_fro(exec, R);
  const double d = 2.0 * norm_fro(exec, A) * norm_fro(exec, X) +
                   norm_fro(exec, Q);
  return d > 0 ? r / d : r;
}

/// Solves A X + X A^T + Q = 0 for A (stable) and Q (n x n) distributed alike column-block-cyclically
/// on a 1 x P grid, through the distributed sign of Roberts' block matrix Z = [A^T 0; Q -A]
/// (2n x 2n, built distributed with A's column block from the replicated A and Q:
/// DistMatrix::allgather, n^2 values a rank each): sign(Z) = [-I 0; 2X I], so X = Z21 / 2 lies
/// in Z's first n columns, which are distributed as X's. The Newton iteration on the 2n x 2n
/// matrix costs 16 n^3 flops an iteration against the local coupled iteration's 6 n^3. The same
/// stability check (trace of the leading block = -n) and errors as the local version, agreed
/// across ranks. The result X is distributed as A.
template <class ExecSpace>
LyapunovResult<DistMatrix<ExecSpace>> lyapunov_distributed(const ExecSpace& exec,
                                                           const DistMatrix<ExecSpace>& A,
                                                           const DistMatrix<ExecSpace>& Q,
                                                           const SignOptions& opts) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = comm::DistMatrix<double, Mem>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const char* fn = "lyapunov";
  kx::ScopedRegion region("kess::lyapunov_distributed");
  sign_dist_check(exec, A, A, fn, "A");
  sign_dist_check(exec, Q, A, fn, "Q");
  const std::int64_t n = A.rows();
  LyapunovResult<Mat> res;
  // This rank's allocations (around the collective allgathers), agreed once before the sign.
  gauss_jordan::LocalFailure failure;
  gauss_jordan::guarded(failure, "allocating the result", [&] { res.X = Mat(A.grid(), A.map()); });
  if (n == 0) {
    gauss_jordan::agree_failure(A.grid().comm(), failure);
    res.history.converged = true;
    return res;
  }
  const auto Af = A.allgather(exec), Qf = Q.allgather(exec);
  Mat Z;
  gauss_jordan::guarded(failure, "building the block matrix", [&] {
    Z = dist_block_matrix(exec, A, [&](std::int64_t i, std::int64_t j) {
      if (j < n) return i < n ? Af(j, i) : Qf(i - n, j);
      return i < n ? 0.0 : -Af(i - n, j - n);
    });
  });
  gauss_jordan::agree_failure(A.grid().comm(), failure);
  auto s = kess::sign(exec, Z, opts);
  res.history = s.history;
  if (!s.history.converged) return res;  // only reached with throw_on_failure = false
  lyapunov_require_stable(
      fn,
      allreduce_value(A.grid().comm(), dist_local_trace(exec, s.X, n),
                              comm::ReduceOp::sum),
      n);
  axpby(exec, 0.5,
                Kokkos::subview(s.X.local(), pair(n, 2 * n), pair(0, res.X.local_cols())), 0.0,
                res.X.local());
  kx::fence(exec, "kess::lyapunov");
  return res;
}

}  // namespace kess::detail::matrix_functions
