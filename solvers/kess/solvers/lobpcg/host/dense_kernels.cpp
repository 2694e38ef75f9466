// kess::lobpcg's tall-skinny products on one host core with AVX-512 (GCC, not under nvcc): the
// BLAS packs the n-row operand of these shapes (n x m times m x w, m and w <= 64) into buffers
// before its kernel runs, which costs as much as the product itself; these kernels read the
// row-major blocks in place (detail/dense_block.hpp calls them, the BLAS elsewhere).
#include <kess/solvers/lobpcg/detail/dense_kernels.hpp>

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && \
    !defined(__CUDACC__)
#define KESS_LOBPCG_AVX512 1
#include <immintrin.h>
#define KESS_AVX512 __attribute__((target("avx512f")))
#else
#define KESS_LOBPCG_AVX512 0
#endif

namespace kess::detail::lobpcg {

#if KESS_LOBPCG_AVX512
namespace {

/// Columns [c0, c0 + 8 NC) of out = A C + beta out for rows [r0, r1) (the last chunk cut at w),
/// R rows at a time (R x NC accumulators in registers).
template <int NC, int R>
KESS_AVX512 void rows_times_chunk(std::int64_t r0, std::int64_t r1, int m, int c0, int w,
                                  const double* A, int lda, const double* Cp, int wp, double* out,
                                  int ldo, double beta) {
  __mmask8 mask[NC];
  for (int q = 0; q < NC; ++q) {
    const int left = w - c0 - 8 * q;
    mask[q] = left >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << left) - 1u);
  }
  const __m512d b = _mm512_set1_pd(beta);
  std::int64_t i = r0;
  for (; i + R <= r1; i += R) {
    __m512d acc[R][NC];
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < NC; ++q) acc[r][q] = _mm512_setzero_pd();
    const double* a = A + i * lda;
    for (int l = 0; l < m; ++l) {
      __m512d c[NC];
      for (int q = 0; q < NC; ++q)
        c[q] = _mm512_loadu_pd(Cp + static_cast<std::int64_t>(l) * wp + c0 + 8 * q);
      for (int r = 0; r < R; ++r) {
        const __m512d s = _mm512_set1_pd(a[static_cast<std::int64_t>(r) * lda + l]);
        for (int q = 0; q < NC; ++q) acc[r][q] = _mm512_fmadd_pd(s, c[q], acc[r][q]);
      }
    }
    for (int r = 0; r < R; ++r) {
      double* o = out + (i + r) * ldo + c0;
      for (int q = 0; q < NC; ++q) {
        __m512d v = acc[r][q];
        if (beta != 0.0) v = _mm512_fmadd_pd(b, _mm512_maskz_loadu_pd(mask[q], o + 8 * q), v);
        _mm512_mask_storeu_pd(o + 8 * q, mask[q], v);
      }
    }
  }
  for (; i < r1; ++i) {
    __m512d acc[NC];
    for (int q = 0; q < NC; ++q) acc[q] = _mm512_setzero_pd();
    const double* a = A + i * lda;
    for (int l = 0; l < m; ++l) {
      const __m512d s = _mm512_set1_pd(a[l]);
      for (int q = 0; q < NC; ++q)
        acc[q] = _mm512_fmadd_pd(
            s, _mm512_loadu_pd(Cp + static_cast<std::int64_t>(l) * wp + c0 + 8 * q), acc[q]);
    }
    double* o = out + i * ldo + c0;
    for (int q = 0; q < NC; ++q) {
      __m512d v = acc[q];
      if (beta != 0.0) v = _mm512_fmadd_pd(b, _mm512_maskz_loadu_pd(mask[q], o + 8 * q), v);
      _mm512_mask_storeu_pd(o + 8 * q, mask[q], v);
    }
  }
}

/// T = Σ_i X[i, x0 .. x0 + R)ᵀ Y[i, y0 .. y0 + 8 NC) over rows [r0, r1) (X's columns past wx
/// and Y's past wy masked off), added to G: at G[x, y] (leading dimension ldg) or, with trans, at
/// G[y, x]. Y is the wider operand: its rows are the vectors, X's entries are broadcast.
template <int NC, int R>
KESS_AVX512 void gram_tile(std::int64_t r0, std::int64_t r1, int x0, int wx, int y0, int wy,
                           const double* X, int ldx, const double* Y, int ldy, double* G, int ldg,
                           bool trans) {
  const int rx = std::min(R, wx - x0);
  __mmask8 mask[NC];
  for (int q = 0; q < NC; ++q) {
    const int left = wy - y0 - 8 * q;
    mask[q] = left >= 8 ? static_cast<__mmask8>(0xFF) : static_cast<__mmask8>((1u << left) - 1u);
  }
  __m512d acc[R][NC];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < NC; ++q) acc[r][q] = _mm512_setzero_pd();
  for (std::int64_t i = r0; i < r1; ++i) {
    __m512d yv[NC];
    const double* yrow = Y + i * ldy + y0;
    for (int q = 0; q < NC; ++q) yv[q] = _mm512_maskz_loadu_pd(mask[q], yrow + 8 * q);
    const double* xrow = X + i * ldx + x0;
    for (int r = 0; r < R; ++r) {
      const __m512d s = _mm512_set1_pd(r < rx ? xrow[r] : 0.0);
      for (int q = 0; q < NC; ++q) acc[r][q] = _mm512_fmadd_pd(s, yv[q], acc[r][q]);
    }
  }
  for (int r = 0; r < rx; ++r)
    for (int q = 0; q < NC; ++q) {
      alignas(64) double t[8];
      _mm512_store_pd(t, acc[r][q]);
      for (int e = 0; e < 8 && y0 + 8 * q + e < wy; ++e) {
        const std::int64_t x = x0 + r, y = y0 + 8 * q + e;
        G[trans ? y + x * ldg : x + y * ldg] += t[e];
      }
    }
}

}  // namespace

bool host_panel_kernels() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return ok;
}

void host_rows_times_small(std::int64_t r0, std::int64_t r1, int m, int w, const double* A, int lda,
                           const double* Cp, int wp, double* out, int ldo, double beta) {
  for (int c0 = 0; c0 < w; c0 += 32) {
    const int nc = std::min(4, (w - c0 + 7) / 8);
    switch (nc) {
      case 1:
        rows_times_chunk<1, 4>(r0, r1, m, c0, w, A, lda, Cp, wp, out, ldo, beta);
        break;
      case 2:
        rows_times_chunk<2, 4>(r0, r1, m, c0, w, A, lda, Cp, wp, out, ldo, beta);
        break;
      case 3:
        rows_times_chunk<3, 4>(r0, r1, m, c0, w, A, lda, Cp, wp, out, ldo, beta);
        break;
      default:
        rows_times_chunk<4, 4>(r0, r1, m, c0, w, A, lda, Cp, wp, out, ldo, beta);
        break;
    }
  }
}

void host_gram(std::int64_t r0, std::int64_t r1, int wa, int wb, const double* A, int lda,
               const double* B, int ldb, double* G) {
  // The wider operand gives the vectors. Row chunks stay in L2 while every tile passes over them.
  const bool trans = wa > wb;
  const double* X = trans ? B : A;
  const double* Y = trans ? A : B;
  const int wx = trans ? wb : wa, wy = trans ? wa : wb;
  const int ldx = trans ? ldb : lda, ldy = trans ? lda : ldb;
  constexpr std::int64_t chunk = 256;
  for (std::int64_t c = r0; c < r1; c += chunk) {
    const std::int64_t c1 = std::min(r1, c + chunk);
    for (int y0 = 0; y0 < wy; y0 += 32) {
      const int nc = std::min(4, (wy - y0 + 7) / 8);
      constexpr int rows = 4;  // the tiles' rows of X (gram_tile's R)
      for (int x0 = 0; x0 < wx; x0 += rows) {
        switch (nc) {
          case 1:
            gram_tile<1, 4>(c, c1, x0, wx, y0, wy, X, ldx, Y, ldy, G, wa, trans);
            break;
          case 2:
            gram_tile<2, 4>(c, c1, x0, wx, y0, wy, X, ldx, Y, ldy, G, wa, trans);
            break;
          case 3:
            gram_tile<3, 4>(c, c1, x0, wx, y0, wy, X, ldx, Y, ldy, G, wa, trans);
            break;
          default:
            gram_tile<4, 4>(c, c1, x0, wx, y0, wy, X, ldx, Y, ldy, G, wa, trans);
            break;
        }
      }
    }
  }
}

#else

bool host_panel_kernels() { return false; }
void host_rows_times_small(std::int64_t, std::int64_t, int, int, const double*, int, const double*,
                           int, double*, int, double) {}
void host_gram(std::int64_t, std::int64_t, int, int, const double*, int, const double*, int,
               double*) {}

#endif

}  // namespace kess::detail::lobpcg
