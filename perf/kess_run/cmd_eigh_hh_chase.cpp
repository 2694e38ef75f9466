// kess-run hh-chase: the Householder chase (eigh's stage 4, kess::hh_chase_apply) on random
// reflectors and data, timed and checked against the plain host loop.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/solvers/eigh.hpp>

#include <cstdio>
#include <vector>

namespace kess::run {

namespace {
const char* kHhChaseHelp =
    "usage: kess-run hh-chase [--band-width B] [--n N] [--cols NC] [--variant paper|fast]\n"
    "                         [--block M] [--cols-per-team C] [--repeat R] [--seed S]\n"
    "                         [--no-check] [--json FILE]\n"
    "\n"
    "Applies n Householder reflectors of length b (reflector k on rows k..k+b-1, last first)\n"
    "to an (b+n-1) x NC matrix on the default Kokkos execution space, R timed runs after one\n"
    "warm-up (median reported), and checks the result against the plain host loop.\n"
    "\n"
    "  --band-width B     reflector length, the band half-width (default 64)\n"
    "  --n N              number of reflectors (default 4096)\n"
    "  --cols NC          columns of X (default 1024)\n"
    "  --variant V        paper | fast (default fast)\n"
    "  --block M          fast: reflectors per compact-WY block (default: automatic)\n"
    "  --cols-per-team C  fast: columns per team (default: automatic)\n"
    "  --repeat R         timed runs (default 5)\n"
    "  --seed S           random seed (default 1)\n"
    "  --no-check         skip the host reference (large sizes on slow hosts)\n"
    "  --json FILE        write the report as JSON\n"
    "\n"
    "Prints time (median), GFLOP/s (4 b n NC flops), the floor and the max relative error.\n";
}

int cmd_hh_chase(int argc, char** argv);
int cmd_hh_chase(int argc, char** argv) {
  Args args(argc, argv,
            {"band-width", "n", "cols", "variant", "block", "cols-per-team", "repeat", "seed", "json",
             "help", "no-check"},
            {"help", "no-check"});
  if (args.has("help")) {
    std::fputs(kHhChaseHelp, stdout);
    return 0;
  }
  const auto b = args.integer("band-width", 64, 1, kIntMax);
  const auto n = args.integer("n", 4096, 1, kIntMax), nc = args.integer("cols", 1024, 1, kIntMax);
  const auto repeat = args.integer("repeat", 5, 1, 1000000), seed = args.integer("seed", 1, 0);
  require_arg(b >= 1 && n >= 1 && nc >= 0, "kess-run hh-chase",
              "need --band-width >= 1, --n >= 1, --cols >= 0");
  require_arg(repeat >= 1, "kess-run hh-chase", "--repeat must be >= 1");
  HhChaseOptions opts;
  opts.variant = kess::from_string<kess::HhChaseVariant>(args.str("variant", "fast"));
  opts.tuning.block = static_cast<int>(args.integer("block", 0, 0, kIntMax));
  opts.tuning.cols_per_team = static_cast<int>(args.integer("cols-per-team", 0, 0, kIntMax));

  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  perf::HostMatrix Vh("V", b, n), Xh("X", b + n - 1, nc);
  perf::HostVector tauh("tau", n);
  perf::random_reflectors(b, n, seed, Vh, tauh);
  perf::random_matrix(seed + 1, Xh);
  auto V = Kokkos::create_mirror_view_and_copy(Mem(), Vh);
  auto tau = Kokkos::create_mirror_view_and_copy(Mem(), tauh);
  auto X0 = Kokkos::create_mirror_view_and_copy(Mem(), Xh);
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> X("kess::run::X", b + n - 1, nc);
  Exec exec;

  std::vector<double> times;
  for (int r = 0; r <= repeat; ++r) {  // r = 0 is the warm-up
    Kokkos::deep_copy(exec, X, X0);
    exec.fence();
    Kokkos::Timer timer;
    hh_chase_apply(exec, V, tau, X, opts);
    exec.fence();
    if (r > 0) times.push_back(timer.seconds());
  }
  const double t = perf::median(times);
  const double flops = hh_chase_flops(b, n, nc);
  const double bytes = 8.0 * (2.0 * (b + n - 1) * nc + double(b) * n + n);
  const auto ceil = perf::ceilings();
  const double floor = perf::floor_seconds(ceil, flops, bytes);

  double err = -1;
  if (!args.has("no-check")) {
    auto Xd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), X);
    perf::HostMatrix got("got", b + n - 1, nc);
    Kokkos::deep_copy(got, Xd);
    perf::hh_chase_reference(Vh, tauh, Xh);  // Xh becomes the reference
    err = perf::relative_max_diff(got, Xh);
  }
  const bool ok = err < 0 || err <= 1e-12;

  std::printf("kess-run hh-chase: b=%lld n=%lld cols=%lld variant=%s on %s\n", (long long)b,
              (long long)n, (long long)nc, to_string(opts.variant), Exec::name());
  std::printf("  time        %.4f ms (median of %lld)\n", t * 1e3, (long long)repeat);
  std::printf("  rate        %.1f GFLOP/s\n", flops / t * 1e-9);
  std::printf("  floor       %.4f ms (%.0f GFLOP/s, %.0f GB/s: %s); time/floor = %.1f\n",
              floor * 1e3, ceil.gflops, ceil.gbs, ceil.source.c_str(), t / floor);
  if (err >= 0)
    std::printf("  check       max |Y - Y_host| / max |Y_host| = %.2e  %s\n", err,
                ok ? "OK" : "FAILED (> 1e-12)");
  else
    std::printf("  check       skipped (--no-check)\n");

  if (args.has("json")) {
    perf::JsonReport j;
    j.set("command", "hh-chase");
    j.set("band_width", double(b));
    j.set("n", double(n));
    j.set("cols", double(nc));
    j.set("variant", to_string(opts.variant));
    j.set("backend", Exec::name());
    j.set("kokkos", perf::kokkos_description());
    j.set("blas", perf::blas_description());
    j.set("time_s", t);
    j.set("gflops", flops / t * 1e-9);
    j.set("floor_s", floor);
    j.set("rel_error", err);
    j.set("check", err < 0 ? "skipped" : (ok ? "ok" : "failed"));
    j.write(args.str("json", ""));
  }
  return ok ? 0 : 3;
}

static const Registrar reg_hh_chase(
    "hh-chase", "the Householder chase kernel (eigensolver stage 4), checked against a host loop",
    &cmd_hh_chase);

}  // namespace kess::run
