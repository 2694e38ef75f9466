// kess-run sign | lyapunov | riccati: the matrix functions on Matrix Market files (array or
// coordinate) or generated matrices, timed, checked by residuals, with an optional JSON report.
// Flags are stable (other tools script against them); see each subcommand's --help.
// Under mpiexec with more than one rank (or with --distributed on one) the distributed versions
// run: rank 0 reads the files and scatters them onto a 1 x P column-block-cyclic grid, the result
// is gathered on rank 0 for --out and the residual, and rank 0 reports.
#include "args.hpp"
#include "dense_driver.hpp"
#include "perf_common.hpp"

#include <kess/core/io/matrix_market.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/matrix_functions.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <string>

namespace kess::run {

namespace {

const char* kSignFlags =
    "  --scaling S        determinant | norm | none (default determinant)\n"
    "  --max-iterations K Newton iterations at most (default 100)\n"
    "  --tol T            relative tolerance (default n * eps), e.g. --tol 1e-12\n";

SignOptions sign_options(const Args& a) {
  SignOptions o;
  o.scaling = from_string<SignScaling>(a.str("scaling", "determinant"));
  o.max_iterations = static_cast<int>(a.integer("max-iterations", 100, 1, kIntMax));
  o.tol = a.real("tol", 0.0, 0.0);
  o.gauss_jordan = gj_options(a);
  return o;
}

const std::set<std::string> kSignOptionNames = {"scaling", "max-iterations", "tol"};

void print_history(const NewtonHistory& h) {
  std::printf("  iterations  %d (stopped by %s)\n", h.iterations,
              h.stopped_by.empty() ? "-" : h.stopped_by.c_str());
  std::printf("  history     %s\n", h.str().c_str());
}

void history_json(perf::JsonReport& j, const NewtonHistory& h) {
  j.set("iterations", double(h.iterations));
  j.set("converged", h.converged ? "true" : "false");
  j.set("stopped_by", h.stopped_by);
  j.set("last_rel_change", h.rel_change.empty() ? 0.0 : h.rel_change.back());
}

/// max_j sum_i |x_ij| of a device matrix, on the host (a check, not a timed step).
template <class M>
double host_norm1(const M& X) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
  double worst = 0;
  for (std::size_t j = 0; j < h.extent(1); ++j) {
    double s = 0;
    for (std::size_t i = 0; i < h.extent(0); ++i) s += std::abs(h(i, j));
    worst = std::max(worst, s);
  }
  return worst;
}

/// ||S^2 - I||_1 / n, or for the pencil ||S B^-1 S - B||_1 / ||B||_1 (M: exec's Views).
template <class E, class M>
double sign_residual(const E& exec, const M& S, const M& B, bool pencil) {
  const std::int64_t n = S.extent(0);
  M W("kess::run::W", n, n);
  if (pencil) {
    M Y("kess::run::Y", n, n);
    Kokkos::deep_copy(Y, S);
    solve(exec, B, Y);
    Kokkos::deep_copy(W, B);
    core::gemm(exec, "N", "N", 1.0, S, Y, -1.0, W);
    return host_norm1(W) / host_norm1(B);
  }
  auto I = Kokkos::create_mirror_view(W);
  Kokkos::deep_copy(I, 0.0);
  for (std::int64_t i = 0; i < n; ++i) I(i, i) = 1.0;
  Kokkos::deep_copy(W, I);
  core::gemm(exec, "N", "N", 1.0, S, S, -1.0, W);
  return host_norm1(W) / std::max<double>(1.0, double(n));
}

/// The result of sign / lyapunov / riccati as the reporting rank sees it.
struct NewtonRun {
  std::int64_t n = 0;
  double t = 0.0, residual = 0.0;
  NewtonHistory history;
  HostMat X;  ///< for --out (the distributed path always has it on rank 0)
};

/// Prints and writes the report of a Newton-type subcommand; its exit code (3: no convergence).
int newton_report(const Args& a, const char* cmd, bool dist, const NewtonRun& r, double flops,
                  const char* residual_name, const SignOptions& opts,
                  const std::function<void()>& extra_print = {},
                  const std::function<void(perf::JsonReport&)>& extra_json = {}) {
  const int rc = r.history.converged ? 0 : 3;
  if (!reports(dist)) return rc;
  print_common(cmd, r.n, r.t, flops, dist);
  if (extra_print) extra_print();
  print_history(r.history);
  std::printf("  residual    %s = %.2e\n", residual_name, r.residual);
  if (rc == 0 && a.has("out")) mm::write_dense(a.str("out", ""), r.X);
  if (rc != 0 && a.has("out")) std::printf("  output      not written: no convergence\n");
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, cmd, r.n, r.t, flops, dist);
    if (extra_json) extra_json(j);
    history_json(j, r.history);
    j.set("scaling", to_string(opts.scaling));
    j.set("residual", r.residual);
    j.write(a.str("json", ""));
  }
  return rc;
}

// ---- sign ---------------------------------------------------------------------------------------
int cmd_sign(int argc, char** argv) {
  auto names = with_generate(with_common({"matrix", "matrix-b", "out"}));
  names.insert(kSignOptionNames.begin(), kSignOptionNames.end());
  Args a(argc, argv, names, kSwitches);
  if (a.has("help")) {
    std::printf(
        "usage: kess-run sign (--matrix A | --generate random [--n N] [--seed S])\n"
        "                     [--matrix-b B] [--out S] [--scaling S]\n"
        "                     [--max-iterations K] [--tol T] [--block NB] [--repeat R] [--json F]\n"
        "                     [--distributed]\n\n"
        "The matrix sign function by the scaled Newton iteration X <- (mu X + X^-1 / mu) / 2;\n"
        "with --matrix-b the pencil form X <- (mu X + B X^-1 B / mu) / 2, whose limit\n"
        "B sign(B^-1 A) is written. Reports time, GFLOP/s (2 n^3, pencil 5 n^3 an iteration),\n"
        "iterations and the residual ||S^2 - I||_1 / n (pencil: ||S B^-1 S - B||_1 / ||B||_1).\n\n"
        "  --matrix A         n x n matrix\n"
        "  --matrix-b B       n x n nonsingular matrix: pencil form\n"
        "  --out S            write the result\n%s%s%s",
        kSignFlags, kGenerateFlags, kCommon);
    return 0;
  }
  const bool dist = distributed(a);
  const bool pencil = a.has("matrix-b");
  const auto opts = sign_options(a);
  const int repeat = static_cast<int>(a.integer("repeat", 1, 1, 1000000));
  NewtonRun run;
  if (dist) {
    const DistRun d(a);
    HostMat Ah, Bh;
    const Dist A = d.load(a, "matrix", Ah);
    const Dist B = pencil ? d.load(a, "matrix-b", Bh) : Dist();
    SignResult<Dist> r;
    run.t = timed(repeat, [&] {
      r = pencil ? sign(Exec(), A, B, opts) : sign(Exec(), A, opts);
    }, &d.world);
    run.n = A.rows();
    run.history = r.history;
    run.X = r.X.gather(0);
    if (d.root()) run.residual = sign_residual(HostExec(), run.X, Bh, pencil);
  } else {
    const DevMat A = load(a, "matrix");
    const DevMat B = pencil ? load(a, "matrix-b") : DevMat();
    SignResult<DevMat> r;
    run.t = timed(repeat, [&] { r = pencil ? sign(Exec(), A, B, opts) : sign(Exec(), A, opts); });
    run.n = A.extent(0);
    run.history = r.history;
    run.residual = sign_residual(Exec(), r.X, B, pencil);
    if (a.has("out")) run.X = to_host(r.X);
  }
  return newton_report(
      a, "sign", dist, run, sign_iteration_flops(run.n, pencil) * run.history.iterations,
      pencil ? "||S B^-1 S - B|| / ||B||" : "||S^2 - I|| / n", opts,
      [&] {
        std::printf("  form        %s, scaling %s\n", pencil ? "pencil (A, B)" : "standard",
                    to_string(opts.scaling));
      },
      [&](perf::JsonReport& j) { j.set("form", pencil ? "pencil" : "standard"); });
}

// ---- lyapunov -----------------------------------------------------------------------------------
int cmd_lyapunov(int argc, char** argv) {
  auto names = with_common({"matrix", "q", "out"});
  names.insert(kSignOptionNames.begin(), kSignOptionNames.end());
  Args a(argc, argv, names, kSwitches);
  if (a.has("help")) {
    std::printf(
        "usage: kess-run lyapunov --matrix A --q Q [--out X] [--scaling S] [--max-iterations K]\n"
        "                         [--tol T] [--block NB] [--repeat R] [--json F] [--distributed]\n\n"
        "Solves A X + X A^T + Q = 0 for a stable A (every eigenvalue in the open left half-plane)\n"
        "by the sign function (Roberts' coupled iteration, 6 n^3 flops an iteration; distributed:\n"
        "the sign of the 2n x 2n block matrix, 16 n^3). Reports time, GFLOP/s, iterations and\n"
        "||A X + X A^T + Q||_F / (2 ||A||_F ||X||_F + ||Q||_F).\n\n"
        "  --matrix A         n x n stable matrix\n"
        "  --q Q              n x n right-hand side (symmetric for a symmetric X)\n"
        "  --out X            write the solution\n%s%s",
        kSignFlags, kCommon);
    return 0;
  }
  const bool dist = distributed(a);
  const auto opts = sign_options(a);
  const int repeat = static_cast<int>(a.integer("repeat", 1, 1, 1000000));
  NewtonRun run;
  if (dist) {
    const DistRun d(a);
    HostMat Ah, Qh;
    const Dist A = d.load(a, "matrix", Ah), Q = d.load(a, "q", Qh);
    LyapunovResult<Dist> r;
    run.t = timed(repeat, [&] { r = lyapunov(Exec(), A, Q, opts); }, &d.world);
    run.n = A.rows();
    run.history = r.history;
    run.X = r.X.gather(0);
    if (d.root()) run.residual = lyapunov_residual(HostExec(), Ah, Qh, run.X);
  } else {
    const DevMat A = load(a, "matrix"), Q = load(a, "q");
    LyapunovResult<DevMat> r;
    run.t = timed(repeat, [&] { r = lyapunov(Exec(), A, Q, opts); });
    run.n = A.extent(0);
    run.history = r.history;
    run.residual = lyapunov_residual(Exec(), A, Q, r.X);
    if (a.has("out")) run.X = to_host(r.X);
  }
  const double per_iteration = dist ? sign_iteration_flops(2 * run.n, false)
                                    : 6.0 * double(run.n) * run.n * run.n;
  return newton_report(a, "lyapunov", dist, run, per_iteration * run.history.iterations,
                       "||AX + XA^T + Q|| / (2||A|| ||X|| + ||Q||)", opts);
}

// ---- riccati ------------------------------------------------------------------------------------
int cmd_riccati(int argc, char** argv) {
  auto names = with_common({"matrix", "g", "q", "out"});
  names.insert(kSignOptionNames.begin(), kSignOptionNames.end());
  Args a(argc, argv, names, kSwitches);
  if (a.has("help")) {
    std::printf(
        "usage: kess-run riccati --matrix A --g G --q Q [--out X] [--scaling S]\n"
        "                        [--max-iterations K] [--tol T] [--block NB] [--repeat R] [--json F]\n"
        "                        [--distributed]\n\n"
        "Solves A^T X + X A - X G X + Q = 0 (G, Q symmetric) for the stabilizing X through the\n"
        "sign of the Hamiltonian [A -G; -Q -A^T] (16 n^3 flops an iteration). Reports time,\n"
        "GFLOP/s, iterations and ||A^T X + X A - X G X + Q||_F /\n"
        "(2 ||A||_F ||X||_F + ||X||_F^2 ||G||_F + ||Q||_F).\n\n"
        "  --matrix A         n x n\n"
        "  --g G              n x n symmetric (e.g. B R^-1 B^T)\n"
        "  --q Q              n x n symmetric (e.g. C^T C)\n"
        "  --out X            write the solution\n%s%s",
        kSignFlags, kCommon);
    return 0;
  }
  const bool dist = distributed(a);
  const auto opts = sign_options(a);
  const int repeat = static_cast<int>(a.integer("repeat", 1, 1, 1000000));
  NewtonRun run;
  if (dist) {
    const DistRun d(a);
    HostMat Ah, Gh, Qh;
    const Dist A = d.load(a, "matrix", Ah), G = d.load(a, "g", Gh), Q = d.load(a, "q", Qh);
    RiccatiResult<Dist> r;
    run.t = timed(repeat, [&] { r = riccati(Exec(), A, G, Q, opts); }, &d.world);
    run.n = A.rows();
    run.history = r.history;
    run.X = r.X.gather(0);
    if (d.root()) run.residual = riccati_residual(HostExec(), Ah, Gh, Qh, run.X);
  } else {
    const DevMat A = load(a, "matrix"), G = load(a, "g"),
                 Q = load(a, "q");
    RiccatiResult<DevMat> r;
    run.t = timed(repeat, [&] { r = riccati(Exec(), A, G, Q, opts); });
    run.n = A.extent(0);
    run.history = r.history;
    run.residual = riccati_residual(Exec(), A, G, Q, r.X);
    if (a.has("out")) run.X = to_host(r.X);
  }
  return newton_report(a, "riccati", dist, run,
                       sign_iteration_flops(2 * run.n, false) * run.history.iterations,
                       "relative Riccati residual", opts);
}

}  // namespace

static const Registrar reg_sign("sign", "matrix sign function (scaled Newton; pencil form with --matrix-b)",
                                &cmd_sign);
static const Registrar reg_lyapunov("lyapunov", "A X + X A^T + Q = 0 through the sign function",
                                    &cmd_lyapunov);
static const Registrar reg_riccati("riccati", "A^T X + X A - X G X + Q = 0 (Hamiltonian sign function)",
                                   &cmd_riccati);

}  // namespace kess::run
