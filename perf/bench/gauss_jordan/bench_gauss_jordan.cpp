// Gauss-Jordan solve and inverse against their LAPACK (host) and cuSOLVER (CUDA builds) peers in
// the same process, each implementation its own benchmark (A = kess::gen::random_general(n, n, 1),
// B = random_general(n, n, 2)):
//   BM_solve_<impl>/n[/block]     A Y = B with NRHS = n (n^3 + 2 n^3 flops counted for all)
//   BM_inverse_<impl>/n[/block]   A^-1 (2 n^3 flops)
//     kess                        the panel where GaussJordanPanel::automatic puts it
//     kess_host_panel             panel LU by host LAPACK
//     kess_device_panel           panel LU by kernels on the execution space
//     kess_device_panel_one_stream    the device panel without the second instance (no overlap)
//     kess_tournament             the device panel with tournament pivoting in its leaves (CUDA)
//     kess_device_panel_whole_device, kess_tournament_whole_device   the updates on the whole
//                                 device (panel_sms = 0)
//     kess_in_a                   solve with overwrite_a (A restored outside the timed region,
//                                 as dgesv overwrites it)
//     lapack_dgesv, lapack_dgetri (dgetrf + dgetri), cusolver_getrs (getrf + getrs; for the
//                                 inverse on the identity: cuSOLVER has no getri)
//   block 0: automatic. The building blocks the Gauss-Jordan floors are written with:
//   BM_gemm_update_kess/n/block/chunk_cols/sms_left_out/random_data   C (n x 2n) += H (n x NB)
//                                 T (NB x 2n) by kess::core::gemm, in GEMMs of chunk_cols columns
//                                 (0: one), on a partition of the device without sms_left_out
//                                 multiprocessors, random_data 1: random H and T (else constant)
//   BM_host_dgemm_<impl>/shape    one host GEMM shape kess's solvers run (kGemmShapes): kess (its own
//                                 kernel, core::detail::host_gemm) or blas_dgemm
//   BM_panel_kess_device[_tournament]/m/block   the device panel LU alone (m x NB)
// OPENBLAS_NUM_THREADS (or MKL_NUM_THREADS) sets the host BLAS threads both sides use.
#include "bench_util.hpp"
#include "cusolver.hpp"
#include "lapack.hpp"

#include <kess/core/host/gemm.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/kokkos/device_partition.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/solvers/gauss_jordan.hpp>
#include <kess/solvers/gauss_jordan/detail/panel_lu.hpp>
#include <kess/solvers/gauss_jordan/detail/defaults.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using kess::perf::HostMatrix;
using kess::perf::bench::device_copy;
using kess::perf::bench::DeviceMatrix;
using kess::perf::bench::Exec;
using kess::perf::bench::kHost;
using kess::perf::bench::Mem;
namespace peers = kess::perf::peers;

/// The flop counters; panel_s 0 (kess's solves set their own after this), so that kess's runs and
/// the peers' carry the same counters: Google Benchmark's CSV reporter aborts otherwise.
void rate_counters(benchmark::State& state, double flops) {
  state.counters["panel_s"] = 0;
  kess::perf::bench::flop_counters(state, flops);
}

/// A kess variant: the options beyond block (range(1)).
struct KessGaussJordan {
  kess::GaussJordanPanel panel = kess::GaussJordanPanel::automatic;
  bool panel_stream = true;
  kess::GaussJordanPivoting pivoting = kess::GaussJordanPivoting::partial;
  bool whole_device = false;  // panel_sms = 0
  bool overwrite_a = false;
};

kess::GaussJordanOptions options(const benchmark::State& state, const KessGaussJordan& v) {
  kess::GaussJordanOptions opts;
  opts.block = state.range(1);
  opts.check_input = false;
  opts.panel = v.panel;
  opts.tuning.panel_stream = v.panel_stream;
  opts.pivoting = v.pivoting;
  if (v.whole_device) opts.tuning.panel_sms = 0;
  opts.overwrite_a = v.overwrite_a;
  return opts;
}

void solve_kess(benchmark::State& state, const KessGaussJordan& variant) {
  const int n = state.range(0);
  const DeviceMatrix A0 = device_copy(kess::gen::random_general(n, n, 1), "kess::bench::A0");
  const DeviceMatrix B0 = device_copy(kess::gen::random_general(n, n, 2), "kess::bench::B0");
  DeviceMatrix A("kess::bench::A", n, n), B("kess::bench::B", n, n);
  Kokkos::deep_copy(A, A0);
  Exec exec;
  const kess::GaussJordanOptions opts = options(state, variant);
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

void inverse_kess(benchmark::State& state, const KessGaussJordan& variant) {
  const int n = state.range(0);
  const DeviceMatrix A0 = device_copy(kess::gen::random_general(n, n, 1), "kess::bench::A0");
  DeviceMatrix X("kess::bench::X", n, n);
  Exec exec;
  const kess::GaussJordanOptions opts = options(state, variant);
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

constexpr auto kHostPanel = kess::GaussJordanPanel::host;
constexpr auto kDevicePanel = kess::GaussJordanPanel::device;
constexpr auto kTournament = kess::GaussJordanPivoting::tournament;
constexpr auto kPartial = kess::GaussJordanPivoting::partial;
const KessGaussJordan kAutomatic{};
const KessGaussJordan kHostPanelVariant{kHostPanel};
const KessGaussJordan kDevicePanelVariant{kDevicePanel};
const KessGaussJordan kOneStream{kDevicePanel, false};
const KessGaussJordan kTournamentVariant{kDevicePanel, true, kTournament};
const KessGaussJordan kDeviceWhole{kDevicePanel, true, kPartial, true};
const KessGaussJordan kTournamentWhole{kDevicePanel, true, kTournament, true};
const KessGaussJordan kInA{kess::GaussJordanPanel::automatic, true, kPartial, false, true};

void BM_solve_kess(benchmark::State& s) { solve_kess(s, kAutomatic); }
void BM_solve_kess_host_panel(benchmark::State& s) { solve_kess(s, kHostPanelVariant); }
void BM_solve_kess_device_panel(benchmark::State& s) { solve_kess(s, kDevicePanelVariant); }
void BM_solve_kess_device_panel_one_stream(benchmark::State& s) { solve_kess(s, kOneStream); }
void BM_solve_kess_tournament(benchmark::State& s) { solve_kess(s, kTournamentVariant); }
void BM_solve_kess_device_panel_whole_device(benchmark::State& s) { solve_kess(s, kDeviceWhole); }
void BM_solve_kess_tournament_whole_device(benchmark::State& s) { solve_kess(s, kTournamentWhole); }
void BM_solve_kess_in_a(benchmark::State& s) { solve_kess(s, kInA); }
void BM_inverse_kess(benchmark::State& s) { inverse_kess(s, kAutomatic); }
void BM_inverse_kess_host_panel(benchmark::State& s) { inverse_kess(s, kHostPanelVariant); }
void BM_inverse_kess_device_panel(benchmark::State& s) { inverse_kess(s, kDevicePanelVariant); }
void BM_inverse_kess_device_panel_one_stream(benchmark::State& s) { inverse_kess(s, kOneStream); }
void BM_inverse_kess_tournament(benchmark::State& s) { inverse_kess(s, kTournamentVariant); }
void BM_inverse_kess_device_panel_whole_device(benchmark::State& s) {
  inverse_kess(s, kDeviceWhole);
}
void BM_inverse_kess_tournament_whole_device(benchmark::State& s) {
  inverse_kess(s, kTournamentWhole);
}

// ---- peers --------------------------------------------------------------------------------------

void BM_solve_lapack_dgesv(benchmark::State& state) {
  const int n = state.range(0);
  const HostMatrix Ah = kess::gen::random_general(n, n, 1), Bh = kess::gen::random_general(n, n, 2);
  HostMatrix A("A", n, n), B("B", n, n);
  std::vector<int> ipiv(n);
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::deep_copy(B, Bh);
    Kokkos::Timer timer;
    const int info = peers::lapack::dgesv(A, B, ipiv);
    state.SetIterationTime(timer.seconds());
    if (info != 0) state.SkipWithError("dgesv failed");
  }
  rate_counters(state, kess::gauss_jordan_solve_flops(n, n));
}

void BM_inverse_lapack_dgetri(benchmark::State& state) {
  const int n = state.range(0);
  const HostMatrix Ah = kess::gen::random_general(n, n, 1);
  HostMatrix A("A", n, n);
  std::vector<int> ipiv(n);
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::Timer timer;
    const int info = peers::lapack::dgetrf_dgetri(A, ipiv);
    state.SetIterationTime(timer.seconds());
    if (info != 0) state.SkipWithError("dgetrf/dgetri failed");
  }
  rate_counters(state, kess::gauss_jordan_inverse_flops(n));
}

/// cuSOLVER getrf then getrs with NRHS = n, B = a random matrix (solve) or the identity
/// (inverse). Handle, workspace and pivots are made outside the timed region.
void cusolver_getrs(benchmark::State& state, bool identity) {
  rate_counters(state, 0.0);
  if (!peers::cusolver::available()) {
    state.SkipWithError("cuSOLVER peer needs a CUDA build with cuSOLVER");
    return;
  }
  const int n = state.range(0);
  const HostMatrix Ah = kess::gen::random_general(n, n, 1);
  HostMatrix Bh = kess::gen::random_general(n, n, 2);
  if (identity) {
    Kokkos::deep_copy(Bh, 0.0);
    for (int i = 0; i < n; ++i) Bh(i, i) = 1.0;
  }
  DeviceMatrix A("kess::bench::cusolver_A", n, n), B("kess::bench::cusolver_B", n, n);
  peers::cusolver::GetrfGetrs lu(A.data(), n);
  for (auto _ : state) {
    Kokkos::deep_copy(A, Ah);
    Kokkos::deep_copy(B, Bh);
    Kokkos::fence();
    Kokkos::Timer timer;
    lu(A.data(), B.data(), n);
    Kokkos::fence();
    state.SetIterationTime(timer.seconds());
  }
  rate_counters(state, identity ? 2.0 * n * double(n) * n : kess::gauss_jordan_solve_flops(n, n));
  state.SetLabel(identity ? "cuSOLVER getrf+getrs(I)" : "cuSOLVER getrf+getrs");
}
void BM_solve_cusolver_getrs(benchmark::State& s) { cusolver_getrs(s, false); }
void BM_inverse_cusolver_getrs(benchmark::State& s) { cusolver_getrs(s, true); }

// ---- building blocks ----------------------------------------------------------------------------

/// The unit's rate for the floors: one rank-NB update of an n x 2n matrix (a solve's first step).
/// chunk_cols > 0: as the sweeps run it, GEMMs of at most that many columns; sms_left_out > 0: on
/// a partition of the device that leaves that many multiprocessors out (kess::core::
/// partition_device, as GaussJordanTuning::panel_sms; the whole device where there is none);
/// random_data 1: H and T random instead of constant (a GPU may clock lower on random operands).
void BM_gemm_update_kess(benchmark::State& state) {
  const int n = state.range(0), nb = state.range(1);
  const std::int64_t chunk = state.range(2) > 0 ? state.range(2) : 2 * n;
  const bool random = state.range(4) == 1;
  const DeviceMatrix H = random ? device_copy(kess::gen::random_general(n, nb, 7), "H")
                                : DeviceMatrix("H", n, nb);
  const DeviceMatrix T = random ? device_copy(kess::gen::random_general(nb, 2 * n, 8), "T")
                                : DeviceMatrix("T", nb, 2 * n);
  if (!random) {
    Kokkos::deep_copy(H, 1e-3);
    Kokkos::deep_copy(T, 1e-3);
  }
  DeviceMatrix C("C", n, 2 * n);
  Exec exec;
  // No partition for sms_left_out = 0, on host backends, or where the device has none.
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

/// The shapes kess's host GEMMs take: 0 Gauss-Jordan's update (4000 x 8000, k = NB = 128), 1 the
/// look-ahead panel's (4000 x 128, k = 128), 2 square (2000^3), 3 eigh's Q: W = Z^T V on a
/// thread's columns (235 x 128, k = 4000, transposed A), 4 its Z -= V W^T (4000 x 235, k = 128),
/// 5 the top merge of stage 3 (2120 x 3292, k = 1412). Random operands, C updated in place.
struct GemmShape {
  char ta, tb;
  int m, n, k;
};
constexpr GemmShape kGemmShapes[] = {{'N', 'N', 4000, 8000, 128},  {'N', 'N', 4000, 128, 128},
                                     {'N', 'N', 2000, 2000, 2000}, {'T', 'N', 235, 128, 4000},
                                     {'N', 'T', 4000, 235, 128},   {'N', 'N', 2120, 3292, 1412}};

void host_dgemm(benchmark::State& state, bool kess_kernel) {
  const GemmShape g = kGemmShapes[state.range(0)];
  if (kess_kernel && !kess::core::detail::host_gemm_available()) {
    state.SkipWithError("kess's host GEMM is not available here (AVX-512F, GCC, KESS_HOST_GEMM)");
    return;
  }
  const int lda = g.ta == 'N' ? g.m : g.k, ldb = g.tb == 'N' ? g.k : g.n;
  const HostMatrix A = kess::gen::random_general(lda, g.ta == 'N' ? g.k : g.m, 3);
  const HostMatrix B = kess::gen::random_general(ldb, g.tb == 'N' ? g.n : g.k, 4);
  HostMatrix C = kess::gen::random_general(g.m, g.n, 5);
  const auto run = [&] {
    if (kess_kernel)
      kess::core::detail::host_gemm(g.ta, g.tb, g.m, g.n, g.k, -1e-3, A.data(), lda, B.data(),
                                    ldb, 1.0, C.data(), g.m);
    else
      peers::lapack::dgemm(g.ta, g.tb, g.m, g.n, g.k, -1e-3, A.data(), lda, B.data(), ldb, 1.0,
                           C.data(), g.m);
  };
  run();  // warm-up: pools, pages
  for (auto _ : state) {
    Kokkos::Timer timer;
    run();
    state.SetIterationTime(timer.seconds());
  }
  rate_counters(state, 2.0 * g.m * g.n * double(g.k));
  state.SetLabel(std::string(1, g.ta) + g.tb + " " + std::to_string(g.m) + "x" +
                 std::to_string(g.n) + "x" + std::to_string(g.k));
}
void BM_host_dgemm_kess(benchmark::State& s) { host_dgemm(s, true); }
void BM_host_dgemm_blas_dgemm(benchmark::State& s) { host_dgemm(s, false); }

/// The device panel LU alone (factor_panel_device on an m x NB panel of random entries): the
/// chain a device sweep's steps wait on.
void panel_kess(benchmark::State& state, bool tournament) {
  const int m = state.range(0), nb = state.range(1);
  using UM = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  const DeviceMatrix P0 = device_copy(kess::gen::random_general(m, nb, 5), "kess::bench::P0");
  DeviceMatrix P("P", m, nb), inv("inv", nb, 2 * nb);
  Kokkos::View<double*, Mem> diag("diag", nb);
  Kokkos::View<int*, Mem> piv("piv", nb), rowmap("rowmap", m);
  kess::detail::gauss_jordan::PanelLuOptions o;
  o.tournament_leaves = tournament;
  kess::detail::gauss_jordan::PanelLu<Exec> lu(m, nb, o);
  Exec exec;
  const auto factor = [&] {
    lu.factor(exec, P, UM(inv.data(), nb, nb), UM(inv.data() + nb * nb, nb, nb), diag, piv,
              rowmap);
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
void BM_panel_kess_device(benchmark::State& s) { panel_kess(s, false); }
void BM_panel_kess_device_tournament(benchmark::State& s) { panel_kess(s, true); }

// ---- registration: which variant runs at which sizes (GPU-only ones are left out of CPU builds) --

using Function = benchmark::internal::Function;
using Sizes = std::vector<std::pair<int, int>>;  // (n, block)

/// solve_fn and inverse_fn (either may be null) over the same (n, block) pairs.
void add_kess(Function* solve_fn, const char* solve_name, Function* inverse_fn,
              const char* inverse_name, const Sizes& sizes) {
  if (sizes.empty()) return;
  for (auto [fn, name] : {std::pair{solve_fn, solve_name}, std::pair{inverse_fn, inverse_name}}) {
    if (!fn) continue;
    auto* b = benchmark::RegisterBenchmark(name, fn)->ArgNames({"n", "block"});
    for (auto [n, nb] : sizes) b->Args({n, nb});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

void add_peer(const char* name, Function* fn, const std::vector<int>& sizes) {
  auto* b = benchmark::RegisterBenchmark(name, fn)->ArgName("n");
  for (int n : sizes) b->Arg(n);
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

const bool registered = [] {
  const std::vector<int> host_sizes{500, 1000, 2000, 4000}, gpu_sizes{8192, 16384};
  Sizes automatic, device, host_panel, one_stream, tournament, whole, in_a;
  if (kHost) {
    for (int n : host_sizes)
      for (int nb : {0, 64, 128, 192, 256}) automatic.push_back({n, nb});
    device = {{1000, 64}};  // the device panel path on the host, for comparison
    for (int n : host_sizes)
      for (int nb : {128, 256}) in_a.push_back({n, nb});
  } else {
    for (int n : {4096, 8192, 16384}) automatic.push_back({n, 0});
    for (int nb : {256, 384, 512}) device.push_back({4096, nb});
    for (int n : gpu_sizes) {
      for (int nb : {128, 256, 384, 512}) device.push_back({n, nb});
      for (int nb : {256, 384, 512}) tournament.push_back({n, nb});
      whole.push_back({n, 384});
      one_stream.push_back({n, 256});
      host_panel.push_back({n, n == 8192 ? 64 : 128});  // panel LU by host LAPACK
      for (int nb : {384, 512}) in_a.push_back({n, nb});
    }
  }
  add_kess(BM_solve_kess, "BM_solve_kess", BM_inverse_kess, "BM_inverse_kess", automatic);
  add_kess(BM_solve_kess_in_a, "BM_solve_kess_in_a", nullptr, nullptr, in_a);
  add_kess(BM_solve_kess_device_panel, "BM_solve_kess_device_panel", BM_inverse_kess_device_panel,
           "BM_inverse_kess_device_panel", device);
  add_kess(BM_solve_kess_host_panel, "BM_solve_kess_host_panel", BM_inverse_kess_host_panel,
           "BM_inverse_kess_host_panel", host_panel);
  add_kess(BM_solve_kess_device_panel_one_stream, "BM_solve_kess_device_panel_one_stream",
           BM_inverse_kess_device_panel_one_stream, "BM_inverse_kess_device_panel_one_stream",
           one_stream);
  add_kess(BM_solve_kess_tournament, "BM_solve_kess_tournament", BM_inverse_kess_tournament,
           "BM_inverse_kess_tournament", tournament);
  add_kess(BM_solve_kess_device_panel_whole_device, "BM_solve_kess_device_panel_whole_device",
           BM_inverse_kess_device_panel_whole_device, "BM_inverse_kess_device_panel_whole_device",
           whole);
  add_kess(BM_solve_kess_tournament_whole_device, "BM_solve_kess_tournament_whole_device",
           BM_inverse_kess_tournament_whole_device, "BM_inverse_kess_tournament_whole_device",
           whole);
  // The LAPACK peers run on the host whatever the backend (on GPU builds: the CPU reference).
  add_peer("BM_solve_lapack_dgesv", BM_solve_lapack_dgesv, host_sizes);
  add_peer("BM_inverse_lapack_dgetri", BM_inverse_lapack_dgetri, host_sizes);
  if (!kHost) {
    add_peer("BM_solve_cusolver_getrs", BM_solve_cusolver_getrs, {4096, 8192, 16384});
    add_peer("BM_inverse_cusolver_getrs", BM_inverse_cusolver_getrs, {4096, 8192, 16384});
  }

  auto* gemm = benchmark::RegisterBenchmark("BM_gemm_update_kess", BM_gemm_update_kess)
                   ->ArgNames({"n", "block", "chunk_cols", "sms_left_out", "random_data"});
  for (int n : kHost ? std::vector<int>{2000, 4000} : gpu_sizes)
    for (int nb : {128, 256, 384, 512}) gemm->Args({n, nb, 0, 0, 0});
  if (!kHost) {
    // The sweeps' shape: GEMMs of kDeviceGemmColumns columns on the updates' partition, with
    // constant and with random data.
    for (int data : {0, 1})
      for (int n : gpu_sizes)
        for (int nb : {384, 512, 768, 1024})
          gemm->Args({n, nb, kess::detail::gauss_jordan::kDeviceGemmColumns, 12, data});
    for (int nb : {384, 768}) gemm->Args({16384, nb, 0, 0, 1});
  }
  gemm->UseManualTime()->Unit(benchmark::kMillisecond);

  for (auto [name, fn] : {std::pair{"BM_host_dgemm_kess", BM_host_dgemm_kess},
                          std::pair{"BM_host_dgemm_blas_dgemm", BM_host_dgemm_blas_dgemm}})
    benchmark::RegisterBenchmark(name, fn)
        ->ArgName("shape")
        ->DenseRange(0, 5)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);

  auto* panel = benchmark::RegisterBenchmark("BM_panel_kess_device", BM_panel_kess_device)
                    ->ArgNames({"m", "block"});
  for (int m : kHost ? std::vector<int>{1000, 4000} : std::vector<int>{4096, 8192, 16384})
    panel->Args({m, kHost ? 128 : 384});
  panel->UseManualTime()->Unit(benchmark::kMillisecond);
  if (!kHost) {
    auto* t = benchmark::RegisterBenchmark("BM_panel_kess_device_tournament",
                                           BM_panel_kess_device_tournament)
                  ->ArgNames({"m", "block"});
    for (int m : {4096, 8192, 16384}) t->Args({m, 384});
    t->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
