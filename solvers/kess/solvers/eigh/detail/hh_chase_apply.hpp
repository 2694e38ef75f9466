// The Householder chase: stage 4 of the two-stage eigensolver (tridiagonal -> band
// back-transformation), the body of kess::hh_chase_apply. The ELPA2 CUDA kernel and Yu et al. 2020
// §3.2 (docs/references.md).
//
//   Y = H_0 H_1 ... H_{n-1} X,   H_k = I - tau_k v_k v_k^T,
//
// where reflector k has length b and acts on rows k..k+b-1 of X (NR = b + n - 1 rows). Reflectors
// are applied last first (k = n-1 down to 0), each to every column of X.
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/solvers/eigh.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/solvers/eigh/cuda/hh_chase_mma.hpp>
#include <kess/core/linalg/householder.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kess::detail::eigh {



/// Smallest power of two >= x (x >= 1).
inline int next_pow2(int x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

// ---- variant `paper` ----------------------------------------------------------------------------
// One team per column. The b-row window lives in scratch as a circular buffer indexed by global
// row mod b, so "slide by one row" costs nothing: the slot of the row that just became final is
// written back and refilled with the next row up (the ELPA2 kernel note, Fig. 2).
template <class ExecSpace, class VView, class TauView, class XView>
struct HhChasePaper {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scalar = typename XView::non_const_value_type;
  using scratch_view =
      Kokkos::View<scalar*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  VView V;
  TauView tau;
  XView X;
  int b, n;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int col = team.league_rank();
    scratch_view x(team.team_scratch(0), b);
    // Window of reflector n-1: rows n-1 .. n+b-2.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, b), [&](int t) {
      const int r = n - 1 + t;
      x(r % b) = X(r, col);
    });
    team.team_barrier();
    for (int k = n - 1; k >= 0; --k) {
      scalar d = 0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, b),
          [&](int t, scalar& s) { s += V(t, k) * x((k + t) % b); }, d);
      const scalar td = tau(k) * d;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, b), [&](int t) {
        const int slot = (k + t) % b;
        const scalar y = x(slot) - td * V(t, k);
        if (t == b - 1) {
          // Row k+b-1 is final: no reflector left touches it. Its slot takes row k-1.
          X(k + b - 1, col) = y;
          if (k > 0) x(slot) = X(k - 1, col);
        } else {
          x(slot) = y;
        }
      });
      team.team_barrier();
    }
    // Rows 0 .. b-2 are final now.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, b - 1),
                         [&](int t) { X(t, col) = x(t % b); });
  }
};

// ---- variant `fast` -----------------------------------------------------------------------------
// Reflectors are grouped in blocks of m: block p holds k0 = p*m .. k0+msz-1. With the window of
// block p being rows k0 .. k0+b+msz-2, reflector k0+j is the window vector w_j(r) = V(r-j, k0+j)
// for 0 <= r-j < b, and H_k0 ... H_k0+msz-1 = I - W T W^T with T upper triangular (LAPACK dlarft,
// forward, columnwise). Stage one computes T for every block; stage two applies
// X_w <- X_w - W (T (W^T X_w)) block after block, last block first.

/// Stage one: one team per block computes T(:, :, p) (m x m, upper triangular, zero padded).
template <class ExecSpace, class VView, class TauView, class TView>
struct HhChaseBuildT {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scalar = typename TView::non_const_value_type;
  using scratch2d = Kokkos::View<scalar**, Kokkos::LayoutLeft,
                                 typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  VView V;
  TauView tau;
  TView T;
  int b, n, m;

  static size_t scratch_bytes(int b, int m) {
    return 2 * scratch2d::shmem_size(m, m) + scratch2d::shmem_size(b, m);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    run(team, V, tau, T, b, n, m, team.league_rank());
  }

  /// T(:, :, p) of block p (the team's work; also called by HhChaseBuildTSweeps).
  KOKKOS_INLINE_FUNCTION static void run(const member_type& team, const VView& V,
                                         const TauView& tau, const TView& T, int b, int n, int m,
                                         int p) {
    const int k0 = p * m;
    const int msz = kx::min(m, n - k0);
    scratch2d G(team.team_scratch(0), m, m);  // G(i, j) = w_i^T w_j, i < j
    scratch2d Ts(team.team_scratch(0), m, m);
    scratch2d vs(team.team_scratch(0), b, m);  // the block's reflectors, loaded once
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, b * m), [&](int e) {
      vs(e % b, e / b) = e / b < msz ? V(e % b, k0 + e / b) : scalar(0);
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m * m), [&](int ij) {
      const int i = ij % m, j = ij / m;
      scalar g = 0;
      if (i < j && j < msz) {
        // Overlap of rows [i, i+b) and [j, j+b): r in [j, i+b).
        for (int r = j; r < i + b; ++r) g += vs(r - i, i) * vs(r - j, j);
      }
      G(i, j) = g;
      Ts(i, j) = 0;
    });
    team.team_barrier();
    // T(j, j) = tau_j;  T(0:j, j) = -tau_j T(0:j, 0:j) G(0:j, j).
    for (int j = 0; j < msz; ++j) {
      const scalar tj = tau(k0 + j);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, j + 1), [&](int i) {
        if (i == j) {
          Ts(j, j) = tj;
        } else {
          scalar s = 0;
          for (int l = i; l < j; ++l) s += Ts(i, l) * G(l, j);
          Ts(i, j) = -tj * s;
        }
      });
      team.team_barrier();
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m * m),
                         [&](int ij) { T(ij % m, ij / m, p) = Ts(ij % m, ij / m); });
  }
};

/// Stage one for several sweeps of the bulge chase in one launch (hh_chase on CUDA):
/// sweep q of the batch has n[q] reflectors at V + voff[q] b (b x n[q], contiguous), tau + voff[q],
/// and its T at T + toff[q] (m x m x ceil(n[q] / m)); team l runs block l - first[q] of the sweep
/// q with first[q] <= l < first[q + 1].
template <class ExecSpace>
struct HhChaseBuildTSweeps {
  static constexpr int max_sweeps = 8;
  using UV = Kokkos::View<const double**, Kokkos::LayoutLeft, typename ExecSpace::memory_space,
                          Kokkos::MemoryUnmanaged>;
  using UTau = Kokkos::View<const double*, typename ExecSpace::memory_space, Kokkos::MemoryUnmanaged>;
  using UT = Kokkos::View<double***, Kokkos::LayoutLeft, typename ExecSpace::memory_space,
                          Kokkos::MemoryUnmanaged>;
  using Block = HhChaseBuildT<ExecSpace, UV, UTau, UT>;
  const double* V;
  const double* tau;
  double* T;
  int b, m, count;
  std::int64_t voff[max_sweeps], toff[max_sweeps];
  int n[max_sweeps], first[max_sweeps + 1];

  KOKKOS_INLINE_FUNCTION void operator()(const typename Block::member_type& team) const {
    const int l = team.league_rank();
    int q = 0;
    while (q + 1 < count && first[q + 1] <= l) ++q;
    const int nq = n[q];
    Block::run(team, UV(V + voff[q] * b, b, nq), UTau(tau + voff[q], nq),
               UT(T + toff[q], m, m, (nq + m - 1) / m), b, nq, m, l - first[q]);
  }
};

/// Stage two: one team per tile of c columns marches through the blocks, last first. Per block the
/// team holds in scratch the block's reflectors (b x m), its T (m x m) and the window of X as a
/// circular buffer of S >= b + 2m - 1 rows (global row g in slot g mod S). On GPUs the next
/// block's reflectors, T and rows of X are loaded into registers before the current block is
/// applied and stored to scratch after it, so their latency hides behind the arithmetic.
template <class ExecSpace, class VView, class TView, class XView>
struct HhChaseApplyWY {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scalar = typename XView::non_const_value_type;
  using scratch2d = Kokkos::View<scalar**, Kokkos::LayoutLeft,
                                 typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  using scratch_rows =
      Kokkos::View<scalar**, Kokkos::LayoutRight, typename ExecSpace::scratch_memory_space,
                   Kokkos::MemoryUnmanaged>;
  /// Prefetch registers per thread and per kind (reflectors, T, X rows).
  static constexpr int kPrefetch = 16;
  VView V;
  TView T;
  XView X;
  int b, n, m, c, S, NC;
  bool prefetch;  ///< register prefetch (GPU); needs b*m, m*m, m*c <= kPrefetch * team size

  static size_t scratch_bytes(int b, int S, int m, int c) {
    return scratch2d::shmem_size(b, m) + scratch2d::shmem_size(m, m) +
           scratch_rows::shmem_size(S, c) + 2 * scratch_rows::shmem_size(m, c);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int col0 = team.league_rank() * c;
    const int nc = kx::min(c, NC - col0);
    const int rank = team.team_rank(), nt = team.team_size();
    scratch2d vs(team.team_scratch(0), b, m);
    scratch2d ts(team.team_scratch(0), m, m);
    scratch_rows xw(team.team_scratch(0), S, c);
    scratch_rows z(team.team_scratch(0), m, c);
    scratch_rows tz(team.team_scratch(0), m, c);
    const int nblk = (n + m - 1) / m;
    const int Smask = S - 1;
    const int bm = b * m, mm = m * m, mc = m * c;
    // Reflectors and T of block p, and the window of the last block (rows k0 .. NR-1).
    auto load_block = [&](int p) {
      const int k0 = p * m, msz = kx::min(m, n - k0);
      for (int e = rank; e < bm; e += nt) vs(e % b, e / b) = e / b < msz ? V(e % b, k0 + e / b) : 0;
      for (int e = rank; e < mm; e += nt) ts(e % m, e / m) = T(e % m, e / m, p);
    };
    {
      const int k0 = (nblk - 1) * m;
      const int rows = b + n - 1 - k0;
      load_block(nblk - 1);
      for (int e = rank; e < rows * c; e += nt) {
        const int r = e / c, cc = e % c;
        xw((k0 + r) & Smask, cc) = cc < nc ? X(k0 + r, col0 + cc) : scalar(0);
      }
    }
    team.team_barrier();
    scalar pv[kPrefetch], pt[kPrefetch], px[kPrefetch];
    for (int p = nblk - 1; p >= 0; --p) {
      const int k0 = p * m;
      const int msz = kx::min(m, n - k0);
      const int wrows = b + msz - 1;
      if (prefetch && p > 0) {  // block p-1 is a full block
        const int k1 = k0 - m;
#pragma unroll
        for (int q = 0; q < kPrefetch; ++q) {
          const int e = rank + q * nt;
          if (e < bm) pv[q] = V(e % b, k1 + e / b);
          if (e < mm) pt[q] = T(e % m, e / m, p - 1);
          if (e < mc) px[q] = e % c < nc ? X(k1 + e / c, col0 + e % c) : scalar(0);
        }
      }
      // z = W^T X_w:  z(j, :) = sum_i V(i, k0+j) X(k0+j+i, :)
      for (int e = rank; e < msz * c; e += nt) {
        const int j = e / c, cc = e % c;
        scalar s = 0;
        for (int i = 0; i < b; ++i) s += vs(i, j) * xw((k0 + j + i) & Smask, cc);
        z(j, cc) = s;
      }
      team.team_barrier();
      // tz = T z (T upper triangular)
      for (int e = rank; e < msz * c; e += nt) {
        const int j = e / c, cc = e % c;
        scalar s = 0;
        for (int l = j; l < msz; ++l) s += ts(j, l) * z(l, cc);
        tz(j, cc) = s;
      }
      team.team_barrier();
      // X_w -= W tz; rows >= b-1 of the window are final after this block.
      const bool last = (p == 0);
      for (int e = rank; e < wrows * c; e += nt) {
        const int r = e / c, cc = e % c;
        scalar s = 0;
        const int jlo = kx::max(0, r - b + 1), jhi = kx::min(msz - 1, r);
        for (int j = jlo; j <= jhi; ++j) s += vs(r - j, j) * tz(j, cc);
        const int slot = (k0 + r) & Smask;
        const scalar y = xw(slot, cc) - s;
        if (last || r >= b - 1) {
          if (cc < nc) X(k0 + r, col0 + cc) = y;
        } else {
          xw(slot, cc) = y;
        }
      }
      if (p == 0) break;
      team.team_barrier();  // everyone is done with vs and ts of block p
      const int k1 = k0 - m;
      if (prefetch) {
#pragma unroll
        for (int q = 0; q < kPrefetch; ++q) {
          const int e = rank + q * nt;
          if (e < bm) vs(e % b, e / b) = pv[q];
          if (e < mm) ts(e % m, e / m) = pt[q];
          if (e < mc) xw((k1 + e / c) & Smask, e % c) = px[q];
        }
      } else {
        load_block(p - 1);
        for (int e = rank; e < mc; e += nt) {
          const int r = e / c, cc = e % c;
          xw((k1 + r) & Smask, cc) = cc < nc ? X(k1 + r, col0 + cc) : scalar(0);
        }
      }
      team.team_barrier();
    }
  }
};

/// Stage two for GPUs with the shape known at compile time (B = b, M reflectors a block, C
/// columns a team, NT threads a team): every loop unrolls, indices fold into immediate offsets,
/// and each thread updates two adjacent columns. The window is kept twice in a linear buffer of
/// 2S rows (row g in slots g mod S and g mod S + S) so that a block's rows are contiguous.
/// Requires V contiguous (V(i, k) at i + b k).
template <class ExecSpace, class VView, class TView, class XView, int B, int M, int C, int NT>
struct HhChaseApplyWYFixed {
  using member_type = typename Kokkos::TeamPolicy<ExecSpace>::member_type;
  using scalar = typename XView::non_const_value_type;
  static constexpr int S = [] {
    int p = 1;
    while (p < B + 2 * M - 1) p <<= 1;
    return p;
  }();
  static constexpr int W = B + M - 1;  // window rows of a full block
  static constexpr int LDV = B + 1;    // padded: lanes reading different reflectors hit other banks
  static constexpr int C2 = C / 2;     // column pairs
  static constexpr int PV = (B * M + NT - 1) / NT, PT = (M * M + NT - 1) / NT,
                       PX = (M * C + NT - 1) / NT;
  /// Parts the z = W^T X_w reduction is split into, so that every thread has work.
  static constexpr int KS = (NT / (M * C2) >= 4 && B % 4 == 0)   ? 4
                            : (NT / (M * C2) >= 2 && B % 2 == 0) ? 2
                                                                 : 1;
  static_assert(C % 2 == 0 && M % 2 == 0 && (B / KS) % 2 == 0, "C, M and B / KS must be even");
  static_assert((M & (M - 1)) == 0 && (C & (C - 1)) == 0, "M and C must be powers of two");
  static constexpr int B_ = B, M_ = M, C_ = C, NT_ = NT;
  /// Two adjacent columns of a row, read and written as one 16-byte access.
  struct alignas(2 * sizeof(scalar)) pair2 {
    scalar x, y;
  };
  VView V;
  TView T;
  XView X;
  int n, NC;

  static size_t scratch_bytes() {
    return sizeof(scalar) * (size_t(LDV) * M + M * M + 2 * S * C + (KS + 1) * M * C) + 128;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int col0 = team.league_rank() * C;
    const int nc = kx::min(C, NC - col0);
    const int rank = team.team_rank();
    scalar* vs = static_cast<scalar*>(team.team_shmem().get_shmem(sizeof(scalar) * LDV * M));
    scalar* ts = static_cast<scalar*>(team.team_shmem().get_shmem(sizeof(scalar) * M * M));
    scalar* xw =
        static_cast<scalar*>(team.team_shmem().get_shmem_aligned(sizeof(scalar) * 2 * S * C, 16));
    scalar* z =
        static_cast<scalar*>(team.team_shmem().get_shmem_aligned(sizeof(scalar) * KS * M * C, 16));
    scalar* tz =
        static_cast<scalar*>(team.team_shmem().get_shmem_aligned(sizeof(scalar) * M * C, 16));
    const scalar* vg = V.data();
    const scalar* tg = T.data();
    const int nblk = (n + M - 1) / M;
    auto put_row = [&](int g, int cc, scalar v) {
      const int s = g & (S - 1);
      xw[s * C + cc] = v;
      xw[(s + S) * C + cc] = v;
    };
    // Rows past the end of the matrix are read (times zero) in a partial block: make them zero.
    for (int e = rank; e < 2 * S * C; e += NT) xw[e] = 0;
    team.team_barrier();
    // Last (possibly partial) block: its reflectors, its T and its window rows k0 .. NR-1.
    {
      const int k0 = (nblk - 1) * M, msz = n - k0;
      for (int e = rank; e < B * M; e += NT)
        vs[(e / B) * LDV + e % B] = e < B * msz ? vg[size_t(k0) * B + e] : 0;
      for (int e = rank; e < M * M; e += NT) ts[e] = tg[size_t(nblk - 1) * M * M + e];
      const int rows = B + n - 1 - k0;
      for (int e = rank; e < rows * C; e += NT) {
        const int r = e / C, cc = e & (C - 1);
        put_row(k0 + r, cc, cc < nc ? X(k0 + r, col0 + cc) : scalar(0));
      }
    }
    team.team_barrier();
    scalar pv[PV], pt[PT], px[PX];
    for (int p = nblk - 1; p >= 0; --p) {
      const int k0 = p * M;
      const int msz = kx::min(M, n - k0);  // M except for the last block
      const int s0 = k0 & (S - 1);         // slot of window row 0
      if (p > 0) {
        const size_t vbase = size_t(k0 - M) * B, tbase = size_t(p - 1) * M * M;
#pragma unroll
        for (int q = 0; q < PV; ++q) {
          const int e = rank + q * NT;
          if (e < B * M) pv[q] = vg[vbase + e];
        }
#pragma unroll
        for (int q = 0; q < PT; ++q) {
          const int e = rank + q * NT;
          if (e < M * M) pt[q] = tg[tbase + e];
        }
#pragma unroll
        for (int q = 0; q < PX; ++q) {
          const int e = rank + q * NT;
          const int r = e & (M - 1), cc = e / M;  // consecutive threads read down a column
          if (e < M * C) px[q] = cc < nc ? X(k0 - M + r, col0 + cc) : scalar(0);
        }
      }
      // z = W^T X_w:  z(j, :) = sum_i V(i, k0+j) X(k0+j+i, :), the i-range split in KS parts;
      // two accumulators a column halve the dependent FMA chain.
      for (int t = rank; t < KS * M * C2; t += NT) {
        const int part = t / (M * C2), u = t & (M * C2 - 1);
        const int j = u / C2, cp = 2 * (u & (C2 - 1));
        const pair2* xr = reinterpret_cast<const pair2*>(xw + (s0 + j + part * (B / KS)) * C + cp);
        const scalar* vj = vs + j * LDV + part * (B / KS);
        scalar a0 = 0, a1 = 0, b0 = 0, b1 = 0;
#pragma unroll
        for (int i = 0; i < B / KS; i += 2) {
          const pair2 x0 = xr[i * C2], x1 = xr[(i + 1) * C2];
          a0 += vj[i] * x0.x;
          a1 += vj[i] * x0.y;
          b0 += vj[i + 1] * x1.x;
          b1 += vj[i + 1] * x1.y;
        }
        reinterpret_cast<pair2*>(z + part * M * C + j * C + cp)[0] = pair2{a0 + b0, a1 + b1};
      }
      team.team_barrier();
      if (KS > 1) {
        for (int e = rank; e < M * C; e += NT) {
          scalar a = z[e];
#pragma unroll
          for (int part = 1; part < KS; ++part) a += z[part * M * C + e];
          z[e] = a;
        }
        team.team_barrier();
      }
      // tz = T z (T upper triangular, zero beyond msz)
      for (int t = rank; t < M * C2; t += NT) {
        const int j = t / C2, cp = 2 * (t & (C2 - 1));
        const pair2* zc = reinterpret_cast<const pair2*>(z + cp);
        scalar a0 = 0, a1 = 0, b0 = 0, b1 = 0;
#pragma unroll
        for (int l = 0; l < M; l += 2) {
          if (l >= j) {
            const scalar tjl = ts[l * M + j];
            const pair2 zl = zc[l * C2];
            a0 += tjl * zl.x;
            a1 += tjl * zl.y;
          }
          if (l + 1 >= j) {
            const scalar tjl = ts[(l + 1) * M + j];
            const pair2 zl = zc[(l + 1) * C2];
            b0 += tjl * zl.x;
            b1 += tjl * zl.y;
          }
        }
        reinterpret_cast<pair2*>(tz + j * C + cp)[0] = pair2{a0 + b0, a1 + b1};
      }
      team.team_barrier();
      // X_w -= W tz; rows >= B-1 of the window are final after this block.
      const bool last = (p == 0);
      const int wrows = B + msz - 1;
      for (int t = rank; t < W * C2; t += NT) {
        const int r = t / C2, cp = 2 * (t & (C2 - 1));
        if (r >= wrows) continue;
        scalar a0 = 0, a1 = 0;
        const pair2* tzc = reinterpret_cast<const pair2*>(tz + cp);
        if (r >= M - 1 && r <= B - 1) {
          scalar b0 = 0, b1 = 0;
#pragma unroll
          for (int j = 0; j < M; j += 2) {
            const scalar w = vs[j * LDV + r - j], w1 = vs[(j + 1) * LDV + r - j - 1];
            const pair2 t0 = tzc[j * C2], t1 = tzc[(j + 1) * C2];
            a0 += w * t0.x;
            a1 += w * t0.y;
            b0 += w1 * t1.x;
            b1 += w1 * t1.y;
          }
          a0 += b0;
          a1 += b1;
        } else {
#pragma unroll
          for (int j = 0; j < M; ++j) {
            if (r - j >= 0 && r - j < B) {
              const scalar w = vs[j * LDV + r - j];
              const pair2 t0 = tzc[j * C2];
              a0 += w * t0.x;
              a1 += w * t0.y;
            }
          }
        }
        const pair2 xo = reinterpret_cast<const pair2*>(xw + (s0 + r) * C + cp)[0];
        const scalar y0 = xo.x - a0, y1 = xo.y - a1;
        if (last || r >= B - 1) {
          if (cp < nc) X(k0 + r, col0 + cp) = y0;
          if (cp + 1 < nc) X(k0 + r, col0 + cp + 1) = y1;
        } else {
          const int sl = (k0 + r) & (S - 1);
          reinterpret_cast<pair2*>(xw + sl * C + cp)[0] = pair2{y0, y1};
          reinterpret_cast<pair2*>(xw + (sl + S) * C + cp)[0] = pair2{y0, y1};
        }
      }
      if (p == 0) break;
      team.team_barrier();  // everyone is done with vs, ts of block p
#pragma unroll
      for (int q = 0; q < PV; ++q) {
        const int e = rank + q * NT;
        if (e < B * M) vs[(e / B) * LDV + e % B] = pv[q];
      }
#pragma unroll
      for (int q = 0; q < PT; ++q) {
        const int e = rank + q * NT;
        if (e < M * M) ts[e] = pt[q];
      }
#pragma unroll
      for (int q = 0; q < PX; ++q) {
        const int e = rank + q * NT;
        if (e < M * C) put_row(k0 - M + (e & (M - 1)), e / M, px[q]);
      }
      team.team_barrier();
    }
  }
};

/// host/hh_chase_apply.cpp: X <- (I - W_0 T_0 W_0^T) ... (I - W_{nblk-1} T ... ) X for the
/// compact-WY blocks of m <= 32 reflectors each (block p acting on rows p m .. p m + wp - 1),
/// last block first. Per
/// block, of wp x 8ceil(m/8) entries each (wp = b + m - 1 rounded up to a multiple of 8, zero
/// padded): W transposed (Wt, row r at r 8ceil(m/8)) and Y = W T (column-major, leading
/// dimension wp); identity[p] skips a block. X: nc columns, leading dimension ldx, xrows rows. On
/// CPUs without AVX-512 (core::detail::host_wide_vectors) two OpenBLAS GEMMs a block and chunk.
void wy_blocks_apply_host(int b, int n, int m, const double* Wt, const double* Y,
                          const char* identity, double* X, std::int64_t ldx, std::int64_t xrows,
                          int nc);

/// The fast variant on the host: the same compact-WY blocks of m <= 32 reflectors, X_w <- X_w -
/// (W T) (W^T X_w) with W the block's reflectors as a banded (b+m-1) x m matrix and T from LAPACK's
/// dlarft recurrence. W and W T of every block are formed first (host BLAS); then host threads
/// (core::detail::host_threads()) take chunks of columns of X and apply all blocks to theirs with
/// vectorized register tiles that skip W's and Y's zero bands (wy_blocks_apply_host; OpenBLAS on
/// CPUs without AVX-512), at the DGEMM rate of a core and faster than two OpenBLAS GEMMs a block
/// and chunk (docs/performance/eigh.md). X must have unit row stride (LayoutLeft). Blocks of more
/// than 32 reflectors are cut to 32.
template <class VView, class TauView, class XView>
void hh_chase_apply_wy_host(const VView& V, const TauView& tau, const XView& X, int b, int n,
                            int m) {
  const int nc = static_cast<int>(X.extent(1));
  const int nblk = (n + m - 1) / m;
  const int wmax = b + m - 1, mp = (m + 7) / 8 * 8, wp = (wmax + 7) / 8 * 8;
  const std::size_t bsz = static_cast<std::size_t>(wp) * mp, tsz = static_cast<std::size_t>(m) * m;
  std::vector<double> Wt(bsz * nblk, 0.0), Y(bsz * nblk, 0.0);  // W^T and W T of every block
  std::vector<char> identity(nblk, 1);  // zero tau: padding reflectors, nothing to apply
  core::detail::host_parallel_for(nblk, 0, [&](int p) {
    const int k0 = p * m, msz = kx::min(m, n - k0), wrows = b + msz - 1;
    for (int j = 0; j < msz; ++j) identity[p] = identity[p] && tau(k0 + j) == 0.0;
    if (identity[p]) return;
    double* Wtp = Wt.data() + bsz * p;
    std::vector<double> W(static_cast<std::size_t>(wmax) * m, 0.0);
    for (int j = 0; j < msz; ++j)
      for (int i = 0; i < b; ++i) {
        const double v = V(i, k0 + j);
        W[(i + j) + static_cast<std::size_t>(j) * wmax] = v;
        Wtp[static_cast<std::size_t>(i + j) * mp + j] = v;
      }
    // G = W^T W (upper part), then T by dlarft's recurrence on it; Y = W T.
    std::vector<double> G(tsz), T(tsz, 0.0), tb(msz);
    core::lapack::gemm('T', 'N', msz, msz, wrows, 1.0, W.data(), wmax, W.data(), wmax, 0.0, G.data(), m);
    for (int j = 0; j < msz; ++j) tb[j] = tau(k0 + j);
    core::compact_wy_t_from_gram(msz, tb.data(), G.data(), m, T.data(), m);
    core::lapack::gemm('N', 'N', wrows, msz, msz, 1.0, W.data(), wmax, T.data(), m, 0.0, Y.data() + bsz * p, wp);
  });
  wy_blocks_apply_host(b, n, m, Wt.data(), Y.data(), identity.data(), X.data(),
                       static_cast<std::int64_t>(X.stride(1)), static_cast<std::int64_t>(X.extent(0)), nc);
}

template <class ExecSpace, class F>
int pick_team_size(const Kokkos::TeamPolicy<ExecSpace>& policy, const F& f, int wanted) {
  const int tmax = policy.team_size_max(f, Kokkos::ParallelForTag());
  return kx::max(1, kx::min(wanted, tmax));
}

template <class ExecSpace>
constexpr bool is_host_space() {
  return std::is_same<typename ExecSpace::memory_space, Kokkos::HostSpace>::value;
}


/// The body of kess::hh_chase_apply (eigh.hpp): V, tau and X in exec's memory.
template <class ExecSpace>
void hh_chase_apply(const ExecSpace& exec, const core::ConstMatrix<ExecSpace>& V,
                    const core::ConstVector<ExecSpace>& tau, const core::Matrix<ExecSpace>& X,
                    const HhChaseOptions& opts) {
  using VView = core::ConstMatrix<ExecSpace>;
  using TauView = core::ConstVector<ExecSpace>;
  using XView = core::Matrix<ExecSpace>;
  using scalar = typename XView::non_const_value_type;
  const char* fn = "hh_chase_apply";
  const std::int64_t b = V.extent(0), n = V.extent(1);
  const std::int64_t NR = X.extent(0), NC = X.extent(1);
  require_arg(b >= 1, fn, "argument 'V': b = V.extent(0) = " + std::to_string(b) + " must be >= 1");
  require_arg(n >= 1, fn, "argument 'V': n = V.extent(1) = " + std::to_string(n) + " must be >= 1");
  require_arg(
      static_cast<std::int64_t>(tau.extent(0)) == n, fn,
      "argument 'tau': extent " + std::to_string(tau.extent(0)) + " != n = " + std::to_string(n));
  require_arg(NR == b + n - 1, fn,
              "argument 'X': X.extent(0) = " + std::to_string(NR) +
                  " != b + n - 1 = " + std::to_string(b + n - 1));
  require_arg(b + n < (std::int64_t(1) << 31) && NC < (std::int64_t(1) << 31), fn,
              "sizes exceed the 32-bit local index range");
  if (opts.check_input) {
    int bad_tau = 0, first_bad_tau = 0, bad_v = 0;
    Kokkos::parallel_reduce(
        "kess::hh_chase_apply::check_tau", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
        KOKKOS_LAMBDA(int k, int& cnt) { cnt += kx::isfinite(tau(k)) ? 0 : 1; }, bad_tau);
    if (bad_tau > 0) {
      Kokkos::parallel_reduce(
          "kess::hh_chase_apply::first_bad_tau", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
          KOKKOS_LAMBDA(int k, int& first) {
            if (!kx::isfinite(tau(k)) && k < first) first = k;
          },
          Kokkos::Min<int>(first_bad_tau));
    }
    require_arg(bad_tau == 0, fn,
                "argument 'tau': " + std::to_string(bad_tau) +
                    " entries are NaN or Inf (the first at k = " + std::to_string(first_bad_tau) +
                    ")");
    Kokkos::parallel_reduce(
        "kess::hh_chase_apply::check_V", Kokkos::RangePolicy<ExecSpace>(exec, 0, n),
        KOKKOS_LAMBDA(int k, int& cnt) {
          for (int i = 0; i < static_cast<int>(V.extent(0)); ++i)
            cnt += kx::isfinite(V(i, k)) ? 0 : 1;
        },
        bad_v);
    require_arg(bad_v == 0, fn,
                "argument 'V': " + std::to_string(bad_v) + " entries are NaN or Inf");
  }
  if (NC == 0) return;
  const int ib = static_cast<int>(b), in = static_cast<int>(n), inc = static_cast<int>(NC);

  if (opts.variant == HhChaseVariant::paper) {
    using F = HhChasePaper<ExecSpace, VView, TauView, XView>;
    F f{V, tau, X, ib, in};
    const size_t bytes = F::scratch_view::shmem_size(ib);
    Kokkos::TeamPolicy<ExecSpace> probe(exec, inc, 1);
    probe.set_scratch_size(0, Kokkos::PerTeam(bytes));
    const int ts = pick_team_size(probe, f, is_host_space<ExecSpace>() ? 1 : ib);
    Kokkos::TeamPolicy<ExecSpace> policy(exec, inc, ts);
    policy.set_scratch_size(0, Kokkos::PerTeam(bytes));
    Kokkos::parallel_for("kess::hh_chase_apply::paper", policy, f);
    return;
  }

  // ---- fast: compact-WY blocks -----------------------------------------------------------------
  const bool host = is_host_space<ExecSpace>();
  // Defaults, the fastest of a sweep on GPUs (docs/performance/eigh.md): m = 32 reflectors a
  // block (16 for long reflectors, to stay within 48 KB of scratch), 8 columns a team.
  int m = opts.tuning.block > 0 ? opts.tuning.block : (host ? kx::min(32, kx::max(16, ib)) : (ib > 64 ? 16 : 32));
  m = static_cast<int>(kx::min<std::int64_t>(m, n));
  int c = opts.tuning.cols_per_team > 0 ? opts.tuning.cols_per_team : (host ? 32 : 8);
  c = kx::max(1, kx::min(c, inc));
  using TView = Kokkos::View<scalar***, Kokkos::LayoutLeft, typename ExecSpace::memory_space>;
  using BuildT = HhChaseBuildT<ExecSpace, VView, TauView, TView>;
  using Apply = HhChaseApplyWY<ExecSpace, VView, TView, XView>;
  if constexpr (is_host_space<ExecSpace>() && std::is_same<scalar, double>::value) {
    if (opts.tuning.host_blas) {
      exec.fence();  // the caller's work on V, tau and X is done
      hh_chase_apply_wy_host(V, tau, X, ib, in, kx::min(m, 32));
      return;
    }
  }
  // Shrink the block (then the column tile) until both kernels' scratch fits on this backend.
  const size_t scratch_max = Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0);
  auto fits = [&](int mm, int cc) {
    const int SS = next_pow2(ib + 2 * mm - 1);
    return BuildT::scratch_bytes(ib, mm) <= scratch_max &&
           Apply::scratch_bytes(ib, SS, mm, cc) <= scratch_max;
  };
  while (m > 1 && !fits(m, c)) m = (m + 1) / 2;
  while (c > 1 && !fits(m, c)) c = (c + 1) / 2;
  require_arg(fits(m, c), fn,
              "argument 'V': b = " + std::to_string(b) +
                  " needs more team scratch memory than this backend has; use variant 'paper'");
  const int nblk = (in + m - 1) / m;
  const int S = next_pow2(ib + 2 * m - 1);
  TView T(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::hh_chase_apply::T"), m, m,
          nblk);
  {
    using F = BuildT;
    F f{V, tau, T, ib, in, m};
    Kokkos::TeamPolicy<ExecSpace> probe(exec, nblk, 1);
    probe.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes(ib, m)));
    const int ts = pick_team_size(probe, f, host ? 1 : 128);
    Kokkos::TeamPolicy<ExecSpace> policy(exec, nblk, ts);
    policy.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes(ib, m)));
    Kokkos::parallel_for("kess::hh_chase_apply::build_t", policy, f);
  }
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value && std::is_same<scalar, double>::value) {
    using Shape = HhChaseMmaShape;
    if (opts.tuning.tensor_cores && ib == Shape::B && m == Shape::M && opts.tuning.cols_per_team <= 0 &&
        V.span_is_contiguous() && static_cast<std::int64_t>(V.stride(1)) == b &&
        hh_chase_mma_supported(exec)) {
      hh_chase_mma_launch(exec, V.data(), T.data(), X.data(),
                                  static_cast<long long>(X.stride(1)), in, inc);
      return;
    }
  }
#endif
  if constexpr (!is_host_space<ExecSpace>()) {
    // Shapes with a compile-time kernel (the bench and eigensolver defaults).
    const bool contiguous = V.span_is_contiguous() && static_cast<std::int64_t>(V.stride(1)) == b;
    auto launch = [&](auto fixed) {
      using F = decltype(fixed);
      F f{V, T, X, in, inc};
      Kokkos::TeamPolicy<ExecSpace> policy(exec, (inc + F::C_ - 1) / F::C_, F::NT_);
      policy.set_scratch_size(0, Kokkos::PerTeam(F::scratch_bytes()));
      Kokkos::parallel_for("kess::hh_chase_apply::fast", policy, f);
    };
    // (b, m, c, threads): the defaults first, then the shapes the tuning sweep may ask for.
    const int want_c = opts.tuning.cols_per_team > 0 ? opts.tuning.cols_per_team : -1;
    bool done = false;
    auto try_fixed = [&](auto fixed, bool is_default) {
      using F = decltype(fixed);
      if (done || !contiguous || ib != F::B_ || inc < F::C_ || F::scratch_bytes() > scratch_max)
        return;
      const bool match =
          m == F::M_ && ((opts.tuning.block <= 0 && want_c < 0) ? is_default : want_c == F::C_);
      if (!match) return;
      launch(fixed);
      done = true;
    };
        try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 64, 32, 8, 256>{}, false);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 64, 32, 4, 128>{}, true);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 32, 32, 8, 256>{}, true);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 128, 16, 4, 128>{}, true);
#ifdef KESS_HH_CHASE_TUNING
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 64, 32, 2, 128>{}, false);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 64, 16, 8, 128>{}, false);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 64, 16, 4, 128>{}, false);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 64, 16, 2, 64>{}, false);
    try_fixed(HhChaseApplyWYFixed<ExecSpace, VView, TView, XView, 128, 16, 2, 128>{}, false);
#endif
    if (done) return;
  }
  {
    using F = Apply;
    F f{V, T, X, ib, in, m, c, S, inc, false};
    const int league = (inc + c - 1) / c;
    const size_t bytes = F::scratch_bytes(ib, S, m, c);
    Kokkos::TeamPolicy<ExecSpace> probe(exec, league, 1);
    probe.set_scratch_size(0, Kokkos::PerTeam(bytes));
    const int ts = pick_team_size(probe, f, host ? 1 : 256);
    const int most = kx::max(ib * m, kx::max(m * m, m * c));
    f.prefetch = !host && most <= F::kPrefetch * ts;
    Kokkos::TeamPolicy<ExecSpace> policy(exec, league, ts);
    policy.set_scratch_size(0, Kokkos::PerTeam(bytes));
    Kokkos::parallel_for("kess::hh_chase_apply::fast", policy, f);
  }
}

}  // namespace kess::detail::eigh
