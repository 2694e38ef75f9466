// Gauss-Jordan solve / inverse against their LAPACK peers in the same run (papers/002):
//   BM_gj_solve/n/NB/P/W   kess::solve, NRHS = n        (n^3 + 2 n^3 flops counted); P: where
//                          the panel LU runs, 0 automatic, 1 host (LAPACK), 2 device (kernels),
//                          3 device without the second instance (no panel/update overlap),
//                          4 device with tournament pivoting in the leaves (CUDA);
//                          W = 1: opts.overwrite_a (kess works in A, as dgesv does; A is
//                          restored outside the timed region)
//   BM_lapack_gesv/n       dgesv, NRHS = n               (same flop count, for equal GFLOP/s)
//   BM_gj_inverse/n/NB/P   kess::inverse                 (2 n^3)
//   BM_lapack_getri/n      dgetrf + dgetri               (2 n^3)
//   BM_gj_sign/n           kess::sign, determinant scaling (2 n^3 per iteration; iterations
//                          counter)
//   BM_lyapunov/n/s/c      A X + X A^T + Q = 0 (A = R / sqrt(n) - c/100 I, stable; Q SPD): s = 0
//                          kess::lyapunov, s = 1 Bartels-Stewart by host LAPACK (dgees, dtrsyl3,
//                          four GEMMs); counters: iterations, residual (kess::lyapunov_residual)
//   BM_riccati/n/s/c       A^T X + X A - X G X + Q = 0 (A as above, G and Q SPD): s = 0
//                          kess::riccati, s = 1 the Schur method by host LAPACK (dgees of the
//                          Hamiltonian with the stable eigenvalues first, X = U21 U11^-1)
//   BM_cusolver_gesv/n     cuSOLVER getrf + getrs, NRHS = n (CUDA builds; same flop count)
//   BM_cusolver_inverse/n  cuSOLVER getrf + getrs on the identity (CUDA builds; cuSOLVER has no
//                          getri)
//   BM_gj_panel/m/NB/T     the device panel LU alone (factor_panel_device, m x NB; T = 1:
//                          tournament pivoting in the leaves)
//   BM_gemm_update/n/NB/c/l/d  the rank-NB update alone, C (n x 2n) += H (n x NB) T (NB x 2n)
//                          through kess::core::gemm: the GEMM rate the Gauss-Jordan floors are written
//                          with; c > 0: in GEMMs of c columns, l > 0: on a partition of the device
//                          that leaves l multiprocessors out, d = 1: random H and T (else constant)
//   BM_host_dgemm/s/i      one host GEMM shape s that kess's solvers run (see kGemmShapes) by
//                          kess's own kernel (i = 0, kess::core::detail::host_gemm) or the BLAS (i = 1)
// Set OPENBLAS_NUM_THREADS (or MKL_NUM_THREADS) for the host BLAS both sides use. The LAPACK peers
// run on the host whatever the Kokkos backend is (on CUDA builds they are the CPU reference).
#include "perf_common.hpp"

#include <kess/core/kokkos/device_partition.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/host/gemm.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/matrix_functions/detail/lyapunov.hpp>
#include <kess/solvers/matrix_functions/detail/riccati.hpp>
#include <kess/solvers/matrix_functions/detail/sign.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <utility>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA) && defined(KESS_BENCH_CUSOLVER)
#include <cusolverDn.h>
#endif

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
using HostMat = kess::perf::HostMatrix;

DevMat device_copy(const HostMat& h, const char* label) {
  DevMat d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), h.extent(0),
           h.extent(1));
  auto m = Kokkos::create_mirror_view(d);
  Kokkos::deep_copy(m, h);
  Kokkos::deep_copy(d, m);
  return d;
}

/// GFLOP/s and the floor; panel_s 0 (the solves set their own after this), so that kess's runs and
/// the peers' carry the same counters: Google Benchmark's CSV reporter aborts otherwise.
void rate_counters(benchmark::State& state, double flops) {
  state.counters["panel_s"] = 0;
  state.counters["GFLOPs"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  const double floor = kess::perf::floor_seconds(kess::perf::ceilings(), flops, 0.0);
  state.counters["floor_s"] = floor;
  state.counters["pct_of_floor"] =
      benchmark::Counter(floor * 100.0, benchmark::Counter::kIsIterationInvariantRate);
}

kess::GaussJordanPanel panel_arg(int p) {
  return p == 1 ? kess::GaussJordanPanel::host
                : p >= 2 ? kess::GaussJordanPanel::device : kess::GaussJordanPanel::automatic;
}

/// Options from the arguments: block size range(1), panel mode range(2) (0 automatic, 1 host,
/// 2 device; 3: device panel on the main instance, no second stream; 4: tournament pivoting;
/// 5 / 6: as 2 / 4 with the updates on the whole device, panel_sms = 0).
kess::GaussJordanOptions bench_options(const benchmark::State& state) {
  kess::GaussJordanOptions opts;
  opts.block = state.range(1);
  opts.check_input = false;
  opts.panel = panel_arg(state.range(2));
  opts.tuning.panel_stream = state.range(2) != 3;
  opts.overwrite_a = state.range(3) != 0;
  if (state.range(2) == 4 || state.range(2) == 6)
    opts.pivoting = kess::GaussJordanPivoting::tournament;
  if (state.range(2) >= 5) opts.tuning.panel_sms = 0;
  return opts;
}

void BM_gj_solve(benchmark::State& state) {
  const int n = state.range(0);
  const HostMat Ah = kess::gen::random_general(n, n, 1), Bh = kess::gen::random_general(n, n, 2);
  const DevMat A0 = device_copy(Ah, "kess::bench::A0"), B0 = device_copy(Bh, "kess::bench::B0");
  DevMat A("kess::bench::A", n, n), B("kess::bench::B", n, n);
  Kokkos::deep_copy(A, A0);
  Exec exec;
  const kess::GaussJordanOptions opts = bench_options(state);
  double panel = 0;
  for (auto _ : state) {
    if (opts.overwrite_a) Kokkos::deep_copy(exec, A, A0);
    Kokkos::deep_copy(exec, B, B0);
    exec.fence();
    Kokkos::Timer timer;
    const auto r = kess::solve(exec, A, B, opts);
    exec.fence();
    state.SetIterationTime(timer.seconds());
    panel = r.panel_seconds;
  }
  rate_counters(state, kess::gauss_jordan_solve_flops(n, n));
  state.counters["panel_s"] = panel;
}

void BM_lapack_gesv(benchmark::State& state) {
  const int n = state.range(0);
  const HostMat Ah = kess::gen::random_general(n, n, 1), Bh = kess::gen::random_general(n, n, 2);
  HostMat A("A", n, n), B("B", n, n);
  std::vector<int> ipiv(n);
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::deep_copy(B, Bh);
    Kokkos::Timer timer;
    const int info = kess::core::lapack::gesv(n, n, A.data(), n, ipiv.data(), B.data(), n);
    state.SetIterationTime(timer.seconds());
    if (info != 0) state.SkipWithError("dgesv failed");
  }
  rate_counters(state, kess::gauss_jordan_solve_flops(n, n));
}

void BM_gj_inverse(benchmark::State& state) {
  const int n = state.range(0);
  const HostMat Ah = kess::gen::random_general(n, n, 1);
  const DevMat A0 = device_copy(Ah, "kess::bench::A0");
  DevMat X("kess::bench::X", n, n);
  Exec exec;
  const kess::GaussJordanOptions opts = bench_options(state);
  for (auto _ : state) {
    Kokkos::deep_copy(exec, X, A0);
    exec.fence();
    Kokkos::Timer timer;
    kess::inverse(exec, X, opts);
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
  rate_counters(state, kess::gauss_jordan_inverse_flops(n));
}

void BM_lapack_getri(benchmark::State& state) {
  const int n = state.range(0);
  const HostMat Ah = kess::gen::random_general(n, n, 1);
  HostMat A("A", n, n);
  std::vector<int> ipiv(n);
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::Timer timer;
    int info = kess::core::lapack::getrf(n, n, A.data(), n, ipiv.data());
    info += kess::core::lapack::getri(n, A.data(), n, ipiv.data());
    state.SetIterationTime(timer.seconds());
    if (info != 0) state.SkipWithError("dgetrf/dgetri failed");
  }
  rate_counters(state, kess::gauss_jordan_inverse_flops(n));
}

// sign(A) of a random matrix with determinant scaling; reports the iteration count.
void BM_gj_sign(benchmark::State& state) {
  const int n = state.range(0);
  const HostMat Ah = kess::gen::random_general(n, n, 3);
  const DevMat A = device_copy(Ah, "kess::bench::A");
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
  state.counters["iterations"] = iterations;
  rate_counters(state, kess::sign_iteration_flops(n, false) * iterations);
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(KESS_BENCH_CUSOLVER)
// cuSOLVER peer on the GPU: getrf then getrs with NRHS = n, B = a random matrix (gesv) or the
// identity (inverse). Handle, workspace and pivots are made outside the timed region.
void cusolver_lu_solve(benchmark::State& state, bool identity) {
  const int n = state.range(0);
  const HostMat Ah = kess::gen::random_general(n, n, 1);
  HostMat Bh = kess::gen::random_general(n, n, 2);
  if (identity) {
    Kokkos::deep_copy(Bh, 0.0);
    for (int i = 0; i < n; ++i) Bh(i, i) = 1.0;
  }
  using CMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::CudaSpace>;
  CMat A("kess::bench::cusolver_A", n, n), B("kess::bench::cusolver_B", n, n);
  Kokkos::View<int*, Kokkos::CudaSpace> ipiv("kess::bench::ipiv", n);
  Kokkos::View<int, Kokkos::CudaSpace> info("kess::bench::info");
  cusolverDnHandle_t handle;
  cusolverDnCreate(&handle);
  int lwork = 0;
  cusolverDnDgetrf_bufferSize(handle, n, n, A.data(), n, &lwork);
  Kokkos::View<double*, Kokkos::CudaSpace> work("kess::bench::work", lwork);
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::deep_copy(B, Bh);
    Kokkos::fence();
    Kokkos::Timer timer;
    cusolverDnDgetrf(handle, n, n, A.data(), n, work.data(), ipiv.data(), info.data());
    cusolverDnDgetrs(handle, CUBLAS_OP_N, n, n, A.data(), n, ipiv.data(), B.data(), n,
                     info.data());
    Kokkos::fence();
    state.SetIterationTime(timer.seconds());
  }
  cusolverDnDestroy(handle);
  rate_counters(state, identity ? 2.0 * n * double(n) * n : kess::gauss_jordan_solve_flops(n, n));
  state.SetLabel(identity ? "cuSOLVER getrf+getrs(I)" : "cuSOLVER getrf+getrs");
}
void BM_cusolver_gesv(benchmark::State& state) { cusolver_lu_solve(state, false); }
void BM_cusolver_inverse(benchmark::State& state) { cusolver_lu_solve(state, true); }
BENCHMARK(BM_cusolver_gesv)
    ->Arg(4096)
    ->Arg(8192)
    ->Arg(16384)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cusolver_inverse)
    ->Arg(4096)
    ->Arg(8192)
    ->Arg(16384)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
#endif

constexpr bool kHost =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;

/// The unit's rate for the floors: one rank-NB update of an n x 2n matrix (a solve's first step).
/// range(2) > 0: as the sweeps run it, GEMMs of at most that many columns; range(3) > 0: on a
/// partition of the device that leaves that many multiprocessors out (kess::core::partition_device, as
/// GaussJordanOptions::panel_sms; the whole device where there is none); range(4) = 1: H and T
/// random instead of constant (an H100 clocks lower on random operands: docs/benchmarks.md,
/// Gauss-Jordan session 15).
void BM_gemm_update(benchmark::State& state) {
  const int n = state.range(0), nb = state.range(1);
  const std::int64_t chunk = state.range(2) > 0 ? state.range(2) : 2 * n;
  const bool random = state.range(4) == 1;
  const DevMat H =
      random ? device_copy(kess::gen::random_general(n, nb, 7), "H") : DevMat("H", n, nb);
  const DevMat T =
      random ? device_copy(kess::gen::random_general(nb, 2 * n, 8), "T") : DevMat("T", nb, 2 * n);
  if (!random) {
    Kokkos::deep_copy(H, 1e-3);
    Kokkos::deep_copy(T, 1e-3);
  }
  DevMat C("C", n, 2 * n);
  Exec exec;
  // No partition for range(3) = 0, on host backends, or where the device has none.
  const auto part = kess::core::partition_device(exec, static_cast<int>(state.range(3)));
  const Exec on = part ? *part : exec;
  const auto update = [&] {
    using pair = Kokkos::pair<std::int64_t, std::int64_t>;
    for (std::int64_t j = 0; j < 2 * n; j += chunk) {
      const pair cols(j, std::min<std::int64_t>(2 * n, j + chunk));
      kess::core::gemm(on, "N", "N", 1.0, H, Kokkos::subview(T, Kokkos::ALL(), cols), 1.0,
                     Kokkos::subview(C, Kokkos::ALL(), cols));
    }
  };
  update();  // warm-up (library load, heuristics)
  on.fence();
  for (auto _ : state) {
    Kokkos::Timer timer;
    update();
    on.fence();
    state.SetIterationTime(timer.seconds());
  }
  rate_counters(state, 2.0 * n * 2.0 * n * nb);
  state.counters["partition"] = part ? 1 : 0;
}
void sizes_gemm(benchmark::internal::Benchmark* bm) {
  for (int n : kHost ? std::vector<int>{2000, 4000} : std::vector<int>{8192, 16384})
    for (int nb : {128, 256, 384, 512}) bm->Args({n, nb, 0, 0, 0});
  if (kHost) return;
  // The sweeps' shape: GEMMs of kDeviceGemmColumns columns on the updates' partition, with
  // constant and with random data.
  for (int data : {0, 1})
    for (int n : {8192, 16384})
      for (int nb : {384, 512, 768, 1024})
        bm->Args({n, nb, kess::detail::gauss_jordan::kDeviceGemmColumns, 12, data});
  for (int nb : {384, 768}) bm->Args({16384, nb, 0, 0, 1});
}
BENCHMARK(BM_gemm_update)->Apply(sizes_gemm)->UseManualTime()->Unit(benchmark::kMillisecond);

/// The shapes kess's host GEMMs take: s = 0 Gauss-Jordan's update (4000 x 8000, k = NB = 128),
/// 1 the look-ahead panel's (4000 x 128, k = 128), 2 square (2000^3), 3 eigh's Q: W = Z^T V on a
/// thread's columns (235 x 128, k = 4000, transposed A), 4 its Z -= V W^T (4000 x 235, k = 128),
/// 5 the top merge of stage 3 (2120 x 3292, k = 1412); impl 0 kess's host_gemm (kess::core::lapack::gemm
/// where it takes it), 1 the BLAS's dgemm. Random operands, C updated in place (beta = 1).
struct GemmShape {
  char ta, tb;
  int m, n, k;
};
constexpr GemmShape kGemmShapes[] = {{'N', 'N', 4000, 8000, 128},  {'N', 'N', 4000, 128, 128},
                                     {'N', 'N', 2000, 2000, 2000}, {'T', 'N', 235, 128, 4000},
                                     {'N', 'T', 4000, 235, 128},   {'N', 'N', 2120, 3292, 1412}};
void BM_host_dgemm(benchmark::State& state) {
  const GemmShape g = kGemmShapes[state.range(0)];
  const bool kess_kernel = state.range(1) == 0;
  if (kess_kernel && !kess::core::detail::host_gemm_available()) {
    state.SkipWithError("kess's host GEMM is not available here (AVX-512F, GCC, KESS_HOST_GEMM)");
    return;
  }
  const int lda = g.ta == 'N' ? g.m : g.k, ldb = g.tb == 'N' ? g.k : g.n;
  const HostMat A = kess::gen::random_general(lda, g.ta == 'N' ? g.k : g.m, 3);
  const HostMat B = kess::gen::random_general(ldb, g.tb == 'N' ? g.n : g.k, 4);
  HostMat C = kess::gen::random_general(g.m, g.n, 5);
  const auto run = [&] {
    if (kess_kernel)
      kess::core::detail::host_gemm(g.ta, g.tb, g.m, g.n, g.k, -1e-3, A.data(), lda, B.data(), ldb,
                                    1.0, C.data(), g.m);
    else
      kess::core::lapack::blas_gemm(g.ta, g.tb, g.m, g.n, g.k, -1e-3, A.data(), lda, B.data(), ldb, 1.0,
                              C.data(), g.m);
  };
  run();  // warm-up: pools, pages
  for (auto _ : state) {
    Kokkos::Timer timer;
    run();
    state.SetIterationTime(timer.seconds());
  }
  rate_counters(state, 2.0 * g.m * g.n * double(g.k));
}
BENCHMARK(BM_host_dgemm)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The device panel LU alone (factor_panel_device on an m x nb panel of random entries): the
/// chain a device sweep's steps wait on.
void BM_gj_panel(benchmark::State& state) {
  const int m = state.range(0), nb = state.range(1);
  using UM = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  const DevMat P0 = device_copy(kess::gen::random_general(m, nb, 5), "kess::bench::P0");
  DevMat P("P", m, nb), inv("inv", nb, 2 * nb);
  Kokkos::View<double*, Mem> diag("diag", nb);
  Kokkos::View<int*, Mem> piv("piv", nb), rowmap("rowmap", m);
  kess::detail::gauss_jordan::DevicePanelWork<Mem> w(m, nb);
  w.tournament_leaves = state.range(2) == 1;
  Exec exec;
  const auto factor = [&] {
    kess::detail::gauss_jordan::factor_panel_device(exec, UM(P.data(), m, nb), 0, UM(inv.data(), nb, nb),
                                       UM(inv.data() + nb * nb, nb, nb), w, diag, piv, rowmap);
  };
  Kokkos::deep_copy(exec, P, P0);
  factor();  // warm-up
  for (auto _ : state) {
    Kokkos::deep_copy(exec, P, P0);
    exec.fence();
    Kokkos::Timer timer;
    factor();
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
}
void sizes_panel(benchmark::internal::Benchmark* bm) {
  for (int m : kHost ? std::vector<int>{1000, 4000} : std::vector<int>{4096, 8192, 16384})
    for (int t : {0, 1})
      if (!kHost || t == 0) bm->Args({m, kHost ? 128 : 384, t});
}
BENCHMARK(BM_gj_panel)
    ->Apply(sizes_panel)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void sizes_inverse(benchmark::internal::Benchmark* bm) {
  if (kHost) {
    for (int n : {1000, 2000, 4000})
      for (int nb : {64, 128, 192, 256}) bm->Args({n, nb, 0, 0});
    bm->Args({1000, 64, 2, 0});  // the device panel path on the host, for comparison
  } else {
    for (int nb : {256, 384, 512}) bm->Args({4096, nb, 2, 0});
    for (int n : {8192, 16384}) {
      for (int nb : {128, 256, 384, 512}) bm->Args({n, nb, 2, 0});
      for (int nb : {256, 384, 512}) bm->Args({n, nb, 4, 0});  // tournament pivoting in the leaves
      for (int mode : {5, 6}) bm->Args({n, 384, mode, 0});     // no partition for the updates
      bm->Args({n, 256, 3, 0});                   // device panel, no overlap
      bm->Args({n, n == 8192 ? 64 : 128, 1, 0});  // the host panel (the previous default)
    }
  }
}
void sizes_solve(benchmark::internal::Benchmark* bm) {
  sizes_inverse(bm);
  for (int n : kHost ? std::vector<int>{1000, 2000, 4000} : std::vector<int>{8192, 16384})
    for (int nb : kHost ? std::vector<int>{128, 256} : std::vector<int>{384, 512})
      bm->Args({n, nb, 0, 1});  // in A's storage
}
void sizes_peer(benchmark::internal::Benchmark* bm) {
  for (int n : {1000, 2000, 4000}) bm->Args({n});
}
void sizes_sign(benchmark::internal::Benchmark* bm) {
  if (kHost)
    bm->Args({1000});
  else
    bm->Args({8192});
}

// ---- Lyapunov and Riccati against the Schur methods of host LAPACK ----------------------------
/// R / sqrt(n) - shift I for a random R (entries in [-1, 1), variance 1/3): its eigenvalues lie in
/// a disk of radius about 0.58 around -shift, so A is stable for shift > 0.6 (shift 1: the
/// spectral abscissa is about -0.42; 0.7: about -0.12, more Newton iterations).
HostMat stable_matrix(int n, std::uint64_t seed, double shift = 1.0) {
  HostMat A = kess::gen::random_general(n, n, seed);
  const double s = 1.0 / std::sqrt(double(std::max(1, n)));
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) A(i, j) = A(i, j) * s - (i == j ? shift : 0.0);
  return A;
}
/// A random SPD matrix with a diagonal of about 1 (kess::gen::random_spd / (n + 1)).
HostMat spd_unit(int n, std::uint64_t seed) {
  HostMat B = kess::gen::random_spd(n, seed);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) B(i, j) /= n + 1.0;
  return B;
}
/// Times solve() (a kess::lyapunov or kess::riccati call) once an iteration on exec; returns the
/// last call's X and Newton iteration count.
template <class Solve>
std::pair<DevMat, int> timed_newton(benchmark::State& state, const Exec& exec, const Solve& solve) {
  DevMat X;
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
void schur_counters(benchmark::State& state, int iterations, double residual) {
  state.counters["iterations"] = iterations;
  state.counters["residual"] = residual;
}

void BM_lyapunov(benchmark::State& state) {
  const int n = state.range(0), solver = state.range(1);
  const HostMat Ah = stable_matrix(n, 11, state.range(2) / 100.0), Qh = spd_unit(n, 12);
  if (solver == 1) {  // Bartels-Stewart: A = U T U^T, T Y + Y T^T = -U^T Q U, X = U Y U^T
    HostMat T("T", n, n), U("U", n, n), W("W", n, n), X("X", n, n);
    std::vector<double> wr(n), wi(n);
    for (auto _ : state) {
      Kokkos::deep_copy(T, Ah);
      Kokkos::Timer timer;
      kess::core::lapack::gees(n, T.data(), n, wr.data(), wi.data(), U.data(), n);
      kess::core::lapack::gemm('N', 'N', n, n, n, 1.0, Qh.data(), n, U.data(), n, 0.0, W.data(), n);
      kess::core::lapack::gemm('T', 'N', n, n, n, -1.0, U.data(), n, W.data(), n, 0.0, X.data(), n);
      double scale = 1.0;
      kess::core::lapack::trsyl('N', 'T', 1, n, n, T.data(), n, T.data(), n, X.data(), n, &scale);
      kess::core::lapack::gemm('N', 'N', n, n, n, 1.0 / scale, U.data(), n, X.data(), n, 0.0, W.data(),
                         n);
      kess::core::lapack::gemm('N', 'T', n, n, n, 1.0, W.data(), n, U.data(), n, 0.0, X.data(), n);
      state.SetIterationTime(timer.seconds());
    }
    schur_counters(state, 0,
                   kess::lyapunov_residual(Kokkos::DefaultHostExecutionSpace(), Ah, Qh, X));
    state.SetLabel("LAPACK Bartels-Stewart (dgees, dtrsyl3)");
    return;
  }
  Exec exec;
  const DevMat A = device_copy(Ah, "kess::bench::A"), Q = device_copy(Qh, "kess::bench::Q");
  kess::lyapunov(exec, device_copy(stable_matrix(256, 13), "w"),
                 device_copy(spd_unit(256, 14), "w"));
  const auto [X, iterations] =
      timed_newton(state, exec, [&] { return kess::lyapunov(exec, A, Q); });
  schur_counters(state, iterations, kess::lyapunov_residual(exec, A, Q, X));
  state.SetLabel("kess::lyapunov");
}

void BM_riccati(benchmark::State& state) {
  const int n = state.range(0), solver = state.range(1);
  const HostMat Ah = stable_matrix(n, 21, state.range(2) / 100.0), Gh = spd_unit(n, 22),
                Qh = spd_unit(n, 23);
  if (solver == 1) {  // Schur method: H = [A -G; -Q -A^T] = U T U^T, stable block first
    const int m = 2 * n;
    HostMat H("H", m, m), U("U", m, m), Mt("Mt", n, n), X("X", n, n);
    std::vector<double> wr(m), wi(m);
    std::vector<int> ipiv(n);
    for (auto _ : state) {
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          H(i, j) = Ah(i, j);
          H(i, n + j) = -Gh(i, j);
          H(n + i, j) = -Qh(i, j);
          H(n + i, n + j) = -Ah(j, i);
        }
      Kokkos::Timer timer;
      int sdim = 0;
      kess::core::lapack::gees(m, H.data(), m, wr.data(), wi.data(), U.data(), m, true, &sdim);
      // X U11 = U21  <=>  U11^T X^T = U21^T
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          Mt(i, j) = U(j, i);
          X(i, j) = U(n + j, i);
        }
      kess::core::lapack::gesv(n, n, Mt.data(), n, ipiv.data(), X.data(), n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) X(i, j) = X(j, i) = 0.5 * (X(i, j) + X(j, i));
      state.SetIterationTime(timer.seconds());
      if (sdim != n) state.SkipWithError("the Hamiltonian's stable subspace is not n-dimensional");
    }
    schur_counters(state, 0,
                   kess::riccati_residual(Kokkos::DefaultHostExecutionSpace(), Ah, Gh, Qh, X));
    state.SetLabel("LAPACK Schur method (dgees of the Hamiltonian)");
    return;
  }
  Exec exec;
  const DevMat A = device_copy(Ah, "kess::bench::A"), G = device_copy(Gh, "kess::bench::G"),
               Q = device_copy(Qh, "kess::bench::Q");
  kess::riccati(exec, device_copy(stable_matrix(256, 24), "w"), device_copy(spd_unit(256, 25), "w"),
                device_copy(spd_unit(256, 26), "w"));
  const auto [X, iterations] =
      timed_newton(state, exec, [&] { return kess::riccati(exec, A, G, Q); });
  schur_counters(state, iterations, kess::riccati_residual(exec, A, G, Q, X));
  state.SetLabel("kess::riccati");
}

// (third argument: A's shift in percent, 100 or 70; the host peers take minutes on the larger
// GPU sizes and are left out there)
void sizes_lyapunov(benchmark::internal::Benchmark* bm) {
  for (int n : kHost ? std::vector<int>{1000, 2000} : std::vector<int>{4096, 8192})
    for (int s : {0, 1})
      for (int shift : {100, 70})
        if (kHost || s == 0 || n <= 4096) bm->Args({n, s, shift});
}
void sizes_riccati(benchmark::internal::Benchmark* bm) {
  for (int n : kHost ? std::vector<int>{500, 1000} : std::vector<int>{2048, 4096})
    for (int s : {0, 1})
      for (int shift : {100, 70})
        if (kHost || s == 0 || n <= 2048) bm->Args({n, s, shift});
}

BENCHMARK(BM_gj_solve)->Apply(sizes_solve)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lapack_gesv)->Apply(sizes_peer)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gj_inverse)->Apply(sizes_inverse)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lapack_getri)->Apply(sizes_peer)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gj_sign)->Apply(sizes_sign)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lyapunov)
    ->Apply(sizes_lyapunov)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_riccati)
    ->Apply(sizes_riccati)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
