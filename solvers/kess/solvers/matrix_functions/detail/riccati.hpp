// The continuous algebraic Riccati equation by the sign function of the Hamiltonian matrix
// (Roberts 1971; Byers 1987), on top of kess::sign and kess::solve.
//
// Convention: solves   A^T X + X A - X G X + Q = 0   for the stabilizing solution X (A - G X
// stable), with G and Q symmetric (typically G = B R^-1 B^T and Q = C^T C, both positive
// semidefinite, (A, B) stabilizable and (C, A) detectable: then X is symmetric positive
// semidefinite). The LQR gain is then K = R^-1 B^T X.
//
// Why it works: the Hamiltonian H = [A -G; -Q -A^T] satisfies H [I; X] = [I; X] (A - G X), so
// [I; X] spans its stable invariant subspace and Z = sign(H) (2n x 2n) has (Z + I) [I; X] = 0:
//   [Z12; Z22 + I] X = -[Z11 + I; Z21],
// an overdetermined (2n x n) consistent system, solved here through its normal equations
// (M = K^T K, two GEMMs, then kess::solve) and symmetrized. Cost: sign of a 2n x 2n matrix
// (16 n^3 an iteration) plus O(n^3) for the normal equations. The normal equations square the
// condition number of [Z12; Z22 + I]; fine for the well-conditioned problems this targets.
#pragma once

#include <kess/solvers/matrix_functions/detail/sign.hpp>
#include <kess/core/linalg/gemm.hpp>

namespace kess::detail::matrix_functions {

/// max |A - A^T| / max(max |A|, tiny) on exec.
template <class ExecSpace, class AView>
double asymmetry(const ExecSpace& exec, const AView& A) {
  const int n = static_cast<int>(A.extent(0));
  double d = 0.0, m = 0.0;
  Kokkos::parallel_reduce(
      "kess::riccati::asymmetry", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(int j, double& mx) {
        for (int i = 0; i < n; ++i) {
          const double v = kx::fabs(A(i, j) - A(j, i));
          if (v > mx) mx = v;
        }
      },
      Kokkos::Max<double>(d));
  Kokkos::parallel_reduce(
      "kess::riccati::max_abs", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
      KOKKOS_LAMBDA(int j, double& mx) {
        for (int i = 0; i < n; ++i) {
          const double v = kx::fabs(A(i, j));
          if (v > mx) mx = v;
        }
      },
      Kokkos::Max<double>(m));
  return m > 0 ? d / m : d;
}

// (Kernels live in void helpers: nvcc rejects extended lambdas in functions whose return type
// depends on template parameters.)
/// Entry (i, j) of the Hamiltonian H = [A -G; -Q -A^T] (2n x 2n).
template <class AView, class GView, class QView, class I>
KOKKOS_INLINE_FUNCTION double hamiltonian_entry(const AView& A, const GView& G, const QView& Q,
                                                I n, I i, I j) {
  if (i < n && j < n) return A(i, j);
  if (i < n) return -G(i, j - n);
  if (j < n) return -Q(i - n, j);
  return -A(j - n, i - n);
}

/// H = [A -G; -Q -A^T] (2n x 2n).
template <class ExecSpace, class AView, class GView, class QView, class HView>
void hamiltonian(const ExecSpace& exec, const AView& A, const GView& G, const QView& Q,
                 const HView& H) {
  const int in = static_cast<int>(A.extent(0));
  gauss_jordan::for_each_entry(exec, "kess::riccati::hamiltonian", 2 * in, 2 * in,
                    KOKKOS_LAMBDA(int i, int j) { H(i, j) = hamiltonian_entry(A, G, Q, in, i, j); });
}

/// X <- (X + X^T) / 2.
template <class ExecSpace, class XView>
void symmetrize(const ExecSpace& exec, const XView& X) {
  Kokkos::parallel_for(
      "kess::riccati::symmetrize",
      Kokkos::RangePolicy<ExecSpace>(exec, 0, static_cast<int>(X.extent(0))),
      KOKKOS_LAMBDA(int j) {
        for (int i = 0; i < j; ++i) {
          const double v = 0.5 * (X(i, j) + X(j, i));
          X(i, j) = v;
          X(j, i) = v;
        }
      });
}

/// G and Q must be symmetric (to 1e-12 relative): kess::Error (not_symmetric) otherwise.
template <class ExecSpace, class GView, class QView>
void riccati_require_symmetric(const ExecSpace& exec, const GView& G, const QView& Q,
                               const char* fn) {
  const double ag = asymmetry(exec, G), aq = asymmetry(exec, Q);
  require(ag <= 1e-12, ErrorKind::not_symmetric, fn,
          "argument 'G' is not symmetric: max|G - G^T| / max|G| = " + gauss_jordan::fmt_double(ag));
  require(aq <= 1e-12, ErrorKind::not_symmetric, fn,
          "argument 'Q' is not symmetric: max|Q - Q^T| / max|Q| = " + gauss_jordan::fmt_double(aq));
}

/// The same check on host Views, in plain loops (the distributed path checks the replicated
/// inputs on every rank).
inline void riccati_require_symmetric_host(
    const Kokkos::View<const double**, Kokkos::LayoutLeft, Kokkos::HostSpace>& G,
    const Kokkos::View<const double**, Kokkos::LayoutLeft, Kokkos::HostSpace>& Q, const char* fn) {
  const auto asym = [](const auto& A) {
    const std::size_t n = A.extent(0);
    double d = 0.0, m = 0.0;
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < n; ++i) {
        d = std::max(d, std::abs(A(i, j) - A(j, i)));
        m = std::max(m, std::abs(A(i, j)));
      }
    return m > 0 ? d / m : d;
  };
  const double ag = asym(G), aq = asym(Q);
  require(ag <= 1e-12, ErrorKind::not_symmetric, fn,
          "argument 'G' is not symmetric: max|G - G^T| / max|G| = " + gauss_jordan::fmt_double(ag));
  require(aq <= 1e-12, ErrorKind::not_symmetric, fn,
          "argument 'Q' is not symmetric: max|Q - Q^T| / max|Q| = " + gauss_jordan::fmt_double(aq));
}

/// X <- M^-1 X, the normal equations M X = K^T R (local Views or DistMatrix); a singular M means
/// [Z12; Z22 + I] is rank deficient: no stabilizing solution.
template <class ExecSpace, class MMat, class XMat>
void riccati_solve_normal(const ExecSpace& exec, const MMat& M, const XMat& X,
                          const SignOptions& opts, const char* fn) {
  GaussJordanOptions gj = opts.gauss_jordan;
  gj.check_input = false;
  try {
    kess::solve(exec, M, X, gj);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::singular) throw;
    throw Error(ErrorKind::singular, fn,
                "[Z12; Z22 + I] is rank deficient, no stabilizing solution (is (A, G) "
                "stabilizable and (Q, A) detectable?): " +
                    e.message());
  }
}

/// Z(j, j) += 1 in this rank's columns of Z (1 x P grid).
template <class ExecSpace, class Mem>
void dist_add_identity(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& Z) {
  const auto z = Z.local();
  const auto map = Z.map();
  Kokkos::parallel_for(
      "kess::riccati::add_identity", Kokkos::RangePolicy<ExecSpace>(exec, 0, Z.local_cols()),
      KOKKOS_LAMBDA(int jl) { z(map.global_col(jl), jl) += 1.0; });
}

/// X(:, j) <- (Xf(:, j) + Xf(j, :)^T) / 2 for this rank's columns j of X (1 x P grid), Xf the
/// whole X (replicated).
template <class ExecSpace, class Mem, class FView>
void dist_symmetrize(const ExecSpace& exec, const comm::DistMatrix<double, Mem>& X,
                     const FView& Xf) {
  const auto x = X.local();
  const auto map = X.map();
  gauss_jordan::for_each_entry(exec, "kess::riccati::symmetrize", X.local_rows(), X.local_cols(),
                    KOKKOS_LAMBDA(int i, int jl) {
                      const std::int64_t j = map.global_col(jl);
                      x(i, jl) = 0.5 * (Xf(i, j) + Xf(j, i));
                    });
}

/// Solves A^T X + X A - X G X + Q = 0 for the stabilizing X (A, G, Q n x n; G, Q symmetric to
/// 1e-12 relative, else kess::Error not_symmetric). The inputs are not modified.
template <class ExecSpace>
RiccatiResult<core::Matrix<ExecSpace>> riccati(const ExecSpace& exec,
                                               const core::ConstMatrix<ExecSpace>& A,
                                               const core::ConstMatrix<ExecSpace>& G,
                                               const core::ConstMatrix<ExecSpace>& Q,
                                               const SignOptions& opts) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const char* fn = "riccati";
  kx::ScopedRegion region("kess::riccati");
  const std::int64_t n = A.extent(0);
  sign_check_square(exec, A, fn, "A", n);
  sign_check_square(exec, G, fn, "G", n);
  sign_check_square(exec, Q, fn, "Q", n);
  riccati_require_symmetric(exec, G, Q, fn);
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  RiccatiResult<Mat> res;
  res.X = Mat(alloc("kess::riccati::X"), n, n);
  if (n == 0) {
    res.history.converged = true;
    return res;
  }
  // H = [A -G; -Q -A^T]
  Mat H(alloc("kess::riccati::H"), 2 * n, 2 * n);
  hamiltonian(exec, A, G, Q, H);
  SignOptions so = opts;
  auto s = kess::sign(exec, H, so);
  res.history = s.history;
  if (!s.history.converged) return res;  // only reached with throw_on_failure = false
  // Z + I; K = [Z12; Z22 + I] = columns n..2n-1, R = -[Z11 + I; Z21] = -(columns 0..n-1).
  add_identity(exec, 1.0, s.X);
  auto K = Kokkos::subview(s.X, Kokkos::ALL(), pair(n, 2 * n));
  auto R = Kokkos::subview(s.X, Kokkos::ALL(), pair(0, n));
  Mat M(alloc("kess::riccati::M"), n, n);
  core::gemm(exec, "T", "N", 1.0, K, K, 0.0, M);
  core::gemm(exec, "T", "N", -1.0, K, R, 0.0, res.X);
  riccati_solve_normal(exec, M, res.X, opts, fn);
  symmetrize(exec, res.X);  // X <- (X + X^T) / 2
  kx::fence(exec, "kess::riccati");
  return res;
}

/// ||A^T X + X A - X G X + Q||_F / (2 ||A||_F ||X||_F + ||X||_F^2 ||G||_F + ||Q||_F) on exec.
template <class ExecSpace>
double riccati_residual(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& A,
                        const core::ConstMatrix<ExecSpace>& G, const core::ConstMatrix<ExecSpace>& Q,
                        const core::ConstMatrix<ExecSpace>& X) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const std::int64_t n = A.extent(0);
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  Mat R(alloc("kess::riccati::R"), n, n), W(alloc("kess::riccati::W"), n, n);
  gauss_jordan::copy_matrix(exec, R, Q, "kess::riccati::copy_q");
  core::gemm(exec, "T", "N", 1.0, A, X, 1.0, R);
  core::gemm(exec, "N", "N", 1.0, X, A, 1.0, R);
  core::gemm(exec, "N", "N", 1.0, G, X, 0.0, W);
  core::gemm(exec, "N", "N", -1.0, X, W, 1.0, R);
  const double nx = norm_fro(exec, X);
  const double d = 2.0 * norm_fro(exec, A) * nx + nx * nx * norm_fro(exec, G) +
                   norm_fro(exec, Q);
  const double r = norm_fro(exec, R);
  return d > 0 ? r / d : r;
}

/// Solves A^T X + X A - X G X + Q = 0 for A, G, Q (n x n) distributed alike column-block-cyclically
/// on a 1 x P grid: the Hamiltonian H = [A -G; -Q -A^T] (2n x 2n) is built distributed with A's
/// column block from the replicated inputs (DistMatrix::allgather, n^2 values a rank each; the
/// symmetry checks run on those, so every rank decides alike), Z = sign(H) by the distributed
/// sign, and the normal equations of [Z12; Z22 + I] X = -[Z11 + I; Z21] are formed for each
/// rank's own columns of M = K^T K and of the right-hand side from the replicated Z + I (4 n^2
/// values a rank), solved by the distributed solve and symmetrized. Result distributed as A.
template <class ExecSpace>
RiccatiResult<DistMatrix<ExecSpace>> riccati_distributed(const ExecSpace& exec,
                                                         const DistMatrix<ExecSpace>& A,
                                                         const DistMatrix<ExecSpace>& G,
                                                         const DistMatrix<ExecSpace>& Q,
                                                         const SignOptions& opts) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = comm::DistMatrix<double, Mem>;
  using Dev = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const char* fn = "riccati";
  kx::ScopedRegion region("kess::riccati_distributed");
  sign_dist_check(exec, A, A, fn, "A");
  sign_dist_check(exec, G, A, fn, "G");
  sign_dist_check(exec, Q, A, fn, "Q");
  const std::int64_t n = A.rows();
  RiccatiResult<Mat> res;
  // This rank's allocations and local products between the collective steps are agreed before
  // the next one (the sign, the solve, the end).
  const comm::Communicator& cm = A.grid().comm();
  gauss_jordan::LocalFailure failure;
  gauss_jordan::guarded(failure, "allocating the result", [&] { res.X = Mat(A.grid(), A.map()); });
  if (n == 0) {
    gauss_jordan::agree_failure(cm, failure);
    res.history.converged = true;
    return res;
  }
  const auto Af = A.allgather(exec), Gf = G.allgather(exec), Qf = Q.allgather(exec);
  riccati_require_symmetric_host(Gf, Qf, fn);  // replicated data: the same outcome on every rank
  Mat H;
  gauss_jordan::guarded(failure, "building the Hamiltonian", [&] {
    H = dist_block_matrix(exec, A, [&](std::int64_t i, std::int64_t j) {
      return hamiltonian_entry(Af, Gf, Qf, n, i, j);
    });
  });
  gauss_jordan::agree_failure(cm, failure);
  auto s = kess::sign(exec, H, opts);
  res.history = s.history;
  if (!s.history.converged) return res;  // only reached with throw_on_failure = false
  // Z + I replicated; K = [Z12; Z22 + I] = its columns n..2n-1, R = its columns 0..n-1.
  dist_add_identity(exec, s.X);
  auto Zh = s.X.allgather(exec);  // collective: on every rank, failed or not
  const int lc = res.X.local_cols();
  std::vector<int> kcols(lc), rcols(lc);
  for (int jl = 0; jl < lc; ++jl) {
    rcols[jl] = static_cast<int>(res.X.map().global_col(jl));
    kcols[jl] = static_cast<int>(n) + rcols[jl];
  }
  decltype(Kokkos::create_mirror_view_and_copy(Mem(), Zh)) Zf;
  Dev Kown, Rown;
  Mat M;
  gauss_jordan::guarded(failure, "forming the normal equations", [&] {
    Zf = Kokkos::create_mirror_view_and_copy(Mem(), Zh);
    const auto alloc = [&](const char* label) {
      return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
    };
    Kown = Dev(alloc("kess::riccati::K_own"), 2 * n, lc);
    Rown = Dev(alloc("kess::riccati::R_own"), 2 * n, lc);
    M = Mat(A.grid(), A.map());
    if (lc > 0) {
      gauss_jordan::gather_columns(exec, Kown, Zf, gauss_jordan::upload<Mem>(exec, kcols, "kess::riccati::k"));
      gauss_jordan::gather_columns(exec, Rown, Zf, gauss_jordan::upload<Mem>(exec, rcols, "kess::riccati::r"));
      const auto K = Kokkos::subview(Zf, Kokkos::ALL(), pair(n, 2 * n));
      core::gemm(exec, "T", "N", 1.0, K, Kown, 0.0, M.local());
      core::gemm(exec, "T", "N", -1.0, K, Rown, 0.0, res.X.local());
    }
  });
  Zh = decltype(Zh)();  // the host copy is not needed beside Zf
  gauss_jordan::agree_failure(cm, failure);
  riccati_solve_normal(exec, M, res.X, opts, fn);
  const auto Xh = res.X.allgather(exec);
  gauss_jordan::guarded(failure, "symmetrizing the result", [&] {
    const auto Xf = Kokkos::create_mirror_view_and_copy(Mem(), Xh);
    dist_symmetrize(exec, res.X, Xf);
    kx::fence(exec, "kess::riccati");
  });
  gauss_jordan::agree_failure(cm, failure);
  return res;
}

}  // namespace kess::detail::matrix_functions
