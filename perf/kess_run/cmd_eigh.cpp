// kess-run eigh: the dense symmetric eigensolver (two-stage by default) on a Matrix Market matrix
// or a generated one, timed per stage and checked (residual and orthogonality).
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/core/io/output_file.hpp>
#include <kess/solvers/eigh.hpp>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace kess::run {

namespace {
const char* kEighHelp =
    "usage: kess-run eigh [--matrix FILE | --generate NAME --n N --seed S]\n"
    "                     [--matrix-b FILE | --generate-b NAME] [--generalized auto|lapack|blas]\n"
    "                     [--nev K] [--values FILE] [--vectors FILE] [--json FILE]\n"
    "                     [--band-width B] [--method auto|two-stage|one-stage] [--chase auto|host|team]\n"
    "                     [--tridiagonal auto|lapack|dc]\n"
    "                     [--no-vectors] [--no-check]\n"
    "\n"
    "Eigenvalues (ascending) and the first K eigenvectors of a real symmetric matrix A, or of\n"
    "A x = lambda B x with B symmetric positive definite, on the default Kokkos execution space.\n"
    "Prints the time of each stage, max_j ||A z_j - lambda_j z_j|| / ||A|| (||A||: 1-norm; for\n"
    "B: / (||A|| + |lambda_j| ||B||)) and max |Z^T Z - I| (Z^T B Z for B).\n"
    "\n"
    "  --matrix FILE      A from a Matrix Market file (array or coordinate, general or symmetric)\n"
    "  --matrix-b FILE    B from a Matrix Market file (generalized problem)\n"
    "  --generate-b NAME  B generated as by --generate (spd for a positive definite one), of\n"
    "                     A's order, with seed S + 1 (generalized problem)\n"
    "  --generalized G    where B = L L^T, L^-1 A L^-T and x = L^-T y run: blas (on the execution\n"
    "                     space), lapack (host LAPACK), or auto (default: blas on GPUs)\n"
    "  --generate NAME    random (entries in [-1, 1)), prescribed (eigenvalues -1 .. 1 in groups\n"
    "                     of 4 equal values, random eigenvectors), or spd (random SPD)\n"
    "  --n N              order of the generated matrix (default 2000)\n"
    "  --seed S           generator seed (default 1)\n"
    "  --nev K            eigenpairs wanted, the K smallest (default: all)\n"
    "  --values FILE      write the eigenvalues, one a line, 17 significant digits\n"
    "  --vectors FILE     write the eigenvectors (Matrix Market array, n x K)\n"
    "  --json FILE        write the report as JSON\n"
    "  --band-width B     band half-width of the two-stage path (default 0: automatic)\n"
    "  --method M         two-stage, one-stage (LAPACK dsytrd), or auto (default: two-stage on\n"
    "                     GPUs, one-stage on CPUs, where it is the faster path, except\n"
    "                     two-stage for --nev <= n/4 with n >= 3000)\n"
    "  --chase C          stage 2 of the two-stage path: team (pipelined teams on the execution\n"
    "                     space), host (host threads), or auto (default: team on GPUs)\n"
    "  --tridiagonal T    stage 3 of the two-stage path: dc (kess divide and conquer, GEMMs on\n"
    "                     the execution space), lapack (host dstedc; a subset by dsterf +\n"
    "                     dstein or dstemr), or auto (default:\n"
    "                     dc on GPUs when vectors are wanted, lapack otherwise)\n"
    "  --no-vectors       eigenvalues only\n"
    "  --no-check         skip the residual and orthogonality checks\n"
    "\n"
    "Without --matrix or --generate: --generate random --n 2000.\n";

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;

mm::DenseHost generate(const std::string& name, std::int64_t n, std::uint64_t seed) {
  if (name == "random") return gen::random_symmetric(n, seed);
  if (name == "spd") return gen::random_spd(n, seed);
  if (name == "prescribed") {
    std::vector<double> lam(static_cast<std::size_t>(n));
    const std::int64_t groups = std::max<std::int64_t>(1, (n + 3) / 4);
    for (std::int64_t i = 0; i < n; ++i)
      lam[i] = groups > 1 ? -1.0 + 2.0 * double(i / 4) / double(groups - 1) : 1.0;
    return gen::prescribed_spectrum(lam, seed);
  }
  throw Error(ErrorKind::invalid_argument, "kess-run eigh",
              "--generate '" + name + "': expected random, prescribed or spd");
}
}  // namespace

int cmd_eigh(int argc, char** argv);
int cmd_eigh(int argc, char** argv) {
  Args args(
      argc, argv,
      {"matrix", "matrix-b", "generate", "generate-b", "generalized", "n", "seed", "nev", "values",
       "vectors", "json", "band-width", "method", "chase", "tridiagonal", "no-vectors", "no-check", "help"},
      {"help", "no-vectors", "no-check"});
  if (args.has("help")) {
    std::fputs(kEighHelp, stdout);
    return 0;
  }
  const char* fn = "kess-run eigh";
  require_arg(!(args.has("matrix") && args.has("generate")), fn,
              "give either --matrix or --generate, not both");
  require_arg(!(args.has("vectors") && args.has("no-vectors")), fn,
              "--vectors asks for the eigenvectors, --no-vectors skips them: give one of them");
  mm::DenseHost Ah;
  std::string source;
  if (args.has("matrix")) {
    source = args.str("matrix", "");
    Ah = mm::read_dense(source);
  } else {
    const std::string name = args.str("generate", "random");
    const auto n = args.integer("n", 2000, 1), seed = args.integer("seed", 1, 0);
    Ah = generate(name, n, static_cast<std::uint64_t>(seed));
    source = "generate " + name + " n=" + std::to_string(n) + " seed=" + std::to_string(seed);
  }
  const std::int64_t n = Ah.extent(0);
  EighOptions opts;
  opts.nev = args.integer("nev", -1, -1);
  opts.band_width = static_cast<int>(args.integer("band-width", 0, 0, kIntMax));
  opts.method = kess::from_string<kess::EighMethod>(args.str("method", "auto"));
  opts.tridiagonal = kess::from_string<kess::EighTridiagonal>(args.str("tridiagonal", "auto"));
  opts.chase = kess::from_string<kess::EighChase>(args.str("chase", "auto"));
  opts.vectors = !args.has("no-vectors");
  opts.generalized = kess::from_string<kess::EighGeneralized>(args.str("generalized", "auto"));
  require_arg(!(args.has("matrix-b") && args.has("generate-b")), fn,
              "give either --matrix-b or --generate-b, not both");
  const bool generalized = args.has("matrix-b") || args.has("generate-b");
  mm::DenseHost Bh;
  if (args.has("matrix-b")) {
    Bh = mm::read_dense(args.str("matrix-b", ""));
    source += ", B " + args.str("matrix-b", "");
  } else if (generalized) {
    const std::string name = args.str("generate-b", "spd");
    const auto seed = args.integer("seed", 1, 0) + 1;
    Bh = generate(name, n, static_cast<std::uint64_t>(seed));
    source += ", B generate " + name + " seed=" + std::to_string(seed);
  }

  Exec exec;
  Mat A(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::A"), Ah.extent(0), Ah.extent(1));
  Kokkos::deep_copy(exec, A, Ah);
  Mat B;
  if (generalized) {
    B = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::B"), Bh.extent(0), Bh.extent(1));
    Kokkos::deep_copy(exec, B, Bh);
  }
  exec.fence();
  auto r = generalized ? eigh(exec, A, B, opts) : eigh(exec, A, opts);
  const std::int64_t nev = r.eigenvalues.extent(0);
  const auto& t = r.timings;

  // ---- checks on the execution space: R = A Z - (B Z) diag(lambda), G = Z^T (B) Z ----------------
  double res = -1, orth = -1;
  const bool check = !args.has("no-check") && r.eigenvectors.extent(1) > 0;
  Kokkos::Timer check_timer;
  if (check) {
    // A and B scaled by powers of two to a largest entry of about 1 and lambda with them (A z =
    // lambda B z is unchanged), each column's norm by scaled sums of squares: no overflow or
    // underflow for matrices of 1e300 or 1e-300.
    const auto pow2_scale = [](const mm::DenseHost& M) {
      double mx = 0;
      for (std::size_t j = 0; j < M.extent(1); ++j)
        for (std::size_t i = 0; i < M.extent(0); ++i) mx = std::max(mx, std::fabs(M(i, j)));
      return mx > 0 ? std::ldexp(1.0, -std::ilogb(mx)) : 1.0;
    };
    const auto scaled_one_norm = [](const mm::DenseHost& M, double sc) {
      double nrm = 0;
      for (std::size_t j = 0; j < M.extent(1); ++j) {
        double s = 0;
        for (std::size_t i = 0; i < M.extent(0); ++i) s += std::fabs(M(i, j) * sc);
        nrm = std::max(nrm, s);
      }
      return nrm;
    };
    const double sa = pow2_scale(Ah), sb = generalized ? pow2_scale(Bh) : 1.0;
    const double anorm = std::max(scaled_one_norm(Ah, sa), 1e-300),
                 bn = generalized ? scaled_one_norm(Bh, sb) : 0.0;
    const auto& Z = r.eigenvectors;
    Mat AZ(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::AZ"), n, nev);
    Mat BZ = Z;
    core::gemm(exec, "N", "N", sa, A, Z, 0.0, AZ);
    if (generalized) {
      BZ = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::BZ"), n, nev);
      core::gemm(exec, "N", "N", sb, B, Z, 0.0, BZ);
    }
    Kokkos::View<double*, Mem> lam("kess::run::lambda", nev);
    Kokkos::deep_copy(exec, lam, r.eigenvalues);
    const double lscale = sa / sb;  // lambda of (sa A, sb B)
    Kokkos::parallel_reduce(
        "kess::run::eigh_residual", Kokkos::RangePolicy<Exec>(exec, 0, nev),
        KOKKOS_LAMBDA(int j, double& worst) {
          const double l = lam(j) * lscale;
          double scale = 0, ssq = 1;  // the column's norm is scale * sqrt(ssq)
          for (int i = 0; i < static_cast<int>(AZ.extent(0)); ++i) {
            const double d = kx::fabs(AZ(i, j) - l * BZ(i, j));
            if (d == 0) continue;
            if (scale < d) {
              ssq = 1 + ssq * (scale / d) * (scale / d);
              scale = d;
            } else {
              ssq += (d / scale) * (d / scale);
            }
          }
          const double rel = scale * kx::sqrt(ssq) / (anorm + kx::fabs(l) * bn);
          if (!kx::isfinite(rel)) worst = DBL_MAX;  // NaN would be skipped by the max
          if (rel > worst) worst = rel;
        },
        Kokkos::Max<double>(res));
    Mat G(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::G"), nev, nev);
    core::gemm(exec, "T", "N", 1.0 / sb, Z, BZ, 0.0, G);  // Z^T B Z
    Kokkos::parallel_reduce(
        "kess::run::eigh_orthogonality",
        Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, nev * nev),
        KOKKOS_LAMBDA(std::int64_t k, double& worst) {
          const std::int64_t i = k % nev, j = k / nev;
          const double d = kx::fabs(G(i, j) - (i == j ? 1.0 : 0.0));
          if (!kx::isfinite(d)) worst = DBL_MAX;
          if (d > worst) worst = d;
        },
        Kokkos::Max<double>(orth));
    exec.fence();
    // DBL_MAX marks a column or entry that is not finite: reported as infinite, never OK.
    if (res == DBL_MAX) res = std::numeric_limits<double>::infinity();
    if (orth == DBL_MAX) orth = std::numeric_limits<double>::infinity();
  }
  const double check_s = check_timer.seconds();
  const double tol = 1e-12 * std::max<double>(1.0, double(n));
  const bool ok = !check || (res <= tol && orth <= tol);

  // ---- output (only when the checks passed; each file appears complete or not at all) -----------
  if (ok && args.has("values")) {
    core::OutputFile f(args.str("values", ""), fn);
    for (std::int64_t i = 0; i < nev; ++i) std::fprintf(f.get(), "%.17g\n", r.eigenvalues(i));
    f.commit();
  }
  if (ok && args.has("vectors")) {
    auto Zh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.eigenvectors);
    mm::DenseHost Zw("kess::run::Z", Zh.extent(0), Zh.extent(1));
    Kokkos::deep_copy(Zw, Zh);
    mm::write_dense(args.str("vectors", ""), Zw);
  }

  std::printf("kess-run eigh: n=%lld nev=%lld%s method=%s (%s) b=%d (%s) on %s\n", (long long)n,
              (long long)nev, generalized ? " generalized" : "", to_string(r.method),
              r.method_reason.c_str(), r.band_width, r.band_width_reason.c_str(), Exec::name());
  std::printf("  input       %s\n", source.c_str());
  auto line = [](const char* name, double s) {
    if (s > 0) std::printf("  %-34s %9.3f s\n", name, s);
  };
  line("checks + symmetrized copy", t.check);
  const std::string reduction = "generalized: reduction (" + r.generalized + ")";
  line(reduction.c_str(), t.cholesky);
  line("1 band_reduce (Eq. 6a)", t.band_reduce);
  line("    of which host QR + copies", t.band_reduce_host);
  const std::string stage2 = "2 bulge_chase " + (r.chase.empty() ? std::string("-") : r.chase) + " (6b)";
  line(stage2.c_str(), t.bulge_chase);
  line("one-stage: dsytrd", t.tridiagonalize);
  const std::string stage3 = "3 tridiagonal " + (r.tridiagonal.empty() ? std::string("-") : r.tridiagonal) + " (6c)";
  line(stage3.c_str(), t.tridiagonal);
  line("    of which host work", t.tridiagonal_host);
  line("4 hh_chase back-transform (6d)", t.hh_chase);
  line("5 band back-transform (6e)", t.band_backtransform);
  line("one-stage: Q of dsytrd (blocked)", t.backtransform);
  line("generalized: back-substitution", t.back_substitution);
  std::printf("  %-34s %9.3f s\n", "total", t.total);
  if (check) {
    if (generalized) {
      std::printf("  residual    max_j ||A z - lambda B z|| / (||A|| + |lambda| ||B||) = %.2e\n",
                  res);
      std::printf("  orthogonal  max |Z^T B Z - I| = %.2e\n", orth);
    } else {
      std::printf("  residual    max_j ||A z - lambda z|| / ||A|| = %.2e\n", res);
      std::printf("  orthogonal  max |Z^T Z - I| = %.2e\n", orth);
    }
    std::printf("  check       %s (tolerance 1e-12 n = %.1e; %.2f s)\n", ok ? "OK" : "FAILED", tol,
                check_s);
  } else {
    std::printf("  check       skipped\n");
  }
  if (nev > 0)
    std::printf("  eigenvalues %.17g .. %.17g\n", r.eigenvalues(0), r.eigenvalues(nev - 1));
  if (!ok && (args.has("values") || args.has("vectors")))
    std::printf("  output      not written: the check failed\n");

  if (args.has("json")) {
    perf::JsonReport j;
    j.set("command", "eigh");
    j.set("input", source);
    j.set("n", double(n));
    j.set("nev", double(nev));
    j.set("generalized", generalized ? "yes" : "no");
    j.set("generalized_reduction", r.generalized);  // "lapack" (host) / "blas" (exec); "" if not
    j.set("method", to_string(r.method));
    j.set("method_reason", r.method_reason);
    j.set("band_width", double(r.band_width));
    j.set("band_width_reason", r.band_width_reason);
    j.set("backend", Exec::name());
    j.set("kokkos", perf::kokkos_description());
    j.set("blas", perf::blas_description());
    j.set("time_check_s", t.check);
    j.set("time_cholesky_s", t.cholesky);
    j.set("time_band_reduce_s", t.band_reduce);
    j.set("time_band_reduce_host_s", t.band_reduce_host);
    j.set("time_bulge_chase_s", t.bulge_chase);
    j.set("time_tridiagonalize_s", t.tridiagonalize);
    j.set("chase", r.chase);
    j.set("tridiagonal", r.tridiagonal);
    j.set("time_tridiagonal_s", t.tridiagonal);
    j.set("time_tridiagonal_host_s", t.tridiagonal_host);
    j.set("time_hh_chase_s", t.hh_chase);
    j.set("time_band_backtransform_s", t.band_backtransform);
    j.set("time_backtransform_s", t.backtransform);
    j.set("time_back_substitution_s", t.back_substitution);
    j.set("time_total_s", t.total);
    j.set("residual", res);
    j.set("orthogonality", orth);
    j.set("check", !check ? "skipped" : (ok ? "ok" : "failed"));
    j.write(args.str("json", ""));
  }
  return ok ? 0 : 3;
}

static const Registrar reg_eigh(
    "eigh", "dense symmetric eigensolver (two-stage), per-stage times, residual and orthogonality",
    &cmd_eigh);

}  // namespace kess::run
