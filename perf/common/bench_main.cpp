// The one main() of every kess benchmark: MPI + Kokkos through kess::ScopeGuard, and what a reader
// needs to repeat the run (build, machine, Kokkos, BLAS, threads, command) in the JSON context.
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/scope_guard.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/kess_config.hpp>

#include <benchmark/benchmark.h>

#include "kess_perf_git.hpp"

#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

/// The context keys perf/scripts/perf_pages.py reads (docs/performance/README.md lists them).
void add_context(const std::string& command) {
  using benchmark::AddCustomContext;
  AddCustomContext("kess_version", KESS_VERSION_STRING);
  AddCustomContext("kess_git_commit", KESS_PERF_GIT_COMMIT);
  AddCustomContext("kess_git_dirty", KESS_PERF_GIT_DIRTY ? "yes" : "no");
  AddCustomContext("kess_build_type", KESS_PERF_BUILD_TYPE);
  AddCustomContext("kess_compiler", KESS_PERF_CXX_COMPILER);
  AddCustomContext("kess_command", command);
  AddCustomContext("kess_environment", kess::perf::timing_environment());
  AddCustomContext("kess_mpi_ranks", std::to_string(kess::comm::Communicator::world().size()));
  AddCustomContext("kess_cpu_model", kess::perf::cpu_model());
  AddCustomContext("kess_hardware_threads", std::to_string(std::thread::hardware_concurrency()));
  const std::string gpu = kess::perf::gpu_name();
  if (!gpu.empty()) AddCustomContext("kess_gpu", gpu);
  AddCustomContext("kess_kokkos_version", kess::perf::kokkos_version());
  AddCustomContext("kess_kokkos_backend", Kokkos::DefaultExecutionSpace::name());
  AddCustomContext("kess_kokkos_host_backend", Kokkos::DefaultHostExecutionSpace::name());
  AddCustomContext("kess_kokkos_host_concurrency",
                   std::to_string(Kokkos::DefaultHostExecutionSpace().concurrency()));
  AddCustomContext("kess_host_threads", std::to_string(kess::core::detail::host_threads()));
  AddCustomContext("kess_kokkos", kess::perf::kokkos_description());
  std::ostringstream cfg;
  Kokkos::print_configuration(cfg, false);
  AddCustomContext("kokkos_configuration", cfg.str());
  AddCustomContext("kess_blas", kess::perf::blas_description());
  const auto c = kess::perf::ceilings();
  AddCustomContext("kess_ceilings", std::to_string(c.gflops) + " GFLOP/s, " +
                                        std::to_string(c.gbs) + " GB/s (" + c.source + ")");
}

}  // namespace

int main(int argc, char** argv) {
  // Before ScopeGuard and Google Benchmark remove the options they consume.
  const std::string command = kess::perf::command_line(argc, argv);
  kess::ScopeGuard guard(argc, argv);
  // Under mpiexec only rank 0 writes the --benchmark_out file (another rank opening it would
  // truncate what rank 0 wrote).
  const bool reporting_rank = kess::comm::Communicator::world().rank() == 0;
  if (!reporting_rank) {
    int kept = 1;
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]).rfind("--benchmark_out", 0) != 0) argv[kept++] = argv[i];
    argc = kept;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_context(command);
  const std::string hint = kess::perf::blas_hint();
  if (!hint.empty() && reporting_rank)
    std::fprintf(stderr, "%s\n", hint.c_str());
  // Under mpiexec (MPI benchmarks such as bench_eigh_elpa) every rank runs every case; rank 0
  // reports.
  class Silent : public benchmark::BenchmarkReporter {
   public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
  };
  if (!reporting_rank) {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
