// The matrix sign function by the scaled Newton iteration (Köhler 2017, "Motivation"):
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
// The same iteration runs on DistMatrix (1 x P grid) through the distributed inverse/solve, the
// norms reduced over the ranks (DistNewtonOps), so that every rank takes the same decisions.
#pragma once

#include <kess/solvers/matrix_functions/detail/newton.hpp>

namespace kess::detail::matrix_functions {

/// sign(A) by the scaled Newton iteration. A (n x n) is not modified; the result's X is a new
/// LayoutLeft View in the execution space's memory. Throws kess::Error: invalid_argument (shape,
/// NaN/Inf), no_convergence (with the history) when sign(A) does not exist numerically.
template <class ExecSpace>
SignResult<core::Matrix<ExecSpace>> sign(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                                         const SignOptions& opts) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const char* fn = "sign";
  kx::ScopedRegion region("kess::sign");
  const std::int64_t n = A.extent(0);
  sign_check_square(exec, A, fn, "A", n);
  SignResult<Mat> res;
  res.X = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string("kess::sign::X")),
              n, n);
  gauss_jordan::copy_matrix(exec, res.X, A, "kess::sign::copy_a");
  NewtonMonitor mon(fn, n, opts);
  if (n == 0) return sign_converged_empty(res, mon);
  Mat Y(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string("kess::sign::Xinv")), n,
        n);
  LocalNewtonOps<ExecSpace, Mat> ops{exec, opts.gauss_jordan};
  ops.gj.check_input = false;
  sign_newton(ops, mon, res.X, Y);
  kx::fence(exec, "kess::sign");
  res.history = mon.history();
  return res;
}

/// The pencil form: X_{k+1} = 1/2 (mu X_k + mu^-1 B X_k^-1 B), X_0 = A; returns its limit
/// B sign(B^-1 A). A and B (n x n, B nonsingular) are not modified.
template <class ExecSpace>
SignResult<core::Matrix<ExecSpace>> sign_pencil(const ExecSpace& exec,
                                                const core::ConstMatrix<ExecSpace>& A,
                                                const core::ConstMatrix<ExecSpace>& B,
                                                const SignOptions& opts) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const char* fn = "sign";
  kx::ScopedRegion region("kess::sign_pencil");
  const std::int64_t n = A.extent(0);
  sign_check_square(exec, A, fn, "A", n);
  sign_check_square(exec, B, fn, "B", n);
  SignResult<Mat> res;
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  res.X = Mat(alloc("kess::sign::X"), n, n);
  gauss_jordan::copy_matrix(exec, res.X, A, "kess::sign::copy_a");
  NewtonMonitor mon(fn, n, opts);
  if (n == 0) return sign_converged_empty(res, mon);
  Mat Bc(alloc("kess::sign::B"), n, n), Y(alloc("kess::sign::XinvB"), n, n),
      W(alloc("kess::sign::BXinvB"), n, n);
  gauss_jordan::copy_matrix(exec, Bc, B, "kess::sign::copy_b");
  LocalNewtonOps<ExecSpace, Mat> ops{exec, opts.gauss_jordan};
  ops.gj.check_input = false;
  sign_pencil_newton(ops, mon, res.X, Bc, Y, W, [&](const Mat& Yk, const Mat& Wk) {
    core::gemm(exec, "N", "N", 1.0, Bc, Yk, 0.0, Wk);
  });
  kx::fence(exec, "kess::sign");
  res.history = mon.history();
  return res;
}

/// sign(A) for A (n x n) distributed column-block-cyclically (DistMatrix on a 1 x P grid): the
/// same Newton iteration, scaling and stopping tests as the local sign, on the distributed
/// inverse (2 n^3 flops an iteration, spread over the ranks); norms by allreduce, so every rank
/// takes the same decisions. The result X is a new DistMatrix distributed as A. Collective over
/// A.grid().comm(); errors are agreed (every rank throws the same kind).
template <class ExecSpace>
SignResult<DistMatrix<ExecSpace>> sign_distributed(const ExecSpace& exec,
                                                   const DistMatrix<ExecSpace>& A,
                                                   const SignOptions& opts) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = comm::DistMatrix<double, Mem>;
  const char* fn = "sign";
  kx::ScopedRegion region("kess::sign_distributed");
  sign_dist_check(exec, A, A, fn, "A");
  SignResult<Mat> res;
  // This rank's allocations, agreed once before the iteration's first collective.
  gauss_jordan::LocalFailure failure;
  const auto ops = dist_sign_start(exec, A, opts, res, failure);
  NewtonMonitor mon(fn, A.rows(), opts);
  Mat Y;
  if (A.rows() > 0)
    gauss_jordan::guarded(failure, "allocating the sign iterates",
                          [&] { Y = Mat(A.grid(), A.map()); });
  gauss_jordan::agree_failure(A.grid().comm(), failure);
  if (A.rows() == 0) return sign_converged_empty(res, mon);
  sign_newton(ops, mon, res.X, Y);
  kx::fence(exec, "kess::sign");
  res.history = mon.history();
  return res;
}

/// The pencil form for distributed A and B (n x n, distributed alike on a 1 x P grid): the limit
/// B sign(B^-1 A) of X_{k+1} = 1/2 (mu X_k + mu^-1 B X_k^-1 B). X_k^-1 B by the distributed solve;
/// B is replicated once (B.allgather: n^2 values a rank) for the product B (X_k^-1 B), which each
/// rank forms for its own columns.
template <class ExecSpace>
SignResult<DistMatrix<ExecSpace>> sign_pencil_distributed(const ExecSpace& exec,
                                                          const DistMatrix<ExecSpace>& A,
                                                          const DistMatrix<ExecSpace>& B,
                                                          const SignOptions& opts) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = comm::DistMatrix<double, Mem>;
  const char* fn = "sign";
  kx::ScopedRegion region("kess::sign_pencil_distributed");
  sign_dist_check(exec, A, A, fn, "A");
  sign_dist_check(exec, B, A, fn, "B");
  SignResult<Mat> res;
  // This rank's allocations (around the collective allgather), agreed once before the iteration.
  gauss_jordan::LocalFailure failure;
  const auto ops = dist_sign_start(exec, A, opts, res, failure);
  NewtonMonitor mon(fn, A.rows(), opts);
  if (A.rows() == 0) {
    gauss_jordan::agree_failure(A.grid().comm(), failure);
    return sign_converged_empty(res, mon);
  }
  auto Bh = B.allgather(exec);  // collective: on every rank, failed or not
  decltype(Kokkos::create_mirror_view_and_copy(Mem(), Bh)) Bf;
  Mat Y, W;
  gauss_jordan::guarded(failure, "allocating the sign iterates", [&] {
    Bf = Kokkos::create_mirror_view_and_copy(Mem(), Bh);
    Y = Mat(A.grid(), A.map());
    W = Mat(A.grid(), A.map());
  });
  Bh = decltype(Bh)();  // the host copy is not needed beside Bf
  gauss_jordan::agree_failure(A.grid().comm(), failure);
  sign_pencil_newton(ops, mon, res.X, B, Y, W, [&](const Mat& Yk, const Mat& Wk) {
    if (Wk.local_cols() > 0) core::gemm(exec, "N", "N", 1.0, Bf, Yk.local(), 0.0, Wk.local());
  });
  kx::fence(exec, "kess::sign");
  res.history = mon.history();
  return res;
}

}  // namespace kess::detail::matrix_functions
