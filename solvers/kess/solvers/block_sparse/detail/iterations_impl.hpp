// Bodies of the block-sparse iterations (kess::sign, inverse_sqrt, extremal_eigenvalues and
// density_matrix on BlockSparseMatrix) for one execution space. Host control flow over the public
// block-sparse operations only: no kernels of their own, so one translation unit may instantiate
// every backend (host/iterations.cpp). docs/design/block_sparse.md, "Iterations on top".
#pragma once

#include <kess/comm/exchange.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/block_sparse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace kess {
namespace detail::bs_iter {

template <class Exec>
using Mat = BlockSparseMatrix<double, typename Exec::memory_space>;

inline std::string num(double x, const char* format = "%.3e") {
  char b[40];
  std::snprintf(b, sizeof b, format, x);
  return b;
}

/// The stopping threshold: tol, else sqrt(filter_eps), else 1e-8.
inline double threshold(double filter_eps, double tol) {
  if (tol > 0) return tol;
  return filter_eps > 0 ? std::sqrt(filter_eps) : 1e-8;
}

inline void check_common(const char* fn, double filter_eps, double tol, int max_iterations) {
  require_arg(std::isfinite(filter_eps) && filter_eps >= 0, fn,
              "filter_eps must be finite and >= 0 (got " + num(filter_eps) + ")");
  require_arg(std::isfinite(tol) && tol >= 0, fn,
              "tol must be finite and >= 0 (got " + num(tol) + ")");
  require_arg(max_iterations >= 1, fn,
              "max_iterations must be >= 1 (got " + std::to_string(max_iterations) + ")");
}

/// Square diagonal blocks (row block i as tall as column block i is wide); the distribution is
/// the same on every rank, so every rank throws together.
inline void require_square(const BlockDistribution& d, const char* fn, const char* name) {
  require_arg(!d.empty(), fn, std::string(name) + " has no distribution");
  const auto& r = d.row_sizes();
  const auto& c = d.col_sizes();
  require_arg(r.size() == c.size(), fn,
              std::string(name) + " must be square in blocks (" + std::to_string(r.size()) +
                  " block rows, " + std::to_string(c.size()) + " block columns)");
  for (std::size_t i = 0; i < r.size(); ++i) {
    require_arg(r[i] == c[i], fn,
                std::string(name) + " has non-square diagonal blocks: block row " +
                    std::to_string(i) + " has " + std::to_string(r[i]) + " rows, block column " +
                    std::to_string(i) + " " + std::to_string(c[i]) + " columns");
  }
}

/// alpha A as a new matrix. scale() works in place on values that copies share, so the
/// iterations copy through add() instead.
template <class Exec>
Mat<Exec> scaled_copy(const Exec& exec, const Mat<Exec>& A, double alpha) {
  Mat<Exec> B(A.distribution());
  add(exec, alpha, A, 0.0, B);
  return B;
}

/// alpha A B on `dist`, filtered by eps; adds the flops to `flops`.
template <class Exec>
Mat<Exec> product(const Exec& exec, double alpha, const Mat<Exec>& A, const Mat<Exec>& B,
                  const BlockDistribution& dist, double eps, std::int64_t& flops) {
  Mat<Exec> C(dist);
  BlockMultiplyOptions o;
  o.filter_eps = eps;
  flops += multiply(exec, alpha, A, B, 0.0, C, o);
  return C;
}

/// An upper bound of ||A||_2 from the block norms (BlockNormBound).
template <class Exec>
double norm_bound(const Exec& exec, const Mat<Exec>& A, BlockNormBound bound) {
  if (bound == BlockNormBound::frobenius) return norm(exec, A);
  const auto& d = A.distribution();
  std::vector<double> rows(static_cast<std::size_t>(d.block_rows()), 0.0),
      cols(static_cast<std::size_t>(d.block_cols()), 0.0);
  const auto& lr = d.local_rows();
  const auto& rp = A.row_ptr();
  for (std::size_t l = 0; l < lr.size() && l + 1 < rp.size(); ++l) {
    for (std::int64_t k = rp[l]; k < rp[l + 1]; ++k) {
      rows[lr[l]] += A.norms()[k];
      cols[A.col_index()[k]] += A.norms()[k];
    }
  }
  comm::allreduce(d.grid().comm(), rows, comm::ReduceOp::sum);
  comm::allreduce(d.grid().comm(), cols, comm::ReduceOp::sum);
  double mr = 0, mc = 0;
  for (double x : rows) mr = std::max(mr, x);
  for (double x : cols) mc = std::max(mc, x);
  return std::sqrt(mr) * std::sqrt(mc);
}

/// ||A - A^T||_F <= 1e-8 ||A||_F, else not_symmetric.
template <class Exec>
void require_symmetric(const Exec& exec, const Mat<Exec>& A, const char* fn, const char* name) {
  auto D = transpose(exec, A, A.distribution());
  add(exec, -1.0, A, 1.0, D);
  const double d = norm(exec, D), a = norm(exec, A);
  require(d <= 1e-8 * a, ErrorKind::not_symmetric, fn,
          std::string(name) + " is not symmetric: ||" + name + " - " + name + "^T||_F / ||" + name +
              "||_F = " + num(a > 0 ? d / a : d));
}

/// One step of the history.
inline void record(BlockIterationHistory& h, std::int64_t flops, double occupancy) {
  h.flops.push_back(flops);
  h.occupancy.push_back(occupancy);
  ++h.iterations;
}

}  // namespace detail::bs_iter

template <class Exec>
BlockSignResult<typename Exec::memory_space> sign(
    const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A,
    const BlockSignOptions& opts) {
  namespace it = detail::bs_iter;
  constexpr const char* fn = "sign";
  it::check_common(fn, opts.filter_eps, opts.tol, opts.max_iterations);
  it::require_square(A.distribution(), fn, "A");
  const auto& d = A.distribution();
  const double thr = it::threshold(opts.filter_eps, opts.tol);
  const double b = it::norm_bound(exec, A, opts.bound);
  require_arg(std::isfinite(b), fn, "A's norm is not finite");
  require_arg(b > 0, fn, "A is zero: its sign is not defined");
  BlockSignResult<typename Exec::memory_space> r;
  r.scale = b;
  auto& h = r.history;
  // X_0 = A / bound: the spectrum inside [-1, 1], where Newton-Schulz converges to +-1.
  auto X = it::scaled_copy(exec, A, 1.0 / b);
  for (int k = 0;; ++k) {
    std::int64_t f = 0;
    const auto X2 = it::product(exec, 1.0, X, X, d, opts.filter_eps, f);
    auto T = it::scaled_copy(exec, X2, -1.0);
    add_identity(exec, T, 1.0);  // I - X^2
    const double nr = norm(exec, T), nx = norm(exec, X2);
    const double res = nx > 0 ? nr / nx : std::numeric_limits<double>::infinity();
    h.residual.push_back(res);
    require(std::isfinite(res), ErrorKind::no_convergence, fn,
            "the Newton-Schulz iteration diverged at step " + std::to_string(k) +
                " (A's spectrum must be real and away from 0)");
    const bool done = res < thr;
    require(done || k < opts.max_iterations, ErrorKind::no_convergence, fn,
            "no convergence in " + std::to_string(opts.max_iterations) +
                " iterations: ||I - X^2||_F / ||X^2||_F = " + it::num(res) + " > " + it::num(thr) +
                " (an eigenvalue of A near 0?)");
    add_identity(exec, T, 2.0);  // 3I - X^2
    X = it::product(exec, 0.5, X, T, d, opts.filter_eps, f);
    it::record(h, f, X.occupancy());
    if (done) break;
  }
  h.converged = true;
  r.X = std::move(X);
  return r;
}

template <class Exec>
BlockInverseSqrtResult<typename Exec::memory_space> inverse_sqrt(
    const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& S,
    const BlockInverseSqrtOptions& opts) {
  namespace it = detail::bs_iter;
  constexpr const char* fn = "inverse_sqrt";
  it::check_common(fn, opts.filter_eps, opts.tol, opts.max_iterations);
  require_arg(opts.order == 2 || opts.order == 3, fn,
              "order must be 2 or 3 (got " + std::to_string(opts.order) + ")");
  it::require_square(S.distribution(), fn, "S");
  it::require_symmetric(exec, S, fn, "S");
  const auto& d = S.distribution();
  const double tr = trace(exec, S);
  require(tr > 0, ErrorKind::not_positive_definite, fn,
          "S is not positive definite: its trace is " + it::num(tr));
  const double b = it::norm_bound(exec, S, opts.bound);
  require_arg(std::isfinite(b), fn, "S's norm is not finite");
  const double thr = it::threshold(opts.filter_eps, opts.tol);
  const double eps = opts.filter_eps;
  BlockInverseSqrtResult<typename Exec::memory_space> r;
  r.scale = b;
  auto& h = r.history;
  // Y_0 = S / bound (spectrum in (0, 1]), Z_0 = I; Y -> (S/b)^1/2, Z -> (S/b)^-1/2.
  auto Y = it::scaled_copy(exec, S, 1.0 / b);
  auto Z = identity(exec, d, 1.0);
  double least = std::numeric_limits<double>::infinity();
  for (int k = 0;; ++k) {
    std::int64_t f = 0;
    const auto X = k == 0 ? Y : it::product(exec, 1.0, Z, Y, d, eps, f);
    auto R = it::scaled_copy(exec, X, -1.0);
    add_identity(exec, R, 1.0);  // I - Z Y
    const double nr = norm(exec, R), nx = norm(exec, X);
    const double res = nx > 0 ? nr / nx : std::numeric_limits<double>::infinity();
    h.residual.push_back(res);
    // For SPD S every eigenvalue of Z Y rises monotonically to 1 and ||I - Z Y||_F falls; an
    // eigenvalue <= 0 moves away from 1 (|1 - x| >= 1, growing), so growth above 1 means S has one.
    require(std::isfinite(nr) && !(nr > 1 && nr > 1.01 * least), ErrorKind::not_positive_definite,
            fn,
            "S is not positive definite: ||I - Z Y||_F grew to " + it::num(nr) + " at step " +
                std::to_string(k) + " (from " + it::num(least) + ")");
    least = std::min(least, nr);
    const bool done = res < thr;
    require(done || k < opts.max_iterations, ErrorKind::no_convergence, fn,
            "no convergence in " + std::to_string(opts.max_iterations) +
                " iterations: ||I - Z Y||_F / ||Z Y||_F = " + it::num(res) + " > " + it::num(thr) +
                " (S singular or very ill-conditioned?)");
    it::Mat<Exec> T;
    if (opts.order == 2) {
      T = it::scaled_copy(exec, X, -0.5);
      add_identity(exec, T, 1.5);  // (3I - X) / 2
    } else {
      const auto X2 = it::product(exec, 1.0, X, X, d, eps, f);
      T = it::scaled_copy(exec, X2, 3.0 / 8);
      add(exec, -10.0 / 8, X, 1.0, T);
      add_identity(exec, T, 15.0 / 8);  // (15I - 10X + 3X^2) / 8
    }
    Y = it::product(exec, 1.0, Y, T, d, eps, f);
    Z = k == 0 ? T : it::product(exec, 1.0, T, Z, d, eps, f);
    it::record(h, f, Z.occupancy());
    if (done) break;
  }
  h.converged = true;
  r.inv_sqrt = it::scaled_copy(exec, Z, 1.0 / std::sqrt(b));
  r.sqrt = it::scaled_copy(exec, Y, std::sqrt(b));
  return r;
}

template <class Exec>
BlockSpectrumEstimate extremal_eigenvalues(
    const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& A,
    const BlockLanczosOptions& opts) {
  namespace it = detail::bs_iter;
  constexpr const char* fn = "extremal_eigenvalues";
  it::require_square(A.distribution(), fn, "A");
  require_arg(opts.max_steps >= 1, fn,
              "max_steps must be >= 1 (got " + std::to_string(opts.max_steps) + ")");
  require_arg(std::isfinite(opts.tol) && opts.tol > 0, fn,
              "tol must be finite and > 0 (got " + it::num(opts.tol) + ")");
  const auto& d = A.distribution();
  const std::int64_t n = d.rows();
  BlockSpectrumEstimate est;
  if (n == 0) return est;
  // Vectors: one block column of width 1 on A's row placement.
  const BlockDistribution vd(d.grid(), d.row_sizes(), {1}, d.row_dist(), {0});
  std::vector<double> start(static_cast<std::size_t>(n));
  {
    std::mt19937_64 gen(opts.seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& x : start) x = u(gen);
  }
  std::vector<int> rows, cols;
  std::vector<double> vals;
  if (vd.local_col(0) >= 0) {
    for (int i : vd.local_rows()) {
      rows.push_back(i);
      cols.push_back(0);
      vals.insert(vals.end(), start.begin() + d.row_offsets()[i],
                  start.begin() + d.row_offsets()[i + 1]);
    }
  }
  auto q = it::Mat<Exec>::from_blocks(vd, rows, cols, vals);
  q = it::scaled_copy(exec, q, 1.0 / norm(exec, q));
  it::Mat<Exec> q_prev;
  std::vector<double> alpha, beta;
  const int steps = static_cast<int>(std::min<std::int64_t>(opts.max_steps, n));
  for (int j = 0; j < steps; ++j) {
    auto w = it::product(exec, 1.0, A, q, vd, 0.0, est.flops);
    double a = dot(exec, w, q);
    add(exec, -a, q, 1.0, w);
    if (j > 0) add(exec, -beta.back(), q_prev, 1.0, w);
    // One more pass against the last two vectors keeps the recurrence's local orthogonality.
    const double c = dot(exec, w, q);
    add(exec, -c, q, 1.0, w);
    a += c;
    if (j > 0) add(exec, -dot(exec, w, q_prev), q_prev, 1.0, w);
    alpha.push_back(a);
    const double bj = norm(exec, w);
    // Ritz values of T_m and the last components of their vectors (residual |b_j s_mi|).
    const int m = j + 1;
    std::vector<double> dg = alpha, e = beta, z(static_cast<std::size_t>(m) * m);
    e.resize(static_cast<std::size_t>(std::max(m - 1, 1)));
    const int info = core::lapack::steqr('I', m, dg.data(), e.data(), z.data(), m);
    require(info == 0, ErrorKind::no_convergence, fn,
            "the tridiagonal eigensolver (dsteqr) failed, info " + std::to_string(info));
    est.min = dg[0];
    est.max = dg[m - 1];
    est.min_residual = bj * std::fabs(z[(m - 1) + 0 * static_cast<std::size_t>(m)]);
    est.max_residual = bj * std::fabs(z[(m - 1) + static_cast<std::size_t>(m - 1) * m]);
    est.steps = m;
    const double scale =
        std::max({est.max - est.min, std::fabs(est.min), std::fabs(est.max), 1e-300});
    if (m >= 2 && est.min_residual <= opts.tol * scale && est.max_residual <= opts.tol * scale)
      break;
    // An invariant subspace: the Ritz values are eigenvalues.
    if (bj <= 1e-14 * scale) break;
    beta.push_back(bj);
    q_prev = std::move(q);
    q = it::scaled_copy(exec, w, 1.0 / bj);
  }
  return est;
}

template <class Exec>
BlockDensityResult<typename Exec::memory_space> density_matrix(
    const Exec& exec, const BlockSparseMatrix<double, typename Exec::memory_space>& H,
    const BlockSparseMatrix<double, typename Exec::memory_space>& S, double n_electrons,
    const BlockDensityOptions& opts) {
  namespace it = detail::bs_iter;
  constexpr const char* fn = "density_matrix";
  it::check_common(fn, opts.filter_eps, opts.tol, opts.max_iterations);
  require_arg(opts.method == DensityMethod::sign || opts.method == DensityMethod::trs4, fn,
              "method must be sign or trs4");
  require_arg(opts.sqrt_order == 2 || opts.sqrt_order == 3, fn,
              "sqrt_order must be 2 or 3 (got " + std::to_string(opts.sqrt_order) + ")");
  require_arg(std::isfinite(opts.mu_rel_tol) && opts.mu_rel_tol > 0, fn,
              "mu_rel_tol must be finite and > 0");
  require_arg(std::isfinite(opts.mu_min) && std::isfinite(opts.mu_max), fn,
              "mu_min and mu_max must be finite");
  it::require_square(H.distribution(), fn, "H");
  it::require_square(S.distribution(), fn, "S");
  require_arg(H.distribution() == S.distribution(), fn,
              "H and S must have the same block sizes and distribution");
  const auto& d = H.distribution();
  const double n = static_cast<double>(d.rows());
  const double N = n_electrons;
  require_arg(std::isfinite(N) && N >= 0, fn,
              "n_electrons must be >= 0 (got " + it::num(N, "%g") + ")");
  require_arg(N <= n, fn,
              "n_electrons = " + it::num(N, "%g") + " exceeds the " + std::to_string(d.rows()) +
                  " orbitals (one electron per orbital: Tr(PS) = n_electrons)");
  require_arg(
      N == std::floor(N), fn,
      "n_electrons must be a whole number (one electron per orbital), got " + it::num(N, "%g"));
  it::require_symmetric(exec, H, fn, "H");
  const double eps = opts.filter_eps;
  BlockDensityResult<typename Exec::memory_space> r;

  // Z = S^-1/2 and K = Z H Z: P = Z P_o Z with P_o the projector of K, Tr(PS) = Tr(P_o).
  BlockInverseSqrtOptions so;
  so.filter_eps = eps;
  so.tol = opts.tol;
  so.max_iterations = opts.max_iterations;
  so.order = opts.sqrt_order;
  const auto isq = inverse_sqrt(exec, S, so);
  const auto& Z = isq.inv_sqrt;
  r.sqrt_iterations = isq.history.iterations;
  r.flops += isq.history.total_flops();
  it::Mat<Exec> K;
  {
    const auto ZH = it::product(exec, 1.0, Z, H, d, eps, r.flops);
    K = it::product(exec, 1.0, ZH, Z, d, eps, r.flops);
  }
  // The ends of K's spectrum: Lanczos, widened by the Ritz residuals and 1% of the width.
  const auto est = extremal_eigenvalues(exec, K, opts.lanczos);
  r.flops += est.flops;
  const double margin =
      std::max(0.01 * (est.upper() - est.lower()),
               1e-8 * std::max({std::fabs(est.lower()), std::fabs(est.upper()), 1e-300}));
  const double emin = est.lower() - margin, emax = est.upper() + margin;
  r.spectrum_min = emin;
  r.spectrum_max = emax;

  it::Mat<Exec> Po;  // the projector of K
  if (N == 0) {
    Po = it::Mat<Exec>(d);
    r.mu = emin;
    r.history.converged = true;
  } else if (N == n) {
    Po = identity(exec, d, 1.0);
    r.mu = emax;
    r.history.converged = true;
  } else if (opts.method == DensityMethod::sign) {
    BlockSignOptions sg;
    sg.filter_eps = eps;
    sg.tol = opts.tol;
    sg.max_iterations = opts.max_iterations;
    // Occupation of mu: Tr(1/2 (I - sign(K - mu I))); keeps the sign for the final mu.
    it::Mat<Exec> X;
    auto occupation = [&](double mu) {
      auto Km = it::scaled_copy(exec, K, 1.0);
      add_identity(exec, Km, -mu);
      auto s = sign(exec, Km, sg);
      r.iterations += s.history.iterations;
      r.flops += s.history.total_flops();
      ++r.mu_evaluations;
      r.history = std::move(s.history);
      X = std::move(s.X);
      return 0.5 * (n - trace(exec, X));
    };
    double lo = emin, hi = emax, n_lo = 0, n_hi = n;
    bool found = false;
    if (opts.mu_min < opts.mu_max) {
      lo = opts.mu_min;
      hi = opts.mu_max;
      n_lo = occupation(lo);
      if (std::fabs(n_lo - N) < 0.5) {
        r.mu = lo;
        found = true;
      } else {
        require_arg(n_lo < N, fn,
                    "mu cannot bracket n_electrons = " + it::num(N, "%g") +
                        ": Tr(PS) at mu_min = " + it::num(lo) + " is already " +
                        it::num(n_lo, "%.6g"));
        n_hi = occupation(hi);
        if (std::fabs(n_hi - N) < 0.5) {
          r.mu = hi;
          found = true;
        }
        require_arg(found || n_hi > N, fn,
                    "mu cannot bracket n_electrons = " + it::num(N, "%g") +
                        ": Tr(PS) at mu_max = " + it::num(hi) + " is only " +
                        it::num(n_hi, "%.6g"));
      }
    }
    const double width = hi - lo;
    while (!found) {
      require_arg(hi - lo > opts.mu_rel_tol * width, fn,
                  "mu cannot bracket n_electrons = " + it::num(N, "%g") + ": Tr(PS) jumps from " +
                      it::num(n_lo, "%.6g") + " to " + it::num(n_hi, "%.6g") +
                      " between mu = " + it::num(lo) + " and " + it::num(hi) +
                      " (degenerate levels at the Fermi level)");
      double mid = 0.5 * (lo + hi), occ = 0;
      try {
        occ = occupation(mid);
      } catch (const Error& e) {
        // mid on an eigenvalue of K stalls the sign (every rank alike): step off it once.
        if (e.kind() != ErrorKind::no_convergence) throw;
        mid += 0.125 * (hi - lo);
        occ = occupation(mid);
      }
      if (std::fabs(occ - N) < 0.5) {
        r.mu = mid;
        found = true;
      } else if (occ < N) {
        lo = mid;
        n_lo = occ;
      } else {
        hi = mid;
        n_hi = occ;
      }
    }
    Po = it::scaled_copy(exec, X, -0.5);
    add_identity(exec, Po, 0.5);
  } else {
    // TRS4 on X_0 = (emax I - K) / (emax - emin): occupied states near 1.
    const double w = emax - emin;
    auto X = it::scaled_copy(exec, K, -1.0 / w);
    add_identity(exec, X, emax / w);
    const double thr = it::threshold(eps, opts.tol);
    // The trace error two filtered multiplies may leave (each block within 2 eps, as random
    // signs), plus rounding.
    const double trace_noise = 4 * eps * std::sqrt(n) + 1e-13 * n;
    std::vector<std::pair<int, double>> maps;  // each step's polynomial: (kind, gamma)
    auto& h = r.history;
    for (int k = 0;; ++k) {
      std::int64_t f = 0;
      const auto X2 = it::product(exec, 1.0, X, X, d, eps, f);
      auto R = it::scaled_copy(exec, X2, 1.0);
      add(exec, -1.0, X, 1.0, R);  // X^2 - X
      const double nr = norm(exec, R), nx = norm(exec, X);
      const double res = nx > 0 ? nr / nx : std::numeric_limits<double>::infinity();
      h.residual.push_back(res);
      const bool done = res < thr;
      require(done || (k < opts.max_iterations && std::isfinite(res)), ErrorKind::no_convergence,
              fn,
              "TRS4: no convergence in " + std::to_string(k) +
                  " iterations: ||X^2 - X||_F / ||X||_F = " + it::num(res) + " > " + it::num(thr) +
                  " (no gap at the Fermi level?)");
      // Tr G = Tr (X - X^2)^2 = ||R||_F^2 and Tr F = Tr X^2 + <R, X - 3X^2> (F = X^2 + X R (I -
      // 3X)): small terms from R itself, not differences of O(N) traces.
      const double tg = nr * nr;
      const double tf = trace(exec, X2) + dot(exec, R, X) - 3 * dot(exec, R, X2);
      double gamma = tg > 0 ? (N - tf) / tg : 3.0;
      // Out of [0, 6]: Niklasson falls back to X^2 or 2X - X^2 to move the trace. When what is left
      // to move is within the filter's trace noise, or the test has passed, clamp instead: those
      // steps double the error of half the eigenvalues.
      if (gamma < 0 || gamma > 6) {
        const double clamped = std::min(std::max(gamma, 0.0), 6.0);
        const double left = std::fabs(N - tf - clamped * tg);
        if (done || left <= trace_noise) gamma = clamped;
      }
      if (gamma > 6) {
        auto Xn = it::scaled_copy(exec, X, 2.0);
        add(exec, -1.0, X2, 1.0, Xn);  // 2X - X^2
        X = std::move(Xn);
        maps.emplace_back(1, 0.0);
      } else if (gamma < 0) {
        X = X2;
        maps.emplace_back(0, 0.0);
      } else {
        // F + gamma G = X^2 (gamma I + (4 - 2 gamma) X + (gamma - 3) X^2)
        auto T = it::scaled_copy(exec, X2, gamma - 3);
        add(exec, 4 - 2 * gamma, X, 1.0, T);
        add_identity(exec, T, gamma);
        X = it::product(exec, 1.0, X2, T, d, eps, f);
        maps.emplace_back(2, gamma);
      }
      it::record(h, f, X.occupancy());
      r.flops += f;
      if (done) break;
    }
    h.converged = true;
    r.iterations = h.iterations;
    r.mu_evaluations = 1;
    // mu: the x_0 the steps' polynomials (increasing on [0, 1]) take to 1/2, mapped back.
    auto through = [&](double x) {
      for (const auto& [kind, g] : maps) {
        x = kind == 0   ? x * x
            : kind == 1 ? 2 * x - x * x
                        : x * x * (g + (4 - 2 * g) * x + (g - 3) * x * x);
      }
      return x;
    };
    double a = 0, b = 1;
    for (int s = 0; s < 200 && b - a > 1e-16; ++s) {
      const double m = 0.5 * (a + b);
      (through(m) < 0.5 ? a : b) = m;
    }
    r.mu = emax - 0.5 * (a + b) * w;
    Po = std::move(X);
  }
  {
    const auto ZP = it::product(exec, 1.0, Z, Po, d, eps, r.flops);
    r.P = it::product(exec, 1.0, ZP, Z, d, eps, r.flops);
  }
  // Diagnostics: Tr(PS) = <P, S> (P, S symmetric), ||PSPS - PS||_F.
  r.trace_ps = dot(exec, r.P, S);
  const auto PS = it::product(exec, 1.0, r.P, S, d, eps, r.flops);
  auto D = it::product(exec, 1.0, PS, PS, d, eps, r.flops);
  add(exec, -1.0, PS, 1.0, D);
  r.idempotency = norm(exec, D);
  return r;
}

}  // namespace kess

/// Explicit instantiations of the iterations for one execution space (host/iterations.cpp).
#define KESS_BLOCK_SPARSE_ITERATION_TEMPLATES(EXEC)                                                \
  template BlockSignResult<EXEC::memory_space> sign<EXEC>(                                         \
      const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&, const BlockSignOptions&); \
  template BlockInverseSqrtResult<EXEC::memory_space> inverse_sqrt<EXEC>(                          \
      const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&,                           \
      const BlockInverseSqrtOptions&);                                                             \
  template BlockSpectrumEstimate extremal_eigenvalues<EXEC>(                                       \
      const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&,                           \
      const BlockLanczosOptions&);                                                                 \
  template BlockDensityResult<EXEC::memory_space> density_matrix<EXEC>(                            \
      const EXEC&, const BlockSparseMatrix<double, EXEC::memory_space>&,                           \
      const BlockSparseMatrix<double, EXEC::memory_space>&, double, const BlockDensityOptions&);
