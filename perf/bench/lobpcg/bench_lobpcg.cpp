// LOBPCG on a half-stored matrix: the nev lowest eigenpairs of the spin-1/2 Heisenberg ring of L
// sites in its S^z = 0 sector (kess::gen::heisenberg), tol 1e-8 (kess's backward-error test).
//   BM_lobpcg_kess/L/nev/block/precond   kess::lobpcg with block size `block` and preconditioner
//                                        0 none, 1 Jacobi, 2 FOM (default tile and steps); the
//                                        CsbMatrix (automatic β) is built once per L, not timed
// One lobpcg call per repetition (Iterations(1)), timed between fences of its execution space.
// Counters: lobpcg_iterations, spmm_count, converged (1/0), the seconds of LobpcgResult::seconds
// (spmm_s, ortho_s, rr_s, precond_s), n, stored_nnz and eigenvalue0 (the lowest eigenvalue, for
// the peers of perf/scripts/lobpcg_peers.py). ("iterations" is Google Benchmark's own JSON key.)
// The SpMM alone is in bench_spmm.
#include "bench_util.hpp"
#include "problem_cache.hpp"

#include <kess/solvers/lobpcg.hpp>

#include <benchmark/benchmark.h>

#include <string>
#include <type_traits>
#include <vector>

namespace {

using kess::perf::bench::Exec;
using Mem = Exec::memory_space;

struct Problem {
  std::string name;
  kess::CsbMatrix<double, Mem> H;
};

const Problem& problem(int L) {
  return kess::perf::bench::cached_problem<Problem>(L, [L](Problem& p) {
    const auto triangle = kess::gen::heisenberg(L);
    p.name = triangle.name;
    p.H = kess::make_csb<double, Mem>(triangle);
  });
}

void BM_lobpcg_kess(benchmark::State& state) {
  const int L = static_cast<int>(state.range(0));
  const int precond = static_cast<int>(state.range(3));
  const Problem& p = problem(L);
  kess::LobpcgOptions o;
  o.nev = static_cast<int>(state.range(1));
  o.block_size = static_cast<int>(state.range(2));
  o.tol = 1e-8;
  o.preconditioner = precond == 0   ? kess::Preconditioner::none
                     : precond == 1 ? kess::Preconditioner::jacobi
                                    : kess::Preconditioner::fom;
  Exec exec;
  kess::LobpcgResult<double, Mem> r;
  for (auto _ : state) {
    exec.fence();
    Kokkos::Timer timer;
    r = kess::lobpcg(exec, p.H, o);
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
  state.counters["lobpcg_iterations"] = r.iterations;
  state.counters["spmm_count"] = double(r.spmm_count);
  state.counters["converged"] = r.converged ? 1 : 0;
  state.counters["spmm_s"] = r.seconds.spmm;
  state.counters["ortho_s"] = r.seconds.orthonormalization;
  state.counters["rr_s"] = r.seconds.rayleigh_ritz;
  state.counters["precond_s"] = r.seconds.preconditioner;
  state.counters["n"] = double(p.H.rows());
  state.counters["stored_nnz"] = double(p.H.stored_nonzeros());
  state.counters["eigenvalue0"] = r.eigenvalues.empty() ? 0.0 : r.eigenvalues.front();
  state.SetLabel(p.name + ", kess::lobpcg, " + kess::to_string(o.preconditioner));
}

const bool registered = [] {
#if defined(KOKKOS_ENABLE_CUDA)
  constexpr bool cuda = std::is_same<Exec, Kokkos::Cuda>::value;
#else
  constexpr bool cuda = false;
#endif
  auto* b = benchmark::RegisterBenchmark("BM_lobpcg_kess", &BM_lobpcg_kess)
                ->ArgNames({"L", "nev", "block", "precond"});
  const std::vector<int> sizes = cuda ? std::vector<int>{24, 26} : std::vector<int>{16, 18};
  for (int L : sizes)
    for (int precond : {2, 0}) b->Args({L, 8, 16, precond});
  b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
