// The host bulge chase's step (bulge_chase, stage 2 of kess::eigh), compiled once per
// instruction set with GCC (target_clones by feature, picked at load time: a build without
// -march flags runs AVX-512 code on CPUs that have it, as fast as a -march=native build). "arch="
// clones would not do: they match only the CPU models that the compiler knows, not newer ones.
// Four columns a pass with explicit vectors, and each step's right update of the block below left
// to the next step's left pass over that block, so that both touch it in one pass
// (docs/performance/eigh.md).
#include <kess/solvers/eigh/detail/bulge_chase.hpp>

#include <kess/core/host/simd.hpp>

namespace kess::detail::eigh {

namespace {
// Explicit vectors of kL doubles: 8 (core/kess/core/host/simd.hpp, cloned per instruction set)
// or, in bulge_chase_avx2.cpp's compile of this file (KESS_CHASE_LANES 4, -mavx2), 4 — GCC's code
// for 8-wide vectors on 256-bit registers goes through the stack and runs at half the speed or
// less. Every sum below has a fixed association whatever the addresses of the band and of a
// thread's scratch, so the vectorizer's alignment peeling cannot change a result: the chase gives
// the same bits on every thread count (for one width).
#if defined(KESS_CHASE_LANES) && KESS_CHASE_LANES == 4
using core::detail::simd::w4::hsum;
using core::detail::simd::w4::splat;
using core::detail::simd::w4::vload;
using core::detail::simd::w4::vstore;
using vec = core::detail::simd::v4d;
constexpr int kL = 4;
#define KESS_CHASE_STEP chase_bulge_avx2
#define KESS_CHASE_CLONES
#else
using core::detail::simd::hsum;
using core::detail::simd::splat;
using core::detail::simd::vload;
using core::detail::simd::vstore;
using vec = core::detail::simd::v8d;
constexpr int kL = 8;
#define KESS_CHASE_STEP chase_bulge_wide
#define KESS_CHASE_CLONES KESS_HOST_CLONES
#endif
#define KESS_CHASE_INLINE KESS_HOST_INLINE

/// Columns col[0 .. NC-1] (rows 0 .. L-1) <- (I - t v v^T) col: NC dot products in one pass over v,
/// then NC updates in another. With Right, the previous step's deferred right update of the same
/// columns, col[u][k] -= y[k] s[u], first, in the pass of the dot products (the same operations on
/// every entry as ger_cols followed by left_apply without it).
template <int NC, bool Right = false>
KESS_CHASE_INLINE void left_apply(double* const* col, const double* v, int L, double t,
                                  const double* y = nullptr, const double* s = nullptr) {
  vec acc[NC] = {}, su[NC];
  if constexpr (Right)
    for (int u = 0; u < NC; ++u) su[u] = splat(s[u]);
  int k = 0;
  for (; k + kL <= L; k += kL) {
    const vec vk = vload(v + k);
    for (int u = 0; u < NC; ++u) {
      vec x = vload(col[u] + k);
      if constexpr (Right) {
        x = x - vload(y + k) * su[u];
        vstore(col[u] + k, x);
      }
      acc[u] += x * vk;
    }
  }
  double d[NC];
  for (int u = 0; u < NC; ++u) {
    double tail = 0;
    for (int kk = k; kk < L; ++kk) {
      if constexpr (Right) col[u][kk] -= y[kk] * s[u];
      tail += col[u][kk] * v[kk];
    }
    d[u] = t * (hsum(acc[u]) + tail);
  }
  k = 0;
  for (; k + kL <= L; k += kL) {
    const vec vk = vload(v + k);
    for (int u = 0; u < NC; ++u) vstore(col[u] + k, vload(col[u] + k) - splat(d[u]) * vk);
  }
  for (; k < L; ++k)
    for (int u = 0; u < NC; ++u) col[u][k] -= d[u] * v[k];
}

/// Rows p0 .. L-1 of NC columns of a symmetric matrix's lower triangle (col[u][p] = S(p, q0+u)):
/// w[p] += sum_u S(p, q0+u) v[q0+u] and, returned in d[u], sum_p S(p, q0+u) v[p].
template <int NC>
KESS_CHASE_INLINE void symv_rows(const double* const* col, const double* v, double* w, int q0,
                                 int p0, int L, double* d) {
  vec acc[NC] = {};
  vec vq[NC];
  for (int u = 0; u < NC; ++u) vq[u] = splat(v[q0 + u]);
  int p = p0;
  for (; p + kL <= L; p += kL) {
    const vec vp = vload(v + p);
    vec x = vload(col[0] + p);
    acc[0] += x * vp;
    vec sum = x * vq[0];
    for (int u = 1; u < NC; ++u) {
      x = vload(col[u] + p);
      acc[u] += x * vp;
      sum += x * vq[u];
    }
    vstore(w + p, vload(w + p) + sum);
  }
  for (int u = 0; u < NC; ++u) d[u] = hsum(acc[u]);
  for (; p < L; ++p) {
    double sum = col[0][p] * v[q0];
    d[0] += col[0][p] * v[p];
    for (int u = 1; u < NC; ++u) {
      sum += col[u][p] * v[q0 + u];
      d[u] += col[u][p] * v[p];
    }
    w[p] += sum;
  }
}

/// Rows p0 .. L-1 of NC columns: S(p, q0+u) -= v[p] w[q0+u] + w[p] v[q0+u].
template <int NC>
KESS_CHASE_INLINE void syr2_rows(double* const* col, const double* v, const double* w, int q0,
                                 int p0, int L) {
  vec vq[NC], wq[NC];
  for (int u = 0; u < NC; ++u) {
    vq[u] = splat(v[q0 + u]);
    wq[u] = splat(w[q0 + u]);
  }
  int p = p0;
  for (; p + kL <= L; p += kL) {
    const vec vp = vload(v + p), wp = vload(w + p);
    for (int u = 0; u < NC; ++u) vstore(col[u] + p, vload(col[u] + p) - (vp * wq[u] + wp * vq[u]));
  }
  for (; p < L; ++p)
    for (int u = 0; u < NC; ++u) col[u][p] -= v[p] * w[q0 + u] + w[p] * v[q0 + u];
}

/// y[0 .. m-1] += sum_u col[u][.] v[u] (NC columns).
template <int NC>
KESS_CHASE_INLINE void gemv_cols(const double* const* col, const double* v, double* y, int m) {
  vec vu[NC];
  for (int u = 0; u < NC; ++u) vu[u] = splat(v[u]);
  int p = 0;
  for (; p + kL <= m; p += kL) {
    vec sum = vload(col[0] + p) * vu[0];
    for (int u = 1; u < NC; ++u) sum += vload(col[u] + p) * vu[u];
    vstore(y + p, vload(y + p) + sum);
  }
  for (; p < m; ++p) {
    double sum = col[0][p] * v[0];
    for (int u = 1; u < NC; ++u) sum += col[u][p] * v[u];
    y[p] += sum;
  }
}

/// col[u][0 .. m-1] -= y s[u] (NC columns).
template <int NC>
KESS_CHASE_INLINE void ger_cols(double* const* col, const double* y, const double* s, int m) {
  vec su[NC];
  for (int u = 0; u < NC; ++u) su[u] = splat(s[u]);
  int p = 0;
  for (; p + kL <= m; p += kL) {
    const vec yp = vload(y + p);
    for (int u = 0; u < NC; ++u) vstore(col[u] + p, vload(col[u] + p) - yp * su[u]);
  }
  for (; p < m; ++p)
    for (int u = 0; u < NC; ++u) col[u][p] -= y[p] * s[u];
}
}  // namespace

KESS_CHASE_CLONES
bool KESS_CHASE_STEP(double* a, int ld, int n, int b, int i, int j, double* v, double* w, double* y,
                 int* pending, double* vout, double* tout) {
  auto at = [&](int r, int c) -> double* {
    return a + static_cast<std::size_t>(r) + std::size_t(c) * ld;
  };
  const int r0 = i + 1 + j * b;
  // The previous step's right update of its block below, C -= y s^T (y: *pending rows, s = y + b:
  // b columns), deferred to here: that block is this step's rows r0 .. r0 + *pending - 1,
  // columns r0 - b .. r0 - 1.
  const int pm = *pending;
  *pending = 0;
  const double* s = y + b;
  auto flush = [&](int q0) {  // the deferred update alone, columns r0 - b + q0 .. r0 - 1
    for (int q = q0; q < b; ++q) {
      double* col[1] = {at(r0, r0 - b + q)};
      ger_cols<1>(col, y, s + q, pm);
    }
  };
  if (r0 >= n - 1) {
    if (pm > 0) flush(0);
    return false;
  }
  const int L = std::min(b, n - r0);
  const int c = j == 0 ? i : r0 - b;
  double* x = at(r0, c);
  if (pm > 0) {
    double* col[1] = {x};
    ger_cols<1>(col, y, s, pm);
  }
  const double t = core::lapack::larfg(L, x, x + 1, 1);
  v[0] = 1.0;
  for (int k = 1; k < L; ++k) {
    v[k] = x[k];
    x[k] = 0.0;
  }
  if (vout) {
    for (int k = 0; k < L; ++k) vout[k] = v[k];
    for (int k = L; k < b; ++k) vout[k] = 0.0;  // zero padding at the bottom of the matrix
    *tout = t;
  }
  if (t == 0.0) {
    if (pm > 0) flush(1);
    return true;
  }
  // Four columns at a time throughout: each pass loads v, w or y once for four columns.
  // (a) from the left on the rest of the bulge: rows r0 .. r0+L-1, columns c+1 .. r0-1, in one
  //     pass with the deferred right update when there is one (then L = pm = b, c = r0 - b).
  {
    int q = c + 1;
    if (pm > 0) {
      for (; q + 4 <= r0; q += 4) {
        double* col[4] = {at(r0, q), at(r0, q + 1), at(r0, q + 2), at(r0, q + 3)};
        left_apply<4, true>(col, v, L, t, y, s + (q - c));
      }
      for (; q < r0; ++q) {
        double* col[1] = {at(r0, q)};
        left_apply<1, true>(col, v, L, t, y, s + (q - c));
      }
    }
    for (; q + 4 <= r0; q += 4) {
      double* col[4] = {at(r0, q), at(r0, q + 1), at(r0, q + 2), at(r0, q + 3)};
      left_apply<4>(col, v, L, t);
    }
    for (; q < r0; ++q) {
      double* col[1] = {at(r0, q)};
      left_apply<1>(col, v, L, t);
    }
  }
  // (b) two-sided on the diagonal block S = A(r0:r0+L, r0:r0+L), lower triangle:
  //     w = t S v, w -= (t/2)(w^T v) v, S -= v w^T + w v^T.
  //     Columns q0 .. q0+3: their 4 x 4 diagonal block entry by entry, the rows below vectorized.
  for (int k = 0; k < L; ++k) w[k] = 0.0;
  for (int q0 = 0; q0 < L; q0 += 4) {
    const int nc = std::min(4, L - q0);
    const double* col[4];
    for (int u = 0; u < nc; ++u) col[u] = at(r0, r0 + q0 + u);
    for (int u = 0; u < nc; ++u) {
      double sum = col[u][q0 + u] * v[q0 + u];
      for (int p = u + 1; p < nc; ++p) {
        sum += col[u][q0 + p] * v[q0 + p];
        w[q0 + p] += col[u][q0 + p] * v[q0 + u];
      }
      w[q0 + u] += sum;
    }
    double d[4];
    if (nc == 4) {
      symv_rows<4>(col, v, w, q0, q0 + 4, L, d);
      for (int u = 0; u < 4; ++u) w[q0 + u] += d[u];
    } else {
      for (int u = 0; u < nc; ++u) {
        const double* cu[1] = {col[u]};
        symv_rows<1>(cu, v, w, q0 + u, q0 + nc, L, d);
        w[q0 + u] += d[0];
      }
    }
  }
  double wv = 0;
  for (int k = 0; k < L; ++k) {
    w[k] *= t;
    wv += w[k] * v[k];
  }
  const double alpha = -0.5 * t * wv;
  for (int k = 0; k < L; ++k) w[k] += alpha * v[k];
  for (int q0 = 0; q0 < L; q0 += 4) {
    const int nc = std::min(4, L - q0);
    double* col[4];
    for (int u = 0; u < nc; ++u) col[u] = at(r0, r0 + q0 + u);
    for (int u = 0; u < nc; ++u)
      for (int p = u; p < nc; ++p) col[u][q0 + p] -= v[q0 + p] * w[q0 + u] + w[q0 + p] * v[q0 + u];
    if (nc == 4) {
      syr2_rows<4>(col, v, w, q0, q0 + 4, L);
    } else {
      for (int u = 0; u < nc; ++u) {
        double* cu[1] = {col[u]};
        syr2_rows<1>(cu, v, w, q0 + u, q0 + nc, L);
      }
    }
  }
  // (c) from the right on the block below: rows r0+L .. min(n, r0+L+b)-1, columns r0 ..
  //     r0+L-1 (this fills the bulge chased by sweep j+1): y = C v here; C -= y (t v)^T is left
  //     to the next step of this stage (its left pass reads the same block), which finds y and
  //     s = t v in y and m2 in *pending.
  const int m2 = std::min(n, r0 + L + b) - (r0 + L);
  if (m2 > 0) {
    double* ys = y + b;
    for (int p = 0; p < m2; ++p) y[p] = 0.0;
    int k = 0;
    for (; k + 4 <= L; k += 4) {
      const double* col[4] = {at(r0 + L, r0 + k), at(r0 + L, r0 + k + 1), at(r0 + L, r0 + k + 2),
                              at(r0 + L, r0 + k + 3)};
      gemv_cols<4>(col, v + k, y, m2);
    }
    for (; k < L; ++k) {
      const double* col[1] = {at(r0 + L, r0 + k)};
      gemv_cols<1>(col, v + k, y, m2);
    }
    for (k = 0; k < L; ++k) ys[k] = t * v[k];
    *pending = m2;
  }
  return true;
}

#if !defined(KESS_CHASE_LANES)
#if defined(KESS_HAVE_CHASE_AVX2)
bool chase_bulge_avx2(double* a, int ld, int n, int b, int i, int j, double* v, double* w, double* y,
                      int* pending, double* vout, double* tout);  // bulge_chase_avx2.cpp
#endif

bool chase_bulge(double* a, int ld, int n, int b, int i, int j, double* v, double* w, double* y,
                 int* pending, double* vout, double* tout) {
#if defined(KESS_HAVE_CHASE_AVX2)
  static const bool avx2 = __builtin_cpu_supports("avx2") != 0;
  if (avx2 && !core::detail::host_wide_vectors())
    return chase_bulge_avx2(a, ld, n, b, i, j, v, w, y, pending, vout, tout);
#endif
  return chase_bulge_wide(a, ld, n, b, i, j, v, w, y, pending, vout, tout);
}
#endif

}  // namespace kess::detail::eigh
