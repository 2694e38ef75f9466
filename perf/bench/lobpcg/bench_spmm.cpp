// SpMM with a half-stored symmetric matrix: Y = H X for the spin-1/2 Heisenberg ring of L sites
// in its S^z = 0 sector (kess::gen::heisenberg), k vectors.
//   BM_spmm_kess/L/k/beta          kess::spmm on the CSB_Coo lower triangle (beta 0: the
//                                  automatic block size), X and Y LayoutRight
//   BM_spmm_kess_rounds/L/k/rounds/batch  the CUDA kernel alone (Y zeroed, then one launch)
//                                  with `rounds` entry loads per lane group and `batch` entries
//                                  whose X rows are loaded together (tuning)
//   BM_spmm_cusparse_alg2/L/k      cuSPARSE SpMM on the full CSR matrix, row-major X and Y,
//                                  CUSPARSE_SPMM_CSR_ALG2 (CUDA builds)
//   BM_spmm_cusparse_alg1/L/k      the same, column-major, CUSPARSE_SPMM_CSR_ALG1 (CUDA builds)
//   BM_spmm_kokkos_kernels/L/k     KokkosSparse::spmv on the full CSR matrix with rank-2
//                                  LayoutLeft Views (Kokkos Kernels' multivector layout)
// The byte floor of every variant is the half-stored one (Maris et al. 2022): 12 bytes a stored
// entry (value and two 16-bit in-block indices) plus X read once and Y written once, at the
// machine's memory rate; floor_ratio = time / floor. GBs counts those floor bytes over the time.
// max_rel_err: the worst |y - A x| / (|A| |x|) over 2000 sampled rows against a host CSR product.
#include "bench_util.hpp"
#include "cusparse.hpp"
#include "problem_cache.hpp"

#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/lobpcg/cuda/spmm_csb.hpp>

#include <benchmark/benchmark.h>
#include <KokkosSparse_CrsMatrix.hpp>
#include <KokkosSparse_spmv.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using kess::perf::bench::Exec;
using kess::perf::bench::kHost;
using Mem = Exec::memory_space;

// One Heisenberg problem: the stored triangle as CSB, the full matrix as host and device CSR.
struct Problem {
  std::string name;
  std::int64_t n = 0, stored = 0;
  kess::SparseProblem triangle;
  std::map<int, kess::CsbMatrix<double, Mem>> csb;  // by requested beta (0: automatic)
  std::vector<int> ptr_h, col_h;                    // full CSR on the host (for the checks)
  std::vector<double> val_h;
  Kokkos::View<int*, Mem> ptr, col;
  Kokkos::View<double*, Mem> val;
};

const Problem& problem(int L) {
  return kess::perf::bench::cached_problem<Problem>(L, [L](Problem& p) {
    p.triangle = kess::gen::heisenberg(L);
    const auto& t = p.triangle;
    p.name = t.name;
    p.n = t.n;
    p.stored = static_cast<std::int64_t>(t.vals.size());
    // Full CSR: both triangles, rows in order, by counting.
    const std::int64_t n = t.n;
    std::vector<std::int64_t> count(static_cast<std::size_t>(n) + 1, 0);
    for (std::size_t e = 0; e < t.vals.size(); ++e) {
      ++count[t.rows[e] + 1];
      if (t.rows[e] != t.cols[e]) ++count[t.cols[e] + 1];
    }
    for (std::int64_t i = 0; i < n; ++i) count[i + 1] += count[i];
    const std::int64_t nnz = count[n];
    p.ptr_h.assign(count.begin(), count.end());
    p.col_h.resize(static_cast<std::size_t>(nnz));
    p.val_h.resize(static_cast<std::size_t>(nnz));
    std::vector<std::int64_t> next(count.begin(), count.end() - 1);
    auto put = [&](std::int64_t i, std::int64_t j, double v) {
      p.col_h[next[i]] = static_cast<int>(j);
      p.val_h[next[i]++] = v;
    };
    for (std::size_t e = 0; e < t.vals.size(); ++e) {
      put(t.rows[e], t.cols[e], t.vals[e]);
      if (t.rows[e] != t.cols[e]) put(t.cols[e], t.rows[e], t.vals[e]);
    }
    auto upload = [](const auto& h, const char* label) {
      using T = typename std::decay_t<decltype(h)>::value_type;
      Kokkos::View<T*, Mem> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                              h.size());
      Kokkos::deep_copy(d, Kokkos::View<const T*, Kokkos::HostSpace>(h.data(), h.size()));
      return d;
    };
    p.ptr = upload(p.ptr_h, "kess::bench::csr_ptr");
    p.col = upload(p.col_h, "kess::bench::csr_col");
    p.val = upload(p.val_h, "kess::bench::csr_val");
  });
}

const kess::CsbMatrix<double, Mem>& csb(const Problem& cp, int beta) {
  auto& p = const_cast<Problem&>(cp);
  auto it = p.csb.find(beta);
  if (it != p.csb.end()) return it->second;
  kess::CsbOptions o;
  o.block_size = beta;
  return p.csb[beta] = kess::make_csb<double, Mem>(p.triangle, o);
}

template <class Layout>
Kokkos::View<double**, Layout, Mem> random_block(std::int64_t n, int k) {
  Kokkos::View<double**, Layout, Mem> x(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), n, k);
  auto h = Kokkos::create_mirror_view(x);
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::int64_t i = 0; i < n; ++i)
    for (int q = 0; q < k; ++q) h(i, q) = u(gen);
  Kokkos::deep_copy(x, h);
  return x;
}

// Worst |y - A x| / (|A| |x|) over sampled rows.
template <class X, class Y>
double sampled_error(const Problem& p, const X& x, const Y& y) {
  auto xh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  auto yh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
  std::mt19937_64 gen(11);
  double worst = 0;
  for (int s = 0; s < 2000; ++s) {
    const std::int64_t i = static_cast<std::int64_t>(gen() % std::uint64_t(p.n));
    for (int q = 0; q < static_cast<int>(x.extent(1)); ++q) {
      double sum = 0, mag = 0;
      for (int e = p.ptr_h[i]; e < p.ptr_h[i + 1]; ++e) {
        sum += p.val_h[e] * xh(p.col_h[e], q);
        mag += std::fabs(p.val_h[e] * xh(p.col_h[e], q));
      }
      const double d = std::fabs(yh(i, q) - sum) / (mag > 0 ? mag : 1.0);
      worst = std::isnan(d) ? d : std::max(worst, d);
    }
  }
  return worst;
}

void counters(benchmark::State& state, const Problem& p, int k, double err) {
  const double bytes = 12.0 * double(p.stored) + 2.0 * 8.0 * double(p.n) * k;
  const double floor = bytes / (kess::perf::ceilings().gbs * 1e9);
  state.counters["GBs"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["floor_s"] = floor;
  // time / floor: 1 at the floor (the inverse of floor / time).
  state.counters["floor_ratio"] = benchmark::Counter(
      floor, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["n"] = double(p.n);
  state.counters["stored_nnz"] = double(p.stored);
  state.counters["max_rel_err"] = err;
}

void BM_spmm_kess(benchmark::State& state) {
  const int L = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const int beta = static_cast<int>(state.range(2));
  const Problem& p = problem(L);
  const auto& H = csb(p, beta);
  const auto x = random_block<Kokkos::LayoutRight>(p.n, k);
  kess::VectorBlock<double, Mem> y(Kokkos::view_alloc(Kokkos::WithoutInitializing, "y"), p.n, k);
  Exec exec;
  const Kokkos::View<const double**, Kokkos::LayoutRight, Mem> xc = x;
  kess::spmm(exec, H, xc, y);  // warm-up
  exec.fence();
  for (auto _ : state) {
    exec.fence();
    Kokkos::Timer timer;
    kess::spmm(exec, H, xc, y);
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
  counters(state, p, k, sampled_error(p, x, y));
  state.counters["beta"] = H.block_size();
  state.counters["blocks"] = double(H.local_blocks());
  state.SetLabel(p.name + ", kess::spmm CSB_Coo");
}

#if defined(KOKKOS_ENABLE_CUDA)
// The CUDA kernel alone with a given number of G-entry rounds per group (tuning), Y zeroed first.
void BM_spmm_kess_rounds(benchmark::State& state) {
  const int L = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const int rounds = static_cast<int>(state.range(2)), batch = static_cast<int>(state.range(3));
  const Problem& p = problem(L);
  const auto& H = csb(p, 0);
  const auto x = random_block<Kokkos::LayoutRight>(p.n, k);
  kess::VectorBlock<double, Mem> y("y", p.n, k);
  Exec exec;
  namespace lo = kess::detail::lobpcg;
  lo::SpmmCsbArgs a = lo::spmm_matrix_args(H);  // one process: H is on the diagonal
  a.xc = a.xr = x.data();
  a.yr = a.yc = y.data();
  a.ldxc = a.ldxr = a.ldyr = a.ldyc = k;
  a.k = k;
  auto run = [&] {
    Kokkos::deep_copy(exec, y, 0.0);
    lo::spmm_csb_launch(exec.cuda_stream(), a, rounds, batch);
  };
  run();
  exec.fence();
  for (auto _ : state) {
    Kokkos::Timer timer;
    run();
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
  counters(state, p, k, sampled_error(p, x, y));
  state.SetLabel(p.name + ", CSB kernel, rounds " + std::to_string(rounds) + ", batch " +
                 std::to_string(batch));
}
#endif

void cusparse_spmm(benchmark::State& state, bool row_major) {
  const int L = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  if (!kess::perf::peers::cusparse::available()) {
    state.SkipWithError("cuSPARSE is not built");
    return;
  }
  const Problem& p = problem(L);
  using Right = Kokkos::View<double**, Kokkos::LayoutRight, Mem>;
  using Left = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  Right xr, yr;
  Left xl, yl;
  const double* xp;
  double* yp;
  if (row_major) {
    xr = random_block<Kokkos::LayoutRight>(p.n, k);
    yr = Right("y", p.n, k);
    xp = xr.data();
    yp = yr.data();
  } else {
    xl = random_block<Kokkos::LayoutLeft>(p.n, k);
    yl = Left("y", p.n, k);
    xp = xl.data();
    yp = yl.data();
  }
  Exec().fence();
  kess::perf::peers::cusparse::Spmm mm(p.n, std::int64_t(p.col_h.size()), p.ptr.data(),
                                       p.col.data(), p.val.data(), k, row_major, xp, yp);
  if (!mm()) {  // warm-up
    state.SkipWithError(mm.error().c_str());
    return;
  }
  for (auto _ : state) {
    Kokkos::Timer timer;
    mm();
    state.SetIterationTime(timer.seconds());
  }
  counters(state, p, k, row_major ? sampled_error(p, xr, yr) : sampled_error(p, xl, yl));
  state.SetLabel(p.name + ", " + mm.label());
}
void BM_spmm_cusparse_alg2(benchmark::State& s) { cusparse_spmm(s, true); }
void BM_spmm_cusparse_alg1(benchmark::State& s) { cusparse_spmm(s, false); }

void BM_spmm_kokkos_kernels(benchmark::State& state) {
  const int L = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1));
  const Problem& p = problem(L);
  using Crs = KokkosSparse::CrsMatrix<double, int, Kokkos::Device<Exec, Mem>>;
  using Offsets = typename Crs::row_map_type::non_const_type;
  const std::int64_t nnz = std::int64_t(p.col_h.size());
  Offsets rowmap(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::bench::rowmap"), p.n + 1);
  const auto ptr = p.ptr;
  Kokkos::parallel_for(
      "kess::bench::rowmap", Kokkos::RangePolicy<Exec>(0, p.n + 1),
      KOKKOS_LAMBDA(std::int64_t i) { rowmap(i) = ptr(i); });
  const Crs A("kess::bench::crs", static_cast<int>(p.n), static_cast<int>(p.n),
              static_cast<typename Crs::size_type>(nnz), p.val, rowmap, p.col);
  const auto x = random_block<Kokkos::LayoutLeft>(p.n, k);
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> y("y", p.n, k);
  const Kokkos::View<const double**, Kokkos::LayoutLeft, Mem> xc = x;
  KokkosSparse::spmv("N", 1.0, A, xc, 0.0, y);  // warm-up
  Exec().fence();
  for (auto _ : state) {
    Kokkos::Timer timer;
    KokkosSparse::spmv("N", 1.0, A, xc, 0.0, y);
    Exec().fence();
    state.SetIterationTime(timer.seconds());
  }
  counters(state, p, k, sampled_error(p, x, y));
  state.SetLabel(p.name + ", KokkosSparse::spmv rank-2 LayoutLeft");
}

const bool registered = [] {
  const int L = kHost ? 20 : 26;
  for (auto [name, fn] : {std::pair{"BM_spmm_kess", &BM_spmm_kess},
                          std::pair{"BM_spmm_cusparse_alg2", &BM_spmm_cusparse_alg2},
                          std::pair{"BM_spmm_cusparse_alg1", &BM_spmm_cusparse_alg1},
                          std::pair{"BM_spmm_kokkos_kernels", &BM_spmm_kokkos_kernels}}) {
    if (kHost && (fn == &BM_spmm_cusparse_alg2 || fn == &BM_spmm_cusparse_alg1)) continue;
    if (fn == &BM_spmm_kess) continue;
    auto* b = benchmark::RegisterBenchmark(name, fn)->ArgNames({"L", "k"});
    for (int k : {8, 16}) b->Args({L, k});
    b->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  // beta 0: the automatic block size; the others for tuning.
  auto* b =
      benchmark::RegisterBenchmark("BM_spmm_kess", &BM_spmm_kess)->ArgNames({"L", "k", "beta"});
  for (int k : {8, 16}) b->Args({L, k, 0});
  b->Args({L, 1, 0})->Args({L, 32, 0});
  for (int beta : {4096, 65536}) b->Args({L, 8, beta})->Args({L, 16, beta});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
#if defined(KOKKOS_ENABLE_CUDA)
  auto* r = benchmark::RegisterBenchmark("BM_spmm_kess_rounds", &BM_spmm_kess_rounds)
                ->ArgNames({"L", "k", "rounds", "batch"});
  for (int k : {8, 16})
    for (int rounds : {4, 16})
      for (int batch : {4, 8}) r->Args({L, k, rounds, batch});
  r->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
  return true;
}();

}  // namespace
