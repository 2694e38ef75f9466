// kess-run solve | inverse | sign | lyapunov | riccati: the Gauss-Jordan family on Matrix Market
// files (array or coordinate), timed, checked by residuals, with an optional JSON report.
// Flags are stable (other tools script against them); see each subcommand's --help.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/core/lapack.hpp>
#include <kess/core/matrix_market.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/lyapunov.hpp>
#include <kess/solvers/riccati.hpp>
#include <kess/solvers/sign.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kess::run {

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
using HostMat = perf::HostMatrix;

const char* kCommon =
    "  --block NB         Gauss-Jordan block size (default: automatic)\n"
    "  --repeat R         timed runs, the median is reported (default 1)\n"
    "  --json FILE        write the report as JSON\n"
    "  --help             this text\n"
    "Files are Matrix Market (array or coordinate, real/integer, general/symmetric).\n";

const char* kSignFlags =
    "  --scaling S        determinant | norm | none (default determinant)\n"
    "  --max-iterations K Newton iterations at most (default 100)\n"
    "  --tol T            relative tolerance (default n * eps), e.g. --tol 1e-12\n";

int ranks() {
  try {
    return comm::Communicator::world().size();
  } catch (const Error&) {
    return 1;  // MPI not initialized (a build without MPI)
  }
}

DevMat load(const std::string& path, const char* what) {
  require_arg(!path.empty(), "kess-run", std::string("missing --") + what + " FILE (see --help)");
  const HostMat h = mm::read_dense(path);
  DevMat d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kess::run::") + what),
           h.extent(0), h.extent(1));
  auto m = Kokkos::create_mirror_view(d);
  Kokkos::deep_copy(m, h);
  Kokkos::deep_copy(d, m);
  return d;
}

HostMat to_host(const DevMat& d) {
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  HostMat h("kess::run::host", d.extent(0), d.extent(1));
  Kokkos::deep_copy(h, m);
  return h;
}

double parse_double(const Args& a, const std::string& name, double fallback) {
  const std::string s = a.str(name, "");
  if (s.empty()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  require_arg(end && *end == '\0', "kess-run", "option '--" + name + "' expects a number, got '" + s + "'");
  return v;
}

GaussJordanOptions gj_options(const Args& a) {
  GaussJordanOptions o;
  o.block = static_cast<int>(a.integer("block", 0));
  return o;
}

SignOptions sign_options(const Args& a) {
  SignOptions o;
  o.scaling = parse_sign_scaling(a.str("scaling", "determinant"));
  o.max_iterations = static_cast<int>(a.integer("max-iterations", 100));
  o.tol = parse_double(a, "tol", 0.0);
  o.gauss_jordan = gj_options(a);
  return o;
}

// ||A||_1 of a host matrix.
double norm1(const HostMat& A) {
  double mx = 0;
  for (size_t j = 0; j < A.extent(1); ++j) {
    double s = 0;
    for (size_t i = 0; i < A.extent(0); ++i) s += std::abs(A(i, j));
    mx = std::max(mx, s);
  }
  return mx;
}

// ||A Y - B||_1 / (||A||_1 ||Y||_1 + ||B||_1) on the host (B = I when B is empty and I_rhs).
double solve_residual(const HostMat& A, const HostMat& Y, const HostMat& B) {
  const int n = A.extent(0), m = Y.extent(1);
  HostMat R("R", n, m);
  Kokkos::deep_copy(R, B);
  lapack::gemm('N', 'N', n, m, n, 1.0, A.data(), std::max(1, n), Y.data(), std::max(1, n), -1.0,
               R.data(), std::max(1, n));
  const double d = norm1(A) * norm1(Y) + norm1(B);
  return d > 0 ? norm1(R) / d : norm1(R);
}

template <class F>
double timed(int repeat, F&& f) {
  std::vector<double> t;
  Exec exec;
  for (int r = 0; r < repeat; ++r) {
    exec.fence();
    Kokkos::Timer timer;
    f();
    exec.fence();
    t.push_back(timer.seconds());
  }
  return perf::median(t);
}

void common_json(perf::JsonReport& j, const char* cmd, std::int64_t n, double t, double flops) {
  j.set("command", cmd);
  j.set("n", double(n));
  j.set("ranks", double(ranks()));
  j.set("backend", Exec::name());
  j.set("kokkos", perf::kokkos_description());
  j.set("time_s", t);
  j.set("gflops", t > 0 ? flops / t * 1e-9 : 0.0);
}

void print_common(const char* cmd, std::int64_t n, double t, double flops) {
  std::printf("kess-run %s: n=%lld on %s, %d rank(s)\n", cmd, (long long)n, Exec::name(), ranks());
  std::printf("  time        %.4f s\n", t);
  std::printf("  rate        %.2f GFLOP/s\n", t > 0 ? flops / t * 1e-9 : 0.0);
}

void require_one_rank(const char* cmd) {
  require_arg(ranks() == 1, std::string("kess-run ") + cmd,
              "runs on one rank (the distributed Gauss-Jordan is not implemented yet)");
}

/// det(A) line shared by solve and inverse.
void print_det(const GaussJordanResult& r) {
  std::printf("  det(A)      sign %+d, log|det| %.6e\n", r.det_sign, r.log_abs_det);
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
  Args a(argc, argv, {"matrix", "rhs", "out", "block", "repeat", "json", "help"});
  if (a.has("help")) {
    std::printf(
        "usage: kess-run solve --matrix A --rhs B [--out Y] [--block NB] [--repeat R] [--json F]\n\n"
        "Solves A Y = B by blocked Gauss-Jordan elimination (n^3 + 2 n^2 m flops) and reports\n"
        "time, GFLOP/s, the residual ||A Y - B||_1 / (||A||_1 ||Y||_1 + ||B||_1) and det(A).\n\n"
        "  --matrix A         n x n coefficient matrix\n"
        "  --rhs B            n x m right-hand sides\n"
        "  --out Y            write the solution\n%s",
        kCommon);
    return 0;
  }
  require_one_rank("solve");
  const DevMat A = load(a.str("matrix", ""), "matrix"), B0 = load(a.str("rhs", ""), "rhs");
  const auto opts = gj_options(a);
  DevMat Y("kess::run::Y", B0.extent(0), B0.extent(1));
  GaussJordanResult r;
  const double t = timed(static_cast<int>(a.integer("repeat", 1)), [&] {
    Kokkos::deep_copy(Exec(), Y, B0);
    r = solve(Exec(), A, Y, opts);
  });
  const HostMat Ah = to_host(A), Yh = to_host(Y), Bh = to_host(B0);
  const double res = solve_residual(Ah, Yh, Bh);
  const double flops = gauss_jordan_solve_flops(r.n, r.nrhs);
  print_common("solve", r.n, t, flops);
  std::printf("  nrhs        %lld, NB %d, panel (host) %.4f s%s\n", (long long)r.nrhs, r.block,
              r.panel_seconds, r.panel_seconds == 0.0 ? " (panel on the device)" : "");
  std::printf("  residual    ||AY - B|| / (||A|| ||Y|| + ||B||) = %.2e\n", res);
  print_det(r);
  if (a.has("out")) mm::write_dense(a.str("out", ""), Yh);
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "solve", r.n, t, flops);
    j.set("nrhs", double(r.nrhs));
    gj_json(j, r, res);
    j.write(a.str("json", ""));
  }
  return 0;
}

// ---- inverse ------------------------------------------------------------------------------------
int cmd_inverse(int argc, char** argv) {
  Args a(argc, argv, {"matrix", "out", "block", "repeat", "json", "help"});
  if (a.has("help")) {
    std::printf(
        "usage: kess-run inverse --matrix A [--out X] [--block NB] [--repeat R] [--json F]\n\n"
        "Inverts A in place by blocked Gauss-Jordan elimination (2 n^3 flops) and reports time,\n"
        "GFLOP/s, the residual ||A X - I||_1 / (||A||_1 ||X||_1 + 1) and det(A).\n\n"
        "  --matrix A         n x n matrix\n"
        "  --out X            write the inverse\n%s",
        kCommon);
    return 0;
  }
  require_one_rank("inverse");
  const DevMat A = load(a.str("matrix", ""), "matrix");
  const auto opts = gj_options(a);
  DevMat X("kess::run::X", A.extent(0), A.extent(1));
  GaussJordanResult r;
  const double t = timed(static_cast<int>(a.integer("repeat", 1)), [&] {
    Kokkos::deep_copy(Exec(), X, A);
    r = inverse(Exec(), X, opts);
  });
  const HostMat Ah = to_host(A), Xh = to_host(X);
  HostMat I("I", r.n, r.n);
  for (int i = 0; i < r.n; ++i) I(i, i) = 1.0;
  const double res = solve_residual(Ah, Xh, I);
  const double flops = gauss_jordan_inverse_flops(r.n);
  print_common("inverse", r.n, t, flops);
  std::printf("  NB          %d, panel (host) %.4f s%s\n", r.block, r.panel_seconds,
              r.panel_seconds == 0.0 ? " (panel on the device)" : "");
  std::printf("  residual    ||AX - I|| / (||A|| ||X|| + 1) = %.2e\n", res);
  print_det(r);
  if (a.has("out")) mm::write_dense(a.str("out", ""), Xh);
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "inverse", r.n, t, flops);
    gj_json(j, r, res);
    j.write(a.str("json", ""));
  }
  return 0;
}

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

// ---- sign ---------------------------------------------------------------------------------------
int cmd_sign(int argc, char** argv) {
  Args a(argc, argv,
         {"matrix", "matrix-b", "out", "block", "repeat", "json", "help", "scaling",
          "max-iterations", "tol"});
  if (a.has("help")) {
    std::printf(
        "usage: kess-run sign --matrix A [--matrix-b B] [--out S] [--scaling S]\n"
        "                     [--max-iterations K] [--tol T] [--block NB] [--repeat R] [--json F]\n\n"
        "The matrix sign function by the scaled Newton iteration X <- (mu X + X^-1 / mu) / 2;\n"
        "with --matrix-b the pencil form X <- (mu X + B X^-1 B / mu) / 2, whose limit\n"
        "B sign(B^-1 A) is written. Reports time, GFLOP/s (2 n^3, pencil 5 n^3 an iteration),\n"
        "iterations and the residual ||S^2 - I||_1 / n (pencil: ||S B^-1 S - B||_1 / ||B||_1).\n\n"
        "  --matrix A         n x n matrix\n"
        "  --matrix-b B       n x n nonsingular matrix: pencil form\n"
        "  --out S            write the result\n%s%s",
        kSignFlags, kCommon);
    return 0;
  }
  require_one_rank("sign");
  const DevMat A = load(a.str("matrix", ""), "matrix");
  const bool pencil = a.has("matrix-b");
  const DevMat B = pencil ? load(a.str("matrix-b", ""), "matrix-b") : DevMat();
  const auto opts = sign_options(a);
  SignResult<DevMat> r;
  const double t = timed(static_cast<int>(a.integer("repeat", 1)), [&] {
    r = pencil ? sign(Exec(), A, B, opts) : sign(Exec(), A, opts);
  });
  const std::int64_t n = A.extent(0);
  double res;
  DevMat W("kess::run::W", n, n);
  if (pencil) {  // ||S B^-1 S - B|| / ||B||
    DevMat Y("kess::run::Y", n, n);
    Kokkos::deep_copy(Y, r.X);
    solve(Exec(), B, Y);
    Kokkos::deep_copy(W, B);
    kx::gemm(Exec(), "N", "N", 1.0, r.X, Y, -1.0, W);
    res = detail::norm1(Exec(), W) / detail::norm1(Exec(), B);
  } else {  // ||S^2 - I|| / n
    kx::gemm(Exec(), "N", "N", 1.0, r.X, r.X, 0.0, W);
    detail::add_identity(Exec(), -1.0, W);
    res = detail::norm1(Exec(), W) / std::max<double>(1.0, double(n));
  }
  const double flops = sign_iteration_flops(n, pencil) * r.history.iterations;
  print_common("sign", n, t, flops);
  std::printf("  form        %s, scaling %s\n", pencil ? "pencil (A, B)" : "standard",
              to_string(opts.scaling));
  print_history(r.history);
  std::printf("  residual    %s = %.2e\n", pencil ? "||S B^-1 S - B|| / ||B||" : "||S^2 - I|| / n",
              res);
  if (a.has("out")) mm::write_dense(a.str("out", ""), to_host(r.X));
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "sign", n, t, flops);
    j.set("form", pencil ? "pencil" : "standard");
    j.set("scaling", to_string(opts.scaling));
    history_json(j, r.history);
    j.set("residual", res);
    j.write(a.str("json", ""));
  }
  return r.history.converged ? 0 : 3;
}

// ---- lyapunov -----------------------------------------------------------------------------------
int cmd_lyapunov(int argc, char** argv) {
  Args a(argc, argv,
         {"matrix", "q", "out", "block", "repeat", "json", "help", "scaling", "max-iterations",
          "tol"});
  if (a.has("help")) {
    std::printf(
        "usage: kess-run lyapunov --matrix A --q Q [--out X] [--scaling S] [--max-iterations K]\n"
        "                         [--tol T] [--block NB] [--repeat R] [--json F]\n\n"
        "Solves A X + X A^T + Q = 0 for a stable A (every eigenvalue in the open left half-plane)\n"
        "by the sign function (Roberts' coupled iteration, 6 n^3 flops an iteration). Reports\n"
        "time, GFLOP/s, iterations and ||A X + X A^T + Q||_F / (2 ||A||_F ||X||_F + ||Q||_F).\n\n"
        "  --matrix A         n x n stable matrix\n"
        "  --q Q              n x n right-hand side (symmetric for a symmetric X)\n"
        "  --out X            write the solution\n%s%s",
        kSignFlags, kCommon);
    return 0;
  }
  require_one_rank("lyapunov");
  const DevMat A = load(a.str("matrix", ""), "matrix"), Q = load(a.str("q", ""), "q");
  const auto opts = sign_options(a);
  LyapunovResult<DevMat> r;
  const double t = timed(static_cast<int>(a.integer("repeat", 1)),
                         [&] { r = lyapunov(Exec(), A, Q, opts); });
  const std::int64_t n = A.extent(0);
  const double res = lyapunov_residual(Exec(), A, Q, r.X);
  const double flops = 6.0 * double(n) * n * n * r.history.iterations;
  print_common("lyapunov", n, t, flops);
  print_history(r.history);
  std::printf("  residual    ||AX + XA^T + Q|| / (2||A|| ||X|| + ||Q||) = %.2e\n", res);
  if (a.has("out")) mm::write_dense(a.str("out", ""), to_host(r.X));
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "lyapunov", n, t, flops);
    history_json(j, r.history);
    j.set("scaling", to_string(opts.scaling));
    j.set("residual", res);
    j.write(a.str("json", ""));
  }
  return r.history.converged ? 0 : 3;
}

// ---- riccati ------------------------------------------------------------------------------------
int cmd_riccati(int argc, char** argv) {
  Args a(argc, argv,
         {"matrix", "g", "q", "out", "block", "repeat", "json", "help", "scaling", "max-iterations",
          "tol"});
  if (a.has("help")) {
    std::printf(
        "usage: kess-run riccati --matrix A --g G --q Q [--out X] [--scaling S]\n"
        "                        [--max-iterations K] [--tol T] [--block NB] [--repeat R] [--json F]\n\n"
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
  require_one_rank("riccati");
  const DevMat A = load(a.str("matrix", ""), "matrix"), G = load(a.str("g", ""), "g"),
               Q = load(a.str("q", ""), "q");
  const auto opts = sign_options(a);
  RiccatiResult<DevMat> r;
  const double t = timed(static_cast<int>(a.integer("repeat", 1)),
                         [&] { r = riccati(Exec(), A, G, Q, opts); });
  const std::int64_t n = A.extent(0);
  const double res = riccati_residual(Exec(), A, G, Q, r.X);
  const double flops = sign_iteration_flops(2 * n, false) * r.history.iterations;
  print_common("riccati", n, t, flops);
  print_history(r.history);
  std::printf("  residual    relative Riccati residual = %.2e\n", res);
  if (a.has("out")) mm::write_dense(a.str("out", ""), to_host(r.X));
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "riccati", n, t, flops);
    history_json(j, r.history);
    j.set("scaling", to_string(opts.scaling));
    j.set("residual", res);
    j.write(a.str("json", ""));
  }
  return r.history.converged ? 0 : 3;
}

}  // namespace

static const Registrar reg_solve("solve", "A Y = B by blocked Gauss-Jordan elimination (Matrix Market in/out)",
                                 &cmd_solve);
static const Registrar reg_inverse("inverse", "A^-1 by in-place Gauss-Jordan elimination",
                                   &cmd_inverse);
static const Registrar reg_sign("sign", "matrix sign function (scaled Newton; pencil form with --matrix-b)",
                                &cmd_sign);
static const Registrar reg_lyapunov("lyapunov", "A X + X A^T + Q = 0 through the sign function",
                                    &cmd_lyapunov);
static const Registrar reg_riccati("riccati", "A^T X + X A - X G X + Q = 0 (Hamiltonian sign function)",
                                   &cmd_riccati);

}  // namespace kess::run
