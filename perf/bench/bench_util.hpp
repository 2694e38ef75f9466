// What the benchmark suites share: device copies of host inputs and the rate counters.
#pragma once

#include "perf_common.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace kess::perf::bench {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using DeviceMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;

/// Whether the default execution space works in host memory (a CPU build): the suites register
/// host sizes then, and leave out the GPU-only peers and variants.
constexpr bool kHost = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;

/// A copy of h in the default execution space's memory.
inline DeviceMatrix device_copy(const HostMatrix& h, const std::string& label) {
  DeviceMatrix d(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), h.extent(0),
                 h.extent(1));
  auto m = Kokkos::create_mirror_view(d);
  Kokkos::deep_copy(m, h);
  Kokkos::deep_copy(d, m);
  return d;
}

/// GFLOP/s of `flops` per iteration, the floor (seconds) at the machine's ceilings and the
/// percentage of the floor reached (100: at the floor).
inline void flop_counters(benchmark::State& state, double flops, double bytes = 0.0) {
  state.counters["GFLOPs"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double floor = floor_seconds(ceilings(), flops, bytes);
  state.counters["floor_s"] = floor;
  state.counters["pct_of_floor"] =
      benchmark::Counter(floor * 100.0, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace kess::perf::bench
