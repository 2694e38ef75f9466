// The host kernels of hh_chase_apply's compact-WY blocks (wy_blocks_apply_host), compiled
// once per instruction set (KESS_HOST_CLONES, core/kess/core/host/simd.hpp).
#include <kess/solvers/eigh/detail/hh_chase_apply.hpp>

#include <kess/core/host/simd.hpp>

#include <algorithm>

namespace kess::detail::eigh {

namespace {
using core::detail::simd::v8d;
using core::detail::simd::vload;
using core::detail::simd::vstore;

// A broadcast written in the cloned function's own body: GCC 12 expands a vector constructor in an
// always-inline helper (compiled for the baseline target) as eight masked inserts, and splat's
// 0 + s as an add and a register broadcast; here it is one broadcast load.
#define KESS_WY_BCAST(s) (v8d{(s), (s), (s), (s), (s), (s), (s), (s)})

constexpr int kStrip = 6;   // columns of X a register tile
constexpr int kRowVec = 4;  // 8-row vectors a register tile in the update

/// Z(0:8MV, 0:NC) = W^T X(0:rows, 0:NC) for one strip of NC columns (z: leading dimension 8MV),
/// W's rows given transposed (wt + r 8MV). W's column j is nonzero in rows j .. j+b-1 only, so
/// group v of 8 columns is zero outside rows [8v, 8v + b + 7): the 8-row segments at the top
/// (groups 0..k) and at the bottom (groups k+1..MV-1) leave them out (when b >= 8 MV - 7, which
/// the host's blocks of m <= b reflectors give; else every row takes every group).
template <int MV, int NC>
KESS_HOST_CLONES void wy_project(const double* wt, int rows, int b, const double* x, std::int64_t ldx,
                                 double* z) {
  constexpr int mp = 8 * MV;
  v8d acc[MV][NC];
  for (int v = 0; v < MV; ++v)
    for (int c = 0; c < NC; ++c) acc[v][c] = v8d{};
  // Rows [R0, R1) (clamped to the window) with groups VLO..VHI.
#define KESS_WY_PROJECT_ROWS(R0, R1, VLO, VHI)                                     \
  for (int r = std::max(0, (R0)), r1 = std::min(rows, (R1)); r < r1; ++r) {         \
    const double* w = wt + static_cast<std::size_t>(r) * mp;                        \
    v8d wv[MV];                                                                     \
    for (int v = (VLO); v <= (VHI); ++v) wv[v] = vload(w + 8 * v);                  \
    for (int c = 0; c < NC; ++c) {                                                  \
      const double xc = x[r + c * ldx];                                             \
      const v8d xs = KESS_WY_BCAST(xc);                                             \
      for (int v = (VLO); v <= (VHI); ++v) acc[v][c] += wv[v] * xs;                 \
    }                                                                               \
  }
  if (b >= 8 * MV - 7) {
    if constexpr (MV >= 2) KESS_WY_PROJECT_ROWS(0, 8, 0, 0)
    if constexpr (MV >= 3) KESS_WY_PROJECT_ROWS(8, 16, 0, 1)
    if constexpr (MV >= 4) KESS_WY_PROJECT_ROWS(16, 24, 0, 2)
    KESS_WY_PROJECT_ROWS(8 * (MV - 1), b + 7, 0, MV - 1)
    if constexpr (MV >= 2) KESS_WY_PROJECT_ROWS(b + 7, b + 15, 1, MV - 1)
    if constexpr (MV >= 3) KESS_WY_PROJECT_ROWS(b + 15, b + 23, 2, MV - 1)
    if constexpr (MV >= 4) KESS_WY_PROJECT_ROWS(b + 23, b + 31, 3, MV - 1)
  } else {
    KESS_WY_PROJECT_ROWS(0, rows, 0, MV - 1)
  }
#undef KESS_WY_PROJECT_ROWS
  for (int c = 0; c < NC; ++c)
    for (int v = 0; v < MV; ++v) vstore(z + c * mp + 8 * v, acc[v][c]);
}

/// X(0:8RB, 0:NC) -= Y(0:8RB, jlo:jhi) Z(jlo:jhi, 0:NC) (y: leading dimension ldy; z: mp).
template <int RB, int NC>
KESS_HOST_CLONES void wy_update(const double* y, int ldy, int jlo, int jhi, const double* z, int mp,
                                double* x, std::int64_t ldx) {
  v8d acc[RB][NC];
  for (int c = 0; c < NC; ++c)
    for (int v = 0; v < RB; ++v) acc[v][c] = vload(x + c * ldx + 8 * v);
  for (int j = jlo; j < jhi; ++j) {
    v8d yv[RB];
    for (int v = 0; v < RB; ++v) yv[v] = vload(y + static_cast<std::size_t>(j) * ldy + 8 * v);
    for (int c = 0; c < NC; ++c) {
      const double zc = z[j + c * mp];
      const v8d zs = KESS_WY_BCAST(zc);
      for (int v = 0; v < RB; ++v) acc[v][c] -= yv[v] * zs;
    }
  }
  for (int c = 0; c < NC; ++c)
    for (int v = 0; v < RB; ++v) vstore(x + c * ldx + 8 * v, acc[v][c]);
}
#undef KESS_WY_BCAST

template <int NC>
void wy_update_rows(int rb, const double* y, int ldy, int jlo, int jhi, const double* z, int mp,
                    double* x, std::int64_t ldx) {
  switch (rb) {
    case 4: wy_update<4, NC>(y, ldy, jlo, jhi, z, mp, x, ldx); break;
    case 3: wy_update<3, NC>(y, ldy, jlo, jhi, z, mp, x, ldx); break;
    case 2: wy_update<2, NC>(y, ldy, jlo, jhi, z, mp, x, ldx); break;
    default: wy_update<1, NC>(y, ldy, jlo, jhi, z, mp, x, ldx); break;
  }
}

/// One block on `cw` columns of X (leading dimension ldx, rows 0 .. wp-1 readable): the strips'
/// Z = W^T X first (W in L1 for all of them), then X -= Y Z.
template <int MV>
void wy_block_columns(const double* wt, const double* y, int wp, int wrows, int msz, int b,
                      double* x, std::int64_t ldx, int cw, double* z) {
  constexpr int mp = 8 * MV;
  int c = 0;
  for (; c + kStrip <= cw; c += kStrip) wy_project<MV, kStrip>(wt, wrows, b, x + c * ldx, ldx, z + c * mp);
  switch (cw - c) {
    case 5: wy_project<MV, 5>(wt, wrows, b, x + c * ldx, ldx, z + c * mp); break;
    case 4: wy_project<MV, 4>(wt, wrows, b, x + c * ldx, ldx, z + c * mp); break;
    case 3: wy_project<MV, 3>(wt, wrows, b, x + c * ldx, ldx, z + c * mp); break;
    case 2: wy_project<MV, 2>(wt, wrows, b, x + c * ldx, ldx, z + c * mp); break;
    case 1: wy_project<MV, 1>(wt, wrows, b, x + c * ldx, ldx, z + c * mp); break;
    default: break;
  }
  // Y's column j is zero below row j + b - 1: a tile of rows from r0 on starts at j = r0 - b + 1.
  for (int r0 = 0; r0 < wp; r0 += 8 * kRowVec) {
    const int rb = std::min(kRowVec, (wp - r0) / 8);
    const int jlo = std::max(0, r0 - b + 1);
    if (jlo >= msz) break;
    const double* yr = y + r0;
    int cc = 0;
    for (; cc + kStrip <= cw; cc += kStrip)
      wy_update_rows<kStrip>(rb, yr, wp, jlo, msz, z + cc * mp, mp, x + r0 + cc * ldx, ldx);
    switch (cw - cc) {
      case 5: wy_update_rows<5>(rb, yr, wp, jlo, msz, z + cc * mp, mp, x + r0 + cc * ldx, ldx); break;
      case 4: wy_update_rows<4>(rb, yr, wp, jlo, msz, z + cc * mp, mp, x + r0 + cc * ldx, ldx); break;
      case 3: wy_update_rows<3>(rb, yr, wp, jlo, msz, z + cc * mp, mp, x + r0 + cc * ldx, ldx); break;
      case 2: wy_update_rows<2>(rb, yr, wp, jlo, msz, z + cc * mp, mp, x + r0 + cc * ldx, ldx); break;
      case 1: wy_update_rows<1>(rb, yr, wp, jlo, msz, z + cc * mp, mp, x + r0 + cc * ldx, ldx); break;
      default: break;
    }
  }
}
}  // namespace

void wy_blocks_apply_host(int b, int n, int m, const double* Wt, const double* Y,
                          const char* identity, double* X, std::int64_t ldx, std::int64_t xrows,
                          int nc) {
  const int mv = (m + 7) / 8, mp = 8 * mv;
  const int wp = (b + m - 1 + 7) / 8 * 8;
  const int nblk = (n + m - 1) / m;
  const std::size_t bsz = static_cast<std::size_t>(wp) * mp;
  void (*block)(const double*, const double*, int, int, int, int, double*, std::int64_t, int,
                double*) = mv == 1   ? wy_block_columns<1>
                           : mv == 2 ? wy_block_columns<2>
                           : mv == 3 ? wy_block_columns<3>
                                     : wy_block_columns<4>;
  const int threads = core::detail::host_threads();
  if (!core::detail::host_wide_vectors()) {
    // Without AVX-512 the register tiles are slower than OpenBLAS (core/kess/core/host/simd.hpp):
    // two GEMMs a block and chunk, each below OpenBLAS's threading threshold (m n k < 2^18) so
    // that every thread's GEMMs run on its own core; chunks of about equal width, a multiple of
    // the thread count of them (n = 4000, 800 columns, 2 threads: 14 of 57-58 columns).
    const int wrows_max = b + m - 1;
    const int widest = std::max(8, std::min(256, ((1 << 18) - 1) / (m * wrows_max) / 8 * 8));
    int nchunks = (nc + widest - 1) / widest;
    if (nchunks > 1 && threads > 1) nchunks = (nchunks + threads - 1) / threads * threads;
    core::detail::host_parallel_for(nchunks, threads, [&](int q) {
      const int c0 = static_cast<int>(std::int64_t(nc) * q / nchunks);
      const int cw = static_cast<int>(std::int64_t(nc) * (q + 1) / nchunks) - c0;
      if (cw <= 0) return;
      std::vector<double> z(static_cast<std::size_t>(mp) * cw);
      for (int p = nblk - 1; p >= 0; --p) {
        if (identity[p]) continue;
        const int k0 = p * m, msz = std::min(m, n - k0), wrows = b + msz - 1;
        double* xw = X + k0 + static_cast<std::size_t>(c0) * ldx;
        const int ld = static_cast<int>(ldx);
        core::lapack::gemm('N', 'N', msz, cw, wrows, 1.0, Wt + bsz * p, mp, xw, ld, 0.0, z.data(), mp);
        core::lapack::gemm('N', 'N', wrows, cw, msz, -1.0, Y + bsz * p, wp, z.data(), mp, 1.0, xw, ld);
      }
    });
    return;
  }
  // Chunks of at most 256 columns (the window, wp x 256, stays in L2), a multiple of the thread
  // count of them, of about equal width.
  int nchunks = std::max(1, (nc + 255) / 256);
  if (threads > 1) nchunks = std::min((nchunks + threads - 1) / threads * threads, std::max(1, nc / kStrip));
  core::detail::host_parallel_for(nchunks, threads, [&](int q) {
    const int c0 = static_cast<int>(std::int64_t(nc) * q / nchunks);
    const int cw = static_cast<int>(std::int64_t(nc) * (q + 1) / nchunks) - c0;
    if (cw <= 0) return;
    std::vector<double> z(static_cast<std::size_t>(mp) * cw), pad;
    for (int p = nblk - 1; p >= 0; --p) {
      if (identity[p]) continue;
      const int k0 = p * m, msz = std::min(m, n - k0), wrows = b + msz - 1;
      double* xw = X + k0 + static_cast<std::size_t>(c0) * ldx;
      const std::int64_t have = std::min<std::int64_t>(wp, xrows - k0);  // rows of X in the window
      if (have < wp) {  // the window runs past X: work on a zero-padded copy
        pad.assign(static_cast<std::size_t>(wp) * cw, 0.0);
        for (int c = 0; c < cw; ++c)
          std::copy(xw + c * ldx, xw + c * ldx + have, pad.data() + static_cast<std::size_t>(c) * wp);
        block(Wt + bsz * p, Y + bsz * p, wp, wrows, msz, b, pad.data(), wp, cw, z.data());
        for (int c = 0; c < cw; ++c)
          std::copy(pad.data() + static_cast<std::size_t>(c) * wp,
                    pad.data() + static_cast<std::size_t>(c) * wp + have, xw + c * ldx);
      } else {
        block(Wt + bsz * p, Y + bsz * p, wp, wrows, msz, b, xw, ldx, cw, z.data());
      }
    }
  });
}

}  // namespace kess::detail::eigh
