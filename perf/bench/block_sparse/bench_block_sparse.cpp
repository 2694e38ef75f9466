// Block-sparse multiplication: the stack kernel alone on DBCSR's tuning set, and whole multiplies.
//   BM_stack_<impl>/mnk        a stack of 16,005 products of mnk^3 blocks drawn at random from
//                              10,000 A and 10,000 B blocks into 1,000 C blocks (libsmm_acc's
//                              tuning set), grouped into runs by C block (as kess's index pass
//                              does; not timed)
//     kess                     the kernel kess::multiply picks (host: AVX-512 runs; CUDA: tensor
//                              cores for blocks up to 32)
//     kess_generic             the portable team kernel (CUDA builds)
//                              (the stack's index arrays are in device memory before the timing)
//   BM_multiply_kess/blocks/size/occupancy_pct/eps_exp   C = A B for random matrices of
//                              blocks x blocks blocks (occupancy in %), or, with eps_exp > 0, a
//                              molecular matrix (blocks on a water-density lattice, entries
//                              exp(-r / 1 A) up to 12 A) squared with filter_eps = 10^-eps_exp,
//                              on all ranks (squarest grid)
//   BM_multiply_dbcsr/...      the same product by DBCSR (Debian's libdbcsr-dev, C API), when found
// GFLOPs counts the products computed (Σ 2 m n k).
#include "bench_util.hpp"
#include "dbcsr.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/solvers/block_sparse.hpp>
#include <kess/solvers/block_sparse/detail/stack_kernel.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace {

using kess::perf::bench::Exec;
using kess::perf::bench::kHost;
using Mem = Exec::memory_space;
namespace bs = kess::detail::block_sparse;

struct TuningSet {
  bs::Stack stack;
  Kokkos::View<double*, Mem> a, b, c;
};

// libsmm_acc's tuning set: 10,000 A and B blocks, 1,000 C blocks, 16,005 products.
TuningSet tuning_set(int s) {
  constexpr int na = 10000, nb = 10000, nc = 1000, np = 16005;
  const std::int64_t len = std::int64_t(s) * s;
  std::mt19937_64 gen(42);
  std::vector<int> pa(np), pb(np), pc(np);
  for (int p = 0; p < np; ++p) {
    pa[p] = static_cast<int>(gen() % na);
    pb[p] = static_cast<int>(gen() % nb);
    pc[p] = static_cast<int>(gen() % nc);
  }
  std::vector<int> order(np);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return pc[x] < pc[y]; });
  TuningSet t;
  auto& st = t.stack;
  for (int q = 0; q < np; ++q) {
    const int p = order[q];
    if (st.run_c.empty() || st.run_c.back() != pc[p] * len) {
      if (!st.run_c.empty()) st.run_begin.push_back(q);
      st.run_c.push_back(pc[p] * len);
      st.run_m.push_back(s);
      st.run_n.push_back(s);
    }
    st.a_off.push_back(pa[p] * len);
    st.b_off.push_back(pb[p] * len);
    st.k.push_back(s);
    st.flops += 2 * len * s;
  }
  st.run_begin.push_back(np);
  st.products = np;
  auto fill = [&](std::int64_t n, unsigned seed) {
    Kokkos::View<double*, Mem> v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench"), n);
    auto h = Kokkos::create_mirror_view(v);
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::int64_t e = 0; e < n; ++e) h(e) = u(g);
    Kokkos::deep_copy(v, h);
    return v;
  };
  t.a = fill(na * len, 1);
  t.b = fill(nb * len, 2);
  t.c = fill(nc * len, 3);
  return t;
}

void stack(benchmark::State& state, bs::StackKernel kernel) {
  const int s = static_cast<int>(state.range(0));
  auto t = tuning_set(s);
  Exec exec;
  const auto d = bs::upload_stack(exec, t.stack);
  bs::stack_multiply(exec, t.stack, d, t.a, t.b, t.c, 1.0, kernel);  // warm-up
  for (auto _ : state) {
    exec.fence();
    Kokkos::Timer timer;
    bs::stack_multiply(exec, t.stack, d, t.a, t.b, t.c, 1.0, kernel);
    exec.fence();
    state.SetIterationTime(timer.seconds());
  }
  kess::perf::bench::flop_counters(state, double(t.stack.flops));
}
void BM_stack_kess(benchmark::State& s) { stack(s, bs::StackKernel::automatic); }
void BM_stack_kess_generic(benchmark::State& s) { stack(s, bs::StackKernel::generic); }

// Random or molecular blocks of a square matrix, each rank listing its share.
void blocks_of(int nb, int s, int occ_pct, int eps_exp, int rank, int nranks, std::vector<int>& r,
               std::vector<int>& c, std::vector<double>& v, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1), p(0, 1);
  std::vector<double> blk(std::size_t(s) * s);
  std::int64_t count = 0;
  // Molecular: positions on a jittered lattice at water density, entries exp(-r / 1 A), cut at
  // 12 A.
  const double spacing = std::cbrt(29.9);
  const int side = static_cast<int>(std::ceil(std::cbrt(double(nb))));
  std::vector<double> x;
  if (eps_exp > 0) {
    x.resize(3 * std::size_t(nb));
    for (int m = 0; m < nb; ++m) {
      const int q[3] = {m % side, (m / side) % side, m / (side * side)};
      for (int d = 0; d < 3; ++d) x[3 * m + d] = (q[d] + 0.5 + 0.3 * u(gen)) * spacing;
    }
  }
  const double box = side * spacing;
  for (int i = 0; i < nb; ++i) {
    for (int j = 0; j < nb; ++j) {
      double scale = 1;
      if (eps_exp > 0) {
        double r2 = 0;
        for (int d = 0; d < 3; ++d) {
          double dx = std::fabs(x[3 * i + d] - x[3 * j + d]);
          dx = std::min(dx, box - dx);
          r2 += dx * dx;
        }
        if (r2 > 144) continue;
        scale = std::exp(-std::sqrt(r2));
      } else if (p(gen) * 100 >= occ_pct) {
        continue;
      }
      for (auto& e : blk) e = scale * u(gen);
      if (count++ % nranks != rank) continue;
      r.push_back(i);
      c.push_back(j);
      v.insert(v.end(), blk.begin(), blk.end());
    }
  }
}

void BM_multiply_kess(benchmark::State& state) {
  const int nb = static_cast<int>(state.range(0)), s = static_cast<int>(state.range(1));
  const int occ = static_cast<int>(state.range(2)), eps_exp = static_cast<int>(state.range(3));
  const auto world = kess::comm::Communicator::world();
  const auto grid = kess::comm::ProcessGrid::squarest(world);
  using Matrix = kess::BlockSparseMatrix<double, Mem>;
  const std::vector<int> sz(static_cast<std::size_t>(nb), s);
  kess::BlockDistribution d(grid, sz, sz);
  std::vector<int> r, c;
  std::vector<double> v;
  blocks_of(nb, s, occ, eps_exp, world.rank(), world.size(), r, c, v, 1);
  const auto A = Matrix::from_blocks(d, r, c, v);
  r.clear();
  c.clear();
  v.clear();
  blocks_of(nb, s, occ, eps_exp, world.rank(), world.size(), r, c, v, eps_exp > 0 ? 1 : 2);
  const auto B = Matrix::from_blocks(d, r, c, v);
  kess::BlockMultiplyOptions o;
  o.filter_eps = eps_exp > 0 ? std::pow(10.0, -eps_exp) : 0.0;
  Exec exec;
  kess::BlockMultiplyStats st;
  double flops = 0;
  {
    Matrix C(d);
    kess::multiply(exec, 1.0, A, B, 0.0, C, o, &st);  // warm-up
  }
  double index = 0, kernel = 0, comm_s = 0;
  int runs = 0;
  for (auto _ : state) {
    Matrix C(d);
    exec.fence();
    world.barrier();
    Kokkos::Timer timer;
    flops = double(kess::multiply(exec, 1.0, A, B, 0.0, C, o, &st));
    exec.fence();
    world.barrier();
    state.SetIterationTime(timer.seconds());
    index += st.seconds_index;
    kernel += st.seconds_kernel;
    comm_s += st.seconds_comm;
    ++runs;
  }
  kess::perf::bench::flop_counters(state, flops);
  state.counters["occupancy_a"] = A.occupancy();
  state.counters["ranks"] = world.size();
  state.counters["index_s"] = index / std::max(runs, 1);
  state.counters["kernel_s"] = kernel / std::max(runs, 1);
  state.counters["comm_s"] = comm_s / std::max(runs, 1);
}

void BM_multiply_dbcsr(benchmark::State& state) {
  namespace peer = kess::perf::peers::dbcsr;
  if (!peer::available()) {
    state.SkipWithError(peer::unavailable_reason().c_str());
    return;
  }
  const int nb = static_cast<int>(state.range(0)), s = static_cast<int>(state.range(1));
  const int occ = static_cast<int>(state.range(2)), eps_exp = static_cast<int>(state.range(3));
  auto global = [&](unsigned seed) {
    peer::Blocks g;
    g.row_sizes.assign(static_cast<std::size_t>(nb), s);
    g.col_sizes = g.row_sizes;
    std::vector<double> v;
    blocks_of(nb, s, occ, eps_exp, 0, 1, g.rows, g.cols, v, seed);
    const std::size_t len = std::size_t(s) * s;
    for (std::size_t b = 0; b < g.rows.size(); ++b) g.offsets.push_back(b * len);
    g.values = std::move(v);
    return g;
  };
  const auto A = global(1), B = global(eps_exp > 0 ? 1 : 2);
  peer::Multiply mult(A, B, eps_exp > 0 ? std::pow(10.0, -eps_exp) : 0.0);
  if (!mult.error().empty()) {
    state.SkipWithError(mult.error().c_str());
    return;
  }
  bool ok = true;
  mult.run(&ok);  // warm-up
  for (auto _ : state) {
    const double t = mult.run(&ok);
    if (!ok) {
      state.SkipWithError("dbcsr_multiply failed");
      return;
    }
    state.SetIterationTime(t);
  }
  kess::perf::bench::flop_counters(state, double(mult.flops()));
  state.counters["occupancy_a"] = double(A.rows.size()) / (double(nb) * nb);
  state.counters["ranks"] = kess::comm::Communicator::world().size();
  state.counters["index_s"] = 0;
  state.counters["kernel_s"] = 0;
  state.counters["comm_s"] = 0;
  state.SetLabel(mult.label());
}

const bool registered = [] {
  for (auto [name, fn] : {std::pair{"BM_stack_kess", &BM_stack_kess},
                          std::pair{"BM_stack_kess_generic", &BM_stack_kess_generic}}) {
    if (kHost && fn == &BM_stack_kess_generic) continue;
    auto* b = benchmark::RegisterBenchmark(name, fn)->ArgName("mnk");
    for (int s : {5, 13, 23, 32}) b->Arg(s);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (auto [name, fn] : {std::pair{"BM_multiply_kess", &BM_multiply_kess},
                          std::pair{"BM_multiply_dbcsr", &BM_multiply_dbcsr}}) {
    if (!kHost && fn == &BM_multiply_dbcsr) continue;
    auto* m = benchmark::RegisterBenchmark(name, fn)
                  ->ArgNames({"blocks", "size", "occupancy_pct", "eps_exp"});
    if (kHost) {
      m->Args({400, 23, 50, 0})->Args({1000, 13, 0, 6});
    } else {
      m->Args({400, 23, 50, 0})->Args({7000, 23, 0, 6});
    }
    m->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
