// The sparse test problems of the LOBPCG family (kess::gen::laplace*, heisenberg, hubbard,
// pairing, random_sparse).
//
// Each returns the lower triangle by rows (columns ascending, the diagonal last in its row). The
// many-body models (Heisenberg, Hubbard, pairing) enumerate their basis as bit patterns of fixed
// popcount in ascending order and rank a pattern by the combinatorial number system; every basis
// state's diagonal entry is stored, zeros included (the structure is the model's, not its values').
// Rows are built in chunks on kess's host threads and concatenated.
#include <kess/core/host/parallel.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/solvers/lobpcg.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kess::gen {
namespace {

constexpr std::size_t uz(std::int64_t x) { return static_cast<std::size_t>(x); }

/// One row's lower entries (column, value), the diagonal excluded.
using RowEntries = std::vector<std::pair<std::int64_t, double>>;

/// Rows 0..n-1 from row(i, lower, diag): lower gets the strictly-lower entries in any order,
/// diag the diagonal value (always stored). Two passes over chunks of rows on kess's host threads:
/// count, then write each chunk at its offset (no per-chunk buffers to grow and concatenate).
template <class Row>
SparseProblem assemble(std::string name, std::int64_t n, const Row& row) {
  SparseProblem p;
  p.name = std::move(name);
  p.n = n;
  const int threads = core::detail::host_threads();
  const std::int64_t chunks =
      std::max<std::int64_t>(1, std::min<std::int64_t>(n / 1024, 32 * threads));
  const int workers = chunks > 1 ? threads : 1;
  auto rows_of = [&](std::int64_t c, auto&& out) {
    RowEntries lower;
    for (std::int64_t i = n * c / chunks; i < n * (c + 1) / chunks; ++i) {
      lower.clear();
      double diag = 0;
      row(i, lower, diag);
      out(i, lower, diag);
    }
  };
  std::vector<std::int64_t> start(uz(chunks + 1), 0);
  core::detail::host_parallel_for(static_cast<int>(chunks), workers, [&](int c) {
    std::int64_t count = 0;
    rows_of(c, [&](std::int64_t, const RowEntries& lower, double) {
      count += static_cast<std::int64_t>(lower.size()) + 1;
    });
    start[uz(c + 1)] = count;
  });
  for (std::int64_t c = 0; c < chunks; ++c) start[uz(c + 1)] += start[uz(c)];
  p.rows.resize(uz(start.back()));
  p.cols.resize(uz(start.back()));
  p.vals.resize(uz(start.back()));
  core::detail::host_parallel_for(static_cast<int>(chunks), workers, [&](int c) {
    std::int64_t e = start[uz(c)];
    rows_of(c, [&](std::int64_t i, RowEntries& lower, double diag) {
      std::sort(lower.begin(), lower.end(),
                [](const auto& x, const auto& y) { return x.first < y.first; });
      for (const auto& [j, v] : lower) {
        p.rows[uz(e)] = i;
        p.cols[uz(e)] = j;
        p.vals[uz(e++)] = v;
      }
      p.rows[uz(e)] = i;
      p.cols[uz(e)] = i;
      p.vals[uz(e++)] = diag;
    });
  });
  return p;
}

// ---- bit-pattern bases
// ---------------------------------------------------------------------------

/// Patterns of L bits with k ones, ascending, and their ranks (combinatorial number system:
/// rank = sum over the ones, the m-th lowest at position p_m, of C(p_m, m + 1)).
class Combinations {
 public:
  Combinations(int L, int k) : L_(L), k_(k) {
    for (int a = 0; a <= 64; ++a) {
      for (int b = 0; b <= 64; ++b) {
        binom_[a][b] = b == 0 ? 1 : (a == 0 ? 0 : binom_[a - 1][b - 1] + binom_[a - 1][b]);
      }
    }
  }
  std::int64_t size() const { return binom_[L_][k_]; }
  std::int64_t rank(std::uint64_t s) const {
    std::int64_t r = 0;
    for (int m = 1; s; ++m, s &= s - 1) r += binom_[__builtin_ctzll(s)][m];
    return r;
  }
  /// The pattern of rank r (greedy from the top).
  std::uint64_t unrank(std::int64_t r) const {
    std::uint64_t s = 0;
    int p = L_ - 1;
    for (int m = k_; m >= 1; --m) {
      while (binom_[p][m] > r) --p;
      s |= std::uint64_t(1) << p;
      r -= binom_[p][m];
      --p;
    }
    return s;
  }

 private:
  int L_, k_;
  std::int64_t binom_[65][65];
};

/// Binomial C(a, b) as a double (the dimension check, before anything is allocated).
double binomial(int a, int b) {
  if (b < 0 || b > a) return 0;
  double c = 1;
  for (int m = 1; m <= b; ++m) c = c * (a - b + m) / m;
  return c;
}

/// The bonds of a chain of L sites: (i, i + 1), and (L - 1, 0) on a ring of L >= 3.
std::vector<std::pair<int, int>> bonds(int L, bool periodic) {
  std::vector<std::pair<int, int>> b;
  for (int i = 0; i + 1 < L; ++i) b.push_back({i, i + 1});
  if (periodic && L >= 3) b.push_back({L - 1, 0});
  return b;
}

std::string num(double x) {
  std::string s = std::to_string(x);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

SparseProblem laplace1d(std::int64_t nx) { return laplace3d(nx, 1, 1); }

SparseProblem laplace2d(std::int64_t nx, std::int64_t ny) { return laplace3d(nx, ny, 1); }

SparseProblem laplace3d(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  require_arg(nx >= 1, "gen::laplace", "nx = " + std::to_string(nx) + " must be at least 1");
  require_arg(ny >= 1, "gen::laplace", "ny = " + std::to_string(ny) + " must be at least 1");
  require_arg(nz >= 1, "gen::laplace", "nz = " + std::to_string(nz) + " must be at least 1");
  const int dims = 1 + (ny > 1 || nz > 1) + (nz > 1);
  const std::string name =
      dims == 1 ? "laplace1d nx=" + std::to_string(nx)
      : dims == 2
          ? "laplace2d " + std::to_string(nx) + "x" + std::to_string(ny)
          : "laplace3d " + std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz);
  // Natural ordering, x fastest: the lower neighbours of a point are -nx*ny, -nx and -1 away.
  return assemble(name, nx * ny * nz, [&](std::int64_t i, RowEntries& lower, double& diag) {
    const std::int64_t x = i % nx, y = (i / nx) % ny, z = i / (nx * ny);
    if (z > 0) lower.push_back({i - nx * ny, -1.0});
    if (y > 0) lower.push_back({i - nx, -1.0});
    if (x > 0) lower.push_back({i - 1, -1.0});
    diag = 2.0 * dims;
  });
}

SparseProblem heisenberg(int L, int sz2, double J, bool periodic) {
  constexpr const char* fn = "gen::heisenberg";
  require_arg(L >= 1 && L <= 62, fn, "L = " + std::to_string(L) + " is outside 1..62");
  require_arg(((L + sz2) % 2 + 2) % 2 == 0 && std::abs(sz2) <= L, fn,
              "sz2 = " + std::to_string(sz2) +
                  " must have L's parity and |sz2| <= L = " + std::to_string(L));
  require_arg(std::isfinite(J), fn, "J must be finite");
  const int up = (L + sz2) / 2;
  require_arg(binomial(L, up) < 4e9, fn,
              "the sector has C(" + std::to_string(L) + ", " + std::to_string(up) +
                  ") states, too many to generate");
  const Combinations basis(L, up);
  const auto bl = bonds(L, periodic);
  const std::string name = "heisenberg L=" + std::to_string(L) + " Sz=" +
                           (sz2 % 2 == 0 ? std::to_string(sz2 / 2) : std::to_string(sz2) + "/2") +
                           (periodic ? " ring" : " open") + (J != 1.0 ? " J=" + num(J) : "");
  // H = J sum_bonds [S^z_a S^z_b + (S^+_a S^-_b + S^-_a S^+_b) / 2]: diagonal J/4 (parallel -
  // antiparallel bonds); J/2 between patterns that differ by the swap of an antiparallel bond.
  return assemble(name, basis.size(), [&](std::int64_t i, RowEntries& lower, double& diag) {
    const std::uint64_t s = basis.unrank(i);
    int parallel = 0;
    for (const auto& [a, b] : bl) {
      const bool sa = (s >> a) & 1, sb = (s >> b) & 1;
      if (sa == sb) {
        ++parallel;
        continue;
      }
      const std::uint64_t t = s ^ (std::uint64_t(1) << a) ^ (std::uint64_t(1) << b);
      if (t < s) lower.push_back({basis.rank(t), 0.5 * J});  // ascending order: rank(t) < i
    }
    diag = 0.25 * J * (parallel - (static_cast<int>(bl.size()) - parallel));
  });
}

SparseProblem hubbard(int L, int n_up, int n_down, double t, double U, bool periodic) {
  constexpr const char* fn = "gen::hubbard";
  require_arg(L >= 1 && L <= 62, fn, "L = " + std::to_string(L) + " is outside 1..62");
  require_arg(n_up >= 0 && n_up <= L, fn, "n_up = " + std::to_string(n_up) + " is outside 0..L");
  require_arg(n_down >= 0 && n_down <= L, fn,
              "n_down = " + std::to_string(n_down) + " is outside 0..L");
  require_arg(std::isfinite(t) && std::isfinite(U), fn, "t and U must be finite");
  require_arg(binomial(L, n_up) * binomial(L, n_down) < 4e9, fn,
              "the sector has too many states to generate");
  const Combinations ub(L, n_up), db(L, n_down);
  const std::int64_t nd = db.size();
  const auto bl = bonds(L, periodic);
  const std::string name = "hubbard L=" + std::to_string(L) + " up=" + std::to_string(n_up) +
                           " down=" + std::to_string(n_down) + " t=" + num(t) + " U=" + num(U) +
                           (periodic ? " ring" : " open");
  // Hops of one species on pattern s (n particles): -t c+_a c_b (and h.c.), fermion order by site
  // within a species (up operators before down ones, so a hop sees only its own species):
  // neighbours have no sign; the ring's boundary hop passes the other n - 1: (-1)^(n - 1).
  auto hops = [&](std::uint64_t s, int n, auto&& emit) {
    for (const auto& [a, b] : bl) {
      if (((s >> a) & 1) == ((s >> b) & 1)) continue;
      const std::uint64_t s2 = s ^ (std::uint64_t(1) << a) ^ (std::uint64_t(1) << b);
      const bool boundary = b < a;
      emit(s2, (boundary && (n - 1) % 2 == 1) ? t : -t);
    }
  };
  return assemble(name, ub.size() * nd, [&](std::int64_t i, RowEntries& lower, double& diag) {
    const std::int64_t iu = i / nd, id = i % nd;
    const std::uint64_t su = ub.unrank(iu), sd = db.unrank(id);
    hops(sd, n_down, [&](std::uint64_t s2, double v) {
      if (s2 < sd) lower.push_back({iu * nd + db.rank(s2), v});
    });
    hops(su, n_up, [&](std::uint64_t s2, double v) {
      if (s2 < su) lower.push_back({ub.rank(s2) * nd + id, v});
    });
    diag = U * __builtin_popcountll(su & sd);
  });
}

SparseProblem pairing(int L, int Np, double g) {
  constexpr const char* fn = "gen::pairing";
  require_arg(L >= 1 && L <= 62, fn, "L = " + std::to_string(L) + " is outside 1..62");
  require_arg(Np >= 0 && Np <= L, fn, "Np = " + std::to_string(Np) + " is outside 0..L");
  require_arg(std::isfinite(g), fn, "g must be finite");
  require_arg(binomial(L, Np) < 4e9, fn, "the basis has too many states to generate");
  const Combinations basis(L, Np);
  const std::string name =
      "pairing L=" + std::to_string(L) + " Np=" + std::to_string(Np) + " g=" + num(g);
  // H = sum_p 2 p N_p - g sum_{p,q} P+_p P_q (hard-core pairs, no signs): the p = q terms give
  // -g per occupied level on the diagonal, p != q move a pair from q to p with -g.
  return assemble(name, basis.size(), [&](std::int64_t i, RowEntries& lower, double& diag) {
    const std::uint64_t s = basis.unrank(i);
    diag = 0;
    for (int q = 0; q < L; ++q) {
      if (!((s >> q) & 1)) continue;
      diag += 2.0 * q - g;
      for (int p = 0; p < q; ++p) {  // p < q: the target pattern is smaller, so lower
        if ((s >> p) & 1) continue;
        lower.push_back({basis.rank(s ^ (std::uint64_t(1) << q) ^ (std::uint64_t(1) << p)), -g});
      }
    }
  });
}

SparseProblem random_sparse(std::int64_t n, double density, std::uint64_t seed,
                            double diagonal_shift) {
  constexpr const char* fn = "gen::random_sparse";
  require_arg(n >= 1, fn, "n = " + std::to_string(n) + " must be at least 1");
  require_arg(density >= 0 && density <= 1, fn, "density must lie in [0, 1]");
  require_arg(std::isfinite(diagonal_shift), fn, "diagonal_shift must be finite");
  constexpr std::uint64_t kDomain = 0x7370617273650000ull;  // "sparse"
  // Each (i, j), j < i, present with probability `density`: geometric gaps between the present
  // columns, the t-th gap of row i drawn from hash(seed, i, t) (deterministic, any order).
  const double log_q = std::log1p(-density);
  return assemble("random n=" + std::to_string(n) + " density=" + num(density) +
                      " seed=" + std::to_string(seed),
                  n, [&](std::int64_t i, RowEntries& lower, double& diag) {
                    if (density > 0) {
                      std::int64_t j = -1;
                      for (std::uint64_t t = 0;; ++t) {
                        const std::uint64_t h = hash3(seed, kDomain, std::uint64_t(i), t);
                        const double u =
                            (double(h >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
                        const double gap = density >= 1 ? 0.0 : std::floor(std::log(u) / log_q);
                        if (gap >= double(i - j - 1)) break;
                        j += 1 + static_cast<std::int64_t>(gap);
                        lower.push_back({j, random_entry(seed, i, j)});
                      }
                    }
                    diag = random_entry(seed, i, i) + diagonal_shift;
                  });
}

}  // namespace kess::gen
