// ELPA, the distributed CPU peer of kess::eigh (perf/peers/elpa), on the matrices of bench_eigh
// (kess::gen::random_symmetric(n, 42)), all ranks of MPI_COMM_WORLD:
//   BM_eigh_elpa_1stage/n/vectors_pct, BM_eigh_elpa_2stage/n/vectors_pct
// Run under mpiexec right after bench_eigh (perf/scripts/run_cpu_suite.sh), e.g. on 2 cores:
//   OPENBLAS_NUM_THREADS=1 mpiexec -n 2 build/perf/bench_eigh_elpa
// Times are the slowest rank's (max over ranks of the wall time between barriers); rank 0 reports.
#include "bench_util.hpp"
#include "elpa.hpp"

#include <kess/core/io/generators.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>

namespace {

namespace elpa = kess::perf::peers::elpa;

void eigh_elpa(benchmark::State& state, int stages) {
  if (!elpa::available()) {
    state.SkipWithError(elpa::unavailable_reason().c_str());
    return;
  }
  const int n = state.range(0), pct = state.range(1);
  const int nev = std::max(1, static_cast<int>(std::int64_t(n) * pct / 100));
  elpa::Eigensolver solver(n, nev, stages);
  if (!solver.error().empty()) {
    state.SkipWithError(solver.error().c_str());
    return;
  }
  solver.distribute(kess::gen::random_symmetric(n, 42));
  for (auto _ : state) {
    bool ok = false;
    state.SetIterationTime(solver.solve(&ok));
    if (!ok) state.SkipWithError("elpa_eigenvectors failed");
  }
  state.SetLabel(solver.label());
}

void BM_eigh_elpa_1stage(benchmark::State& s) { eigh_elpa(s, 1); }
void BM_eigh_elpa_2stage(benchmark::State& s) { eigh_elpa(s, 2); }

void sizes(benchmark::internal::Benchmark* bm) {
  for (int n : {500, 1000, 2000, 4000})
    for (int pct : {100, 20}) bm->Args({n, pct});
}

BENCHMARK(BM_eigh_elpa_1stage)
    ->ArgNames({"n", "vectors_pct"})
    ->Apply(sizes)
    ->UseManualTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK(BM_eigh_elpa_2stage)
    ->ArgNames({"n", "vectors_pct"})
    ->Apply(sizes)
    ->UseManualTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
