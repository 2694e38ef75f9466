// Test helpers for the block-sparse suites: seeded random block matrices listed globally (the same
// on every rank), their dense form computed independently of kess, and a dense GEMM reference.
#pragma once

#include <kess/solvers/block_sparse.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace bs_test {

/// A whole block matrix, listed block by block.
struct Global {
  std::vector<int> row_sizes, col_sizes;
  std::vector<int> rows, cols;
  std::vector<double> values;
  std::vector<std::int64_t> offsets{0};

  std::int64_t m() const {
    std::int64_t s = 0;
    for (int x : row_sizes) s += x;
    return s;
  }
  std::int64_t n() const {
    std::int64_t s = 0;
    for (int x : col_sizes) s += x;
    return s;
  }
  /// Dense column-major m() x n().
  std::vector<double> dense() const {
    std::vector<std::int64_t> ro(row_sizes.size() + 1, 0), co(col_sizes.size() + 1, 0);
    for (std::size_t i = 0; i < row_sizes.size(); ++i) ro[i + 1] = ro[i] + row_sizes[i];
    for (std::size_t j = 0; j < col_sizes.size(); ++j) co[j + 1] = co[j] + col_sizes[j];
    std::vector<double> a(static_cast<std::size_t>(m() * n()), 0.0);
    for (std::size_t b = 0; b < rows.size(); ++b) {
      const int mi = row_sizes[rows[b]], nj = col_sizes[cols[b]];
      for (int c = 0; c < nj; ++c)
        for (int r = 0; r < mi; ++r)
          a[(ro[rows[b]] + r) + (co[cols[b]] + c) * m()] = values[offsets[b] + r + c * mi];
    }
    return a;
  }
};

/// The grid shapes {P, Q} of np ranks (P Q = np).
inline std::vector<std::pair<int, int>> shapes(int np) {
  std::vector<std::pair<int, int>> s;
  for (int p = 1; p <= np; ++p)
    if (np % p == 0) s.push_back({p, np / p});
  return s;
}

/// A random placement of n blocks over np process rows or columns (seeded: the same on every rank).
inline std::vector<int> placement(std::size_t n, int np, unsigned seed) {
  std::mt19937 g(seed);
  std::vector<int> d(n);
  for (auto& x : d) x = static_cast<int>(g() % np);
  return d;
}

/// Cycles through `pattern` for `count` block sizes.
inline std::vector<int> sizes(int count, const std::vector<int>& pattern) {
  std::vector<int> s(count);
  for (int i = 0; i < count; ++i) s[i] = pattern[i % pattern.size()];
  return s;
}

/// Blocks present with probability `occ`, entries uniform in [-1, 1] times `scale`.
inline Global random(const std::vector<int>& rs, const std::vector<int>& cs, double occ,
                     unsigned seed, double scale = 1.0) {
  Global g;
  g.row_sizes = rs;
  g.col_sizes = cs;
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    for (std::size_t j = 0; j < cs.size(); ++j) {
      if (p(gen) >= occ) continue;
      g.rows.push_back(static_cast<int>(i));
      g.cols.push_back(static_cast<int>(j));
      for (int e = 0; e < rs[i] * cs[j]; ++e) g.values.push_back(scale * u(gen));
      g.offsets.push_back(static_cast<std::int64_t>(g.values.size()));
    }
  }
  return g;
}

/// The blocks of g that rank `rank` of `nranks` lists (every nranks-th, so blocks travel).
inline void share(const Global& g, int rank, int nranks, std::vector<int>& rows,
                  std::vector<int>& cols, std::vector<double>& values) {
  for (std::size_t b = 0; b < g.rows.size(); ++b) {
    if (static_cast<int>(b % nranks) != rank) continue;
    rows.push_back(g.rows[b]);
    cols.push_back(g.cols[b]);
    values.insert(values.end(), g.values.begin() + g.offsets[b], g.values.begin() + g.offsets[b + 1]);
  }
}

template <class Matrix>
Matrix build(const kess::BlockDistribution& dist, const Global& g) {
  const int rank = dist.grid().comm().rank(), np = dist.grid().comm().size();
  std::vector<int> r, c;
  std::vector<double> v;
  share(g, rank, np, r, c, v);
  return Matrix::from_blocks(dist, r, c, v);
}

/// C = alpha op(A) op(B) + beta C, dense, naive (column-major).
inline void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                 const std::vector<double>& A, std::int64_t lda, const std::vector<double>& B,
                 std::int64_t ldb, double beta, std::vector<double>& C, std::int64_t ldc) {
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i) {
      long double s = 0;
      for (std::int64_t q = 0; q < k; ++q) {
        const double a = ta ? A[q + i * lda] : A[i + q * lda];
        const double b = tb ? B[j + q * ldb] : B[q + j * ldb];
        s += static_cast<long double>(a) * b;
      }
      C[i + j * ldc] = static_cast<double>(alpha * s + beta * C[i + j * ldc]);
    }
  }
}

inline double frob(const std::vector<double>& a) {
  long double s = 0;
  for (double x : a) s += static_cast<long double>(x) * x;
  return static_cast<double>(std::sqrt(s));
}

inline double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t e = 0; e < a.size(); ++e) {
    const double x = std::fabs(a[e] - b[e]);
    if (std::isnan(x)) return x;
    d = std::max(d, x);
  }
  return a.size() == b.size() ? d : INFINITY;
}

}  // namespace bs_test
