#include "dense_driver.hpp"

#include <kess/comm/agree.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/solvers/gauss_jordan/detail/defaults.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace kess::run {

const char* const kCommon =
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

const char* const kGenerateFlags =
    "  --generate random  instead of the files: A (and B) with uniform random entries in\n"
    "                     [-1, 1) (kess::gen::random_general, the same on every backend and rank\n"
    "                     count)\n"
    "  --n N              order of the generated A (default 2000)\n"
    "  --seed S           seed of the generated A (default 1; B uses S + 1)\n";

const std::set<std::string> kSwitches = {"help", "distributed"};

int ranks() {
  try {
    return comm::Communicator::world().size();
  } catch (const Error&) {
    return 1;  // MPI not initialized (a build without MPI)
  }
}

std::set<std::string> with_generate(std::set<std::string> names) {
  names.insert({"generate", "n", "seed"});
  return names;
}

std::set<std::string> with_common(std::set<std::string> names) {
  names.insert({"block", "pivoting", "repeat", "json", "help", "distributed"});
  return names;
}

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
  const std::int64_t n = a.integer("n", 2000, 1);
  const std::int64_t cols = w == "rhs" ? a.integer("nrhs", n, 0) : n;
  const std::int64_t seed = a.integer("seed", 1, 0);
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

GaussJordanOptions gj_options(const Args& a) {
  GaussJordanOptions o;
  o.block = static_cast<int>(a.integer("block", 0, 0, kIntMax));
  const std::string piv = a.str("pivoting", "partial");
  require_arg(piv == "partial" || piv == "tournament", "kess-run",
              "option '--pivoting' must be partial or tournament, got '" + piv + "'");
  if (piv == "tournament") o.pivoting = GaussJordanPivoting::tournament;
  return o;
}

bool distributed(const Args& a) { return ranks() > 1 || a.has("distributed"); }

DistRun::DistRun(const Args& a) {
  block = static_cast<int>(a.integer("block", 0, 0, kIntMax));
}

Dist DistRun::load(const Args& a, const char* what, HostMat& global) const {
  bool ok = true;
  std::string why;
  Kokkos::View<std::int64_t*, Kokkos::HostSpace> shape("kess::run::shape", 2);
  if (root()) {
    try {
      global = host_input(a, what);
      shape(0) = global.extent(0);
      shape(1) = global.extent(1);
    } catch (const std::exception& e) {  // kess::Error, std::bad_alloc, Kokkos's errors: all ranks
      ok = false;
      why = e.what();
    } catch (...) {
      ok = false;
      why = "unknown exception while loading --" + std::string(what);
    }
  }
  comm::agree(world, ok, why, ErrorKind::io);
  comm::bcast(HostExec(), world, shape, 0);
  const int nb = block > 0 ? block : kess::detail::gauss_jordan::default_block_automatic<Exec>(shape(0));
  Dist d(grid, shape(0), shape(1), static_cast<int>(std::max<std::int64_t>(1, shape(0))), nb);
  d.scatter(Exec(), 0, global);
  return d;
}

bool reports(bool dist) {
  return !dist || comm::Communicator::world().rank() == 0;
}

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

}  // namespace kess::run
