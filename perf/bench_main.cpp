// The one main() of every kess benchmark: MPI + Kokkos through kess::ScopeGuard, and the Kokkos
// configuration written into the Google Benchmark JSON context.
#include "perf_common.hpp"

#include <kess/comm/scope_guard.hpp>

#include <benchmark/benchmark.h>

#include <sstream>

int main(int argc, char** argv) {
  kess::ScopeGuard guard(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::ostringstream cfg;
  Kokkos::print_configuration(cfg, false);
  benchmark::AddCustomContext("kess_kokkos", kess::perf::kokkos_description());
  benchmark::AddCustomContext("kokkos_configuration", cfg.str());
  const auto c = kess::perf::ceilings();
  benchmark::AddCustomContext("kess_ceilings", std::to_string(c.gflops) + " GFLOP/s, " +
                                                   std::to_string(c.gbs) + " GB/s (" + c.source +
                                                   ")");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
