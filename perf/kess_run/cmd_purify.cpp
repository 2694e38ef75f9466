// kess-run purify: the density matrix of a block-sparse H and S (generated molecule-like or Matrix
// Market files) by the sign function with bisection in mu or by TRS4, on one rank or over a
// process grid; checked against dense generalized eigenvectors when small enough.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/block_sparse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// A named namespace: kess-run is one unity translation unit, and the other subcommands' helpers
// (generate, ...) live in kess::run's anonymous namespace.
namespace kess::run::purify_cmd {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using BsMatrix = BlockSparseMatrix<double, Exec::memory_space>;

const char* const kPurifyHelp =
    "usage: kess-run purify [--method sign|trs4] [--electrons N]\n"
    "                       [--h FILE --s FILE (--block-size S | --block-sizes LIST)]\n"
    "                       [--generate molecular --blocks NB] [options]\n\n"
    "The density matrix P = S^-1/2 P_o S^-1/2 of H C = S C E with N orbitals occupied once each\n"
    "(Tr(PS) = N), block-sparse with DBCSR's filtering.\n"
    "  --method sign|trs4  1/2 (I - sign(K - mu I)) with mu by bisection, or TRS4 purification\n"
    "                      (K = S^-1/2 H S^-1/2; default sign)\n"
    "  --electrons N       occupied orbitals (default: the generator's filling, or half the\n"
    "                      orbitals for files)\n"
    "  --h FILE, --s FILE  Matrix Market coordinate files (symmetric H, SPD S); a block exists\n"
    "                      when any of its entries is listed\n"
    "  --block-size S      every block S x S (files; generator default: mixed 4,6,5,7)\n"
    "  --block-sizes LIST  comma-separated block sizes instead (files: every block in order;\n"
    "                      generator: cycled over the molecules)\n"
    "  --generate molecular  --blocks NB molecules (default 64) on a jittered water-density\n"
    "                      lattice, --seed K: orbital energies -1 (lower half of each block) and\n"
    "                      +1 (upper half) +- 0.25, couplings 0.1 inside a molecule and\n"
    "                      0.3 exp(-r / 1 A) between molecules up to 8 A, overlaps 0.02 and\n"
    "                      0.1 exp(-r / 1 A); filling: the lower halves\n"
    "  --filter-eps E      every multiply's filter (default 1e-6)\n"
    "  --tol X             stopping threshold (default sqrt(filter-eps), 1e-8 at 0)\n"
    "  --max-iterations K  per sign or TRS4 run (default 100)\n"
    "  --sqrt-order 2|3    of the S^-1/2 iteration (default 3)\n"
    "  --grid PxQ          process grid under mpiexec (default: the squarest)\n"
    "  --json FILE         the report as JSON\n"
    "  --help              this text\n"
    "Checked against dense generalized eigenvectors (LAPACK dsygvd) when n <= 2000: P within\n"
    "1000 filter-eps + 1e-8 (Frobenius), mu between HOMO and LUMO; exit code 3 otherwise.\n";

struct BlockLists {
  std::vector<int> rows, cols;
  std::vector<double> values;
};

// Molecule-like H and S: every rank generates all blocks (seeded by the unordered pair, so both
// triangles agree) and lists every nranks-th.
void generate_molecular(const std::vector<int>& sz, unsigned seed, int rank, int nranks,
                        BlockLists& h, BlockLists& s) {
  const int nb = static_cast<int>(sz.size());
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const double spacing = std::cbrt(29.9);  // water: one molecule per 29.9 A^3
  const int side = static_cast<int>(std::ceil(std::cbrt(double(nb))));
  const double box = side * spacing;
  std::vector<double> x(3 * static_cast<std::size_t>(nb));
  for (int m = 0; m < nb; ++m) {
    const int c[3] = {m % side, (m / side) % side, m / (side * side)};
    for (int d = 0; d < 3; ++d) x[3 * m + d] = (c[d] + 0.5 + 0.3 * u(gen)) * spacing;
  }
  const double rcut = 8.0, decay = 1.0;
  std::int64_t count = 0;
  std::vector<double> hb, sb, t;
  auto emit = [&](BlockLists& l, int i, int j, const std::vector<double>& b) {
    l.rows.push_back(i);
    l.cols.push_back(j);
    l.values.insert(l.values.end(), b.begin(), b.end());
  };
  for (int i = 0; i < nb; ++i) {
    for (int j = i; j < nb; ++j) {
      double r2 = 0;
      for (int d = 0; d < 3; ++d) {
        double dx = std::fabs(x[3 * i + d] - x[3 * j + d]);
        dx = std::min(dx, box - dx);  // periodic
        r2 += dx * dx;
      }
      const double r = std::sqrt(r2);
      if (r > rcut) continue;
      const bool mine = count++ % nranks == rank;
      std::mt19937_64 pg(seed * 1000003ull + std::uint64_t(i) * 7919ull + std::uint64_t(j));
      const int mi = sz[i], mj = sz[j];
      hb.assign(std::size_t(mi) * mj, 0.0);
      sb.assign(std::size_t(mi) * mj, 0.0);
      const double scale = std::exp(-r / decay);
      for (int c = 0; c < mj; ++c) {
        for (int rr = 0; rr < mi; ++rr) {
          hb[rr + std::size_t(c) * mi] = 0.3 * scale * u(pg);
          sb[rr + std::size_t(c) * mi] = 0.1 * scale * u(pg);
        }
      }
      if (i == j) {
        // Symmetric diagonal block: orbital energies -1 / +1 (+- 0.25) coupled by 0.1, overlap
        // 1 + 0.02.
        for (int c = 0; c < mi; ++c) {
          for (int rr = c + 1; rr < mi; ++rr) {
            hb[c + std::size_t(rr) * mi] = hb[rr + std::size_t(c) * mi] *= 1.0 / 3;
            sb[c + std::size_t(rr) * mi] = sb[rr + std::size_t(c) * mi] *= 0.2;
          }
          hb[c + std::size_t(c) * mi] = (c < mi / 2 ? -1.0 : 1.0) + 0.25 * u(pg);
          sb[c + std::size_t(c) * mi] = 1.0;
        }
        if (mine) {
          emit(h, i, i, hb);
          emit(s, i, i, sb);
        }
        continue;
      }
      if (!mine) continue;
      emit(h, i, j, hb);
      emit(s, i, j, sb);
      t.assign(hb.size(), 0.0);  // block (j, i) = block (i, j)^T
      for (int c = 0; c < mj; ++c)
        for (int rr = 0; rr < mi; ++rr) t[c + std::size_t(rr) * mj] = hb[rr + std::size_t(c) * mi];
      emit(h, j, i, t);
      for (int c = 0; c < mj; ++c)
        for (int rr = 0; rr < mi; ++rr) t[c + std::size_t(rr) * mj] = sb[rr + std::size_t(c) * mi];
      emit(s, j, i, t);
    }
  }
}

// Dense reference: ||P - C_occ C_occ^T||_F and the HOMO / LUMO (generalized eigenvalues).
struct DenseCheck {
  double p_error = 0, homo = 0, lumo = 0;
};

DenseCheck dense_check(const BsMatrix& H, const BsMatrix& S, const BsMatrix& P, int N) {
  const int n = static_cast<int>(H.distribution().rows());
  auto h = H.to_dense(), s = S.to_dense(), p = P.to_dense();
  std::vector<double> w(static_cast<std::size_t>(n));
  DenseCheck c;
  const int info = core::lapack::sygvd(1, 'V', 'L', n, h.data(), n, s.data(), n, w.data());
  require(info == 0, ErrorKind::no_convergence, "kess-run",
          "the dense check's dsygvd failed, info " + std::to_string(info));
  if (N > 0) {
    core::lapack::blas_gemm('N', 'T', n, n, N, -1.0, h.data(), n, h.data(), n, 1.0, p.data(), n);
  }
  double e2 = 0;
  for (double x : p) e2 += x * x;
  c.p_error = std::sqrt(e2);
  c.homo = N > 0 ? w[N - 1] : -INFINITY;
  c.lumo = N < n ? w[N] : INFINITY;
  return c;
}

int cmd_purify(int argc, char** argv) {
  Args a(argc, argv,
         {"method", "electrons", "h", "s", "block-size", "block-sizes", "generate", "blocks",
          "seed", "filter-eps", "tol", "max-iterations", "sqrt-order", "grid", "json", "help"},
         {"help"});
  if (a.has("help")) {
    std::fputs(kPurifyHelp, stdout);
    return 0;
  }
  const auto world = comm::Communicator::world();
  const bool root = world.rank() == 0;
  const auto [pr, pc] = a.grid(world.size());
  comm::ProcessGrid grid(world, pr, pc);
  BlockDensityOptions opts;
  opts.method = from_string<DensityMethod>(a.str("method", "sign"));
  opts.filter_eps = a.real("filter-eps", 1e-6, 0.0);
  opts.tol = a.real("tol", 0.0, 0.0);
  opts.max_iterations = static_cast<int>(a.integer("max-iterations", 100, 1, 1000000));
  opts.sqrt_order = static_cast<int>(a.integer("sqrt-order", 3, 2, 3));
  const bool files = a.has("h") || a.has("s");
  require_arg(!files || (a.has("h") && a.has("s")), "kess-run", "--h and --s go together");
  require_arg(!files || !a.has("generate"), "kess-run",
              "--generate and --h/--s exclude each other");
  const std::string kind = a.str("generate", "molecular");
  require_arg(kind == "molecular", "kess-run", "--generate must be molecular, got '" + kind + "'");
  require_arg(files || !a.has("block-size") || !a.has("block-sizes"), "kess-run",
              "give --block-size or --block-sizes, not both");

  BsMatrix H, S;
  std::string what;
  double electrons = 0;
  if (!files) {
    const int nb = static_cast<int>(a.integer("blocks", 64, 1, kIntMax));
    const unsigned seed = static_cast<unsigned>(a.integer("seed", 1, 0, 4294967295LL));
    std::vector<int> pattern = {4, 6, 5, 7};
    if (a.has("block-sizes")) pattern = a.positive_ints("block-sizes");
    if (a.has("block-size")) pattern = {static_cast<int>(a.integer("block-size", 6, 1, kIntMax))};
    std::vector<int> sz(static_cast<std::size_t>(nb));
    for (int i = 0; i < nb; ++i) sz[i] = pattern[i % pattern.size()];
    for (int x : sz) electrons += x / 2;
    BlockDistribution d(grid, sz, sz);
    BlockLists hl, sl;
    generate_molecular(sz, seed, world.rank(), world.size(), hl, sl);
    H = BsMatrix::from_blocks(d, hl.rows, hl.cols, hl.values);
    S = BsMatrix::from_blocks(d, sl.rows, sl.cols, sl.values);
    what = "molecular " + std::to_string(nb) + " molecules";
  } else {
    const auto hh = mm::read_header(a.str("h", ""));
    const auto hs = mm::read_header(a.str("s", ""));
    require_arg(hh.coordinate && hs.coordinate, "kess-run",
                "--h and --s must be Matrix Market coordinate files");
    require_arg(hh.m == hh.n && hs.m == hs.n && hh.m == hs.m, "kess-run",
                "--h and --s must be square and of one size");
    std::vector<int> sz;
    if (a.has("block-sizes")) {
      sz = a.positive_ints("block-sizes");
    } else {
      const std::int64_t s = a.integer("block-size", 0, 1, kIntMax);
      require_arg(s > 0 && hh.m % s == 0, "kess-run",
                  "--block-size " + std::to_string(s) + " does not divide the dimension " +
                      std::to_string(hh.m) + " (give --block-sizes)");
      sz.assign(static_cast<std::size_t>(hh.m / s), static_cast<int>(s));
    }
    electrons = std::floor(double(hh.m) / 2);
    BlockDistribution d(grid, sz, sz);
    H = BsMatrix::read_matrix_market(d, a.str("h", ""));
    S = BsMatrix::read_matrix_market(d, a.str("s", ""));
    what = a.str("h", "") + ", " + a.str("s", "");
  }
  if (a.has("electrons")) electrons = a.real("electrons", 0.0);
  const auto& d = H.distribution();
  const double occ_h = H.occupancy(), occ_s = S.occupancy();

  Exec exec;
  exec.fence();
  world.barrier();
  Kokkos::Timer timer;
  const auto r = density_matrix(exec, H, S, electrons, opts);
  exec.fence();
  world.barrier();
  const double secs = timer.seconds();
  const double occ_p = r.P.occupancy();
  const double gflops = secs > 0 ? double(r.flops) / secs * 1e-9 : 0.0;

  const bool small = d.rows() <= 2000;
  bool ok = true;
  DenseCheck c;
  if (small) {
    c = dense_check(H, S, r.P, static_cast<int>(electrons));
    // Filtered runs: within 1000 eps (the tests see ~50 eps); mu anywhere in the gap.
    const double bound = 1000 * opts.filter_eps + 1e-8;
    ok = c.p_error <= bound && r.mu > c.homo && r.mu < c.lumo;
  }
  if (root) {
    std::printf("purify  %s, %s on %d rank%s (%dx%d grid)\n", to_string(opts.method), what.c_str(),
                world.size(), world.size() > 1 ? "s" : "", pr, pc);
    std::printf("  sizes       n = %lld in %d blocks (%d..%d)\n", (long long)d.rows(),
                d.block_rows(), *std::min_element(d.row_sizes().begin(), d.row_sizes().end()),
                *std::max_element(d.row_sizes().begin(), d.row_sizes().end()));
    std::printf("  occupancy   H %.4f, S %.4f -> P %.4f\n", occ_h, occ_s, occ_p);
    std::printf("  electrons   %g: Tr(PS) = %.8f, ||PSPS - PS||_F = %.3e\n", electrons, r.trace_ps,
                r.idempotency);
    std::printf("  mu          %.6f (K's spectrum in [%.4f, %.4f])\n", r.mu, r.spectrum_min,
                r.spectrum_max);
    std::printf("  iterations  %s %d over %d mu evaluation%s, S^-1/2 %d (order %d)\n",
                to_string(opts.method), r.iterations, r.mu_evaluations,
                r.mu_evaluations == 1 ? "" : "s", r.sqrt_iterations, opts.sqrt_order);
    std::printf("  time        %.4f s, %.2f GFLOP/s, %lld flops (filter-eps %g)\n", secs, gflops,
                (long long)r.flops, opts.filter_eps);
    if (small) {
      std::printf("  check       %s (||P - P_dense||_F = %.2e; HOMO %.6f < mu < LUMO %.6f)\n",
                  ok ? "OK" : "FAILED", c.p_error, c.homo, c.lumo);
    } else {
      std::printf("  check       skipped (n > 2000)\n");
    }
  }
  if (a.has("json") && root) {
    perf::JsonReport j;
    j.set("command", "purify");
    j.set("method", to_string(opts.method));
    j.set("problem", what);
    j.set("ranks", double(world.size()));
    j.set("grid_rows", double(pr));
    j.set("grid_cols", double(pc));
    j.set("rows", double(d.rows()));
    j.set("block_rows", double(d.block_rows()));
    j.set("electrons", electrons);
    j.set("occupancy_h", occ_h);
    j.set("occupancy_s", occ_s);
    j.set("occupancy_p", occ_p);
    j.set("filter_eps", opts.filter_eps);
    j.set("flops", double(r.flops));
    j.set("seconds", secs);
    j.set("gflops", gflops);
    j.set("iterations", double(r.iterations));
    j.set("mu_evaluations", double(r.mu_evaluations));
    j.set("sqrt_iterations", double(r.sqrt_iterations));
    j.set("trace_ps", r.trace_ps);
    j.set("idempotency", r.idempotency);
    j.set("mu", r.mu);
    j.set("spectrum_min", r.spectrum_min);
    j.set("spectrum_max", r.spectrum_max);
    if (small) j.set("p_error", c.p_error);
    j.set("check", small ? (ok ? "ok" : "failed") : "skipped");
    j.write(a.str("json", ""));
  }
  return ok ? 0 : 3;
}

const Registrar reg_purify("purify",
                           "block-sparse density matrix by sign (bisection in mu) or TRS4",
                           &cmd_purify);

}  // namespace
}  // namespace kess::run::purify_cmd
