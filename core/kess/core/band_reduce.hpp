// Stage 1 of the two-stage eigensolver: full -> band of half-width b (Yu et al. 2020, papers/001,
// Eq. 6a), by blocked Householder QR of b-column panels and two-sided compact-WY updates as GEMMs.
//
// Panel p covers columns j0 = p b .. j0+b-1. Its rows j0+b .. n-1 (m rows) are factored on the host
// (LAPACK dgeqrt3, recursive QR with T, on a page-locked mirror of the panel): Q_p = I - V T V^T,
// V m x k (k = min(m, b)), unit lower trapezoidal. The trailing matrix A22 = A(j0+b:, j0+b:)
// becomes Q_p^T A22 Q_p through
//   X = A22 V T,  W = X - 1/2 V (T^T (V^T X)),  A22 -= [V W] [W V]^T
// (GEMMs on the execution space; the rank-2k update is one GEMM, split at the next panel's
// columns so that they go to the host while the rest is updated: look-ahead). On host memory
// only the lower triangle is updated (dsymm, dsyr2k). On device memory the panel QR itself runs
// on the device by default (PanelQR). The diagonal block and R go to the host band matrix; the
// explicit V overwrites A(j0+b:, j0:j0+k) (below the band, never read again) and T is kept, so
// stage 5 (band_backtransform.hpp) can apply Q_0 Q_1 ... as GEMMs.
#pragma once

#include <kess/core/bulge_chase.hpp>
#include <kess/core/error.hpp>
#include <kess/core/kokkos_compat.hpp>
#include <kess/core/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kess {

/// The stage-1 reflectors: panel p's V in A(j0+b:n, j0:j0+k) (j0 = p b, k = min(b, n-j0-b)) of
/// the work matrix, and its T in T(0:k, p b : p b + k).
template <class MemSpace>
struct BandReflectors {
  using matrix = Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace>;
  int n = 0;
  int b = 1;
  int panels = 0;
  matrix A;  ///< the work matrix holding the V's below the band
  matrix T;  ///< b x (panels b)
  int first_col(int p) const { return p * b; }
  int rows(int p) const { return n - p * b - b; }
  int width(int p) const { return std::min(b, rows(p)); }
};

namespace detail {
/// dst(i, j) = src(i, j) on exec (a labelled copy between same-space views of equal extents).
template <class ExecSpace, class Dst, class Src>
void copy2d(const ExecSpace& exec, const char* label, const Dst& dst, const Src& src) {
  // A flat range (column-major order): Kokkos 3.4's MDRangePolicy left entries of this copy
  // unwritten here.
  const std::int64_t m = dst.extent(0), k = dst.extent(1);
  if (m == 0 || k == 0) return;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, m * k),
      KOKKOS_LAMBDA(std::int64_t e) { dst(e % m, e / m) = src(e % m, e / m); });
}
}  // namespace detail

/// Where band_reduce factors its panels.
enum class PanelQR {
  automatic,  ///< device on device memory spaces, host otherwise
  host,       ///< host LAPACK (dgeqrt3) on a page-locked mirror, with look-ahead
  device,     ///< Householder QR on the execution space (no host work, no synchronization)
};

namespace detail {
/// Householder reflector of column jj of P (rows jj .. m-1; dlarfg's convention, scaled norm) by
/// one team: v overwrites the column below the diagonal, beta the diagonal, tau(jj) is set.
template <class Member, class PView, class TauView>
KOKKOS_INLINE_FUNCTION void panel_reflector(const Member& tm, const PView& P, const TauView& tau, int jj,
                                            int m) {
  double amax = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(tm, jj + 1, m),
      [&](int r, double& mx) {
        const double t = kx::fabs(P(r, jj));
        if (t > mx) mx = t;
      },
      Kokkos::Max<double>(amax));
  double ssq = 0;
  if (amax > 0)
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(tm, jj + 1, m),
        [&](int r, double& acc) {
          const double t = P(r, jj) / amax;
          acc += t * t;
        },
        ssq);
  const double alpha = P(jj, jj);
  double t = 0, beta = alpha, scal = 0;
  householder_coefficients(alpha, amax, ssq, beta, t, scal);
  tm.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, jj + 1, m), [&](int r) { P(r, jj) *= scal; });
  Kokkos::single(Kokkos::PerTeam(tm), [&]() {
    P(jj, jj) = beta;
    tau(jj) = t;
  });
}

/// Reflector of column c of P from the registers x of panel_qr_pipelined (thread t holds rows
/// t + q ts), rows c .. m-1; rows above c are left alone. Stores v (scaled) below the diagonal,
/// beta on it, tau(c).
template <int Q, class Member, class PView, class TauView>
KOKKOS_INLINE_FUNCTION void panel_reflector_registers(const Member& tm, const PView& P, const TauView& tau,
                                                      double (&x)[Q], int c, int m, int ts) {
  const int t = tm.team_rank();
  for (int q = 0; q < Q; ++q)
    if (t + q * ts == c) P(c, c) = x[q];
  tm.team_barrier();
  const double alpha = P(c, c);
  double ssq = 0;
  for (int q = 0; q < Q; ++q) {
    const int r = t + q * ts;
    if (r > c && r < m) ssq += x[q] * x[q];
  }
  tm.team_reduce(Kokkos::Sum<double>(ssq));
  double amax = ssq > 0 ? 1.0 : 0.0;
  if (!(ssq > 1e-280 && ssq < 1e280)) {  // tiny, zero or overflowed: rescale (dnrm2's concern)
    amax = 0;
    for (int q = 0; q < Q; ++q) {
      const int r = t + q * ts;
      if (r > c && r < m) amax = kx::max(amax, kx::fabs(x[q]));
    }
    tm.team_reduce(Kokkos::Max<double>(amax));
    ssq = 0;
    if (amax > 0) {  // the same on every thread
      for (int q = 0; q < Q; ++q) {
        const int r = t + q * ts;
        if (r > c && r < m) ssq += (x[q] / amax) * (x[q] / amax);
      }
      tm.team_reduce(Kokkos::Sum<double>(ssq));
    }
  }
  double beta = alpha, tc = 0, scal = 0;
  householder_coefficients(alpha, amax, ssq, beta, tc, scal);
  for (int q = 0; q < Q; ++q) {
    const int r = t + q * ts;
    if (r > c && r < m) P(r, c) = x[q] * scal;
  }
  tm.team_barrier();  // everyone has read alpha
  if (t == 0) {
    P(c, c) = beta;
    tau(c) = tc;
  }
}

/// Flags of the pipelined panel QR (one a column; reflector j of the current call is ready when
/// ready(j) >= epoch), kept across calls so that no call has to clear them.
template <class Mem>
struct PanelQrWork {
  Kokkos::View<int*, Mem> ready;
  int epoch = 0;
  // panel_qr_cholqr: the panel's copy Q (m x k), the k x k factors (G, R1, R2, the LU of
  // Q_top - S, U R2, S R), the signs and tau, and the failure flag; made by its first call.
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> q, g, r1, r2, lu, ur2, rs;
  Kokkos::View<double*, Mem> tauw;
  Kokkos::View<int*, Mem> fail;
};

/// Householder QR of the m x nb panel P in one kernel, a team per column, the column held in the
/// team's registers (thread t holds rows t + q ts, q < Q; needs m <= Q ts). Team c applies
/// reflectors 0 .. c-1 as they are published (one team sum each), then forms reflector c from its
/// registers (one more team sum, of squares) and publishes it: a flag in work.ready, written
/// after a release fence, read past L1 with the reflector (kx::load_uncached). The critical path
/// is one reflector application and one formation a column, with no launch in between. Teams
/// only wait for teams of lower columns, which the hardware starts first; band_reduce uses it
/// only where all nb teams fit the device at once.
template <int Q, class ExecSpace, class PView, class TauView>
void panel_qr_pipelined(const ExecSpace& exec, const PView& P, const TauView& tau, int ts,
                        PanelQrWork<typename ExecSpace::memory_space>& work) {
  // Compiled for teams of up to 1024 threads (64 registers a thread on CUDA).
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<1024, 1>>;
  using Member = typename Policy::member_type;
  const int m = P.extent(0), nb = P.extent(1), k = std::min(m, nb);
  if (static_cast<int>(work.ready.extent(0)) < nb)
    work.ready = Kokkos::View<int*, typename ExecSpace::memory_space>(
        Kokkos::view_alloc(exec, "kess::band_reduce::panel_ready"), nb);
  const int epoch = ++work.epoch;
  auto ready = work.ready;
  const double* pd = P.data();
  const std::size_t ldp = P.stride(1);
  const double* taup = tau.data();
  // Reflector j is read twice from L2 (dot, update): keeping it in registers as well spills at
  // 1024 threads (measured slower at n = 16384).
  Kokkos::parallel_for(
      "kess::band_reduce::panel_qr", Policy(exec, nb, ts), KOKKOS_LAMBDA(const Member& tm) {
        const int c = tm.league_rank(), t = tm.team_rank();
        volatile int* flag = ready.data();
        double x[Q];
        for (int q = 0; q < Q; ++q) {
          const int r = t + q * ts;
          x[q] = r < m ? P(r, c) : 0.0;
        }
        const int napply = c < k ? c : k;
        for (int j = 0; j < napply; ++j) {
          Kokkos::single(Kokkos::PerTeam(tm), [&]() {
            while (flag[j] < epoch) {
            }
            Kokkos::memory_fence();  // acquire: reflector j is visible
          });
          tm.team_barrier();
          const double* vj = pd + std::size_t(j) * ldp;
          double s = 0;
          for (int q = 0; q < Q; ++q) {
            const int r = t + q * ts;
            if (r >= j && r < m) s += (r == j ? 1.0 : kx::load_uncached(vj + r)) * x[q];
          }
          tm.team_reduce(Kokkos::Sum<double>(s));
          s *= kx::load_uncached(taup + j);
          if (s != 0.0)  // the same on every thread
            for (int q = 0; q < Q; ++q) {
              const int r = t + q * ts;
              if (r >= j && r < m) x[q] -= s * (r == j ? 1.0 : kx::load_uncached(vj + r));
            }
        }
        if (c < k) {
          for (int q = 0; q < Q; ++q) {
            const int r = t + q * ts;
            if (r < c) P(r, c) = x[q];  // R
          }
          panel_reflector_registers<Q>(tm, P, tau, x, c, m, ts);
          tm.team_barrier();
          Kokkos::single(Kokkos::PerTeam(tm), [&]() {
            Kokkos::memory_fence();  // release: v, beta and tau before the flag
            flag[c] = epoch;
          });
        } else {
          for (int q = 0; q < Q; ++q) {
            const int r = t + q * ts;
            if (r < m) P(r, c) = x[q];
          }
        }
      });
}

/// Calls f(i, l) for every entry of columns l0 .. k-1 of a k x k matrix, spread over the team; a
/// fixed row per thread (no division in the loop) where the team size is a multiple of k.
template <class Member, class F>
KOKKOS_INLINE_FUNCTION void team_for_columns(const Member& tm, int k, int l0, const F& f) {
  const int ts = tm.team_size(), t = tm.team_rank();
  if (ts % k == 0) {
    const int i = t % k;
    for (int l = l0 + t / k; l < k; l += ts / k) f(i, l);
  } else {
    for (int e = l0 * k + t; e < k * k; e += ts) f(e % k, e / k);
  }
}

/// Cholesky factor R (upper, k x k) of the symmetric k x k matrix in team scratch `g` (leading
/// dimension ld; its upper triangle is read and overwritten) by one team; R's rows go to global R
/// (zeros below the diagonal). False, the same on every thread, when the largest diagonal entry is
/// outside [1e-200, 1e200] (or not finite) or a pivot is not above `rel` times it: the Gram matrix
/// is too ill-conditioned (or too badly scaled) for CholeskyQR. `rj`: k doubles of scratch.
template <class Member, class RView>
KOKKOS_INLINE_FUNCTION bool team_cholesky_upper(const Member& tm, double* g, int ld, double* rj,
                                                const RView& R, int k, double rel) {
  double dmax = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(tm, k),
      [&](int i, double& mx) {
        const double d = g[i + i * ld];
        mx = d > mx || d != d ? d : mx;
      },
      Kokkos::Max<double>(dmax));
  if (!(dmax >= 1e-200 && dmax <= 1e200)) return false;
  const int ts = tm.team_size(), t = tm.team_rank();
  for (int j = 0; j < k; ++j) {
    const double d = g[j + j * ld];
    if (!(d > rel * dmax)) return false;
    const double rjj = kx::sqrt(d);
    for (int l = t; l < k; l += ts) {
      const double r = l < j ? 0.0 : (l == j ? rjj : g[j + l * ld] / rjj);
      rj[l] = r;
      R(j, l) = r;
    }
    tm.team_barrier();
    team_for_columns(tm, k, j + 1, [&](int i, int l) {  // the trailing upper triangle
      if (i > j && i <= l) g[i + l * ld] -= rj[i] * rj[l];
    });
    tm.team_barrier();
  }
  return true;
}

/// Householder QR of the m x k panel P (m >= 2k) from CholeskyQR2 and the reconstruction of
/// Householder vectors from an orthonormal basis (Ballard, Demmel, Grigori, Jacquelin, Knight,
/// Nguyen 2015): P = Q1 R1, Q1 = Q2 R2 by Cholesky of the Gram matrices (R = R2 R1), then the LU
/// without pivoting Q2 - S = Y U, S = diag(s) on the top block with s_i = -sign of the i-th pivot
/// (so every pivot has magnitude >= 1). Then I - Y T Y^T with T = -U S Y1^-T is a product of
/// Householder reflectors whose first k columns are Q2 S: V = Y, tau_i = -U_ii s_i = 1 + |pivot|,
/// and the R of Householder QR is S R — LAPACK's sign convention (beta = -sign(alpha) |x|), so
/// the result is dgeqrf's to rounding. A handful of kernels and cuBLAS calls a panel (two Gram
/// GEMMs, two triangular solves, two single-team kernels) instead of k dependent column steps.
/// P is written only when it succeeded: false (P untouched) when the Gram matrix is too
/// ill-conditioned (a pivot below 1e-10 of its largest diagonal, cond(P) >~ 1e5), badly scaled,
/// or the first pass left Q1 too far from orthonormal (max |Q1^T Q1 - I| > 0.1) — the caller
/// then takes Householder QR. One host synchronization (the flag).
template <class ExecSpace, class PView, class TauView>
bool panel_qr_cholqr(const ExecSpace& exec, const PView& P, const TauView& tau,
                     PanelQrWork<typename ExecSpace::memory_space>& w) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  const int m = P.extent(0), k = P.extent(1);
  const auto mat = [&](Mat& v, const char* label, int rows, int cols) {
    if (static_cast<int>(v.extent(0)) < rows || static_cast<int>(v.extent(1)) < cols)
      v = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label)), rows, cols);
    return Kokkos::subview(v, Kokkos::make_pair(0, rows), Kokkos::make_pair(0, cols));
  };
  const auto Q = mat(w.q, "kess::band_reduce::cholqr_q", m, k);
  const auto G = mat(w.g, "kess::band_reduce::cholqr_g", k, k);
  const auto R1 = mat(w.r1, "kess::band_reduce::cholqr_r1", k, k);
  const auto R2 = mat(w.r2, "kess::band_reduce::cholqr_r2", k, k);
  const auto A = mat(w.lu, "kess::band_reduce::cholqr_lu", k, k);
  const auto UR2 = mat(w.ur2, "kess::band_reduce::cholqr_ur2", k, k);
  const auto RS = mat(w.rs, "kess::band_reduce::cholqr_rs", k, k);
  if (static_cast<int>(w.tauw.extent(0)) < k)
    w.tauw = Kokkos::View<double*, Mem>(Kokkos::view_alloc(exec, "kess::band_reduce::cholqr_tau"), k);
  if (w.fail.extent(0) == 0)
    w.fail = Kokkos::View<int*, Mem>(Kokkos::view_alloc(exec, "kess::band_reduce::cholqr_fail"), 1);
  const auto tw = w.tauw;
  const auto fail = w.fail;
  const int ts = std::is_same<Mem, Kokkos::HostSpace>::value ? 1 : 4 * k;  // a multiple of k
  constexpr double rel = 1e-10;
  // The single-team kernels keep their k x k matrix in team scratch (leading dimension k + 1:
  // rows and columns both conflict-free), plus k doubles.
  const int ld = k + 1;
  const std::size_t scratch = sizeof(double) * (std::size_t(k) * ld + k);
  const auto policy = [&]() {
    return Policy(exec, 1, ts).set_scratch_size(0, Kokkos::PerTeam(scratch));
  };
  // Pass 1: G = P^T P = R1^T R1, Q1 = P R1^-1 (P itself is kept for the fallback).
  detail::copy2d(exec, "kess::band_reduce::cholqr_copy", Q, P);
  kx::gemm(exec, "T", "N", 1.0, P, P, 0.0, G);
  Kokkos::parallel_for(
      "kess::band_reduce::cholqr_chol", policy(), KOKKOS_LAMBDA(const Member& tm) {
        double* g = static_cast<double*>(tm.team_scratch(0).get_shmem(scratch));
        team_for_columns(tm, k, 0, [&](int i, int l) { g[i + l * ld] = G(i, l); });
        tm.team_barrier();
        const bool ok = team_cholesky_upper(tm, g, ld, g + k * ld, R1, k, rel);
        Kokkos::single(Kokkos::PerTeam(tm), [&]() { fail(0) = ok ? 0 : 1; });
      });
  kx::trsm(exec, "R", "U", "N", "N", 1.0, R1, Q);
  // Pass 2 and the reconstruction, in one team: G = Q1^T Q1 = R2^T R2; A = Q1_top R2^-1 - S = L U
  // (the LU in place in A); tau; S R2 R1 (the new R) and U R2 (for Y_bottom = Q1_bottom (U R2)^-1).
  kx::gemm(exec, "T", "N", 1.0, Q, Q, 0.0, G);
  Kokkos::parallel_for(
      "kess::band_reduce::cholqr_reconstruct", policy(), KOKKOS_LAMBDA(const Member& tm) {
        if (fail(0)) return;
        double* g = static_cast<double*>(tm.team_scratch(0).get_shmem(scratch));
        double* rj = g + k * ld;
        const int nt = tm.team_size(), t = tm.team_rank();
        double dev = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(tm, k * k),
            [&](int e, double& mx) {
              const int i = e % k, l = e / k;
              g[i + l * ld] = G(i, l);
              const double d = kx::fabs(G(i, l) - (i == l ? 1.0 : 0.0));
              mx = d > mx || d != d ? d : mx;
            },
            Kokkos::Max<double>(dev));
        tm.team_barrier();
        const bool ok = dev <= 0.1 && team_cholesky_upper(tm, g, ld, rj, R2, k, rel);
        if (!ok) {
          Kokkos::single(Kokkos::PerTeam(tm), [&]() { fail(0) = 1; });
          return;
        }
        // a = Q1_top R2^-1, column by column (right-looking), in scratch.
        team_for_columns(tm, k, 0, [&](int i, int l) { g[i + l * ld] = Q(i, l); });
        tm.team_barrier();
        for (int l = 0; l < k; ++l) {
          for (int i = t; i < k; i += nt) g[i + l * ld] /= R2(l, l);
          tm.team_barrier();
          team_for_columns(tm, k, l + 1, [&](int i, int c) { g[i + c * ld] -= g[i + l * ld] * R2(l, c); });
          tm.team_barrier();
        }
        // The LU of a - S without pivoting, s_i = -sign(a_ii) (sign(0) = 1): |pivot| >= 1.
        for (int i = 0; i < k; ++i) {
          const double a = g[i + i * ld];
          const double s = a >= 0 ? -1.0 : 1.0;
          const double piv = a - s;
          tm.team_barrier();
          for (int j = i + t; j < k; j += nt) {
            if (j == i) {
              g[i + i * ld] = piv;
              tw(i) = -piv * s;  // tau_i = -U_ii s_i = 1 + |a|
            } else {
              g[j + i * ld] /= piv;
            }
          }
          tm.team_barrier();
          team_for_columns(tm, k, i + 1, [&](int j, int l) {
            if (j > i) g[j + l * ld] -= g[j + i * ld] * g[i + l * ld];
          });
          tm.team_barrier();
        }
        team_for_columns(tm, k, 0, [&](int i, int l) {
          double rs = 0, ur = 0;
          for (int j = i; j <= l; ++j) {
            rs += R2(i, j) * R1(j, l);
            ur += g[i + j * ld] * R2(j, l);
          }
          const double si = g[i + i * ld] > 0 ? -1.0 : 1.0;  // s_i: the pivot is a_ii - s_i
          RS(i, l) = si * rs;  // zero below the diagonal (empty sums)
          UR2(i, l) = ur;
          A(i, l) = g[i + l * ld];
        });
      });
  auto Qb = Kokkos::subview(Q, Kokkos::make_pair(k, m), Kokkos::ALL());
  kx::trsm(exec, "R", "U", "N", "N", 1.0, UR2, Qb);
  Kokkos::parallel_for(
      "kess::band_reduce::cholqr_store", Kokkos::RangePolicy<ExecSpace>(exec, 0, std::int64_t(m) * k),
      KOKKOS_LAMBDA(std::int64_t t) {
        if (fail(0)) return;
        const int r = static_cast<int>(t % m), c = static_cast<int>(t / m);
        P(r, c) = r <= c ? RS(r, c) : (r < k ? A(r, c) : Q(r, c));
        if (r == 0) tau(c) = tw(c);
      });
  auto fh = Kokkos::create_mirror_view(fail);
  Kokkos::deep_copy(exec, fh, fail);
  kx::fence(exec, "kess::band_reduce::cholqr_flag");
  return fh(0) == 0;
}

/// How panel_qr_device works: automatic (CholeskyQR2 with reconstruction for tall panels, else
/// pipelined where the rows fit, else generic), or one path (tests; `cholqr` still falls back to
/// Householder QR where CholeskyQR2 does not apply or declines).
enum class PanelKernel { automatic, generic, pipelined, cholqr };

/// Householder QR of the m x nb panel P (in place: R on and above the diagonal, v below it, v(0) = 1
/// implied) on exec; tau (nb). Columns of up to 32 ts rows (ts: the team size) take the one-kernel
/// pipeline of panel_qr_pipelined (`work`: its flags, kept across calls; a temporary when null).
/// Longer columns, or a device too small for nb resident teams, take the generic path, one kernel
/// per column: a team per remaining column applies reflector jj, and the team of column jj+1 then
/// forms reflector jj+1 from its freshly updated column, each pass over L2. Tall panels (m >= 3072
/// for `automatic`, m >= 2 nb for `cholqr`; 8 <= nb <= 64, so that its k x k work fits a team's
/// scratch) try panel_qr_cholqr first. Returns the kernel that ran.
template <class ExecSpace, class PView, class TauView>
PanelKernel panel_qr_device(const ExecSpace& exec, const PView& P, const TauView& tau,
                            PanelKernel kernel = PanelKernel::automatic,
                            PanelQrWork<typename ExecSpace::memory_space>* work = nullptr) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  const int m = P.extent(0), nb = P.extent(1), k = std::min(m, nb);
  if (k == 0) return PanelKernel::generic;
  PanelQrWork<typename ExecSpace::memory_space> local;
  PanelQrWork<typename ExecSpace::memory_space>& w = work ? *work : local;
  // CholeskyQR2 costs about 0.4 ms a panel on an H100 whatever m (a chain of ~10 small kernels),
  // the pipelined kernel ~0.27 ms + 0.066 ms per 1000 rows (b = 64): automatic takes it from
  // m = 3072 on (docs/benchmarks.md, session 5).
  const bool cholqr_fits = m >= 2 * nb && nb >= 8 && nb <= 64;
  if (cholqr_fits &&
      (kernel == PanelKernel::cholqr || (kernel == PanelKernel::automatic && m >= 3072)) &&
      panel_qr_cholqr(exec, P, tau, w))
    return PanelKernel::cholqr;
  if (kernel == PanelKernel::cholqr) kernel = PanelKernel::automatic;
  // Teams sized to the column: the reductions over m rows are L2-latency bound (measured at
  // n = 16384, b = 64: 1024 threads a team 0.29 s for all panels, 256 threads 0.40 s).
  const int ts = kx::column_team_size<ExecSpace>(m);
  // The pipelined kernel needs every team resident at once.
  const bool fits = kx::teams_resident(exec, nb, ts);
  const int Q = kernel == PanelKernel::generic || !fits ? 0 : kx::column_rows_per_thread(m, ts);
  require(kernel != PanelKernel::pipelined || Q > 0, ErrorKind::invalid_argument, "panel_qr_device",
          "a column of " + std::to_string(m) + " rows does not fit the registers of a team of " +
              std::to_string(ts));
  switch (Q) {
    case 1: panel_qr_pipelined<1>(exec, P, tau, ts, w); return PanelKernel::pipelined;
    case 2: panel_qr_pipelined<2>(exec, P, tau, ts, w); return PanelKernel::pipelined;
    case 4: panel_qr_pipelined<4>(exec, P, tau, ts, w); return PanelKernel::pipelined;
    case 8: panel_qr_pipelined<8>(exec, P, tau, ts, w); return PanelKernel::pipelined;
    case 16: panel_qr_pipelined<16>(exec, P, tau, ts, w); return PanelKernel::pipelined;
    case 32: panel_qr_pipelined<32>(exec, P, tau, ts, w); return PanelKernel::pipelined;
    default: break;
  }
  Kokkos::parallel_for(
      "kess::band_reduce::panel_reflector", Policy(exec, 1, ts),
      KOKKOS_LAMBDA(const Member& tm) { panel_reflector(tm, P, tau, 0, m); });
  for (int jj = 0; jj + 1 < nb; ++jj) {
    Kokkos::parallel_for(
        "kess::band_reduce::panel_apply", Policy(exec, nb - jj - 1, ts), KOKKOS_LAMBDA(const Member& tm) {
          const int c = jj + 1 + tm.league_rank();
          const double t = jj < k ? tau(jj) : 0.0;
          if (t != 0.0) {
            double s = 0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(tm, jj, m),
                [&](int r, double& acc) { acc += (r == jj ? 1.0 : P(r, jj)) * P(r, c); }, s);
            s *= t;
            tm.team_barrier();
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, jj, m),
                                 [&](int r) { P(r, c) -= s * (r == jj ? 1.0 : P(r, jj)); });
          }
          if (c == jj + 1 && c < k) {
            tm.team_barrier();
            panel_reflector(tm, P, tau, c, m);
          }
        });
    if (jj + 1 >= k) break;
  }
  return PanelKernel::generic;
}

/// T (k x k, upper) of the compact-WY form from tau and S = V^T V (dlarft, forward columnwise):
/// T(j, j) = tau_j, T(0:j, j) = -tau_j T(0:j, 0:j) S(0:j, j). One team.
template <class ExecSpace, class TView, class SView, class TauView>
void larft_device(const ExecSpace& exec, const TView& T, const SView& S, const TauView& tau) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  const int k = T.extent(0);
  const bool host = std::is_same<typename ExecSpace::memory_space, Kokkos::HostSpace>::value;
  Kokkos::parallel_for(
      "kess::band_reduce::larft", Policy(exec, 1, host ? 1 : 64), KOKKOS_LAMBDA(const Member& tm) {
        for (int j = 0; j < k; ++j) {
          const double t = tau(j);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, k), [&](int i) {
            double s = 0;
            if (i < j)
              for (int l = i; l < j; ++l) s += T(i, l) * S(l, j);
            if (i < j) T(i, j) = -t * s;
            else T(i, j) = i == j ? t : 0.0;
          });
          tm.team_barrier();
        }
      });
}

/// Lower storage of the trailing matrix on device memory: the columns of A are cut into blocks of
/// `nbk` (fixed for the whole reduction, from column 0) and only the entries on or below the
/// diagonal blocks are kept up to date (the diagonal blocks whole, both triangles). Every read of
/// the reduction is in that region (panels are below the diagonal, band entries on or below it),
/// and the rank-2k update then costs about (1/2 + nbk / 2n) of the full one. nbk = 0: full storage.
inline int lower_block_width(int n, int b) { return std::max(b, (n + 7) / 8); }

/// X = A22 V (m x k) with A22 = A(off:, off:) in the lower storage of block width nbk (above):
/// per block of columns [cs, ce), X(cs:m) += A22(cs:m, cs:ce) V(cs:ce) (diagonal block whole) and
/// X(cs:ce) += A22(ce:m, cs:ce)^T V(ce:m). nbk = 0: one GEMM with the full A22.
template <class ExecSpace, class A22View, class VView, class XView>
void symm_lower(const ExecSpace& exec, const A22View& A22, const VView& V, const XView& X, int m,
                int off, int nbk) {
  if (nbk <= 0) {
    kx::gemm(exec, "N", "N", 1.0, A22, V, 0.0, X);
    return;
  }
  for (int cs = 0; cs < m;) {
    const int ce = std::min(m, ((off + cs) / nbk + 1) * nbk - off);
    const auto rows = Kokkos::make_pair(cs, m), cols = Kokkos::make_pair(cs, ce), below = Kokkos::make_pair(ce, m);
    kx::gemm(exec, "N", "N", 1.0, Kokkos::subview(A22, rows, cols), Kokkos::subview(V, cols, Kokkos::ALL),
             cs == 0 ? 0.0 : 1.0, Kokkos::subview(X, rows, Kokkos::ALL));
    if (ce < m)
      kx::gemm(exec, "T", "N", 1.0, Kokkos::subview(A22, below, cols), Kokkos::subview(V, below, Kokkos::ALL),
               1.0, Kokkos::subview(X, cols, Kokkos::ALL));
    cs = ce;
  }
}

/// The two-sided update A22 <- Q^T A22 Q with Q = I - V T V^T (Eq. 6a) as A22 -= [V W] [W V]^T:
/// given V (m x k) in VW(:, 0:k), forms X = A22 V, W = X T - 1/2 V (T^T (V^T X T)) in VW(:, k:2k)
/// and WV = [W V]. The caller applies the rank-2k GEMM (rank2k_columns). A22 = A(off:, off:) in
/// lower storage of block width nbk (0: full).
template <class ExecSpace, class A22View, class TView, class Mat>
void two_sided_w(const ExecSpace& exec, const A22View& A22, const TView& T, int m, int k,
                 const Mat& X, const Mat& VW, const Mat& WV, const Mat& M, const Mat& TM, int off,
                 int nbk) {
  const auto rm = Kokkos::make_pair(0, m), c0 = Kokkos::make_pair(0, k), c1 = Kokkos::make_pair(k, 2 * k);
  auto Xm = Kokkos::subview(X, rm, c0);
  auto Vm = Kokkos::subview(VW, rm, c0);
  auto Wm = Kokkos::subview(VW, rm, c1);
  auto Mk = Kokkos::subview(M, c0, c0);
  auto TMk = Kokkos::subview(TM, c0, c0);
  symm_lower(exec, A22, Vm, Xm, m, off, nbk);        // X  = A22 V
  kx::gemm(exec, "N", "N", 1.0, Xm, T, 0.0, Wm);     // W  = A22 V T
  kx::gemm(exec, "T", "N", 1.0, Vm, Wm, 0.0, Mk);    // M  = V^T W
  kx::gemm(exec, "T", "N", 1.0, T, Mk, 0.0, TMk);    // TM = T^T M
  kx::gemm(exec, "N", "N", -0.5, Vm, TMk, 1.0, Wm);  // W -= V TM / 2
  copy2d(exec, "kess::band_reduce::copy_w", Kokkos::subview(WV, rm, c0), Wm);
  copy2d(exec, "kess::band_reduce::copy_v", Kokkos::subview(WV, rm, c1), Vm);
}

/// The columns [c0, c1) of the rank-2k update A22 -= [V W] [W V]^T, A22 = A(off:, off:) in lower
/// storage of block width nbk (0: full, one GEMM of m rows): per block, the rows from the block's
/// diagonal down (2k inner).
template <class ExecSpace, class A22View, class Mat>
void rank2k_columns(const ExecSpace& exec, const A22View& A22, const Mat& VW, const Mat& WV, int m,
                    int k, int c0, int c1, int off, int nbk) {
  const auto inner = Kokkos::make_pair(0, 2 * k);
  for (int cs = c0; cs < c1;) {
    const int bs = nbk > 0 ? ((off + cs) / nbk) * nbk - off : 0;  // the block's first column
    const int ce = nbk > 0 ? std::min(c1, bs + nbk) : c1;
    const int r0 = std::max(0, bs);
    const auto rows = Kokkos::make_pair(r0, m), cols = Kokkos::make_pair(cs, ce);
    kx::gemm(exec, "N", "T", -1.0, Kokkos::subview(VW, rows, inner), Kokkos::subview(WV, cols, inner), 1.0,
             Kokkos::subview(A22, rows, cols));
    cs = ce;
  }
}
}  // namespace detail

/// Reduces the symmetric n x n matrix A (exec's memory, overwritten: it ends up holding the
/// stage-1 reflectors) to the band matrix `band` (host, half-width b). Returns the reflectors.
/// `host_seconds` receives the time spent in host copies and LAPACK (part of the total).
/// `panel_kernel`: the device panel QR's kernel (detail::panel_qr_device; tests pin one).
template <class ExecSpace, class AView>
BandReflectors<typename ExecSpace::memory_space> band_reduce(const ExecSpace& exec, const AView& A,
                                                             int b, BandMatrix& band,
                                                             double* host_seconds = nullptr,
                                                             PanelQR panel = PanelQR::automatic,
                                                             detail::PanelKernel panel_kernel =
                                                                 detail::PanelKernel::automatic) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using HMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  using UHMat = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace,
                             Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const int n = A.extent(0);
  require_arg(b >= 1, "band_reduce", "argument 'b' = " + std::to_string(b) + " must be >= 1");
  BandReflectors<Mem> refl;
  refl.n = n;
  refl.b = b;
  refl.A = A;
  refl.panels = 0;
  for (int j0 = 0; j0 + b < n; j0 += b) ++refl.panels;
  band = BandMatrix(n, b);
  const int np = refl.panels;
  refl.T = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::T"), b,
               std::max(1, np * b));
  // Work buffers of the trailing update. VW = [V W], WV = [W V]: the symmetric rank-2k update
  // A22 -= V W^T + W V^T as one GEMM.
  Mat X(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::X"), std::max(1, n), b);
  Mat VW(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::VW"), std::max(1, n), 2 * b);
  Mat WV(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::WV"), std::max(1, n), 2 * b);
  Mat M(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::M"), b, b);
  Mat TM(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::TM"), b, b);
  // Device memory: the trailing matrix in lower storage (detail::lower_block_width).
  const int nbk = std::is_same<Mem, Kokkos::HostSpace>::value && panel != PanelQR::device
                      ? 0 : detail::lower_block_width(n, b);
  const bool on_device = panel == PanelQR::device ||
                         (panel == PanelQR::automatic &&
                          !std::is_same<Mem, Kokkos::HostSpace>::value);
  if (on_device) {
    // Everything on the device: panel QR, band entries into a device copy of the band, T from
    // V^T V. Look-ahead: once the trailing update has reached panel p+1's columns, panel p+1 is
    // factored on a second (high-priority) instance while `exec` updates the rest.
    Kokkos::View<double*, Mem> bandd(Kokkos::view_alloc(exec, "kess::band_reduce::band"), band.data.size());
    Kokkos::View<double*, Mem> taud(Kokkos::view_alloc(exec, "kess::band_reduce::tau"), b);
    const int ldb = band.ld();
    const ExecSpace side = kx::concurrent_instance(exec);
    detail::PanelQrWork<Mem> qr_work;  // flags of the pipelined panel QR, made by its first call
    // Panel p on `on`: QR, its diagonal block and R into the band, explicit V, T. False for the
    // last, band-only block.
    auto factor = [&](const ExecSpace& on, int p) {
      const int j0 = p * b;
      const int w = std::min(b, n - j0);
      if (w <= 0) return false;
      const int m = p == np ? 0 : n - j0 - b, k = std::min(m, b);
      auto P = Kokkos::subview(A, Kokkos::make_pair(std::min(j0 + b, n), n),
                               Kokkos::make_pair(j0, std::min(j0 + b, n)));
      if (m > 0) detail::panel_qr_device(on, P, taud, panel_kernel, &qr_work);
      // Diagonal block (lower, r - c <= b) and R into the band; the panel becomes explicit V.
      const int wb = p == np ? w : b;
      Kokkos::parallel_for(
          "kess::band_reduce::band_entries", Kokkos::RangePolicy<ExecSpace>(on, 0, (wb + std::max(m, 0)) * wb),
          KOKKOS_LAMBDA(int t) {
            const int r = t % (wb + m), c = t / (wb + m);
            if (r < wb) {
              if (r >= c) bandd(std::size_t(j0 + r) + std::size_t(j0 + c) * ldb) = A(j0 + r, j0 + c);
            } else {
              const int rr = r - wb;  // row of the panel P
              if (rr <= c) {
                bandd(std::size_t(j0 + b + rr) + std::size_t(j0 + c) * ldb) = P(rr, c);
                P(rr, c) = rr == c ? 1.0 : 0.0;
              }
            }
          });
      if (m <= 0) return false;
      auto Vd = Kokkos::subview(A, Kokkos::make_pair(j0 + b, n), Kokkos::make_pair(j0, j0 + k));
      auto Td = Kokkos::subview(refl.T, Kokkos::make_pair(0, k), Kokkos::make_pair(j0, j0 + k));
      auto Sk = Kokkos::subview(M, Kokkos::make_pair(0, k), Kokkos::make_pair(0, k));
      kx::gemm(on, "T", "N", 1.0, Vd, Vd, 0.0, Sk);  // S = V^T V
      detail::larft_device(on, Td, Sk, taud);
      return true;
    };
    bool more = factor(exec, 0);
    for (int p = 0; more; ++p) {
      const int j0 = p * b, m = n - j0 - b, k = std::min(m, b);
      const auto rm = Kokkos::make_pair(0, m);
      const auto r2 = Kokkos::make_pair(j0 + b, n);
      auto A22 = Kokkos::subview(A, r2, r2);
      auto Vd = Kokkos::subview(A, r2, Kokkos::make_pair(j0, j0 + k));
      auto Td = Kokkos::subview(refl.T, Kokkos::make_pair(0, k), Kokkos::make_pair(j0, j0 + k));
      detail::copy2d(exec, "kess::band_reduce::copy_v", Kokkos::subview(VW, rm, Kokkos::make_pair(0, k)), Vd);
      detail::two_sided_w(exec, A22, Td, m, k, X, VW, WV, M, TM, j0 + b, nbk);
      // A22 -= [V W] [W V]^T: the next panel's columns first, then the rest beside its QR.
      const int wn = std::min(b, m);
      detail::rank2k_columns(exec, A22, VW, WV, m, k, 0, wn, j0 + b, 0);
      // Stream order only (CUDA events): the host never waits inside this loop.
      kx::stream_wait(side, exec);  // panel p+1 after its columns' update
      detail::rank2k_columns(exec, A22, VW, WV, m, k, wn, m, j0 + b, nbk);
      more = factor(side, p + 1);
      kx::stream_wait(exec, side);  // panel p+1's V and T before its two-sided update
    }
    Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bh(band.data.data(), band.data.size());
    Kokkos::deep_copy(exec, bh, bandd);
    kx::fence(exec, "kess::band_reduce::done");
    if (host_seconds) *host_seconds = 0;
    return refl;
  }
  HMat Th(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::band_reduce::T_host"), b,
          std::max(1, np * b));
  // Work buffers sized for the first (largest) panel; host buffers are page-locked for GPUs.
  using Staging = typename kx::HostStaging<Mem>::type;
  const std::size_t pan = static_cast<std::size_t>(n) * b;
  Kokkos::View<double*, Mem> pbuf(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::panel"), pan);
  Kokkos::View<double*, Staging> pbuf_h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::band_reduce::panel_host"), pan);
  Kokkos::View<double*, Mem> vbuf(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::V"), pan + b * b);
  Kokkos::View<double*, Staging> vbuf_h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::band_reduce::V_host"), pan + b * b);
  std::vector<double> tau(b);
  double host_t = 0;
  // Look-ahead: once the columns of panel p+1 are updated, they travel to the host on `side`
  // while `exec` updates the rest of the trailing matrix, so that the host QR of panel p+1 runs
  // under the device GEMMs of panel p.
  const ExecSpace side = kx::concurrent_instance(exec);
  auto fetch_panel = [&](const ExecSpace& on, int j0) {
    const int rows = n - j0, w = std::min(b, n - j0);
    UMat P(pbuf.data(), rows, w);
    detail::copy2d(on, "kess::band_reduce::pack_panel",
                   P, Kokkos::subview(A, Kokkos::make_pair(j0, n), Kokkos::make_pair(j0, j0 + w)));
    Kokkos::View<double**, Kokkos::LayoutLeft, Staging, Kokkos::MemoryTraits<Kokkos::Unmanaged>> Ph(
        pbuf_h.data(), rows, w);
    Kokkos::deep_copy(on, Ph, P);
  };
  if (n > 0) fetch_panel(exec, 0);
  kx::fence(exec, "kess::band_reduce::panel_to_host");

  for (int p = 0; p <= np; ++p) {
    const int j0 = p * b;
    const int w = std::min(b, n - j0);  // panel width (the last, band-only block may be narrower)
    const int rows = n - j0;
    if (w <= 0) break;
    // The panel A(j0:n, j0:j0+w) is on the host; its diagonal block is final.
    UHMat Ph(pbuf_h.data(), rows, w);
    Kokkos::Timer ht;
    for (int c = 0; c < w; ++c)
      for (int r = c; r < std::min(w, c + b + 1); ++r) band(j0 + r, j0 + c) = Ph(r, c);
    if (p == np) {  // no rows below the band: the last diagonal block only
      host_t += ht.seconds();
      break;
    }
    const int m = rows - b, k = std::min(m, b);
    double* pr = &Ph(b, 0);
    const int ldp = rows;
    UHMat Vh(vbuf_h.data(), m, k);
    UHMat Tk(vbuf_h.data() + std::size_t(m) * k, k, k);
    if (m >= b) {  // recursive QR with T (level 3)
      const int info = lapack::geqrt3(m, b, pr, ldp, Tk.data(), k);
      require(info == 0, ErrorKind::no_convergence, "band_reduce", "dgeqrt3 failed");
    } else {       // the last, short panel
      const int info = lapack::geqrf(m, b, pr, ldp, tau.data());
      require(info == 0, ErrorKind::no_convergence, "band_reduce", "dgeqrf failed");
    }
    // R (upper trapezoidal) is the band part below the diagonal block.
    for (int c = 0; c < b; ++c)
      for (int r = 0; r <= std::min(c, m - 1); ++r) band(j0 + b + r, j0 + c) = pr[r + std::size_t(c) * ldp];
    // Explicit V (m x k) and T (k x k) into one upload buffer.
    for (int c = 0; c < k; ++c)
      for (int r = 0; r < m; ++r)
        Vh(r, c) = r > c ? pr[r + std::size_t(c) * ldp] : (r == c ? 1.0 : 0.0);
    if (m < b) lapack::larft('F', 'C', m, k, Vh.data(), m, tau.data(), Tk.data(), k);
    for (int c = 0; c < k; ++c)
      for (int r = 0; r < k; ++r) {
        if (r > c) Tk(r, c) = 0.0;  // only the upper triangle is T
        Th(r, j0 + c) = Tk(r, c);
      }
    host_t += ht.seconds();
    Kokkos::View<double*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> up(vbuf.data(), std::size_t(m) * k + std::size_t(k) * k);
    Kokkos::View<double*, Staging, Kokkos::MemoryTraits<Kokkos::Unmanaged>> up_h(
        vbuf_h.data(), std::size_t(m) * k + std::size_t(k) * k);
    Kokkos::deep_copy(exec, up, up_h);
    UMat Vd(vbuf.data(), m, k);
    UMat Td(vbuf.data() + std::size_t(m) * k, k, k);
    const auto r2 = Kokkos::make_pair(j0 + b, n);
    auto Vstore = Kokkos::subview(A, r2, Kokkos::make_pair(j0, j0 + k));
    detail::copy2d(exec, "kess::band_reduce::store_v", Vstore, Vd);
    // Two-sided update of A22 (Eq. 6a as compact-WY GEMMs).
    const auto rm = Kokkos::make_pair(0, m);
    auto A22 = Kokkos::subview(A, r2, r2);
    detail::copy2d(exec, "kess::band_reduce::copy_v", Kokkos::subview(VW, rm, Kokkos::make_pair(0, k)), Vd);
    if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
      // Host memory: only the lower triangle of A22 is kept (every later read is on or below the
      // diagonal), X = A22 V by dsymm and the rank-2k update by dsyr2k: 4 m^2 k flops per panel
      // instead of 6 m^2 k.
      kx::fence(exec, "kess::band_reduce::host_update");
      double* a22 = &A(j0 + b, j0 + b);
      const int lda = static_cast<int>(A.stride(1)), ldw = static_cast<int>(VW.stride(1));
      const int ldx = static_cast<int>(X.stride(1)), ldm = static_cast<int>(M.stride(1));
      double* v = VW.data();
      double* w = VW.data() + std::size_t(k) * ldw;
      lapack::symm('L', 'L', m, k, 1.0, a22, lda, v, ldw, 0.0, X.data(), ldx);         // X = A22 V
      lapack::gemm('N', 'N', m, k, k, 1.0, X.data(), ldx, Td.data(), k, 0.0, w, ldw);  // W = X T
      lapack::gemm('T', 'N', k, k, m, 1.0, v, ldw, w, ldw, 0.0, M.data(), ldm);         // M = V^T W
      lapack::gemm('T', 'N', k, k, k, 1.0, Td.data(), k, M.data(), ldm, 0.0, TM.data(), ldm);
      lapack::gemm('N', 'N', m, k, k, -0.5, v, ldw, TM.data(), ldm, 1.0, w, ldw);       // W -= V TM / 2
      lapack::syr2k('L', 'N', m, k, -1.0, v, ldw, w, ldw, 1.0, a22, lda);  // A22 -= V W^T + W V^T
      fetch_panel(side, j0 + b);
      kx::fence(side, "kess::band_reduce::panel_to_host");
      continue;
    }
    detail::two_sided_w(exec, A22, Td, m, k, X, VW, WV, M, TM, j0 + b, nbk);
    // A22 -= [V W] [W V]^T: first the next panel's columns, which then go to the host on `side`,
    // then the rest.
    const int wn = std::min(b, m);
    detail::rank2k_columns(exec, A22, VW, WV, m, k, 0, wn, j0 + b, 0);
    kx::fence(exec, "kess::band_reduce::next_panel_ready");
    fetch_panel(side, j0 + b);
    detail::rank2k_columns(exec, A22, VW, WV, m, k, wn, m, j0 + b, nbk);
    kx::fence(side, "kess::band_reduce::panel_to_host");
  }
  if (np > 0) Kokkos::deep_copy(exec, refl.T, Th);
  kx::fence(exec, "kess::band_reduce::done");
  if (host_seconds) *host_seconds = host_t;
  return refl;
}

/// Stage 5 (Yu et al. 2020, Eq. 6e): Z <- Q_0 Q_1 ... Q_{np-1} Z with the stage-1 reflectors.
/// `merge` consecutive panels form one compact-WY block (V = [V_p0 ... V_p0+g-1] zero-padded on
/// top, T = [[T_p0, -T_p0 V_p0^T V_p1 T_p1, ...], ...] by the dlarft recurrence over blocks), applied
/// last first as three GEMMs: W = V^T Z2, W = T W, Z2 -= V W (Z2 = rows p0 b + b .. of Z). Larger
/// blocks give the GEMMs an inner dimension of g b instead of b (faster on GPUs) for about
/// g b / n more flops. merge = 0: 8 on device memory (the environment variable KESS_BT_MERGE
/// overrides it there: tuning and A/B runs), 1 on the host.
template <class ExecSpace, class ZView>
void band_backtransform(const ExecSpace& exec, const BandReflectors<typename ExecSpace::memory_space>& refl,
                        const ZView& Z, int merge = 0) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using pair = Kokkos::pair<int, int>;
  const int nc = Z.extent(1);
  if (refl.panels == 0 || nc == 0) return;
  const int b = refl.b, n = refl.n, np = refl.panels;
  require_arg(merge >= 0, "band_backtransform", "argument 'merge' must be >= 0, got " + std::to_string(merge));
  static const int env_merge = [] {
    const char* e = std::getenv("KESS_BT_MERGE");
    return e ? std::max(0, std::atoi(e)) : 0;
  }();
  const int dev_merge = env_merge > 0 ? env_merge : 8;
  const int g =
      std::min(np, merge > 0 ? merge : (std::is_same<Mem, Kokkos::HostSpace>::value ? 1 : dev_merge));
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  if (g == 1) {
    // W = V^T Z2, Z2 -= V (T W) per panel; on host memory as Z2 -= V (Z2^T V T^T)^T, the shapes
    // OpenBLAS runs fastest: 2 cores, n = 4000, 128 reflectors: Z2^T V and V W^T at 134 and 144
    // GFLOP/s against 93 and 129 for V^T Z2 (M = b) and V (T W) (docs/benchmarks.md, session 10).
    constexpr bool host = std::is_same<Mem, Kokkos::HostSpace>::value;
    Mat W1(alloc("kess::band_backtransform::W"), host ? nc : b, host ? b : nc);
    Mat W2(alloc("kess::band_backtransform::TW"), host ? nc : b, host ? b : nc);
    for (int p = np - 1; p >= 0; --p) {
      const int j0 = refl.first_col(p), k = refl.width(p);
      const auto r2 = pair(j0 + b, n);
      auto V = Kokkos::subview(refl.A, r2, pair(j0, j0 + k));
      auto T = Kokkos::subview(refl.T, pair(0, k), pair(j0, j0 + k));
      auto Z2 = Kokkos::subview(Z, r2, Kokkos::ALL);
      if (host) {
        auto w1 = Kokkos::subview(W1, Kokkos::ALL, pair(0, k));
        auto w2 = Kokkos::subview(W2, Kokkos::ALL, pair(0, k));
        kx::gemm(exec, "T", "N", 1.0, Z2, V, 0.0, w1);
        kx::gemm(exec, "N", "T", 1.0, w1, T, 0.0, w2);
        kx::gemm(exec, "N", "T", -1.0, V, w2, 1.0, Z2);
      } else {
        auto w1 = Kokkos::subview(W1, pair(0, k), Kokkos::ALL);
        auto w2 = Kokkos::subview(W2, pair(0, k), Kokkos::ALL);
        kx::gemm(exec, "T", "N", 1.0, V, Z2, 0.0, w1);
        kx::gemm(exec, "N", "N", 1.0, T, w1, 0.0, w2);
        kx::gemm(exec, "N", "N", -1.0, V, w2, 1.0, Z2);
      }
    }
    return;
  }
  Mat W1(alloc("kess::band_backtransform::W"), g * b, nc);
  Mat W2(alloc("kess::band_backtransform::TW"), g * b, nc);
  const int gb = g * b;
  Mat Vb(alloc("kess::band_backtransform::V"), std::max(1, n - b), gb);
  Mat Tb(alloc("kess::band_backtransform::T"), gb, gb);
  Mat G(alloc("kess::band_backtransform::VtV"), gb, gb);
  Mat X(alloc("kess::band_backtransform::TG"), gb, b);
  const auto A = refl.A;
  const auto T = refl.T;
  for (int p0 = ((np - 1) / g) * g; p0 >= 0; p0 -= g) {
    const int ng = std::min(g, np - p0);               // panels p0 .. p0+ng-1
    const int j0 = refl.first_col(p0), rows = n - j0 - b;
    const int kk = (ng - 1) * b + refl.width(p0 + ng - 1);  // reflectors in the block
    auto V = Kokkos::subview(Vb, pair(0, rows), pair(0, kk));
    auto Tk = Kokkos::subview(Tb, pair(0, kk), pair(0, kk));
    // V: panel p0+q's reflectors in columns q b .., from row q b (its first row) down.
    Kokkos::parallel_for(
        "kess::band_backtransform::gather_v",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(rows) * kk),
        KOKKOS_LAMBDA(std::int64_t e) {
          const int r = static_cast<int>(e % rows), col = static_cast<int>(e / rows);
          const int q = col / b;
          V(r, col) = r >= q * b ? A(j0 + b + r, j0 + col) : 0.0;
        });
    // T: the panels' T on the diagonal, zero elsewhere; then column block q of the upper part:
    // T(0:qb, qb:) = -T(0:qb, 0:qb) (V(:, 0:qb)^T V_q) T_q.
    Kokkos::parallel_for(
        "kess::band_backtransform::gather_t",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(kk) * kk),
        KOKKOS_LAMBDA(std::int64_t e) {
          const int i = static_cast<int>(e % kk), j = static_cast<int>(e / kk);
          Tk(i, j) = i / b == j / b ? T(i % b, j0 + j) : 0.0;
        });
    if (ng > 1) {
      const int lead = (ng - 1) * b;  // G(0:lead, :) = V(:, 0:lead)^T V is what the recurrence reads
      kx::gemm(exec, "T", "N", 1.0, Kokkos::subview(V, Kokkos::ALL, pair(0, lead)), V, 0.0,
               Kokkos::subview(G, pair(0, lead), pair(0, kk)));
      for (int q = 1; q < ng; ++q) {
        const int c0 = q * b, kq = std::min(b, kk - c0);
        auto Xq = Kokkos::subview(X, pair(0, c0), pair(0, kq));
        kx::gemm(exec, "N", "N", 1.0, Kokkos::subview(Tk, pair(0, c0), pair(0, c0)),
                 Kokkos::subview(G, pair(0, c0), pair(c0, c0 + kq)), 0.0, Xq);
        kx::gemm(exec, "N", "N", -1.0, Xq, Kokkos::subview(Tk, pair(c0, c0 + kq), pair(c0, c0 + kq)), 0.0,
                 Kokkos::subview(Tk, pair(0, c0), pair(c0, c0 + kq)));
      }
    }
    auto Z2 = Kokkos::subview(Z, pair(j0 + b, n), Kokkos::ALL);
    auto w1 = Kokkos::subview(W1, pair(0, kk), Kokkos::ALL);
    auto w2 = Kokkos::subview(W2, pair(0, kk), Kokkos::ALL);
    kx::gemm(exec, "T", "N", 1.0, V, Z2, 0.0, w1);
    kx::gemm(exec, "N", "N", 1.0, Tk, w1, 0.0, w2);
    kx::gemm(exec, "N", "N", -1.0, V, w2, 1.0, Z2);
  }
}

}  // namespace kess
