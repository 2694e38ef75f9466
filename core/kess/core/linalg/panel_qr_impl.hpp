// The bodies of core/linalg/panel_qr.hpp, compiled in libkess only (core/linalg/instantiate_*.cpp):
// every template with device lambdas is instantiated in one translation unit.
#pragma once

#include <kess/core/linalg/panel_qr.hpp>

namespace kess::core {
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
  // 1024 threads, which is slower.
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
  core::copy2d(exec, "kess::band_reduce::cholqr_copy", Q, P);
  core::gemm(exec, "T", "N", 1.0, P, P, 0.0, G);
  Kokkos::parallel_for(
      "kess::band_reduce::cholqr_chol", policy(), KOKKOS_LAMBDA(const Member& tm) {
        double* g = static_cast<double*>(tm.team_scratch(0).get_shmem(scratch));
        team_for_columns(tm, k, 0, [&](int i, int l) { g[i + l * ld] = G(i, l); });
        tm.team_barrier();
        const bool ok = team_cholesky_upper(tm, g, ld, g + k * ld, R1, k, rel);
        Kokkos::single(Kokkos::PerTeam(tm), [&]() { fail(0) = ok ? 0 : 1; });
      });
  core::trsm(exec, "R", "U", "N", "N", 1.0, R1, Q);
  // Pass 2 and the reconstruction, in one team: G = Q1^T Q1 = R2^T R2; A = Q1_top R2^-1 - S = L U
  // (the LU in place in A); tau; S R2 R1 (the new R) and U R2 (for Y_bottom = Q1_bottom (U R2)^-1).
  core::gemm(exec, "T", "N", 1.0, Q, Q, 0.0, G);
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
  core::trsm(exec, "R", "U", "N", "N", 1.0, UR2, Qb);
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


/// Householder QR of the m x nb panel P (in place: R on and above the diagonal, v below it, v(0) = 1
/// implied) on exec; tau (nb). Columns of up to 32 ts rows (ts: the team size) take the one-kernel
/// pipeline of panel_qr_pipelined (`work`: its flags, kept across calls; a temporary when null).
/// Longer columns, or a device too small for nb resident teams, take the generic path, one kernel
/// per column: a team per remaining column applies reflector jj, and the team of column jj+1 then
/// forms reflector jj+1 from its freshly updated column, each pass over L2. Tall panels (m >= 3072
/// for `automatic`, m >= 2 nb for `cholqr`; 8 <= nb <= 64, so that its k x k work fits a team's
/// scratch) try panel_qr_cholqr first. Returns the kernel that ran.
template <class ExecSpace>
PanelKernel panel_qr_device(const ExecSpace& exec, const Matrix<ExecSpace>& P,
                            const Vector<ExecSpace>& tau,
                            PanelKernel kernel, PanelQrWork<typename ExecSpace::memory_space>* work) {
  using PView = Matrix<ExecSpace>;
  using TauView = Vector<ExecSpace>;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  const int m = P.extent(0), nb = P.extent(1), k = std::min(m, nb);
  if (k == 0) return PanelKernel::generic;
  PanelQrWork<typename ExecSpace::memory_space> local;
  PanelQrWork<typename ExecSpace::memory_space>& w = work ? *work : local;
  // CholeskyQR2 costs about the same whatever m (a chain of ~10 small kernels), the pipelined
  // kernel a time that grows with m: automatic takes CholeskyQR2 from m = 3072 on, where it is
  // the faster one on GPUs (docs/performance/eigh.md).
  const bool cholqr_fits = m >= 2 * nb && nb >= 8 && nb <= 64;
  if (cholqr_fits &&
      (kernel == PanelKernel::cholqr || (kernel == PanelKernel::automatic && m >= 3072)) &&
      panel_qr_cholqr(exec, P, tau, w))
    return PanelKernel::cholqr;
  if (kernel == PanelKernel::cholqr) kernel = PanelKernel::automatic;
  // Teams sized to the column: the reductions over m rows are L2-latency bound, so more threads
  // a team (up to 1024) hide more of that latency.
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
template <class ExecSpace>
void larft_device(const ExecSpace& exec, const Matrix<ExecSpace>& T, const ConstMatrix<ExecSpace>& S,
                  const ConstVector<ExecSpace>& tau) {
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

}  // namespace kess::core
