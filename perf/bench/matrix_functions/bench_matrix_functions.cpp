// The matrix functions, the Lyapunov and Riccati solvers against the Schur methods of host LAPACK
// in the same process, each implementation its own benchmark:
//   BM_sign_kess/n                     sign(A) of a random A, determinant scaling (2 n^3 flops an
//                                      iteration; newton_iterations counter)
//   BM_lyapunov_<impl>/n/shift_pct     A X + X A^T + Q = 0, A = R / sqrt(n) - shift_pct/100 I
//                                      (stable), Q SPD: kess (kess::lyapunov), lapack_bartels_stewart
//                                      (dgees, dtrsyl3, four GEMMs)
//   BM_riccati_<impl>/n/shift_pct      A^T X + X A - X G X + Q = 0 (A as above, G and Q SPD): kess
//                                      (kess::riccati), lapack_schur (dgees of the Hamiltonian with
//                                      the stable eigenvalues first, X = U21 U11^-1)
// Counters: newton_iterations (0 for the peers) and the relative residual (kess::lyapunov_residual,
// kess::riccati_residual) of the last run.
#include "bench_util.hpp"
#include "lapack.hpp"

#include <kess/core/io/generators.hpp>
#include <kess/solvers/matrix_functions.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace {

using kess::perf::HostMatrix;
using kess::perf::bench::device_copy;
using kess::perf::bench::DeviceMatrix;
using kess::perf::bench::Exec;
using kess::perf::bench::kHost;
namespace peers = kess::perf::peers;

// ---- sign ---------------------------------------------------------------------------------------

void BM_sign_kess(benchmark::State& state) {
  const int n = state.range(0);
  const DeviceMatrix A = device_copy(kess::gen::random_general(n, n, 3), "kess::bench::A");
  Exec exec;
  kess::SignOptions opts;
  opts.gauss_jordan.check_input = false;
  int iterations = 0;
  for (auto _ : state) {
    exec.fence();
    Kokkos::Timer timer;
    const auto r = kess::sign(exec, A, opts);
    exec.fence();
    state.SetIterationTime(timer.seconds());
    iterations = r.history.iterations;
  }
  state.counters["newton_iterations"] = iterations;
  kess::perf::bench::flop_counters(state, kess::sign_iteration_flops(n, false) * iterations);
}

// ---- test problems ------------------------------------------------------------------------------

/// R / sqrt(n) - shift I for a random R (entries in [-1, 1), variance 1/3): its eigenvalues lie in
/// a disk of radius about 0.58 around -shift, so A is stable for shift > 0.6 (shift 1: the
/// spectral abscissa is about -0.42; 0.7: about -0.12, more Newton iterations).
HostMatrix stable_matrix(int n, std::uint64_t seed, double shift = 1.0) {
  HostMatrix A = kess::gen::random_general(n, n, seed);
  const double s = 1.0 / std::sqrt(double(std::max(1, n)));
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) A(i, j) = A(i, j) * s - (i == j ? shift : 0.0);
  return A;
}

/// A random SPD matrix with a diagonal of about 1 (kess::gen::random_spd / (n + 1)).
HostMatrix spd_unit(int n, std::uint64_t seed) {
  HostMatrix B = kess::gen::random_spd(n, seed);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) B(i, j) /= n + 1.0;
  return B;
}

/// Times solve() (a kess::lyapunov or kess::riccati call) once an iteration on exec; returns the
/// last call's X and Newton iteration count.
template <class Solve>
std::pair<DeviceMatrix, int> timed_newton(benchmark::State& state, const Exec& exec,
                                          const Solve& solve) {
  DeviceMatrix X;
  int iterations = 0;
  for (auto _ : state) {
    exec.fence();
    Kokkos::Timer timer;
    auto r = solve();
    exec.fence();
    state.SetIterationTime(timer.seconds());
    X = r.X;
    iterations = r.history.iterations;
  }
  return {X, iterations};
}

void newton_counters(benchmark::State& state, int iterations, double residual) {
  state.counters["newton_iterations"] = iterations;
  state.counters["residual"] = residual;
}

double shift(const benchmark::State& state) { return state.range(1) / 100.0; }

// ---- Lyapunov -----------------------------------------------------------------------------------

void BM_lyapunov_kess(benchmark::State& state) {
  const int n = state.range(0);
  Exec exec;
  const DeviceMatrix A = device_copy(stable_matrix(n, 11, shift(state)), "kess::bench::A");
  const DeviceMatrix Q = device_copy(spd_unit(n, 12), "kess::bench::Q");
  kess::lyapunov(exec, device_copy(stable_matrix(256, 13), "w"),
                 device_copy(spd_unit(256, 14), "w"));  // warm-up
  const auto [X, iterations] =
      timed_newton(state, exec, [&] { return kess::lyapunov(exec, A, Q); });
  newton_counters(state, iterations, kess::lyapunov_residual(exec, A, Q, X));
  state.SetLabel("kess::lyapunov");
}

void BM_lyapunov_lapack_bartels_stewart(benchmark::State& state) {
  const int n = state.range(0);
  const HostMatrix Ah = stable_matrix(n, 11, shift(state)), Qh = spd_unit(n, 12);
  HostMatrix X("X", n, n);
  peers::lapack::LyapunovBartelsStewart peer(n);
  for (auto _ : state) {
    peer.prepare(Ah);
    Kokkos::Timer timer;
    peer.solve(Qh, X);
    state.SetIterationTime(timer.seconds());
  }
  newton_counters(state, 0, kess::lyapunov_residual(Kokkos::DefaultHostExecutionSpace(), Ah, Qh, X));
  state.SetLabel(peers::lapack::LyapunovBartelsStewart::label());
}

// ---- Riccati ------------------------------------------------------------------------------------

void BM_riccati_kess(benchmark::State& state) {
  const int n = state.range(0);
  Exec exec;
  const DeviceMatrix A = device_copy(stable_matrix(n, 21, shift(state)), "kess::bench::A");
  const DeviceMatrix G = device_copy(spd_unit(n, 22), "kess::bench::G");
  const DeviceMatrix Q = device_copy(spd_unit(n, 23), "kess::bench::Q");
  kess::riccati(exec, device_copy(stable_matrix(256, 24), "w"), device_copy(spd_unit(256, 25), "w"),
                device_copy(spd_unit(256, 26), "w"));  // warm-up
  const auto [X, iterations] =
      timed_newton(state, exec, [&] { return kess::riccati(exec, A, G, Q); });
  newton_counters(state, iterations, kess::riccati_residual(exec, A, G, Q, X));
  state.SetLabel("kess::riccati");
}

void BM_riccati_lapack_schur(benchmark::State& state) {
  const int n = state.range(0);
  const HostMatrix Ah = stable_matrix(n, 21, shift(state)), Gh = spd_unit(n, 22),
                   Qh = spd_unit(n, 23);
  HostMatrix X("X", n, n);
  peers::lapack::RiccatiSchur peer(n);
  for (auto _ : state) {
    peer.prepare(Ah, Gh, Qh);
    Kokkos::Timer timer;
    const int sdim = peer.solve(X);
    state.SetIterationTime(timer.seconds());
    if (sdim != n) state.SkipWithError("the Hamiltonian's stable subspace is not n-dimensional");
  }
  newton_counters(state, 0,
                  kess::riccati_residual(Kokkos::DefaultHostExecutionSpace(), Ah, Gh, Qh, X));
  state.SetLabel(peers::lapack::RiccatiSchur::label());
}

// ---- registration -------------------------------------------------------------------------------

/// (n, shift_pct) for shift 1 and 0.7; peers only up to peer_max on GPU builds (the host Schur
/// methods take minutes at the larger GPU sizes).
void add_newton(const char* name, benchmark::internal::Function* fn, const std::vector<int>& sizes,
                int peer_max) {
  auto* b = benchmark::RegisterBenchmark(name, fn)->ArgNames({"n", "shift_pct"});
  for (int n : sizes)
    if (n <= peer_max)
      for (int shift_pct : {100, 70}) b->Args({n, shift_pct});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);
}

const bool registered = [] {
  auto* sign = benchmark::RegisterBenchmark("BM_sign_kess", BM_sign_kess)->ArgName("n");
  for (int n : kHost ? std::vector<int>{500, 1000, 2000} : std::vector<int>{8192}) sign->Arg(n);
  sign->UseManualTime()->Unit(benchmark::kMillisecond);

  const std::vector<int> lyapunov = kHost ? std::vector<int>{500, 1000, 2000}
                                          : std::vector<int>{4096, 8192};
  const std::vector<int> riccati = kHost ? std::vector<int>{500, 1000}
                                         : std::vector<int>{2048, 4096};
  const int all = 1 << 30;
  add_newton("BM_lyapunov_kess", BM_lyapunov_kess, lyapunov, all);
  add_newton("BM_lyapunov_lapack_bartels_stewart", BM_lyapunov_lapack_bartels_stewart, lyapunov,
             kHost ? all : 4096);
  add_newton("BM_riccati_kess", BM_riccati_kess, riccati, all);
  add_newton("BM_riccati_lapack_schur", BM_riccati_lapack_schur, riccati, kHost ? all : 2048);
  return true;
}();

}  // namespace
