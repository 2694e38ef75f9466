// The host stack kernel: each run (one C block and its products in k order) is summed in registers
// and added to C once. With 8-wide vectors (AVX-512), C tiles of up to 32 rows x 8 columns stay in
// registers over all products of the run; rows past a multiple of 8 are covered by a vector that
// ends at the block's last row (overlapping the one before; only its new rows are written).
#include <kess/core/host/parallel.hpp>
#include <kess/core/host/simd.hpp>
#include <kess/solvers/block_sparse/detail/stack.hpp>

#include <algorithm>
#include <vector>

namespace kess::detail::block_sparse {
namespace {

using core::detail::simd::splat;
using core::detail::simd::v8d;
using core::detail::simd::vload;

// Rows [i0, i0 + 8 R) (clamped to m) x columns [j0, j0 + NC) of one run's C block.
template <int R, int NC>
KESS_HOST_INLINE void tile(const Stack& s, std::int64_t p0, std::int64_t p1, const double* a,
                           const double* b, double* c, double alpha, int m, int i0, int j0) {
  int rs[R];
  for (int r = 0; r < R; ++r) rs[r] = std::min(i0 + 8 * r, m - 8);
  v8d acc[R][NC];
  for (int r = 0; r < R; ++r)
    for (int jc = 0; jc < NC; ++jc) acc[r][jc] = v8d{};
  for (std::int64_t p = p0; p < p1; ++p) {
    const double* A = a + s.a_off[p];
    const double* B = b + s.b_off[p] + std::int64_t(j0) * s.k[p];
    const int k = s.k[p];
    if (p + 1 < p1) {
      // The next product's blocks are scattered over A and B: ask for them while this one runs.
      const char* na = reinterpret_cast<const char*>(a + s.a_off[p + 1]);
      const char* nb = reinterpret_cast<const char*>(b + s.b_off[p + 1] + std::int64_t(j0) * s.k[p + 1]);
      const std::int64_t abytes = std::int64_t(m) * s.k[p + 1] * 8;
      const std::int64_t bbytes = std::int64_t(NC) * s.k[p + 1] * 8;
      for (std::int64_t o = 0; o < abytes; o += 64) __builtin_prefetch(na + o);
      for (std::int64_t o = 0; o < bbytes; o += 64) __builtin_prefetch(nb + o);
    }
    for (int kk = 0; kk < k; ++kk) {
      v8d av[R];
      for (int r = 0; r < R; ++r) av[r] = vload(A + std::int64_t(kk) * m + rs[r]);
      for (int jc = 0; jc < NC; ++jc) {
        const double x = B[kk + std::int64_t(jc) * k];
        const v8d bv = {x, x, x, x, x, x, x, x};  // one vbroadcastsd from memory
        for (int r = 0; r < R; ++r) acc[r][jc] += av[r] * bv;
      }
    }
  }
  for (int jc = 0; jc < NC; ++jc) {
    double* C = c + std::int64_t(j0 + jc) * m;
    for (int r = 0; r < R; ++r) {
      const int skip = i0 + 8 * r - rs[r];  // rows another vector (or tile) covers
      if (skip == 0) {
        core::detail::simd::vstore(C + rs[r], vload(C + rs[r]) + splat(alpha) * acc[r][jc]);
      } else {
        for (int e = skip; e < 8; ++e) C[rs[r] + e] += alpha * acc[r][jc][e];
      }
    }
  }
}

template <int R>
KESS_HOST_INLINE void row_tile(const Stack& s, std::int64_t p0, std::int64_t p1, const double* a,
                               const double* b, double* c, double alpha, int m, int n, int i0) {
  constexpr int NC = R == 4 ? 6 : 8;
  int j0 = 0;
  for (; j0 + NC <= n; j0 += NC) tile<R, NC>(s, p0, p1, a, b, c, alpha, m, i0, j0);
  switch (n - j0) {
#define KESS_BS_TAIL(t) \
  case t:               \
    tile<R, t>(s, p0, p1, a, b, c, alpha, m, i0, j0); \
    break;
    KESS_BS_TAIL(1)
    KESS_BS_TAIL(2)
    KESS_BS_TAIL(3)
    KESS_BS_TAIL(4)
    KESS_BS_TAIL(5)
    KESS_BS_TAIL(6)
    KESS_BS_TAIL(7)
#undef KESS_BS_TAIL
    default:
      break;
  }
}

// One run with m >= 8: row tiles of up to 32 rows.
KESS_HOST_CLONES void run_vector(const Stack& s, std::int64_t run, const double* a,
                                 const double* b, double* c, double alpha) {
  const int m = s.run_m[run], n = s.run_n[run];
  const std::int64_t p0 = s.run_begin[run], p1 = s.run_begin[run + 1];
  double* C = c + s.run_c[run];
  for (int i0 = 0; i0 < m; i0 += 32) {
    switch (std::min(4, (m - i0 + 7) / 8)) {
      case 1:
        row_tile<1>(s, p0, p1, a, b, C, alpha, m, n, i0);
        break;
      case 2:
        row_tile<2>(s, p0, p1, a, b, C, alpha, m, n, i0);
        break;
      case 3:
        row_tile<3>(s, p0, p1, a, b, C, alpha, m, n, i0);
        break;
      default:
        row_tile<4>(s, p0, p1, a, b, C, alpha, m, n, i0);
        break;
    }
  }
}

// Any block sizes: the run's sum in a buffer, then added to C.
void run_scalar(const Stack& s, std::int64_t run, const double* a, const double* b, double* c,
                double alpha, std::vector<double>& acc) {
  const int m = s.run_m[run], n = s.run_n[run];
  acc.assign(std::size_t(m) * n, 0.0);
  for (std::int64_t p = s.run_begin[run]; p < s.run_begin[run + 1]; ++p) {
    const double* A = a + s.a_off[p];
    const double* B = b + s.b_off[p];
    const int k = s.k[p];
    for (int j = 0; j < n; ++j) {
      double* accj = acc.data() + std::size_t(j) * m;
      for (int kk = 0; kk < k; ++kk) {
        const double bkj = B[kk + std::int64_t(j) * k];
        const double* Ak = A + std::int64_t(kk) * m;
        for (int i = 0; i < m; ++i) accj[i] += Ak[i] * bkj;
      }
    }
  }
  double* C = c + s.run_c[run];
  for (std::size_t e = 0; e < acc.size(); ++e) C[e] += alpha * acc[e];
}

}  // namespace

void host_stack_multiply(const Stack& s, const double* a, const double* b, double* c, double alpha,
                         int threads) {
  const std::int64_t nruns = s.runs();
  if (nruns == 0) return;
  const bool wide = core::detail::host_wide_vectors();
  const int nt = std::max(1, threads > 0 ? threads : core::detail::host_threads());
  // Chunks of about equal product counts.
  const std::int64_t total = s.run_begin.back();
  const int chunks = static_cast<int>(std::min<std::int64_t>(nruns, 16 * nt));
  std::vector<std::int64_t> first(chunks + 1, nruns);
  first[0] = 0;
  for (int ch = 1; ch < chunks; ++ch) {
    const std::int64_t target = total * ch / chunks;
    first[ch] = std::upper_bound(s.run_begin.begin(), s.run_begin.end() - 1, target) -
                s.run_begin.begin() - 1;
    first[ch] = std::max(first[ch], first[ch - 1]);
  }
  core::detail::host_parallel_for(chunks, nt, [&](int ch) {
    std::vector<double> acc;
    for (std::int64_t r = first[ch]; r < first[ch + 1]; ++r) {
      if (wide && s.run_m[r] >= 8) {
        run_vector(s, r, a, b, c, alpha);
      } else {
        run_scalar(s, r, a, b, c, alpha, acc);
      }
    }
  });
}

}  // namespace kess::detail::block_sparse
