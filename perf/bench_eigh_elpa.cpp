// ELPA, the CPU peer of kess::eigh (issue 3): ELPA 1-stage and 2-stage through its C API on all
// ranks of MPI_COMM_WORLD (squarest process grid, 2D block-cyclic with blocks of 64), on the same
// matrices as bench_eigh (kess::gen::random_symmetric(n, 42)). Built when CMake finds ELPA
// (pkg-config "elpa", MPI on); otherwise every case reports that ELPA was not found.
//   args: n, nev percent (100 = all vectors), solver (1 = ELPA 1-stage, 2 = ELPA 2-stage)
// Run it right after bench_eigh, e.g. (this machine, 2 cores):
//   OPENBLAS_NUM_THREADS=1 mpiexec -n 2 build/perf/bench_eigh_elpa
// Times are the slowest rank's (max over ranks of the fenced wall time); only rank 0 reports.
#include "perf_common.hpp"

#include <kess/core/io/generators.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#if defined(KESS_BENCH_ELPA)
#include <kess/comm/dense/block_cyclic_map.hpp>
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>

#include <elpa/elpa.h>
#include <mpi.h>
#endif

namespace {

void BM_elpa(benchmark::State& state) {
#if defined(KESS_BENCH_ELPA)
  const int n = state.range(0), pct = state.range(1), stages = state.range(2);
  const int nev = std::max(1, static_cast<int>(std::int64_t(n) * pct / 100));
  const int nblk = 64;
  auto world = kess::comm::Communicator::world();
  auto grid = kess::comm::ProcessGrid::squarest(world);
  kess::comm::BlockCyclicMap map(grid, n, n, nblk, nblk);
  const int lr = std::max(1, map.local_rows()), lc = std::max(1, map.local_cols());
  const auto Ah = kess::gen::random_symmetric(n, 42);
  std::vector<double> a0(std::size_t(lr) * lc), a(a0.size()), z(a0.size()), ev(n);
  for (int jl = 0; jl < map.local_cols(); ++jl)
    for (int il = 0; il < map.local_rows(); ++il)
      a0[il + std::size_t(jl) * lr] = Ah(map.global_row(il), map.global_col(jl));
  if (elpa_init(ELPA_API_VERSION) != ELPA_OK) {
    state.SkipWithError("elpa_init failed (API version)");
    return;
  }
  int err = 0;
  elpa_t h = elpa_allocate(&err);
  elpa_set(h, "na", n, &err);
  elpa_set(h, "nev", nev, &err);
  elpa_set(h, "local_nrows", lr, &err);
  elpa_set(h, "local_ncols", lc, &err);
  elpa_set(h, "nblk", nblk, &err);
  elpa_set(h, "mpi_comm_parent", static_cast<int>(MPI_Comm_c2f(world.native())), &err);
  elpa_set(h, "process_row", grid.myrow(), &err);
  elpa_set(h, "process_col", grid.mycol(), &err);
  if (elpa_setup(h) != ELPA_OK) {
    state.SkipWithError("elpa_setup failed");
    elpa_deallocate(h, &err);
    return;
  }
  elpa_set(h, "solver", stages == 1 ? ELPA_SOLVER_1STAGE : ELPA_SOLVER_2STAGE, &err);
  for (auto _ : state) {
    a = a0;
    MPI_Barrier(world.native());
    const double t0 = MPI_Wtime();
    elpa_eigenvectors(h, a.data(), ev.data(), z.data(), &err);
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, world.native());
    state.SetIterationTime(tmax);
    if (err != ELPA_OK) state.SkipWithError("elpa_eigenvectors failed");
  }
  elpa_deallocate(h, &err);
  elpa_uninit(&err);
  state.SetLabel(std::string("ELPA ") + (stages == 1 ? "1-stage" : "2-stage") + " on " +
                 std::to_string(world.size()) + " ranks (" + std::to_string(grid.nprow()) + "x" +
                 std::to_string(grid.npcol()) + ", nblk 64)");
#else
  state.SkipWithError(
      "ELPA not found at configure time (needs MPI; Debian: libelpa-dev, libscalapack-openmpi-dev)");
#endif
}

void args(benchmark::internal::Benchmark* bm) {
  for (int n : {1000, 2000, 4000})
    for (int pct : {100, 20})
      for (int stages : {1, 2}) bm->Args({n, pct, stages});
}

BENCHMARK(BM_elpa)->Apply(args)->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
