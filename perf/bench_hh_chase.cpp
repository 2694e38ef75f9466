// Householder chase: both variants, GFLOP/s (4 b n NC flops) and % of the floor.
//   args: variant (0 paper, 1 fast, 2 fast without tensor cores), b, n, NC
#include "perf_common.hpp"

#include <kess/solvers/eigh/detail/hh_chase_apply.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

void BM_hh_chase(benchmark::State& state) {
  const auto variant = state.range(0) == 0 ? kess::HhChaseVariant::paper : kess::HhChaseVariant::fast;
  const int b = state.range(1), n = state.range(2), nc = state.range(3);
  kess::perf::HostMatrix Vh("V", b, n), Xh("X", b + n - 1, nc);
  kess::perf::HostVector tauh("tau", n);
  kess::perf::random_reflectors(b, n, 7, Vh, tauh);
  kess::perf::random_matrix(11, Xh);
  auto V = Kokkos::create_mirror_view_and_copy(Mem(), Vh);
  auto tau = Kokkos::create_mirror_view_and_copy(Mem(), tauh);
  auto X0 = Kokkos::create_mirror_view_and_copy(Mem(), Xh);
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> X("X", b + n - 1, nc);
  Exec exec;
  kess::HhChaseOptions opts;
  opts.variant = variant;
  opts.tuning.tensor_cores = state.range(0) != 2;
  opts.check_input = false;
  Kokkos::deep_copy(exec, X, X0);
  kess::hh_chase_apply(exec, V, tau, X, opts);  // warm-up
  exec.fence();
  for (auto _ : state) {
    Kokkos::deep_copy(exec, X, X0);  // fresh data every time, outside the timed region
    exec.fence();
    Kokkos::Timer timer;
    kess::hh_chase_apply(exec, V, tau, X, opts);
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
  const double flops = kess::hh_chase_flops(b, n, nc);
  const double bytes = 8.0 * (2.0 * (b + n - 1) * nc + double(b) * n + n);
  const double floor = kess::perf::floor_seconds(kess::perf::ceilings(), flops, bytes);
  state.counters["GFLOPs"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["floor_ms"] = floor * 1e3;
  // Percentage of the floor reached: 100 means at the floor.
  state.counters["pct_of_floor"] = benchmark::Counter(
      floor * 100.0, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(kess::to_string(variant)) + (state.range(0) == 2 ? " scalar" : ""));
}

void args(benchmark::internal::Benchmark* bm) {
  for (int variant : {0, 1})
    for (int b : {32, 64, 128})
      for (int n : {1024, 4096, 16384})
        for (int nc : {1024, 8192}) bm->Args({variant, b, n, nc});
  // b = 64 (the eigensolver's GPU band): the tensor-core kernel against the scalar one.
  for (int variant : {1, 2})
    for (int n : {4096, 16384}) bm->Args({variant, 64, n, 16384});
}

BENCHMARK(BM_hh_chase)->Apply(args)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
