// kess-run lobpcg and kess-run spmm: the lowest (or highest) eigenpairs of a half-stored sparse
// symmetric matrix (CSB_Coo) by LOBPCG, and the timing of its SpMM, on a Matrix Market file or a
// generated problem (Heisenberg, Hubbard, pairing, Laplacians, random), on one rank or under
// mpiexec. Results are checked: recomputed residuals and orthogonality always, dense LAPACK
// eigenvalues for small orders, the closed form for Laplacians, a host CSR product for spmm.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/core/io/output_file.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/lobpcg.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <vector>

// A named namespace: kess-run is one unity translation unit.
namespace kess::run::lobpcg_cmd {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using Csb = CsbMatrix<double, Mem>;
using Block = VectorBlock<double, Mem>;
using ConstBlock = Kokkos::View<const double**, Kokkos::LayoutRight, Mem>;

const char* const kProblemHelp =
    "Problem (one of):\n"
    "  --matrix FILE       Matrix Market coordinate file: a symmetric file is the stored\n"
    "                      triangle, a general one is checked for symmetry\n"
    "  --generate NAME     heisenberg (default: --L 16), hubbard, pairing, laplace1d, laplace2d,\n"
    "                      laplace3d or random, with its parameters:\n"
    "    heisenberg        --L sites, --sz S^z (default 0; half-integer for odd L), --J,\n"
    "                      --periodic (default) or --open\n"
    "    hubbard           --L sites, --n-up, --n-down (default L/2 each), --t (1), --U (4),\n"
    "                      --open (default) or --periodic\n"
    "    pairing           --L levels, --pairs (default L/2), --g (0.5)\n"
    "    laplace1d/2d/3d   --nx, --ny, --nz interior points (default 1000, 100 x 100, 20^3;\n"
    "                      --ny and --nz default to --nx)\n"
    "    random            --n (default 10000), --density (1e-3), --seed (1), --shift (0: added\n"
    "                      to the diagonal)\n"
    "  --csb-block N       CSB block size beta (default: automatic, reported)\n"
    "  --layout L          automatic, triangular or general (under mpiexec)\n"
    "  --write-matrix FILE the matrix as a Matrix Market symmetric coordinate file\n";

const char* const kLobpcgHelp =
    "usage: kess-run lobpcg [--matrix FILE [--matrix-b FILE] | --generate NAME ...] [--nev K]\n"
    "                       [--block-size B] [--tol T] [--largest] [--precond fom|jacobi|none]\n"
    "                       [--values FILE] [--vectors FILE] [--json FILE]\n\n"
    "The K smallest (--largest: largest) eigenpairs of a sparse symmetric H (H x = lambda S x\n"
    "with --matrix-b S, S symmetric positive definite) by LOBPCG on its stored lower triangle.\n"
    "With no arguments: heisenberg --L 16 (n = 12870), --nev 4.\n"
    "  --nev K             eigenpairs (default 4)\n"
    "  --block-size B      vectors iterated, B >= K (default: automatic)\n"
    "  --tol T             converged when ||r|| / ((||H|| + |lambda|) ||x||) < T (default 1e-8)\n"
    "  --max-iterations M  (default 1000)\n"
    "  --precond P         fom (default), jacobi or none\n"
    "  --fom-iterations N, --fom-tile R   FOM steps per tile (4), tile rows (0: beta)\n"
    "  --progress          one line per iteration on stderr\n"
    "  --values FILE       the eigenvalues, one a line, ascending, 17 significant digits\n"
    "  --vectors FILE      the eigenvectors as a Matrix Market array n x K, in the same order\n"
    "  --json FILE         the report as JSON\n"
    "  --help              this text\n"
    "Checked: the residuals recomputed with spmm below 10 T and max |X^T S X - I| < 1e-10; for\n"
    "n <= 3000 the eigenvalues against LAPACK (dsyevd/dsygvd) within 10 T (||H|| + |lambda|);\n"
    "Laplacians against their closed form. Output files are written only when the run converged\n"
    "and the checks passed; exit code 3 otherwise.\n\n";

const char* const kSpmmHelp =
    "usage: kess-run spmm [--matrix FILE | --generate NAME ...] [--k K] [--repeat R]\n"
    "                     [--json FILE]\n\n"
    "Times Y = H X (kess::spmm, each stored entry used twice) on random X of K columns: one\n"
    "warm-up, then R fenced runs, the median reported with GB/s against the byte floor (12 bytes\n"
    "a stored entry + n K 8 read + n K 8 written) and GFLOP/s (4 stored K). Checked against a\n"
    "host product on the stored triangle when it has at most 5e7 entries (--no-check skips it).\n"
    "With no arguments: heisenberg --L 16, --k 8.\n"
    "  --k K               columns of X (default 8)\n"
    "  --repeat R          timed runs (default 10)\n"
    "  --json FILE         the report as JSON\n"
    "  --help              this text\n\n";

// ---- The problem --------------------------------------------------------------------------------

struct Problem {
  Csb H, S;
  std::string what;
  std::string kind;                     ///< generator name, or "file"
  int dims = 0;                         ///< Laplacian dimensions (closed form), else 0
  std::int64_t nx = 0, ny = 0, nz = 0;  ///< Laplacian grid
  std::int64_t stored = 0, nonzeros = 0;
  double build_seconds = 0;
};

const std::vector<std::string>& problem_flags() {
  static const std::vector<std::string> f = {
      "matrix", "generate", "L",    "sz",    "J",         "periodic", "open",        "n-up",
      "n-down", "t",        "U",    "pairs", "g",         "nx",       "ny",          "nz",
      "n",      "density",  "seed", "shift", "csb-block", "layout",   "write-matrix"};
  return f;
}

SparseProblem generate(const Args& a, const std::string& kind, Problem& pb) {
  const char* fn = "kess-run";
  require_arg(!(a.has("periodic") && a.has("open")), fn, "give --periodic or --open, not both");
  const int L = static_cast<int>(a.integer("L", 16, 1, 64));
  if (kind == "heisenberg") {
    const double sz = a.real("sz", 0.0);
    const double sz2 = 2 * sz;
    require_arg(sz2 == std::floor(sz2) && std::fabs(sz2) <= 128, fn,
                "'--sz' must be a multiple of 1/2, got " + a.str("sz", ""));
    return gen::heisenberg(L, static_cast<int>(sz2), a.real("J", 1.0), !a.has("open"));
  }
  if (kind == "hubbard") {
    const int up = static_cast<int>(a.integer("n-up", L / 2, 0, L));
    const int down = static_cast<int>(a.integer("n-down", L / 2, 0, L));
    return gen::hubbard(L, up, down, a.real("t", 1.0), a.real("U", 4.0), a.has("periodic"));
  }
  if (kind == "pairing") {
    return gen::pairing(L, static_cast<int>(a.integer("pairs", L / 2, 0, L)), a.real("g", 0.5));
  }
  if (kind == "laplace1d" || kind == "laplace2d" || kind == "laplace3d") {
    const int dims = kind[7] - '0';
    const std::int64_t big = std::int64_t(1) << 40;
    pb.nx = a.integer("nx", dims == 1 ? 1000 : dims == 2 ? 100 : 20, 1, big);
    pb.ny = dims >= 2 ? a.integer("ny", pb.nx, 1, big) : 1;
    pb.nz = dims == 3 ? a.integer("nz", pb.nx, 1, big) : 1;
    // As the generator: trailing extents of 1 drop their dimension (laplace2d nx x 1 is 1D).
    pb.dims = 1 + (pb.ny > 1 || pb.nz > 1) + (pb.nz > 1);
    if (dims == 1) return gen::laplace1d(pb.nx);
    if (dims == 2) return gen::laplace2d(pb.nx, pb.ny);
    return gen::laplace3d(pb.nx, pb.ny, pb.nz);
  }
  if (kind == "random") {
    const double density = a.real("density", 1e-3, 0.0);
    require_arg(density <= 1, fn, "'--density' must be in [0, 1], got " + a.str("density", ""));
    return gen::random_sparse(a.integer("n", 10000, 1, std::int64_t(1) << 40), density,
                              static_cast<std::uint64_t>(a.integer("seed", 1, 0)),
                              a.real("shift", 0.0));
  }
  throw Error(ErrorKind::invalid_argument, fn,
              "--generate '" + kind +
                  "': expected heisenberg, hubbard, pairing, laplace1d, laplace2d, laplace3d or "
                  "random");
}

// Collective over `world`: H (and S) from the files or the generator.
Problem load_problem(const Args& a, const comm::Communicator& world, bool allow_b) {
  const char* fn = "kess-run";
  require_arg(!(a.has("matrix") && a.has("generate")), fn,
              "give either --matrix or --generate, not both");
  require_arg(allow_b || !a.has("matrix-b"), fn, "--matrix-b is for lobpcg only");
  CsbOptions copts;
  copts.block_size = static_cast<int>(a.integer("csb-block", 0, 0, 65536));
  copts.layout = from_string<CsbLayout>(a.str("layout", "automatic"));
  Problem pb;
  Kokkos::Timer timer;
  if (a.has("matrix")) {
    for (const char* g : {"L", "sz", "J", "periodic", "open", "n-up", "n-down", "t", "U", "pairs",
                          "g", "nx", "ny", "nz", "n", "density", "seed", "shift"}) {
      require_arg(!a.has(g), fn, std::string("--") + g + " goes with --generate");
    }
    pb.kind = "file";
    pb.what = a.str("matrix", "");
    pb.H = Csb::read_matrix_market(pb.what, copts, world);
  } else {
    pb.kind = a.str("generate", "heisenberg");
    const SparseProblem p = generate(a, pb.kind, pb);
    pb.what = p.name;
    pb.H = make_csb<double, Mem>(p, copts, world);
  }
  if (a.has("matrix-b")) {
    copts.block_size = pb.H.block_size();  // the same blocks and layout as H
    pb.S = Csb::read_matrix_market(a.str("matrix-b", ""), copts, world);
    require_arg(pb.S.rows() == pb.H.rows(), fn,
                "--matrix-b is of order " + std::to_string(pb.S.rows()) + ", H of order " +
                    std::to_string(pb.H.rows()));
    pb.what += ", S " + a.str("matrix-b", "");
  }
  pb.build_seconds = timer.seconds();
  pb.stored = pb.H.stored_nonzeros();
  pb.nonzeros = pb.H.nonzeros();
  if (a.has("write-matrix")) pb.H.write_matrix_market(a.str("write-matrix", ""));
  return pb;
}

// ---- Checks -------------------------------------------------------------------------------------

// Deterministic values in [-1, 1) from (global row, column): the same X on any layout.
KOKKOS_INLINE_FUNCTION double hash_value(std::uint64_t i, std::uint64_t j) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + j * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-52 - 1.0;
}

void fill_hash(const Exec& exec, const Block& X, std::int64_t offset) {
  const int k = static_cast<int>(X.extent(1));
  Kokkos::parallel_for(
      "kess::run::spmm_fill", Kokkos::RangePolicy<Exec>(exec, 0, X.extent(0)),
      KOKKOS_LAMBDA(std::int64_t i) {
        for (int j = 0; j < k; ++j) X(i, j) = hash_value(std::uint64_t(offset + i), j);
      });
}

// sum over this rank's rows of A(:, i) B(:, j) (a local partial dot product).
double local_dot(const Exec& exec, const Block& A, int i, const Block& B, int j) {
  double s = 0;
  Kokkos::parallel_reduce(
      "kess::run::lobpcg_check_dot", Kokkos::RangePolicy<Exec>(exec, 0, A.extent(0)),
      KOKKOS_LAMBDA(std::int64_t r, double& acc) { acc += A(r, i) * B(r, j); }, s);
  exec.fence();
  return s;
}

// sum over this rank's rows of |HX(:, j) - lambda SX(:, j)|^2.
double local_residual2(const Exec& exec, const Block& HX, const Block& SX, int j, double lambda) {
  double s = 0;
  Kokkos::parallel_reduce(
      "kess::run::lobpcg_check_residual", Kokkos::RangePolicy<Exec>(exec, 0, HX.extent(0)),
      KOKKOS_LAMBDA(std::int64_t r, double& acc) {
        const double d = HX(r, j) - lambda * SX(r, j);
        acc += d * d;
      },
      s);
  exec.fence();
  return s;
}

struct VectorCheck {
  std::vector<double> residuals;
  double orthogonality = 0;
};

// Residuals ||H x - lambda S x|| / ((||H|| + |lambda| ||S||) ||x||) and max |X^T S X - I|, with
// sums over the ranks divided by how often each vector row is held (1 unless segments repeat).
VectorCheck check_vectors(const Exec& exec, const Csb& H, const Csb* S, double h_norm,
                          double s_norm, const std::vector<double>& lambda, const Block& X) {
  const auto& world = H.comm();
  const int nev = static_cast<int>(X.extent(1));
  const std::int64_t rows = H.vector_rows();
  const double copies = double(comm::allreduce(world, rows, comm::ReduceOp::sum)) /
                        double(std::max<std::int64_t>(H.rows(), 1));
  Block HX(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::HX"), rows, nev);
  spmm(exec, H, ConstBlock(X), HX);
  Block SX = X;
  if (S) {
    SX = Block(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::SX"), rows, nev);
    spmm(exec, *S, ConstBlock(X), SX);
  }
  exec.fence();
  std::vector<double> sums;  // residual^2 and x^T S x of each column, then X^T S X
  for (int j = 0; j < nev; ++j) sums.push_back(local_residual2(exec, HX, SX, j, lambda[j]));
  for (int j = 0; j < nev; ++j)
    for (int i = 0; i < nev; ++i) sums.push_back(local_dot(exec, X, i, SX, j));
  comm::allreduce(world, sums, comm::ReduceOp::sum);
  for (double& s : sums) s /= copies;
  VectorCheck c;
  const double inf = std::numeric_limits<double>::infinity();
  for (int j = 0; j < nev; ++j) {
    const double xnorm = std::sqrt(sums[nev + j + std::size_t(j) * nev]);
    const double r = std::sqrt(sums[j]) / ((h_norm + std::fabs(lambda[j]) * s_norm) * xnorm);
    c.residuals.push_back(std::isfinite(r) ? r : inf);
  }
  for (int j = 0; j < nev; ++j) {
    for (int i = 0; i < nev; ++i) {
      const double d = std::fabs(sums[nev + i + std::size_t(j) * nev] - (i == j ? 1.0 : 0.0));
      c.orthogonality = std::isfinite(d) ? std::max(c.orthogonality, d) : inf;
    }
  }
  return c;
}

// Collective: the lower triangle as a dense column-major matrix (lower part filled).
std::vector<double> dense_lower(const Csb& A) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  A.to_coo(r, c, v);
  const std::int64_t n = A.rows();
  std::vector<double> d(static_cast<std::size_t>(n * n), 0.0);
  for (std::size_t e = 0; e < v.size(); ++e) d[r[e] + c[e] * n] = v[e];
  return d;
}

// Collective: ||A||_1 (an upper bound of ||A||_2) from the stored triangle.
double one_norm(const Csb& A) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  A.to_coo(r, c, v);
  std::vector<double> s(static_cast<std::size_t>(A.rows()), 0.0);
  for (std::size_t e = 0; e < v.size(); ++e) {
    s[r[e]] += std::fabs(v[e]);
    if (r[e] != c[e]) s[c[e]] += std::fabs(v[e]);
  }
  return s.empty() ? 0.0 : *std::max_element(s.begin(), s.end());
}

// The Laplacian's `count` smallest (or largest) eigenvalues, ascending: sums over the axes of
// 2 - 2 cos(pi j / (n + 1)).
std::vector<double> laplace_closed_form(int dims, std::int64_t nx, std::int64_t ny, std::int64_t nz,
                                        int count, bool largest) {
  const double pi = std::acos(-1.0);
  auto axis = [&](std::int64_t n) {
    std::vector<double> e(static_cast<std::size_t>(n));
    for (std::int64_t j = 1; j <= n; ++j)
      e[j - 1] = 2 - 2 * std::cos(pi * double(j) / double(n + 1));
    if (largest) std::reverse(e.begin(), e.end());
    return e;
  };
  const auto ex = axis(nx);
  const auto ey = dims >= 2 ? axis(ny) : std::vector<double>{0.0};
  const auto ez = dims == 3 ? axis(nz) : std::vector<double>{0.0};
  // Only the first `count` values of each axis can take part in the `count` extreme sums.
  const std::size_t cx = std::min<std::size_t>(ex.size(), count),
                    cy = std::min<std::size_t>(ey.size(), count),
                    cz = std::min<std::size_t>(ez.size(), count);
  std::vector<double> all;
  for (std::size_t i = 0; i < cx; ++i)
    for (std::size_t j = 0; j < cy; ++j)
      for (std::size_t l = 0; l < cz; ++l) all.push_back(ex[i] + ey[j] + ez[l]);
  std::sort(all.begin(), all.end());
  if (largest) std::reverse(all.begin(), all.end());
  all.resize(std::min<std::size_t>(all.size(), count));
  std::sort(all.begin(), all.end());
  return all;
}

// Writes a JSON object: the flat report plus arrays (JsonReport holds scalars only).
void write_json(const std::string& path, const perf::JsonReport& j,
                const std::vector<std::pair<std::string, std::vector<double>>>& arrays) {
  std::string s = j.str();
  const auto end = s.rfind('}');
  s.erase(end);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (const auto& [key, v] : arrays) {
    s += ",\n  \"" + key + "\": [";
    for (std::size_t i = 0; i < v.size(); ++i) {
      char buf[40];
      if (std::isfinite(v[i]))
        std::snprintf(buf, sizeof buf, "%.17g", v[i]);
      else
        std::snprintf(buf, sizeof buf, "null");
      s += (i ? ", " : "") + std::string(buf);
    }
    s += "]";
  }
  s += "\n}\n";
  core::OutputFile f(path, "kess-run");
  std::fputs(s.c_str(), f.get());
  f.commit();
}

void common_json(perf::JsonReport& j, const char* command, const Problem& pb,
                 const comm::Communicator& world) {
  j.set("command", command);
  j.set("problem", pb.what);
  j.set("ranks", double(world.size()));
  j.set("layout", to_string(pb.H.layout()));
  j.set("n", double(pb.H.rows()));
  j.set("stored_nonzeros", double(pb.stored));
  j.set("nonzeros", double(pb.nonzeros));
  j.set("csb_block", double(pb.H.block_size()));
  j.set("build_seconds", pb.build_seconds);
  j.set("backend", Exec::name());
  j.set("kokkos", perf::kokkos_description());
  j.set("cpu", perf::cpu_model());
  j.set("gpu", perf::gpu_name());
  j.set("environment", perf::timing_environment());
}

std::vector<std::string> known_flags(std::vector<std::string> own) {
  for (const auto& f : problem_flags()) own.push_back(f);
  own.push_back("help");
  return own;
}

// ---- kess-run lobpcg ----------------------------------------------------------------------------

int cmd_lobpcg(int argc, char** argv) {
  const auto flags =
      known_flags({"matrix-b", "nev", "block-size", "tol", "largest", "precond", "max-iterations",
                   "fom-iterations", "fom-tile", "progress", "values", "vectors", "json"});
  Args a(argc, argv, std::set<std::string>(flags.begin(), flags.end()),
         {"help", "largest", "progress", "periodic", "open"});
  if (a.has("help")) {
    std::fputs(kLobpcgHelp, stdout);
    std::fputs(kProblemHelp, stdout);
    return 0;
  }
  const char* fn = "kess-run lobpcg";
  const auto world = comm::Communicator::world();
  const bool root = world.rank() == 0;
  LobpcgOptions opts;
  opts.nev = static_cast<int>(a.integer("nev", 4, 1, kIntMax));
  opts.block_size = static_cast<int>(a.integer("block-size", 0, 0, kIntMax));
  opts.tol = a.real("tol", 1e-8, 0.0);
  opts.max_iterations = static_cast<int>(a.integer("max-iterations", 1000, 1, kIntMax));
  opts.largest = a.has("largest");
  opts.preconditioner = from_string<Preconditioner>(a.str("precond", "fom"));
  opts.fom_iterations = static_cast<int>(a.integer("fom-iterations", 4, 1, kIntMax));
  opts.fom_tile = static_cast<int>(a.integer("fom-tile", 0, 0, 65536));
  opts.progress = a.has("progress");
  require_arg(opts.block_size == 0 || opts.block_size >= opts.nev, fn,
              "'--block-size' " + std::to_string(opts.block_size) + " is below --nev " +
                  std::to_string(opts.nev));
  for (const char* out : {"values", "vectors", "json", "write-matrix"}) {
    require_arg(!a.has(out) || !a.str(out, "").empty(), fn,
                std::string("--") + out + " needs a file name");
  }

  Problem pb = load_problem(a, world, true);
  const bool generalized = a.has("matrix-b");
  const std::int64_t n = pb.H.rows();
  require_arg(opts.nev <= n, fn,
              "--nev " + std::to_string(opts.nev) + " exceeds the order " + std::to_string(n));

  Exec exec;
  exec.fence();
  world.barrier();
  Kokkos::Timer timer;
  auto r = generalized ? lobpcg(exec, pb.H, pb.S, opts) : lobpcg(exec, pb.H, opts);
  exec.fence();
  world.barrier();
  const double wall = timer.seconds();
  const int nev = static_cast<int>(r.eigenvalues.size());

  // ---- checks
  Kokkos::Timer check_timer;
  // The solver's test divides by ||H|| + |lambda| ||S|| (||S|| = 1 in the standard problem).
  const double s_norm = generalized ? one_norm(pb.S) : 1.0;
  const auto vc = check_vectors(exec, pb.H, generalized ? &pb.S : nullptr, r.norm_estimate, s_norm,
                                r.eigenvalues, r.vectors);
  const double worst_res =
      vc.residuals.empty() ? 0.0 : *std::max_element(vc.residuals.begin(), vc.residuals.end());
  bool ok = r.converged && worst_res <= 10 * opts.tol && vc.orthogonality < 1e-10;
  // Ascending order for the reference comparisons and the output files.
  std::vector<int> order(static_cast<std::size_t>(nev));
  for (int i = 0; i < nev; ++i) order[i] = opts.largest ? nev - 1 - i : i;
  std::vector<double> ascending;
  for (int i : order) ascending.push_back(r.eigenvalues[i]);
  std::string dense = "skipped (n > 3000)", closed = "";
  double dense_err = -1, closed_err = -1;
  if (n <= 3000) {
    auto h = dense_lower(pb.H);
    std::vector<double> w(static_cast<std::size_t>(n));
    int info = 0;
    if (generalized) {
      auto s = dense_lower(pb.S);
      info = core::lapack::sygvd(1, 'N', 'L', static_cast<int>(n), h.data(), static_cast<int>(n),
                                 s.data(), static_cast<int>(n), w.data());
    } else {
      info = core::lapack::syevd('N', 'L', static_cast<int>(n), h.data(), static_cast<int>(n),
                                 w.data());
    }
    if (info != 0) {
      dense = "dense solver failed (info " + std::to_string(info) + ")";
      ok = false;
    } else {
      // ||H|| of the bound: the exact 2-norm (standard) or the 1-norm bound (generalized).
      const double hn =
          generalized ? one_norm(pb.H) : std::max(std::fabs(w.front()), std::fabs(w.back()));
      dense_err = 0;
      bool within = true;
      for (int i = 0; i < nev; ++i) {
        const double ref = opts.largest ? w[n - nev + i] : w[i];
        const double e = std::fabs(ascending[i] - ref);
        dense_err = std::isfinite(e) ? std::max(dense_err, e) : INFINITY;
        within = within && e <= 10 * opts.tol * (hn + std::fabs(ref) * std::max(s_norm, 1.0));
      }
      char buf[120];
      std::snprintf(buf, sizeof buf, "%s (max |lambda - lambda_%s| = %.2e)",
                    within ? "OK" : "FAILED", generalized ? "dsygvd" : "dsyevd", dense_err);
      dense = buf;
      ok = ok && within;
    }
  }
  if (pb.dims > 0 && !generalized) {
    const auto ref = laplace_closed_form(pb.dims, pb.nx, pb.ny, pb.nz, nev, opts.largest);
    const double hn = 4.0 * pb.dims;  // ||H||_2 < 4 d
    closed_err = 0;
    bool within = ref.size() == ascending.size();
    for (std::size_t i = 0; within && i < ref.size(); ++i) {
      const double e = std::fabs(ascending[i] - ref[i]);
      closed_err = std::isfinite(e) ? std::max(closed_err, e) : INFINITY;
      within = e <= 10 * opts.tol * (hn + std::fabs(ref[i]));
    }
    char buf[120];
    std::snprintf(buf, sizeof buf, "%s (max |lambda - closed form| = %.2e)",
                  within ? "OK" : "FAILED", closed_err);
    closed = buf;
    ok = ok && within;
  }
  const double check_s = check_timer.seconds();

  // ---- output: only a converged, checked run; each file complete or absent
  if (ok && a.has("values") && root) {
    core::OutputFile f(a.str("values", ""), fn);
    for (double v : ascending) std::fprintf(f.get(), "%.17g\n", v);
    f.commit();
  }
  if (ok && a.has("vectors")) {
    // Every rank's rows, gathered; rank 0 writes.
    auto Xh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.vectors);
    std::vector<double> mine(Xh.data(), Xh.data() + Xh.size());
    const std::vector<std::int64_t> seg = {pb.H.vector_offset(), pb.H.vector_rows()};
    const auto segs = comm::allgatherv(world, seg);
    const auto all = comm::allgatherv(world, mine);
    if (root) {
      mm::DenseHost Z("kess::run::Z", n, nev);
      std::size_t at = 0;
      for (std::size_t p = 0; p + 1 < segs.size(); p += 2) {
        for (std::int64_t i = 0; i < segs[p + 1]; ++i, at += nev)
          for (int j = 0; j < nev; ++j) Z(segs[p] + i, j) = all[at + order[j]];
      }
      mm::write_dense(a.str("vectors", ""), Z);
    }
  }

  if (root) {
    const auto& t = r.seconds;
    std::printf("lobpcg  %s on %d rank%s, %s\n", pb.what.c_str(), world.size(),
                world.size() > 1 ? "s" : "", Exec::name());
    std::printf(
        "  sizes       n = %lld, stored %lld of %lld nonzeros, beta %d (%lld blocks), "
        "layout %s\n",
        (long long)n, (long long)pb.stored, (long long)pb.nonzeros, pb.H.block_size(),
        (long long)pb.H.block_rows(), to_string(pb.H.layout()));
    std::printf("  problem     %d %s eigenpair%s%s, block %d, tol %.1e, precond %s\n", opts.nev,
                opts.largest ? "largest" : "smallest", opts.nev == 1 ? "" : "s",
                generalized ? " (generalized)" : "", r.block_size, opts.tol,
                to_string(opts.preconditioner));
    std::printf("  converged   %s (%d of %d) in %d iterations, %lld SpMMs\n",
                r.converged ? "yes" : "no", r.converged_count, nev, r.iterations,
                (long long)r.spmm_count);
    std::printf(
        "  time        %.4f s: spmm %.4f, orthonormalization %.4f, rayleigh-ritz %.4f, "
        "preconditioner %.4f (build %.3f s)\n",
        wall, t.spmm, t.orthonormalization, t.rayleigh_ritz, t.preconditioner, pb.build_seconds);
    for (int i = 0; i < nev; ++i) {
      std::printf("  lambda_%-3d  %.17g  (residual %.2e)\n", i, r.eigenvalues[i], vc.residuals[i]);
    }
    std::printf(
        "  residual    max ||H x - lambda %sx|| / ((||H|| + |lambda|%s) ||x||) = %.2e "
        "(||H|| ~ %.6g)\n",
        generalized ? "S " : "", generalized ? " ||S||" : "", worst_res, r.norm_estimate);
    std::printf("  orthogonal  max |X^T %sX - I| = %.2e\n", generalized ? "S " : "",
                vc.orthogonality);
    std::printf("  dense       %s\n", dense.c_str());
    if (!closed.empty()) std::printf("  closed form %s\n", closed.c_str());
    std::printf("  check       %s (%.2f s)\n", ok ? "OK" : "FAILED", check_s);
    if (!ok && (a.has("values") || a.has("vectors")))
      std::printf("  output      not written: %s\n",
                  r.converged ? "the check failed" : "not converged");
  }
  if (a.has("json") && root) {
    perf::JsonReport j;
    common_json(j, "lobpcg", pb, world);
    j.set("nev", double(opts.nev));
    j.set("block_size", double(r.block_size));
    j.set("tol", opts.tol);
    j.set("largest", opts.largest ? "yes" : "no");
    j.set("generalized", generalized ? "yes" : "no");
    j.set("preconditioner", to_string(opts.preconditioner));
    j.set("converged", r.converged ? "yes" : "no");
    j.set("converged_count", double(r.converged_count));
    j.set("iterations", double(r.iterations));
    j.set("spmm_count", double(r.spmm_count));
    j.set("norm_estimate", r.norm_estimate);
    j.set("time_spmm_s", r.seconds.spmm);
    j.set("time_orthonormalization_s", r.seconds.orthonormalization);
    j.set("time_rayleigh_ritz_s", r.seconds.rayleigh_ritz);
    j.set("time_preconditioner_s", r.seconds.preconditioner);
    j.set("time_total_s", r.seconds.total);
    j.set("seconds", wall);
    j.set("residual", worst_res);
    j.set("orthogonality", vc.orthogonality);
    if (dense_err >= 0) j.set("dense_error", dense_err);
    if (closed_err >= 0) j.set("closed_form_error", closed_err);
    j.set("check", ok ? "ok" : "failed");
    write_json(a.str("json", ""), j,
               {{"eigenvalues", r.eigenvalues},
                {"residuals", vc.residuals},
                {"solver_residuals", r.residuals}});
  }
  return ok ? 0 : 3;
}

// ---- kess-run spmm ------------------------------------------------------------------------------

int cmd_spmm(int argc, char** argv) {
  const auto flags = known_flags({"k", "repeat", "json", "no-check"});
  Args a(argc, argv, std::set<std::string>(flags.begin(), flags.end()),
         {"help", "no-check", "periodic", "open"});
  if (a.has("help")) {
    std::fputs(kSpmmHelp, stdout);
    std::fputs(kProblemHelp, stdout);
    return 0;
  }
  const auto world = comm::Communicator::world();
  const bool root = world.rank() == 0;
  const int k = static_cast<int>(a.integer("k", 8, 1, 1024));
  const int repeat = static_cast<int>(a.integer("repeat", 10, 1, 1000000));
  Problem pb = load_problem(a, world, false);
  const Csb& H = pb.H;
  const std::int64_t n = H.rows(), stored = pb.stored, full = pb.nonzeros;
  const std::int64_t rows = H.vector_rows();

  Exec exec;
  Block X(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::X"), rows, k);
  Block Y(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::run::Y"), rows, k);
  fill_hash(exec, X, H.vector_offset());
  spmm(exec, H, ConstBlock(X), Y);  // warm-up
  std::vector<double> times;
  for (int rep = 0; rep < repeat; ++rep) {
    exec.fence();
    world.barrier();
    Kokkos::Timer t;
    spmm(exec, H, ConstBlock(X), Y);
    exec.fence();
    world.barrier();
    times.push_back(t.seconds());
  }
  const double secs = perf::median(times);
  const double bytes = 12.0 * double(stored) + 16.0 * double(n) * k;
  const double flops = 4.0 * double(stored) * k;
  const auto ceil = perf::ceilings();
  const double floor_s = bytes / (ceil.gbs * 1e9);

  // Check: the host product on the stored triangle (every rank the whole X, its own rows).
  const bool check = !a.has("no-check") && stored <= 50000000;
  bool ok = true;
  double err = 0;
  if (check) {
    std::vector<std::int64_t> r, c;
    std::vector<double> v;
    H.to_coo(r, c, v);
    std::vector<double> y(static_cast<std::size_t>(n) * k, 0.0), bound(y.size(), 0.0);
    for (std::size_t e = 0; e < v.size(); ++e) {
      for (int j = 0; j < k; ++j) {
        const double xc = hash_value(c[e], j), xr = hash_value(r[e], j);
        y[r[e] * k + j] += v[e] * xc;
        bound[r[e] * k + j] += std::fabs(v[e] * xc);
        if (r[e] != c[e]) {
          y[c[e] * k + j] += v[e] * xr;
          bound[c[e] * k + j] += std::fabs(v[e] * xr);
        }
      }
    }
    auto Yh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Y);
    double worst = 0;
    for (std::int64_t i = 0; i < rows; ++i) {
      for (int j = 0; j < k; ++j) {
        const std::size_t g = std::size_t(H.vector_offset() + i) * k + j;
        const double d = std::fabs(Yh(i, j) - y[g]);
        const double rel = d / std::max(bound[g], DBL_MIN);
        worst = std::isfinite(rel) ? std::max(worst, rel) : INFINITY;
      }
    }
    err = comm::allreduce(world, worst, comm::ReduceOp::max);
    ok = err <= 1e-13;
  }
  if (root) {
    std::printf("spmm  %s on %d rank%s, %s, k = %d\n", pb.what.c_str(), world.size(),
                world.size() > 1 ? "s" : "", Exec::name(), k);
    std::printf(
        "  sizes       n = %lld, stored %lld of %lld nonzeros, beta %d (%lld blocks), "
        "layout %s\n",
        (long long)n, (long long)stored, (long long)full, H.block_size(), (long long)H.block_rows(),
        to_string(H.layout()));
    std::printf("  time        %.6f s (median of %d), %.2f GB/s, %.2f GFLOP/s\n", secs, repeat,
                secs > 0 ? bytes / secs * 1e-9 : 0.0, secs > 0 ? flops / secs * 1e-9 : 0.0);
    std::printf("  floor       %.6f s (%.0f bytes at %.0f GB/s, %s): %.2fx the floor\n", floor_s,
                bytes, ceil.gbs, ceil.source.c_str(), floor_s > 0 ? secs / floor_s : 0.0);
    if (check) {
      std::printf("  check       %s (max |Y - Y_host| / (|H| |X|) = %.2e)\n", ok ? "OK" : "FAILED",
                  err);
    } else {
      std::printf("  check       skipped\n");
    }
  }
  if (a.has("json") && root) {
    perf::JsonReport j;
    common_json(j, "spmm", pb, world);
    j.set("k", double(k));
    j.set("repeat", double(repeat));
    j.set("seconds", secs);
    j.set("bytes", bytes);
    j.set("gbs", secs > 0 ? bytes / secs * 1e-9 : 0.0);
    j.set("gflops", secs > 0 ? flops / secs * 1e-9 : 0.0);
    j.set("floor_seconds", floor_s);
    j.set("floor_gbs", ceil.gbs);
    j.set("check", check ? (ok ? "ok" : "failed") : "skipped");
    if (check) j.set("check_error", err);
    write_json(a.str("json", ""), j, {{"times", times}});
  }
  return ok ? 0 : 3;
}

namespace {
const Registrar reg_lobpcg("lobpcg",
                           "sparse symmetric eigenpairs by LOBPCG on a half-stored CSB matrix",
                           &cmd_lobpcg);
const Registrar reg_spmm("spmm", "Y = H X with a half-stored CSB matrix: time, GB/s, check",
                         &cmd_spmm);
}  // namespace

}  // namespace kess::run::lobpcg_cmd
