// The Householder chase kernel (eigh's stage 4, kess::hh_chase_apply) alone: n reflectors of
// length b applied to a (b + n - 1) x cols matrix, GFLOP/s (4 b n cols flops) and % of the floor.
//   BM_hh_chase_kess_paper/b/n/cols         the published mapping (one team per column)
//   BM_hh_chase_kess_fast/b/n/cols          compact-WY blocks (the default)
//   BM_hh_chase_kess_fast_scalar/b/n/cols   fast without the CUDA tensor-core kernel
#include "bench_util.hpp"

#include <kess/solvers/eigh.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

using kess::perf::bench::Exec;
using kess::perf::bench::Mem;

void hh_chase_kess(benchmark::State& state, kess::HhChaseVariant variant, bool tensor_cores) {
  const int b = state.range(0), n = state.range(1), nc = state.range(2);
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
  opts.tuning.tensor_cores = tensor_cores;
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
  state.counters["pct_of_floor"] =
      benchmark::Counter(floor * 100.0, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(kess::to_string(variant)) + (tensor_cores ? "" : " scalar"));
}

void BM_hh_chase_kess_paper(benchmark::State& s) {
  hh_chase_kess(s, kess::HhChaseVariant::paper, true);
}
void BM_hh_chase_kess_fast(benchmark::State& s) { hh_chase_kess(s, kess::HhChaseVariant::fast, true); }
void BM_hh_chase_kess_fast_scalar(benchmark::State& s) {
  hh_chase_kess(s, kess::HhChaseVariant::fast, false);
}

void shapes(benchmark::internal::Benchmark* bm) {
  for (int b : {32, 64, 128})
    for (int n : {1024, 4096, 16384})
      for (int nc : {1024, 8192}) bm->Args({b, n, nc});
}
// b = 64 (the eigensolver's GPU band): the tensor-core kernel against the scalar one.
void shapes_b64(benchmark::internal::Benchmark* bm) {
  for (int n : {4096, 16384}) bm->Args({64, n, 16384});
}

BENCHMARK(BM_hh_chase_kess_paper)
    ->ArgNames({"band_width", "n", "cols"})
    ->Apply(shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_hh_chase_kess_fast)
    ->ArgNames({"band_width", "n", "cols"})
    ->Apply(shapes)
    ->Apply(shapes_b64)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_hh_chase_kess_fast_scalar)
    ->ArgNames({"band_width", "n", "cols"})
    ->Apply(shapes_b64)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
