// kess-run solve | inverse | sign | lyapunov | riccati: the Gauss-Jordan family on Matrix Market
// files (array or coordinate), timed, checked by residuals, with an optional JSON report.
// Flags are stable (other tools script against them); see each subcommand's --help.
// Under mpiexec with more than one rank (or with --distributed on one) the distributed versions
// run: rank 0 reads the files and scatters them onto a 1 x P column-block-cyclic grid, the result
// is gathered on rank 0 for --out and the residual, and rank 0 reports.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/matrix_functions/detail/newton.hpp>
#include <kess/solvers/matrix_functions/detail/lyapunov.hpp>
#include <kess/solvers/matrix_functions/detail/riccati.hpp>
#include <kess/solvers/matrix_functions/detail/sign.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace kess::run {

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
using HostMat = perf::HostMatrix;
using HostExec = Kokkos::DefaultHostExecutionSpace;
using Dist = comm::DistMatrix<double, Mem>;

const char* kCommon =
    "  --block NB         Gauss-Jordan block size (default: automatic)\n"
    "  --pivoting P       partial | tournament (CUDA device panel: tournament pivoting in its\n"
    "                     leaves; default partial)\n"
    "  --repeat R         timed runs, the median is reported (default 1)\n"
    "  --json FILE        write the report as JSON\n"
    "  --distributed      the distributed version (column blocks of NB, default the local\n"
    "                     solvers' NB for the order, over a 1 x P grid) on one rank too;\n"
    "                     automatic under mpiexec with P > 1\n"
    "  --help             this text\n"
    "Files are Matrix Market (array or coordinate, real/integer, general/symmetric).\n"
    "Distributed: rank 0 reads the files, scatters them, gathers the result and reports.\n";

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

const char* kGenerateFlags =
    "  --generate random  instead of the files: A (and B) with uniform random entries in\n"
    "                     [-1, 1) (kess::gen::random_general, the same on every backend and rank\n"
    "                     count)\n"
    "  --n N              order of the generated A (default 2000)\n"
    "  --seed S           seed of the generated A (default 1; B uses S + 1)\n";

/// The generator flags, for the subcommands that take them.
std::set<std::string> with_generate(std::set<std::string> names) {
  names.insert({"generate", "n", "seed"});
  return names;
}

/// The host matrix of --<what> FILE; for "matrix" and "rhs" with --generate random instead the
/// generated one: A n x n (seed S), B n x nrhs (seed S + 1).
HostMat host_input(const Args& a, const char* what) {
  const std::string w = what;
  const bool generated = a.has("generate") && (w == "matrix" || w == "rhs");
  if (!generated) {
    for (const char* flag : {"n", "nrhs", "seed"})
      require_arg(!a.has(flag), "kess-run",
                  std::string("--") + flag + " goes with --generate (the sizes come from the files)");
    const std::string path = a.str(what, "");
    require_arg(!path.empty(), "kess-run", "missing --" + w + " FILE (see --help)");
    return mm::read_dense(path);
  }
  require_arg(!a.has(what), "kess-run", "give either --" + w + " or --generate, not both");
  const std::string name = a.str("generate", "");
  require_arg(name == "random", "kess-run",
              "--generate '" + name + "': expected random (or give --matrix FILE)");
  const std::int64_t n = a.integer("n", 2000);
  require_arg(n >= 1, "kess-run", "--n must be >= 1, got " + std::to_string(n));
  const std::int64_t cols = w == "rhs" ? a.integer("nrhs", n) : n;
  require_arg(cols >= 0, "kess-run", "--nrhs must be >= 0, got " + std::to_string(cols));
  const std::int64_t seed = a.integer("seed", 1);
  require_arg(seed >= 0, "kess-run", "--seed must be >= 0, got " + std::to_string(seed));
  return gen::random_general(n, cols, static_cast<std::uint64_t>(seed) + (w == "rhs" ? 1 : 0));
}

DevMat load(const Args& a, const char* what) {
  const HostMat h = host_input(a, what);
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
  const std::string piv = a.str("pivoting", "partial");
  require_arg(piv == "partial" || piv == "tournament", "kess-run",
              "option '--pivoting' must be partial or tournament, got '" + piv + "'");
  if (piv == "tournament") o.pivoting = GaussJordanPivoting::tournament;
  return o;
}

SignOptions sign_options(const Args& a) {
  SignOptions o;
  o.scaling = from_string<SignScaling>(a.str("scaling", "determinant"));
  o.max_iterations = static_cast<int>(a.integer("max-iterations", 100));
  o.tol = parse_double(a, "tol", 0.0);
  o.gauss_jordan = gj_options(a);
  return o;
}

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

/// The median of `repeat` timed runs of f; with a communicator the ranks meet before and after
/// each run (the time is the slowest rank's).
template <class F>
double timed(int repeat, F&& f, const comm::Communicator* cm = nullptr) {
  std::vector<double> t;
  Exec exec;
  for (int r = 0; r < repeat; ++r) {
    exec.fence();
    if (cm) cm->barrier();
    Kokkos::Timer timer;
    f();
    exec.fence();
    if (cm) cm->barrier();
    t.push_back(timer.seconds());
  }
  return perf::median(t);
}

// ---- the distributed path -----------------------------------------------------------------------

/// More than one rank, or --distributed: the distributed versions.
bool distributed(const Args& a) { return ranks() > 1 || a.has("distributed"); }

/// Everything the distributed path needs: the 1 x P grid, NB, and the matrices rank 0 read.
struct DistRun {
  comm::Communicator world = comm::Communicator::world();
  comm::ProcessGrid grid{world, 1, world.size()};
  int block = 0;  // --block; 0: the solvers' default for the order of the matrix
  bool root() const { return world.rank() == 0; }

  explicit DistRun(const Args& a) {
    const std::int64_t b = a.integer("block", 0);
    require_arg(b >= 0, "kess-run", "option '--block' must be >= 0");
    block = static_cast<int>(b);
  }

  /// Rank 0 reads the file or generates the matrix (a failure there fails every rank: missing
  /// flags are found there too), every rank gets its share of the matrix, column-block-cyclic in
  /// blocks of --block (0: the solvers' default NB for its order); `global` keeps rank 0's copy
  /// (empty elsewhere).
  Dist load(const Args& a, const char* what, HostMat& global) const {
    bool ok = true;
    std::string why;
    Kokkos::View<std::int64_t*, Kokkos::HostSpace> shape("kess::run::shape", 2);
    if (root()) {
      try {
        global = host_input(a, what);
        shape(0) = global.extent(0);
        shape(1) = global.extent(1);
      } catch (const Error& e) {
        ok = false;
        why = e.what();
      }
    }
    comm::agree(world, ok, why, ErrorKind::io);
    comm::bcast(HostExec(), world, shape, 0);
    const int nb = block > 0 ? block : kess::detail::gauss_jordan::default_block_automatic<Exec>(shape(0));
    Dist d(grid, shape(0), shape(1), static_cast<int>(std::max<std::int64_t>(1, shape(0))), nb);
    d.scatter(Exec(), 0, global);
    return d;
  }
};

void common_json(perf::JsonReport& j, const char* cmd, std::int64_t n, double t, double flops,
                 bool dist) {
  j.set("command", cmd);
  j.set("n", double(n));
  j.set("ranks", double(ranks()));
  j.set("distributed", dist ? "true" : "false");
  j.set("backend", Exec::name());
  j.set("kokkos", perf::kokkos_description());
  j.set("blas", perf::blas_description());
  j.set("time_s", t);
  j.set("gflops", t > 0 ? flops / t * 1e-9 : 0.0);
}

void print_common(const char* cmd, std::int64_t n, double t, double flops, bool dist) {
  std::printf("kess-run %s: n=%lld on %s, %d rank(s)%s\n", cmd, (long long)n, Exec::name(),
              ranks(), dist ? ", distributed (1 x P grid)" : "");
  std::printf("  time        %.4f s\n", t);
  std::printf("  rate        %.2f GFLOP/s\n", t > 0 ? flops / t * 1e-9 : 0.0);
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

/// The options every subcommand takes.
std::set<std::string> with_common(std::set<std::string> names) {
  names.insert({"block", "pivoting", "repeat", "json", "help", "distributed"});
  return names;
}
const std::set<std::string> kSwitches = {"help", "distributed"};
const std::set<std::string> kSignOptionNames = {"scaling", "max-iterations", "tol"};

/// rank 0 of the distributed run, or the local run: the one that reports.
bool reports(bool dist) {
  return !dist || comm::Communicator::world().rank() == 0;
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
  const int repeat = static_cast<int>(a.integer("repeat", 1));
  GaussJordanResult r;
  double t = 0.0;
  HostMat Ah, Yh, Bh;  // the whole matrices where the report is made
  if (dist) {
    const DistRun d(a);
    const Dist A = d.load(a, "matrix", Ah), B0 = d.load(a, "rhs", Bh);
    const Dist Y(d.grid, B0.map());
    t = timed(repeat, [&] {
      kess::detail::gauss_jordan::copy_matrix(Exec(), Y.local(), B0.local(), "kess::run::copy");
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
  if (a.has("out")) mm::write_dense(a.str("out", ""), Yh);
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "solve", r.n, t, flops, dist);
    j.set("nrhs", double(r.nrhs));
    gj_json(j, r, res);
    j.write(a.str("json", ""));
  }
  return 0;
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
  const int repeat = static_cast<int>(a.integer("repeat", 1));
  GaussJordanResult r;
  double t = 0.0;
  HostMat Ah, Xh;
  if (dist) {
    const DistRun d(a);
    const Dist A = d.load(a, "matrix", Ah);
    const Dist X(d.grid, A.map());
    t = timed(repeat, [&] {
      kess::detail::gauss_jordan::copy_matrix(Exec(), X.local(), A.local(), "kess::run::copy");
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
  if (a.has("out")) mm::write_dense(a.str("out", ""), Xh);
  if (a.has("json")) {
    perf::JsonReport j;
    common_json(j, "inverse", r.n, t, flops, dist);
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

/// ||S^2 - I||_1 / n, or for the pencil ||S B^-1 S - B||_1 / ||B||_1, on exec (M: its Views).
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
    return detail::matrix_functions::norm1(exec, W) / detail::matrix_functions::norm1(exec, B);
  }
  core::gemm(exec, "N", "N", 1.0, S, S, 0.0, W);
  detail::matrix_functions::add_identity(exec, -1.0, W);
  return detail::matrix_functions::norm1(exec, W) / std::max<double>(1.0, double(n));
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
  if (a.has("out")) mm::write_dense(a.str("out", ""), r.X);
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
  const int repeat = static_cast<int>(a.integer("repeat", 1));
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
  const int repeat = static_cast<int>(a.integer("repeat", 1));
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
  const int repeat = static_cast<int>(a.integer("repeat", 1));
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
