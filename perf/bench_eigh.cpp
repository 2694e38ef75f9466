// kess::eigh (two-stage and one-stage) against LAPACK dsyevd and dsyevr on the host and, in CUDA
// builds, cuSOLVER syevd on the GPU, same run.
//   args: n, nev percent (100 = all vectors), solver (0 kess two-stage, 1 kess one-stage,
//         2 LAPACK dsyevd, 3 LAPACK dsyevr, 4 cuSOLVER syevd (all vectors; CUDA builds),
//         5 kess two-stage with stage 3 by host LAPACK, 6 kess two-stage with stage 3 by
//         kess::detail::eigh::tridiag_dc; solver 0 lets EighTridiagonal::automatic choose), 7 cuSOLVER syevdx
//         (the nev lowest eigenpairs by index range; CUDA builds), 8 kess one-stage with
//         opts.overwrite_a (A restored outside the timed region: dsyevd's semantics))
// BM_eigh_generalized/n/solver: A x = lambda B x (random A, random SPD B), all vectors: 0 kess
// (the reduction where EighGeneralized::automatic puts it), 1 kess with the reduction by host
// LAPACK (GPU builds: the path of sessions before 18), 2 LAPACK dsygvd, 3 cuSOLVER sygvd (CUDA).
// kess runs on the default execution space; LAPACK on the host BLAS threads
// (OPENBLAS_NUM_THREADS). Per-stage times of kess are reported as counters (seconds).
// BM_bulge_chase/n/b/threads: stage 2 alone on the host (kess::detail::eigh::bulge_chase on a random band, with
// the reflectors recorded as eigh does; threads 0: kess::core::detail::host_threads()).
// BM_secular_roots/k/solver: all k roots of one merge's secular equation on one thread (random
// ascending poles, ||z|| = 1, rho = 1): 0 LAPACK dlaed4, 1 kess::detail::eigh::secular_roots_host.
#include "perf_common.hpp"

#include <kess/solvers/eigh/detail/bulge_chase.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh/detail/secular.hpp>
#include <kess/solvers/eigh.hpp>

#include <benchmark/benchmark.h>

#include <type_traits>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA) && defined(KESS_BENCH_CUSOLVER)
#include <cusolverDn.h>
#endif

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;

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

void BM_eigh(benchmark::State& state) {
  const int n = state.range(0), pct = state.range(1), solver = state.range(2);
  const int nev = std::max(1, static_cast<int>(std::int64_t(n) * pct / 100));
  const auto Ah = kess::gen::random_symmetric(n, 42);
  if (solver == 4 || solver == 7) {
#if defined(KOKKOS_ENABLE_CUDA) && defined(KESS_BENCH_CUSOLVER)
    // cuSOLVER's dense syevd (all vectors) or syevdx (eigenpairs 1 .. nev) on the default CUDA
    // stream (handle and workspace made outside the timed region; the solve itself, with its host
    // synchronizations, is timed).
    const bool subset = solver == 7;
    Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::CudaSpace> A("A", n, n);
    Kokkos::View<double*, Kokkos::CudaSpace> w("w", n);
    Kokkos::View<int, Kokkos::CudaSpace> info("info");
    cusolverDnHandle_t handle;
    cusolverDnCreate(&handle);
    const auto vec = CUSOLVER_EIG_MODE_VECTOR;
    const auto low = CUBLAS_FILL_MODE_LOWER;
    int lwork = 0, found = 0;
    if (subset)
      cusolverDnDsyevdx_bufferSize(handle, vec, CUSOLVER_EIG_RANGE_I, low, n, A.data(), n, 0.0, 0.0,
                                   1, nev, &found, w.data(), &lwork);
    else
      cusolverDnDsyevd_bufferSize(handle, vec, low, n, A.data(), n, w.data(), &lwork);
    Kokkos::View<double*, Kokkos::CudaSpace> work("work", lwork);
    auto solve = [&](double* a, int m, int k) {
      if (subset)
        cusolverDnDsyevdx(handle, vec, CUSOLVER_EIG_RANGE_I, low, m, a, m, 0.0, 0.0, 1, k, &found,
                          w.data(), work.data(), lwork, info.data());
      else
        cusolverDnDsyevd(handle, vec, low, m, a, m, w.data(), work.data(), lwork, info.data());
    };
    {  // warm-up, untimed: the library's kernels are loaded on first use (CUDA lazy loading)
      const int nw = std::min(n, 1024);
      const auto Awh = kess::gen::random_symmetric(nw, 7);
      Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::CudaSpace> Aw("Aw", nw, nw);
      Kokkos::deep_copy(Aw, Awh);
      solve(Aw.data(), nw, std::max(1, nw * pct / 100));
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
    cusolverDnDestroy(handle);
    state.SetLabel(subset ? "cuSOLVER syevdx (" + std::to_string(nev) + " vectors)"
                          : std::string("cuSOLVER syevd (all vectors)"));
#else
    state.SkipWithError("cuSOLVER peer needs a CUDA build");
#endif
    stage_counters(state, {}, 0.0);
    return;
  }
  if (solver == 2 || solver == 3) {  // LAPACK on the host
    kess::perf::HostMatrix a("a", n, n), z("z", n, nev);
    std::vector<double> w(n);
    for (auto _ : state) {
      Kokkos::deep_copy(a, Ah);
      Kokkos::Timer timer;
      int m = 0;
      if (solver == 2)
        kess::core::lapack::syevd('V', 'L', n, a.data(), n, w.data());
      else
        kess::core::lapack::syevr('V', 'L', n, a.data(), n, 1, nev, &m, w.data(), z.data(), n);
      state.SetIterationTime(timer.seconds());
    }
    state.SetLabel(solver == 2 ? "LAPACK dsyevd (all vectors)" : "LAPACK dsyevr");
    stage_counters(state, {}, 0.0);
    return;
  }
  Exec exec;
  Mat A(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::bench::A"), n, n);
  Kokkos::deep_copy(exec, A, Ah);
  kess::EighOptions opts;
  opts.nev = nev;
  opts.method = solver == 1 || solver == 8 ? kess::EighMethod::one_stage : kess::EighMethod::two_stage;
  opts.overwrite_a = solver == 8;
  if (solver == 5) opts.tridiagonal = kess::EighTridiagonal::lapack;
  if (solver == 6) opts.tridiagonal = kess::EighTridiagonal::divide_conquer;
  opts.band_width = static_cast<int>(state.range(3));
  {  // warm-up, untimed, on a 1024 x 1024 problem with the same options (kernel loading, BLAS
     // handles and workspaces are first-call costs, not the solver's)
    const int nw = std::min(n, 1024);
    const auto Awh = kess::gen::random_symmetric(nw, 7);
    Mat Aw("kess::bench::A_warm", nw, nw);
    Kokkos::deep_copy(Aw, Awh);
    kess::EighOptions ow = opts;
    ow.nev = std::max<std::int64_t>(1, std::int64_t(nw) * pct / 100);
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
    ++iters;
    if (iters == 1)
      state.SetLabel(std::string("kess ") + kess::to_string(opts.method) +
                     (opts.overwrite_a ? " in A" : "") + " b=" + std::to_string(r.band_width) +
                     " stage2=" + r.chase + " stage3=" + r.tridiagonal);
  }
  stage_counters(state, sum, 1.0 / std::max(1, iters));
}

void BM_eigh_generalized(benchmark::State& state) {
  const int n = state.range(0), solver = state.range(1);
  const auto Ah = kess::gen::random_symmetric(n, 42);
  const auto Bh = kess::gen::random_spd(n, 43);
  if (solver == 3) {
#if defined(KOKKOS_ENABLE_CUDA) && defined(KESS_BENCH_CUSOLVER)
    // cuSOLVER sygvd (itype 1, all vectors) on the default CUDA stream; handle and workspace made
    // outside the timed region, a warm-up call untimed.
    using DMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::CudaSpace>;
    DMat A("A", n, n), B("B", n, n);
    Kokkos::View<double*, Kokkos::CudaSpace> w("w", n);
    Kokkos::View<int, Kokkos::CudaSpace> info("info");
    cusolverDnHandle_t handle;
    cusolverDnCreate(&handle);
    const auto type = CUSOLVER_EIG_TYPE_1;
    const auto vec = CUSOLVER_EIG_MODE_VECTOR;
    const auto low = CUBLAS_FILL_MODE_LOWER;
    int lwork = 0;
    cusolverDnDsygvd_bufferSize(handle, type, vec, low, n, A.data(), n, B.data(), n, w.data(),
                                &lwork);
    Kokkos::View<double*, Kokkos::CudaSpace> work("work", lwork);
    const auto solve = [&](double* a, double* b, int m) {
      cusolverDnDsygvd(handle, type, vec, low, m, a, m, b, m, w.data(), work.data(), lwork,
                       info.data());
    };
    {
      const int nw = std::min(n, 1024);
      DMat Aw("Aw", nw, nw), Bw("Bw", nw, nw);
      Kokkos::deep_copy(Aw, kess::gen::random_symmetric(nw, 7));
      Kokkos::deep_copy(Bw, kess::gen::random_spd(nw, 8));
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
    cusolverDnDestroy(handle);
    state.SetLabel("cuSOLVER sygvd (all vectors)");
#else
    state.SkipWithError("cuSOLVER peer needs a CUDA build");
#endif
    stage_counters(state, {}, 0.0);
    return;
  }
  if (solver == 2) {  // LAPACK dsygvd on the host
    kess::perf::HostMatrix a("a", n, n), b("b", n, n);
    std::vector<double> w(n);
    for (auto _ : state) {
      Kokkos::deep_copy(a, Ah);
      Kokkos::deep_copy(b, Bh);
      Kokkos::Timer timer;
      kess::core::lapack::sygvd(1, 'V', 'L', n, a.data(), n, b.data(), n, w.data());
      state.SetIterationTime(timer.seconds());
    }
    state.SetLabel("LAPACK dsygvd (all vectors)");
    stage_counters(state, {}, 0.0);
    return;
  }
  Exec exec;
  Mat A(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::bench::A"), n, n);
  Mat B(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::bench::B"), n, n);
  Kokkos::deep_copy(exec, A, Ah);
  Kokkos::deep_copy(exec, B, Bh);
  kess::EighOptions opts;
  opts.generalized = solver == 1 ? kess::EighGeneralized::lapack : kess::EighGeneralized::automatic;
  {  // warm-up, untimed
    const int nw = std::min(n, 1024);
    Mat Aw("kess::bench::A_warm", nw, nw), Bw("kess::bench::B_warm", nw, nw);
    Kokkos::deep_copy(Aw, kess::gen::random_symmetric(nw, 7));
    Kokkos::deep_copy(Bw, kess::gen::random_spd(nw, 8));
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

void generalized_args(benchmark::internal::Benchmark* bm) {
  const bool gpu = !std::is_same<Mem, Kokkos::HostSpace>::value;
  for (int n : gpu ? std::vector<int>{8192, 16384} : std::vector<int>{2000, 4000}) {
    bm->Args({n, 0});
    if (gpu) bm->Args({n, 1});
    bm->Args({n, gpu ? 3 : 2});
  }
}

BENCHMARK(BM_eigh_generalized)
    ->Apply(generalized_args)
    ->UseManualTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_bulge_chase(benchmark::State& state) {
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
  // About 6 b n^2 flops (docs/benchmarks.md).
  state.counters["GFLOPs"] = benchmark::Counter(6.0 * b * double(n) * n * state.iterations() / 1e9,
                                                benchmark::Counter::kIsRate);
}

BENCHMARK(BM_bulge_chase)
    ->ArgsProduct({{2000, 4000}, {64, 96}, {1, 0}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_secular_roots(benchmark::State& state) {
  const int k = state.range(0), solver = state.range(1);
  std::vector<double> d(k), z(k), delta(k), tau(k);
  std::vector<int> orig(k);
  double nz = 0;
  for (int i = 0; i < k; ++i) {
    d[i] = i + 0.5 * kess::gen::random_entry(5, i, 0);  // ascending, gaps in (0, 2)
    z[i] = kess::gen::random_entry(6, i, 0);
    nz += z[i] * z[i];
  }
  for (double& x : z) x /= std::sqrt(nz);
  for (auto _ : state) {
    Kokkos::Timer timer;
    if (solver == 0) {
      double lam = 0;
      for (int j = 0; j < k; ++j)
        kess::core::lapack::laed4(k, j + 1, d.data(), z.data(), delta.data(), 1.0, &lam);
    } else {
      kess::detail::eigh::secular_roots_host(k, d.data(), z.data(), 1.0, 0, k, orig.data(),
                                                tau.data());
    }
    state.SetIterationTime(timer.seconds());
  }
  state.SetLabel(solver == 0 ? "LAPACK dlaed4" : "kess host roots");
}
BENCHMARK(BM_secular_roots)
    ->ArgsProduct({{1000, 3296}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void args(benchmark::internal::Benchmark* bm) {
  const bool gpu = !std::is_same<Mem, Kokkos::HostSpace>::value;
  const std::vector<int> sizes = gpu ? std::vector<int>{4096, 8192, 16384, 20000}
                                     : std::vector<int>{1000, 2000, 4000};
  for (int n : sizes)
    for (int pct : {100, 20}) {
      bm->Args({n, pct, 0, 0});
      bm->Args({n, pct, 1, 0});
      if (gpu && pct == 100) bm->Args({n, pct, 4, 0});
      if (gpu && pct == 100 && n <= 8192) bm->Args({n, pct, 5, 0});
      if (gpu && pct == 20) bm->Args({n, pct, 6, 0});
      if (gpu && pct == 20) bm->Args({n, pct, 7, 0});
      if (!gpu && pct == 100) bm->Args({n, pct, 6, 0});
      if (!gpu && pct == 100) bm->Args({n, pct, 8, 0});
      if (!gpu || n <= 8192) bm->Args({n, pct, pct == 100 ? 2 : 3, 0});
    }
}

BENCHMARK(BM_eigh)->Apply(args)->UseManualTime()->Unit(benchmark::kSecond)->Iterations(1);

// Band width sweep of the two-stage path (n = 2000, all vectors).
BENCHMARK(BM_eigh)
    ->Args({2000, 100, 0, 16})
    ->Args({2000, 100, 0, 32})
    ->Args({2000, 100, 0, 48})
    ->Args({2000, 100, 0, 64})
    ->Args({2000, 100, 0, 96})
    ->Name("BM_eigh_b_sweep")
    ->UseManualTime()
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
