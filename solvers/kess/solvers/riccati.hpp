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

#include <kess/solvers/sign.hpp>

namespace kess {

template <class View>
struct RiccatiResult {
  View X;
  NewtonHistory history;  ///< of the sign iteration on the Hamiltonian
};

namespace detail {
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
/// H = [A -G; -Q -A^T] (2n x 2n).
template <class ExecSpace, class AView, class GView, class QView, class HView>
void hamiltonian(const ExecSpace& exec, const AView& A, const GView& G, const QView& Q,
                 const HView& H) {
  const int in = static_cast<int>(A.extent(0));
  core::gj_for_each(exec, "kess::riccati::hamiltonian", 2 * in, 2 * in,
                    KOKKOS_LAMBDA(int i, int j) {
                      double v;
                      if (i < in && j < in)
                        v = A(i, j);
                      else if (i < in)
                        v = -G(i, j - in);
                      else if (j < in)
                        v = -Q(i - in, j);
                      else
                        v = -A(j - in, i - in);
                      H(i, j) = v;
                    });
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
}  // namespace detail

/// Solves A^T X + X A - X G X + Q = 0 for the stabilizing X (A, G, Q n x n; G, Q symmetric to
/// 1e-12 relative, else kess::Error not_symmetric). The inputs are not modified.
template <class ExecSpace, class AView, class GView, class QView,
          detail::enable_if_exec_t<ExecSpace> = 0>
RiccatiResult<Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>>
riccati(const ExecSpace& exec, const AView& A, const GView& G, const QView& Q,
        const SignOptions& opts = {}) {
  detail::sign_static_checks<ExecSpace, AView>();
  detail::sign_static_checks<ExecSpace, GView>();
  detail::sign_static_checks<ExecSpace, QView>();
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  using pair = Kokkos::pair<std::int64_t, std::int64_t>;
  const char* fn = "riccati";
  kx::ScopedRegion region("kess::riccati");
  const std::int64_t n = A.extent(0);
  detail::sign_check_square(exec, A, fn, "A", n);
  detail::sign_check_square(exec, G, fn, "G", n);
  detail::sign_check_square(exec, Q, fn, "Q", n);
  const double ag = detail::asymmetry(exec, G), aq = detail::asymmetry(exec, Q);
  require(ag <= 1e-12, ErrorKind::not_symmetric, fn,
          "argument 'G' is not symmetric: max|G - G^T| / max|G| = " + core::detail::fmt_double(ag));
  require(aq <= 1e-12, ErrorKind::not_symmetric, fn,
          "argument 'Q' is not symmetric: max|Q - Q^T| / max|Q| = " + core::detail::fmt_double(aq));
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
  detail::hamiltonian(exec, A, G, Q, H);
  SignOptions so = opts;
  auto s = sign(exec, H, so);
  res.history = s.history;
  if (!s.history.converged) return res;  // only reached with throw_on_failure = false
  // Z + I; K = [Z12; Z22 + I] = columns n..2n-1, R = -[Z11 + I; Z21] = -(columns 0..n-1).
  detail::add_identity(exec, 1.0, s.X);
  auto K = Kokkos::subview(s.X, Kokkos::ALL(), pair(n, 2 * n));
  auto R = Kokkos::subview(s.X, Kokkos::ALL(), pair(0, n));
  Mat M(alloc("kess::riccati::M"), n, n);
  kx::gemm(exec, "T", "N", 1.0, K, K, 0.0, M);
  kx::gemm(exec, "T", "N", -1.0, K, R, 0.0, res.X);
  GaussJordanOptions gj = opts.gauss_jordan;
  gj.check_finite = false;
  try {
    solve(exec, M, res.X, gj);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::singular) throw;
    throw Error(ErrorKind::singular, fn,
                "[Z12; Z22 + I] is rank deficient, no stabilizing solution (is (A, G) "
                "stabilizable and (Q, A) detectable?): " +
                    e.message());
  }
  detail::symmetrize(exec, res.X);  // X <- (X + X^T) / 2
  kx::fence(exec, "kess::riccati");
  return res;
}

/// ||A^T X + X A - X G X + Q||_F / (2 ||A||_F ||X||_F + ||X||_F^2 ||G||_F + ||Q||_F) on exec.
template <class ExecSpace, class AView, class GView, class QView, class XView>
double riccati_residual(const ExecSpace& exec, const AView& A, const GView& G, const QView& Q,
                        const XView& X) {
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  const std::int64_t n = A.extent(0);
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  Mat R(alloc("kess::riccati::R"), n, n), W(alloc("kess::riccati::W"), n, n);
  core::gj_copy(exec, R, Q, "kess::riccati::copy_q");
  kx::gemm(exec, "T", "N", 1.0, A, X, 1.0, R);
  kx::gemm(exec, "N", "N", 1.0, X, A, 1.0, R);
  kx::gemm(exec, "N", "N", 1.0, G, X, 0.0, W);
  kx::gemm(exec, "N", "N", -1.0, X, W, 1.0, R);
  const double nx = detail::norm_fro(exec, X);
  const double d = 2.0 * detail::norm_fro(exec, A) * nx + nx * nx * detail::norm_fro(exec, G) +
                   detail::norm_fro(exec, Q);
  const double r = detail::norm_fro(exec, R);
  return d > 0 ? r / d : r;
}

}  // namespace kess
