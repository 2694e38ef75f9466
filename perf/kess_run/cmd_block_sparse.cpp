// kess-run multiply: C = alpha A B + beta C for block-sparse matrices (Matrix Market files or
// generated ones), on one rank or over a process grid under mpiexec; checked against a dense GEMM
// when the product is small enough.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/block_sparse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kess::run {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Matrix = BlockSparseMatrix<double, Exec::memory_space>;

const char* const kHelp =
    "usage: kess-run multiply (--a FILE --b FILE | --generate random|molecular) [options]\n\n"
    "C = alpha A B + beta C, block-sparse, with DBCSR's filtering.\n"
    "  --a FILE, --b FILE  Matrix Market coordinate files; a block exists when any of its\n"
    "                      entries is listed (an explicit zero too)\n"
    "  --c FILE --beta X   a C to update (default: C = 0, beta 0)\n"
    "  --alpha X           (default 1)\n"
    "  --block-size S      every block S x S (generators: default 23)\n"
    "  --row-blocks LIST, --inner-blocks LIST, --col-blocks LIST\n"
    "                      comma-separated block sizes of A's rows, A's columns (B's rows) and\n"
    "                      B's columns, instead of --block-size\n"
    "  --generate random   --blocks NB square blocks, each present with --occupancy F\n"
    "                      (default 0.5), entries uniform in [-1, 1], --seed K (B: K + 1)\n"
    "  --generate molecular  --blocks NB molecules on a jittered water-density lattice; block\n"
    "                      (i, j) holds entries decaying as exp(-r_ij / 2 A) up to 12 A (B = A)\n"
    "  --filter-eps E      skip products with ||A_ik|| ||B_kj|| < E / n_i, drop C blocks with\n"
    "                      ||C_ij|| < E (default 0)\n"
    "  --retain-sparsity   C keeps its pattern (needs --c)\n"
    "  --grid PxQ          process grid under mpiexec (default: the squarest)\n"
    "  --repeat R          timed runs, the median is reported (default 1)\n"
    "  --out FILE          C as a Matrix Market coordinate file (every entry of every block);\n"
    "                      written only when the check passed\n"
    "  --json FILE         the report as JSON\n"
    "  --help              this text\n"
    "The result is checked against a dense GEMM when rows x inner x cols <= 2^33.\n";

// Block sizes of a dimension of `total` scalars: --block-size S (S must divide it) or a list.
std::vector<int> sizes_for(const Args& a, const char* list, std::int64_t total, int fallback) {
  if (a.has(list)) return a.positive_ints(list);
  const std::int64_t s = a.integer("block-size", fallback, 1, kIntMax);
  require_arg(s > 0 && total % s == 0, "kess-run",
              "--block-size " + std::to_string(s) + " does not divide the dimension " +
                  std::to_string(total) + " (give --row-blocks/--inner-blocks/--col-blocks)");
  return std::vector<int>(static_cast<std::size_t>(total / s), static_cast<int>(s));
}

struct Generated {
  std::vector<int> rows, cols;
  std::vector<double> values;
};

// Blocks of an nb x nb matrix of s x s blocks; every rank generates all and lists its share.
Generated generate(const std::string& kind, int nb, int s, double occ, unsigned seed, int rank,
                   int nranks) {
  Generated g;
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
  std::vector<double> blk(static_cast<std::size_t>(s) * s);
  std::int64_t count = 0;
  auto emit = [&](int i, int j) {
    if (count++ % nranks != rank) return;
    g.rows.push_back(i);
    g.cols.push_back(j);
    g.values.insert(g.values.end(), blk.begin(), blk.end());
  };
  if (kind == "random") {
    for (int i = 0; i < nb; ++i) {
      for (int j = 0; j < nb; ++j) {
        if (p(gen) >= occ) continue;
        for (auto& x : blk) x = u(gen);
        emit(i, j);
      }
    }
    return g;
  }
  // Molecular: water density (one molecule per 29.9 A^3) on a jittered cubic lattice.
  const double spacing = std::cbrt(29.9);
  const int side = static_cast<int>(std::ceil(std::cbrt(double(nb))));
  const double box = side * spacing;
  std::vector<double> x(3 * static_cast<std::size_t>(nb));
  for (int m = 0; m < nb; ++m) {
    const int c[3] = {m % side, (m / side) % side, m / (side * side)};
    for (int d = 0; d < 3; ++d) x[3 * m + d] = (c[d] + 0.5 + 0.3 * u(gen)) * spacing;
  }
  const double rcut = 12.0, decay = 2.0;
  for (int i = 0; i < nb; ++i) {
    for (int j = 0; j < nb; ++j) {
      double r2 = 0;
      for (int d = 0; d < 3; ++d) {
        double dx = std::fabs(x[3 * i + d] - x[3 * j + d]);
        dx = std::min(dx, box - dx);  // periodic
        r2 += dx * dx;
      }
      const double r = std::sqrt(r2);
      if (r > rcut) continue;
      // Symmetric values: seeded by the unordered pair.
      std::mt19937_64 pair_gen(seed * 1000003ull + std::min(i, j) * 7919ull + std::max(i, j));
      const double scale = std::exp(-r / decay);
      for (int c = 0; c < s; ++c) {
        for (int rr = 0; rr < s; ++rr) {
          blk[rr + std::size_t(c) * s] = scale * u(pair_gen);
        }
      }
      if (i > j) {  // the transpose of block (j, i)
        std::vector<double> t(blk.size());
        for (int c = 0; c < s; ++c)
          for (int rr = 0; rr < s; ++rr) t[c + std::size_t(rr) * s] = blk[rr + std::size_t(c) * s];
        blk.swap(t);
      }
      if (i == j) {
        for (int d = 0; d < s; ++d) blk[d + std::size_t(d) * s] += 4.0;
      }
      emit(i, j);
    }
  }
  return g;
}

int cmd_multiply(int argc, char** argv) {
  Args a(argc, argv,
         {"a", "b", "c", "alpha", "beta", "block-size", "row-blocks", "inner-blocks", "col-blocks",
          "generate", "blocks", "occupancy", "seed", "filter-eps", "retain-sparsity", "grid",
          "repeat", "out", "json", "help"},
         {"help", "retain-sparsity"});
  if (a.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const auto world = comm::Communicator::world();
  const bool root = world.rank() == 0;
  const auto [pr, pc] = a.grid(world.size());
  comm::ProcessGrid grid(world, pr, pc);
  const double alpha = a.real("alpha", 1.0);
  const double beta = a.real("beta", 0.0);
  const int repeat = static_cast<int>(a.integer("repeat", 1, 1, 1000000));
  BlockMultiplyOptions opts;
  opts.filter_eps = a.real("filter-eps", 0.0, 0.0);
  opts.retain_sparsity = a.has("retain-sparsity");
  require_arg(!opts.retain_sparsity || a.has("c"), "kess-run",
              "--retain-sparsity needs a C (--c FILE)");
  require_arg(!a.has("beta") || a.has("c"), "kess-run", "--beta needs a C (--c FILE)");
  const bool gen = a.has("generate") || !a.has("a");
  require_arg(gen || a.has("b"), "kess-run", "--a needs --b");
  require_arg(!gen || !a.has("a"), "kess-run", "--generate and --a exclude each other");
  const std::string kind = a.str("generate", "random");
  require_arg(kind == "random" || kind == "molecular", "kess-run",
              "--generate must be random or molecular, got '" + kind + "'");

  Matrix A, B, C;
  std::string what;
  if (gen) {
    const int nb = static_cast<int>(a.integer("blocks", kind == "random" ? 100 : 64, 1, kIntMax));
    const int s = static_cast<int>(a.integer("block-size", 23, 1, kIntMax));
    const double occ = a.real("occupancy", 0.5, 0.0);
    require_arg(occ <= 1, "kess-run", "--occupancy must be in [0, 1]");
    const unsigned seed = static_cast<unsigned>(a.integer("seed", 1, 0, 4294967295LL));
    const std::vector<int> sz(static_cast<std::size_t>(nb), s);
    BlockDistribution d(grid, sz, sz);
    auto ga = generate(kind, nb, s, occ, seed, world.rank(), world.size());
    A = Matrix::from_blocks(d, ga.rows, ga.cols, ga.values);
    if (kind == "random") {
      auto gb = generate(kind, nb, s, occ, seed + 1, world.rank(), world.size());
      B = Matrix::from_blocks(d, gb.rows, gb.cols, gb.values);
    } else {
      B = A;
    }
    C = Matrix(d);
    what = kind + " " + std::to_string(nb) + " x " + std::to_string(nb) + " blocks of " +
           std::to_string(s);
  } else {
    // Sizes from the files' headers.
    const auto ha = mm::read_header(a.str("a", ""));
    const auto hb = mm::read_header(a.str("b", ""));
    require_arg(ha.coordinate && hb.coordinate, "kess-run",
                "--a and --b must be Matrix Market coordinate files");
    const auto rs = sizes_for(a, "row-blocks", ha.m, 0);
    const auto ks = sizes_for(a, "inner-blocks", ha.n, 0);
    const auto cs = sizes_for(a, "col-blocks", hb.n, 0);
    BlockDistribution da(grid, rs, ks), db(grid, ks, cs), dc(grid, rs, cs);
    A = Matrix::read_matrix_market(da, a.str("a", ""));
    B = Matrix::read_matrix_market(db, a.str("b", ""));
    C = a.has("c") ? Matrix::read_matrix_market(dc, a.str("c", "")) : Matrix(dc);
    what = a.str("a", "") + " x " + a.str("b", "");
  }
  const Matrix C0 = C;  // shares C's values until the first run replaces them
  const double occ_a = A.occupancy(), occ_b = B.occupancy(), occ_c0 = C.occupancy();

  Exec exec;
  BlockMultiplyStats st;
  std::vector<double> times;
  std::int64_t flops = 0;
  for (int r = 0; r < repeat; ++r) {
    // A fresh copy of C each run (the multiply updates its values in place).
    Kokkos::View<double*, Exec::memory_space> v("kess-run::C", C0.values().size());
    Kokkos::deep_copy(v, C0.values());
    C = Matrix(C0.distribution());
    C.assign(C0.row_ptr(), C0.col_index(), C0.offsets(), v, C0.norms());
    exec.fence();
    world.barrier();
    Kokkos::Timer t;
    flops = multiply(exec, alpha, A, B, beta, C, opts, &st);
    exec.fence();
    world.barrier();
    times.push_back(t.seconds());
  }
  const double secs = perf::median(times);
  const double occ_c = C.occupancy();

  // Check against a dense product when small enough.
  const auto& dc = C.distribution();
  const double work = double(dc.rows()) * double(A.distribution().cols()) * double(dc.cols());
  bool checked = false, ok = true;
  double err = 0, bound = 0;
  if (work <= 8589934592.0) {
    checked = true;
    const auto ad = A.to_dense(), bd = B.to_dense(), cd = C.to_dense();
    auto ref = C0.to_dense();
    const int m = static_cast<int>(dc.rows()), n = static_cast<int>(dc.cols()),
              k = static_cast<int>(A.distribution().cols());
    if (m > 0 && n > 0) {
      core::lapack::blas_gemm('N', 'N', m, n, k, alpha, ad.data(), std::max(m, 1), bd.data(),
                              std::max(k, 1), beta, ref.data(), std::max(m, 1));
    }
    double na = 0, nbn = 0;
    for (double x : ad) na += x * x;
    for (double x : bd) nbn += x * x;
    for (std::size_t e = 0; e < ref.size(); ++e) err = std::max(err, std::fabs(cd[e] - ref[e]));
    bound = 2 * opts.filter_eps * std::fabs(alpha) + 1e-12 * std::fabs(alpha) * std::sqrt(na * nbn) +
            1e-13 * std::fabs(beta);
    ok = std::isfinite(err) && err <= bound;
  }
  const double gflops = secs > 0 ? double(flops) / secs * 1e-9 : 0.0;
  if (root) {
    std::printf("multiply  %s on %d rank%s (%dx%d grid)\n", what.c_str(), world.size(),
                world.size() > 1 ? "s" : "", pr, pc);
    std::printf("  sizes       %lld x %lld times %lld x %lld\n", (long long)dc.rows(),
                (long long)A.distribution().cols(), (long long)A.distribution().cols(),
                (long long)dc.cols());
    std::printf("  occupancy   A %.4f, B %.4f, C %.4f -> %.4f\n", occ_a, occ_b, occ_c0, occ_c);
    std::printf("  products    %lld computed, %lld skipped (filter-eps %g)\n",
                (long long)st.products, (long long)st.skipped, opts.filter_eps);
    std::printf("  time        %.6f s (median of %d), %.2f GFLOP/s, %lld flops\n", secs, repeat,
                gflops, (long long)flops);
    std::printf("  share       index %.1f%%, kernel %.1f%%, communication %.1f%% (rank 0)\n",
                100 * st.seconds_index / std::max(secs, 1e-30),
                100 * st.seconds_kernel / std::max(secs, 1e-30),
                100 * st.seconds_comm / std::max(secs, 1e-30));
    if (checked) {
      std::printf("  check       %s (max error %.2e, bound %.2e)\n", ok ? "OK" : "FAILED", err,
                  bound);
    } else {
      std::printf("  check       skipped (too large for a dense product)\n");
    }
  }
  if (ok && a.has("out")) C.write_matrix_market(a.str("out", ""));
  if (!ok && a.has("out") && root) std::printf("  output      not written: the check failed\n");
  if (a.has("json") && root) {
    perf::JsonReport j;
    j.set("command", "multiply");
    j.set("problem", what);
    j.set("ranks", double(world.size()));
    j.set("grid_rows", double(pr));
    j.set("grid_cols", double(pc));
    j.set("rows", double(dc.rows()));
    j.set("inner", double(A.distribution().cols()));
    j.set("cols", double(dc.cols()));
    j.set("occupancy_a", occ_a);
    j.set("occupancy_b", occ_b);
    j.set("occupancy_c_before", occ_c0);
    j.set("occupancy_c_after", occ_c);
    j.set("filter_eps", opts.filter_eps);
    j.set("flops", double(flops));
    j.set("products", double(st.products));
    j.set("skipped", double(st.skipped));
    j.set("blocks", double(st.c_blocks));
    j.set("seconds", secs);
    j.set("gflops", gflops);
    j.set("seconds_index", st.seconds_index);
    j.set("seconds_kernel", st.seconds_kernel);
    j.set("seconds_comm", st.seconds_comm);
    j.set("check", checked ? (ok ? "ok" : "failed") : "skipped");
    j.write(a.str("json", ""));
  }
  return ok ? 0 : 3;
}

const Registrar reg("multiply", "block-sparse C = alpha A B + beta C with filtering",
                    &cmd_multiply);

}  // namespace
}  // namespace kess::run
