// kess-run solve | inverse: Gauss-Jordan elimination on Matrix Market files (array or
// coordinate) or generated matrices, timed, checked by residuals, with an optional JSON report.
// Flags are stable (other tools script against them); see each subcommand's --help.
// Under mpiexec with more than one rank (or with --distributed on one) the distributed versions
// run: rank 0 reads the files and scatters them onto a 1 x P column-block-cyclic grid, the result
// is gathered on rank 0 for --out and the residual, and rank 0 reports.
#include "args.hpp"
#include "dense_driver.hpp"
#include "perf_common.hpp"

#include <kess/core/io/matrix_market.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/gauss_jordan/detail/defaults.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdio>
#include <string>

namespace kess::run {

namespace {

// ||A Y - B||_1 / (||A||_1 ||Y||_1 + ||B||_1) on the host (B = I when B is empty and I_rhs).
double solve_residual(const HostMat& A, const HostMat& Y, const HostMat& B) {
  const int n = A.extent(0), m = Y.extent(1);
  HostMat R("R", n, m);
  Kokkos::deep_copy(R, B);
  core::lapack::gemm('N', 'N', n, m, n, 1.0, A.data(), std::max(1, n), Y.data(), std::max(1, n), -1.0,
               R.data(), std::max(1, n));
  const double d = perf::one_norm(A) * perf::one_norm(Y) + perf::one_norm(B);
  return d > 0 ? perf::one_norm(R) / d : perf::one_norm(R);
}

/// The residual check of solve and inverse: finite and <= 1e-12 n (as eigh's), printed.
bool residual_ok(double res, std::int64_t n) {
  const double tol = 1e-12 * std::max<double>(1.0, double(n));
  const bool ok = std::isfinite(res) && res <= tol;
  std::printf("  check       %s (tolerance 1e-12 n = %.1e)\n", ok ? "OK" : "FAILED", tol);
  return ok;
}

/// det(A) line shared by solve and inverse.
void print_det(const GaussJordanResult& r) {
  std::printf("  det(A)      sign %+d, log|det| %.6e\n", r.det_sign, r.log_abs_det);
}

/// --out (only when the check passed) and --json; the exit code (3: the check failed).
int gj_outputs(const Args& a, bool ok, const HostMat& result,
               const std::function<void(perf::JsonReport&)>& fill) {
  if (ok && a.has("out")) mm::write_dense(a.str("out", ""), result);
  if (!ok && a.has("out")) std::printf("  output      not written: the check failed\n");
  if (a.has("json")) {
    perf::JsonReport j;
    fill(j);
    j.set("check", ok ? "ok" : "failed");
    j.write(a.str("json", ""));
  }
  return ok ? 0 : 3;
}

/// JSON fields shared by solve and inverse.
void gj_json(perf::JsonReport& j, const GaussJordanResult& r, double residual) {
  j.set("block", double(r.block));
  j.set("panel_s", r.panel_seconds);
  j.set("residual", residual);
  j.set("det_sign", double(r.det_sign));
  j.set("log_abs_det", r.log_abs_det);
}

// ---- solve --------------------------------------------------------------------------------------
int cmd_solve(int argc, char** argv) {
  Args a(argc, argv, with_generate(with_common({"matrix", "rhs", "out", "nrhs"})), kSwitches);
  if (a.has("help")) {
    std::printf(
        "usage: kess-run solve (--matrix A --rhs B | --generate random [--n N] [--nrhs M]\n"
        "                      [--seed S]) [--out Y] [--block NB] [--repeat R] [--json F]\n"
        "                      [--distributed]\n\n"
        "Solves A Y = B by blocked Gauss-Jordan elimination (n^3 + 2 n^2 m flops) and reports\n"
        "time, GFLOP/s, the residual ||A Y - B||_1 / (||A||_1 ||Y||_1 + ||B||_1) and det(A).\n\n"
        "  --matrix A         n x n coefficient matrix\n"
        "  --rhs B            n x m right-hand sides\n"
        "  --out Y            write the solution\n%s"
        "  --nrhs M           columns of the generated B (default n)\n%s",
        kGenerateFlags, kCommon);
    return 0;
  }
  const bool dist = distributed(a);
  const auto opts = gj_options(a);
  const int repeat = static_cast<int>(a.integer("repeat", 1, 1, 1000000));
  GaussJordanResult r;
  double t = 0.0;
  HostMat Ah, Yh, Bh;  // the whole matrices where the report is made
  if (dist) {
    const DistRun d(a);
    const Dist A = d.load(a, "matrix", Ah), B0 = d.load(a, "rhs", Bh);
    const Dist Y(d.grid, B0.map());
    t = timed(repeat, [&] {
      Kokkos::deep_copy(Exec(), Y.local(), B0.local());
      r = solve(Exec(), A, Y, opts);
    }, &d.world);
    Yh = Y.gather(0);
  } else {
    const DevMat A = load(a, "matrix"), B0 = load(a, "rhs");
    DevMat Y("kess::run::Y", B0.extent(0), B0.extent(1));
    t = timed(repeat, [&] {
      Kokkos::deep_copy(Exec(), Y, B0);
      r = solve(Exec(), A, Y, opts);
    });
    Ah = to_host(A);
    Yh = to_host(Y);
    Bh = to_host(B0);
  }
  if (!reports(dist)) return 0;
  const double res = solve_residual(Ah, Yh, Bh);
  const double flops = gauss_jordan_solve_flops(r.n, r.nrhs);
  print_common("solve", r.n, t, flops, dist);
  std::printf("  nrhs        %lld, NB %d, panel (host) %.4f s%s\n", (long long)r.nrhs, r.block,
              r.panel_seconds, r.panel_seconds == 0.0 ? " (panel on the device)" : "");
  std::printf("  residual    ||AY - B|| / (||A|| ||Y|| + ||B||) = %.2e\n", res);
  print_det(r);
  const bool ok = residual_ok(res, r.n);
  return gj_outputs(a, ok, Yh, [&](perf::JsonReport& j) {
    common_json(j, "solve", r.n, t, flops, dist);
    j.set("nrhs", double(r.nrhs));
    gj_json(j, r, res);
  });
}

// ---- inverse ------------------------------------------------------------------------------------
int cmd_inverse(int argc, char** argv) {
  Args a(argc, argv, with_generate(with_common({"matrix", "out"})), kSwitches);
  if (a.has("help")) {
    std::printf(
        "usage: kess-run inverse (--matrix A | --generate random [--n N] [--seed S]) [--out X]\n"
        "                        [--block NB] [--repeat R] [--json F] [--distributed]\n\n"
        "Inverts A in place by blocked Gauss-Jordan elimination (2 n^3 flops) and reports time,\n"
        "GFLOP/s, the residual ||A X - I||_1 / (||A||_1 ||X||_1 + 1) and det(A).\n\n"
        "  --matrix A         n x n matrix\n"
        "  --out X            write the inverse\n%s%s",
        kGenerateFlags, kCommon);
    return 0;
  }
  const bool dist = distributed(a);
  const auto opts = gj_options(a);
  const int repeat = static_cast<int>(a.integer("repeat", 1, 1, 1000000));
  GaussJordanResult r;
  double t = 0.0;
  HostMat Ah, Xh;
  if (dist) {
    const DistRun d(a);
    const Dist A = d.load(a, "matrix", Ah);
    const Dist X(d.grid, A.map());
    t = timed(repeat, [&] {
      Kokkos::deep_copy(Exec(), X.local(), A.local());
      r = inverse(Exec(), X, opts);
    }, &d.world);
    Xh = X.gather(0);
  } else {
    const DevMat A = load(a, "matrix");
    DevMat X("kess::run::X", A.extent(0), A.extent(1));
    t = timed(repeat, [&] {
      Kokkos::deep_copy(Exec(), X, A);
      r = inverse(Exec(), X, opts);
    });
    Ah = to_host(A);
    Xh = to_host(X);
  }
  if (!reports(dist)) return 0;
  HostMat I("I", r.n, r.n);
  for (int i = 0; i < r.n; ++i) I(i, i) = 1.0;
  const double res = solve_residual(Ah, Xh, I);
  const double flops = gauss_jordan_inverse_flops(r.n);
  print_common("inverse", r.n, t, flops, dist);
  std::printf("  NB          %d, panel (host) %.4f s%s\n", r.block, r.panel_seconds,
              r.panel_seconds == 0.0 ? " (panel on the device)" : "");
  std::printf("  residual    ||AX - I|| / (||A|| ||X|| + 1) = %.2e\n", res);
  print_det(r);
  const bool ok = residual_ok(res, r.n);
  return gj_outputs(a, ok, Xh, [&](perf::JsonReport& j) {
    common_json(j, "inverse", r.n, t, flops, dist);
    gj_json(j, r, res);
  });
}

}  // namespace

static const Registrar reg_solve("solve", "A Y = B by blocked Gauss-Jordan elimination (Matrix Market in/out)",
                                 &cmd_solve);
static const Registrar reg_inverse("inverse", "A^-1 by in-place Gauss-Jordan elimination",
                                   &cmd_inverse);

}  // namespace kess::run
