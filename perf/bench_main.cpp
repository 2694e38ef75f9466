// The one main() of every kess benchmark: MPI + Kokkos through kess::ScopeGuard, and the Kokkos
// configuration written into the Google Benchmark JSON context.
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/scope_guard.hpp>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  kess::ScopeGuard guard(argc, argv);
  bool file_output = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--benchmark_out=", 0) == 0) file_output = true;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::ostringstream cfg;
  Kokkos::print_configuration(cfg, false);
  benchmark::AddCustomContext("kess_kokkos", kess::perf::kokkos_description());
  benchmark::AddCustomContext("kokkos_configuration", cfg.str());
  benchmark::AddCustomContext("kess_blas", kess::perf::blas_description());
  const std::string hint = kess::perf::blas_hint();
  if (!hint.empty() && kess::comm::Communicator::world().rank() == 0)
    std::fprintf(stderr, "%s\n", hint.c_str());
  const auto c = kess::perf::ceilings();
  benchmark::AddCustomContext("kess_ceilings", std::to_string(c.gflops) + " GFLOP/s, " +
                                                   std::to_string(c.gbs) + " GB/s (" + c.source +
                                                   ")");
  // Under mpiexec (MPI benchmarks such as bench_eigh_elpa) every rank runs every case; rank 0
  // reports.
  class Silent : public benchmark::BenchmarkReporter {
   public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
  };
  if (kess::comm::Communicator::world().rank() > 0) {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent, file_output ? &silent : nullptr);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
