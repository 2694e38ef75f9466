// kess::eigh against LAPACK (host) and cuSOLVER (CUDA builds) in the same process, each
// implementation its own benchmark:
//   BM_eigh_<impl>/n/vectors_pct          A = kess::gen::random_symmetric(n, 42), the
//                                         vectors_pct % smallest eigenpairs (100: all)
//     kess_two_stage                      two-stage, stage 3 as EighTridiagonal::automatic picks
//     kess_two_stage_tridiag_dc           two-stage, stage 3 by kess's divide and conquer
//     kess_two_stage_tridiag_lapack       two-stage, stage 3 by host LAPACK (GPU builds)
//     kess_one_stage                      one-stage (dsytrd's reduction)
//     kess_one_stage_in_a                 one-stage with overwrite_a (A restored outside the timed
//                                         region: dsyevd's semantics)
//     lapack_dsyevd, lapack_dsyevr        all vectors / the nev smallest (MRRR)
//     cusolver_syevd, cusolver_syevdx     all vectors / the nev smallest by index range
//   BM_eigh_kess_two_stage_band_width/n/vectors_pct/band_width   the two-stage band width swept
//   BM_eigh_generalized_<impl>/n          A x = lambda B x (random A, random SPD B), all vectors:
//     kess (the reduction where EighGeneralized::automatic puts it), lapack_dsygvd (CPU builds);
//     kess_lapack_reduction, cusolver_sygvd (GPU builds)
//   BM_bulge_chase_kess/n/band_width/host_threads   stage 2 alone on the host (0: kess's host
//                                         threads), the reflectors recorded as eigh does
//   BM_secular_roots_<impl>/k             all k roots of one merge's secular equation on one thread
//                                         (ascending poles, ||z|| = 1, rho = 1): kess, lapack_dlaed4
// kess runs on the default execution space, LAPACK on the host BLAS threads (OPENBLAS_NUM_THREADS).
// kess's per-stage seconds are counters (the peers report them as zeros).
#include "bench_util.hpp"
#include "cusolver.hpp"
#include "lapack.hpp"

#include <kess/core/io/generators.hpp>
#include <kess/solvers/eigh.hpp>
#include <kess/solvers/eigh/detail/bulge_chase.hpp>
#include <kess/solvers/eigh/detail/secular.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using kess::perf::bench::device_copy;
using kess::perf::bench::DeviceMatrix;
using kess::perf::bench::Exec;
using kess::perf::bench::kHost;
namespace peers = kess::perf::peers;

int nev_of(int n, int pct) { return std::max(1, static_cast<int>(std::int64_t(n) * pct / 100)); }

/// kess's per-stage seconds (the mean over the iterations: sum times k) as counters. The peers
/// report the same counters as zeros: Google Benchmark's CSV reporter aborts when a run has a
/// counter the first run of the file did not (random interleaving may start with a peer).
void stage_counters(benchmark::State& state, const kess::EighTimings& sum, double k) {
  state.counters["t_check"] = sum.check * k;
  state.counters["t1_band"] = sum.band_reduce * k;
  state.counters["t2_chase"] = sum.bulge_chase * k;
  state.counters["t3_tridiag"] = sum.tridiagonal * k;
  state.counters["t3_host"] = sum.tridiagonal_host * k;
  state.counters["t4_hh"] = sum.hh_chase * k;
  state.counters["t5_bandbt"] = sum.band_backtransform * k;
  state.counters["t_sytrd"] = sum.tridiagonalize * k;
  state.counters["t_ormtr"] = sum.backtransform * k;
  state.counters["t_chol"] = sum.cholesky * k;
  state.counters["t_backsub"] = sum.back_substitution * k;
}

/// Adds one call's timings to sum.
void add_timings(kess::EighTimings& sum, const kess::EighTimings& t) {
  sum.check += t.check;
  sum.band_reduce += t.band_reduce;
  sum.bulge_chase += t.bulge_chase;
  sum.tridiagonal += t.tridiagonal;
  sum.tridiagonal_host += t.tridiagonal_host;
  sum.hh_chase += t.hh_chase;
  sum.band_backtransform += t.band_backtransform;
  sum.tridiagonalize += t.tridiagonalize;
  sum.backtransform += t.backtransform;
  sum.cholesky += t.cholesky;
  sum.back_substitution += t.back_substitution;
}

// ---- kess::eigh ---------------------------------------------------------------------------------

struct KessEigh {
  kess::EighMethod method;
  kess::EighTridiagonal tridiagonal;
  bool overwrite_a;
};

void eigh_kess(benchmark::State& state, const KessEigh& variant, int band_width) {
  const int n = state.range(0), pct = state.range(1), nev = nev_of(n, pct);
  const auto Ah = kess::gen::random_symmetric(n, 42);
  Exec exec;
  DeviceMatrix A(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::bench::A"), n, n);
  Kokkos::deep_copy(exec, A, Ah);
  kess::EighOptions opts;
  opts.nev = nev;
  opts.method = variant.method;
  opts.tridiagonal = variant.tridiagonal;
  opts.overwrite_a = variant.overwrite_a;
  opts.band_width = band_width;
  {  // warm-up, untimed, on a 1024 x 1024 problem with the same options (kernel loading, BLAS
     // handles and workspaces are first-call costs, not the solver's)
    const int nw = std::min(n, 1024);
    DeviceMatrix Aw("kess::bench::A_warm", nw, nw);
    Kokkos::deep_copy(Aw, kess::gen::random_symmetric(nw, 7));
    kess::EighOptions ow = opts;
    ow.nev = nev_of(nw, pct);
    ow.band_width = 0;
    kess::eigh(exec, Aw, ow);
    exec.fence();
  }
  kess::EighTimings sum;
  int iters = 0;
  for (auto _ : state) {
    if (opts.overwrite_a) Kokkos::deep_copy(exec, A, Ah);
    exec.fence();
    Kokkos::Timer timer;
    auto r = kess::eigh(exec, A, opts);
    exec.fence();
    state.SetIterationTime(timer.seconds());
    add_timings(sum, r.timings);
    if (++iters == 1)
      state.SetLabel(std::string("kess ") + kess::to_string(opts.method) +
                     (opts.overwrite_a ? " in A" : "") + " b=" + std::to_string(r.band_width) +
                     " stage2=" + r.chase + " stage3=" + r.tridiagonal);
  }
  stage_counters(state, sum, 1.0 / std::max(1, iters));
}

constexpr auto kAuto = kess::EighTridiagonal::automatic;
constexpr auto kTwoStage = kess::EighMethod::two_stage;
constexpr auto kOneStage = kess::EighMethod::one_stage;

void BM_eigh_kess_two_stage(benchmark::State& s) { eigh_kess(s, {kTwoStage, kAuto, false}, 0); }
void BM_eigh_kess_two_stage_tridiag_dc(benchmark::State& s) {
  eigh_kess(s, {kTwoStage, kess::EighTridiagonal::divide_conquer, false}, 0);
}
void BM_eigh_kess_two_stage_tridiag_lapack(benchmark::State& s) {
  eigh_kess(s, {kTwoStage, kess::EighTridiagonal::lapack, false}, 0);
}
void BM_eigh_kess_one_stage(benchmark::State& s) { eigh_kess(s, {kOneStage, kAuto, false}, 0); }
void BM_eigh_kess_one_stage_in_a(benchmark::State& s) { eigh_kess(s, {kOneStage, kAuto, true}, 0); }
void BM_eigh_kess_two_stage_band_width(benchmark::State& s) {
  eigh_kess(s, {kTwoStage, kAuto, false}, static_cast<int>(s.range(2)));
}

// ---- peers --------------------------------------------------------------------------------------

void BM_eigh_lapack_dsyevd(benchmark::State& state) {
  const int n = state.range(0);
  const auto Ah = kess::gen::random_symmetric(n, 42);
  kess::perf::HostMatrix a("a", n, n);
  std::vector<double> w(n);
  for (auto _ : state) {
    Kokkos::deep_copy(a, Ah);
    Kokkos::Timer timer;
    peers::lapack::dsyevd(a, w.data());
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel("LAPACK dsyevd (all vectors)");
  stage_counters(state, {}, 0.0);
}

void BM_eigh_lapack_dsyevr(benchmark::State& state) {
  const int n = state.range(0), nev = nev_of(n, state.range(1));
  const auto Ah = kess::gen::random_symmetric(n, 42);
  kess::perf::HostMatrix a("a", n, n), z("z", n, nev);
  std::vector<double> w(n);
  for (auto _ : state) {
    Kokkos::deep_copy(a, Ah);
    Kokkos::Timer timer;
    peers::lapack::dsyevr(a, 1, nev, w.data(), z);
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel("LAPACK dsyevr");
  stage_counters(state, {}, 0.0);
}

/// cuSOLVER syevd (all vectors) or syevdx (eigenpairs 1 .. nev) on the default CUDA stream; the
/// solve itself, with its host synchronizations, is timed.
void eigh_cusolver(benchmark::State& state, bool subset) {
  stage_counters(state, {}, 0.0);
  if (!peers::cusolver::available()) {
    state.SkipWithError("cuSOLVER peer needs a CUDA build with cuSOLVER");
    return;
  }
  const int n = state.range(0), pct = state.range(1), nev = nev_of(n, pct);
  const auto Ah = kess::gen::random_symmetric(n, 42);
  DeviceMatrix A("kess::bench::cusolver_A", n, n);
  peers::cusolver::Syevd solve(A.data(), n, subset ? nev : 0);
  {  // warm-up, untimed: the library's kernels are loaded on first use (CUDA lazy loading)
    const int nw = std::min(n, 1024);
    const DeviceMatrix Aw = device_copy(kess::gen::random_symmetric(nw, 7), "kess::bench::A_warm");
    solve(Aw.data(), nw, nev_of(nw, pct));
    Kokkos::fence();
  }
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::fence();
    Kokkos::Timer timer;
    solve(A.data(), n, nev);
    Kokkos::fence();
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel(solve.label());
}
void BM_eigh_cusolver_syevd(benchmark::State& s) { eigh_cusolver(s, false); }
void BM_eigh_cusolver_syevdx(benchmark::State& s) { eigh_cusolver(s, true); }

// ---- generalized --------------------------------------------------------------------------------

void eigh_generalized_kess(benchmark::State& state, kess::EighGeneralized where) {
  const int n = state.range(0);
  Exec exec;
  DeviceMatrix A = device_copy(kess::gen::random_symmetric(n, 42), "kess::bench::A");
  DeviceMatrix B = device_copy(kess::gen::random_spd(n, 43), "kess::bench::B");
  kess::EighOptions opts;
  opts.generalized = where;
  {  // warm-up, untimed
    const int nw = std::min(n, 1024);
    const DeviceMatrix Aw = device_copy(kess::gen::random_symmetric(nw, 7), "kess::bench::A_warm");
    const DeviceMatrix Bw = device_copy(kess::gen::random_spd(nw, 8), "kess::bench::B_warm");
    kess::eigh(exec, Aw, Bw, opts);
    exec.fence();
  }
  kess::EighTimings sum;
  int iters = 0;
  for (auto _ : state) {
    exec.fence();
    Kokkos::Timer timer;
    auto r = kess::eigh(exec, A, B, opts);
    exec.fence();
    state.SetIterationTime(timer.seconds());
    add_timings(sum, r.timings);
    if (++iters == 1)
      state.SetLabel(std::string("kess generalized (reduction ") + r.generalized + ") " +
                     kess::to_string(r.method) + " stage3=" + r.tridiagonal);
  }
  stage_counters(state, sum, 1.0 / std::max(1, iters));
}
void BM_eigh_generalized_kess(benchmark::State& s) {
  eigh_generalized_kess(s, kess::EighGeneralized::automatic);
}
void BM_eigh_generalized_kess_lapack_reduction(benchmark::State& s) {
  eigh_generalized_kess(s, kess::EighGeneralized::lapack);
}

void BM_eigh_generalized_lapack_dsygvd(benchmark::State& state) {
  const int n = state.range(0);
  const auto Ah = kess::gen::random_symmetric(n, 42);
  const auto Bh = kess::gen::random_spd(n, 43);
  kess::perf::HostMatrix a("a", n, n), b("b", n, n);
  std::vector<double> w(n);
  for (auto _ : state) {
    Kokkos::deep_copy(a, Ah);
    Kokkos::deep_copy(b, Bh);
    Kokkos::Timer timer;
    peers::lapack::dsygvd(a, b, w.data());
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel("LAPACK dsygvd (all vectors)");
  stage_counters(state, {}, 0.0);
}

/// cuSOLVER sygvd (itype 1, all vectors) on the default CUDA stream, a warm-up call untimed.
void BM_eigh_generalized_cusolver_sygvd(benchmark::State& state) {
  stage_counters(state, {}, 0.0);
  if (!peers::cusolver::available()) {
    state.SkipWithError("cuSOLVER peer needs a CUDA build with cuSOLVER");
    return;
  }
  const int n = state.range(0);
  const auto Ah = kess::gen::random_symmetric(n, 42);
  const auto Bh = kess::gen::random_spd(n, 43);
  DeviceMatrix A("kess::bench::cusolver_A", n, n), B("kess::bench::cusolver_B", n, n);
  peers::cusolver::Sygvd solve(A.data(), B.data(), n);
  {
    const int nw = std::min(n, 1024);
    const DeviceMatrix Aw = device_copy(kess::gen::random_symmetric(nw, 7), "kess::bench::A_warm");
    const DeviceMatrix Bw = device_copy(kess::gen::random_spd(nw, 8), "kess::bench::B_warm");
    solve(Aw.data(), Bw.data(), nw);
    Kokkos::fence();
  }
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::deep_copy(B, Bh);
    Kokkos::fence();
    Kokkos::Timer timer;
    solve(A.data(), B.data(), n);
    Kokkos::fence();
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel(peers::cusolver::Sygvd::label());
}

// ---- stages alone -------------------------------------------------------------------------------

void BM_bulge_chase_kess(benchmark::State& state) {
  const int n = state.range(0), b = state.range(1), threads = state.range(2);
  kess::detail::eigh::BandMatrix band(n, b);
  for (int c = 0; c < n; ++c)
    for (int r = c; r < std::min(n, c + b + 1); ++r) band(r, c) = kess::gen::random_entry(9, r, c);
  std::vector<double> d, e;
  for (auto _ : state) {
    kess::detail::eigh::BandMatrix work = band;  // the chase works in place
    kess::detail::eigh::ChaseReflectors refl;
    Kokkos::Timer timer;
    kess::detail::eigh::bulge_chase(work, d, e, &refl, threads);
    state.SetIterationTime(timer.seconds());
  }
  // About 6 b n^2 flops.
  state.counters["GFLOPs"] = benchmark::Counter(6.0 * b * double(n) * n * state.iterations() / 1e9,
                                                benchmark::Counter::kIsRate);
}

/// The secular equation's poles d (ascending, gaps in (0, 2)) and weights z (||z|| = 1).
void secular_problem(int k, std::vector<double>& d, std::vector<double>& z) {
  d.resize(k);
  z.resize(k);
  double nz = 0;
  for (int i = 0; i < k; ++i) {
    d[i] = i + 0.5 * kess::gen::random_entry(5, i, 0);
    z[i] = kess::gen::random_entry(6, i, 0);
    nz += z[i] * z[i];
  }
  for (double& x : z) x /= std::sqrt(nz);
}

void BM_secular_roots_lapack_dlaed4(benchmark::State& state) {
  const int k = state.range(0);
  std::vector<double> d, z, delta(k);
  secular_problem(k, d, z);
  for (auto _ : state) {
    Kokkos::Timer timer;
    peers::lapack::dlaed4_all_roots(k, d.data(), z.data(), delta.data());
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel("LAPACK dlaed4");
}

void BM_secular_roots_kess(benchmark::State& state) {
  const int k = state.range(0);
  std::vector<double> d, z, tau(k);
  std::vector<int> orig(k);
  secular_problem(k, d, z);
  for (auto _ : state) {
    Kokkos::Timer timer;
    kess::detail::eigh::secular_roots_host(k, d.data(), z.data(), 1.0, 0, k, orig.data(),
                                           tau.data());
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel("kess host roots");
}

// ---- registration: which variant runs at which sizes (GPU-only ones are left out of CPU builds) --

std::vector<int> eigh_sizes() {
  return kHost ? std::vector<int>{500, 1000, 2000, 4000} : std::vector<int>{4096, 8192, 16384, 20000};
}

/// Registers fn as `name` over (n, vectors_pct) for every size and percentage keep() accepts.
void add_eigh(const char* name, benchmark::internal::Function* fn, bool (*keep)(int n, int pct)) {
  auto* b = benchmark::RegisterBenchmark(name, fn)->ArgNames({"n", "vectors_pct"});
  for (int n : eigh_sizes())
    for (int pct : {100, 20})
      if (keep(n, pct)) b->Args({n, pct});
  b->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
}

void add_generalized(const char* name, benchmark::internal::Function* fn) {
  auto* b = benchmark::RegisterBenchmark(name, fn)->ArgName("n");
  for (int n : kHost ? eigh_sizes() : std::vector<int>{8192, 16384}) b->Arg(n);
  b->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);
}

const bool registered = [] {
  const auto all = [](int, int) { return true; };
  const auto all_vectors = [](int, int pct) { return pct == 100; };
  const auto subset = [](int, int pct) { return pct == 20; };
  // The host peers take minutes at the largest GPU sizes: up to n = 8192 there.
  const auto peer_all = [](int n, int pct) { return pct == 100 && (kHost || n <= 8192); };
  const auto peer_subset = [](int n, int pct) { return pct == 20 && (kHost || n <= 8192); };
  add_eigh("BM_eigh_kess_two_stage", BM_eigh_kess_two_stage, all);
  add_eigh("BM_eigh_kess_one_stage", BM_eigh_kess_one_stage, all);
  // divide and conquer: all vectors on the host (where automatic picks LAPACK), subsets on GPUs
  add_eigh("BM_eigh_kess_two_stage_tridiag_dc", BM_eigh_kess_two_stage_tridiag_dc,
           kHost ? +all_vectors : +subset);
  if (kHost) {
    add_eigh("BM_eigh_kess_one_stage_in_a", BM_eigh_kess_one_stage_in_a, all_vectors);
  } else {
    add_eigh("BM_eigh_kess_two_stage_tridiag_lapack", BM_eigh_kess_two_stage_tridiag_lapack,
             [](int n, int pct) { return pct == 100 && n <= 8192; });
    add_eigh("BM_eigh_cusolver_syevd", BM_eigh_cusolver_syevd, all_vectors);
    add_eigh("BM_eigh_cusolver_syevdx", BM_eigh_cusolver_syevdx, subset);
  }
  add_eigh("BM_eigh_lapack_dsyevd", BM_eigh_lapack_dsyevd, peer_all);
  add_eigh("BM_eigh_lapack_dsyevr", BM_eigh_lapack_dsyevr, peer_subset);

  // The two-stage band width swept (n = 2000, all vectors).
  auto* sweep = benchmark::RegisterBenchmark("BM_eigh_kess_two_stage_band_width",
                                             BM_eigh_kess_two_stage_band_width);
  sweep->ArgNames({"n", "vectors_pct", "band_width"});
  for (int b : {16, 32, 48, 64, 96}) sweep->Args({2000, 100, b});
  sweep->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);

  // generalized: kess against dsygvd on the host, against cuSOLVER sygvd on GPUs
  add_generalized("BM_eigh_generalized_kess", BM_eigh_generalized_kess);
  if (kHost) {
    add_generalized("BM_eigh_generalized_lapack_dsygvd", BM_eigh_generalized_lapack_dsygvd);
  } else {
    add_generalized("BM_eigh_generalized_kess_lapack_reduction",
                    BM_eigh_generalized_kess_lapack_reduction);
    add_generalized("BM_eigh_generalized_cusolver_sygvd", BM_eigh_generalized_cusolver_sygvd);
  }

  benchmark::RegisterBenchmark("BM_bulge_chase_kess", BM_bulge_chase_kess)
      ->ArgNames({"n", "band_width", "host_threads"})
      ->ArgsProduct({{2000, 4000}, {64, 96}, {1, 0}})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  for (auto [name, fn] : {std::pair{"BM_secular_roots_kess", BM_secular_roots_kess},
                          std::pair{"BM_secular_roots_lapack_dlaed4", BM_secular_roots_lapack_dlaed4}})
    benchmark::RegisterBenchmark(name, fn)
        ->ArgName("k")
        ->Arg(1000)
        ->Arg(3296)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
