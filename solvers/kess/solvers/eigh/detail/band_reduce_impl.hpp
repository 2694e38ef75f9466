// The body of stage 1 (band_reduce.hpp), compiled in libkess only (eigh/host, eigh/cuda).
#pragma once

#include <kess/solvers/eigh/detail/band_reduce.hpp>

namespace kess::detail::eigh {

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
    core::gemm(exec, "N", "N", 1.0, A22, V, 0.0, X);
    return;
  }
  for (int cs = 0; cs < m;) {
    const int ce = std::min(m, ((off + cs) / nbk + 1) * nbk - off);
    const auto rows = Kokkos::make_pair(cs, m), cols = Kokkos::make_pair(cs, ce), below = Kokkos::make_pair(ce, m);
    core::gemm(exec, "N", "N", 1.0, Kokkos::subview(A22, rows, cols), Kokkos::subview(V, cols, Kokkos::ALL),
             cs == 0 ? 0.0 : 1.0, Kokkos::subview(X, rows, Kokkos::ALL));
    if (ce < m)
      core::gemm(exec, "T", "N", 1.0, Kokkos::subview(A22, below, cols), Kokkos::subview(V, below, Kokkos::ALL),
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
  core::gemm(exec, "N", "N", 1.0, Xm, T, 0.0, Wm);     // W  = A22 V T
  core::gemm(exec, "T", "N", 1.0, Vm, Wm, 0.0, Mk);    // M  = V^T W
  core::gemm(exec, "T", "N", 1.0, T, Mk, 0.0, TMk);    // TM = T^T M
  core::gemm(exec, "N", "N", -0.5, Vm, TMk, 1.0, Wm);  // W -= V TM / 2
  core::copy2d(exec, "band_reduce::copy_w", Kokkos::subview(WV, rm, c0), Wm);
  core::copy2d(exec, "band_reduce::copy_v", Kokkos::subview(WV, rm, c1), Vm);
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
    core::gemm(exec, "N", "T", -1.0, Kokkos::subview(VW, rows, inner), Kokkos::subview(WV, cols, inner), 1.0,
             Kokkos::subview(A22, rows, cols));
    cs = ce;
  }
}

/// Reduces the symmetric n x n matrix A (exec's memory, overwritten: it ends up holding the
/// stage-1 reflectors) to the band matrix `band` (host, half-width b). Returns the reflectors.
/// `host_seconds` receives the time spent in host copies and LAPACK (part of the total).
/// `panel_kernel`: the device panel QR's kernel (core::panel_qr_device; tests pin one).
template <class ExecSpace>
BandReflectors<typename ExecSpace::memory_space> band_reduce(
    const ExecSpace& exec, const core::Matrix<ExecSpace>& A, int b, BandMatrix& band,
    double* host_seconds, PanelQR panel, core::PanelKernel panel_kernel) {
  using AView = core::Matrix<ExecSpace>;
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
  refl.T = Mat(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::T"), b,
               std::max(1, np * b));
  // Work buffers of the trailing update. VW = [V W], WV = [W V]: the symmetric rank-2k update
  // A22 -= V W^T + W V^T as one GEMM.
  Mat X(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::X"), std::max(1, n), b);
  Mat VW(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::VW"), std::max(1, n), 2 * b);
  Mat WV(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::WV"), std::max(1, n), 2 * b);
  Mat M(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::M"), b, b);
  Mat TM(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::TM"), b, b);
  // Device memory: the trailing matrix in lower storage (lower_block_width).
  const int nbk = std::is_same<Mem, Kokkos::HostSpace>::value && panel != PanelQR::device
                      ? 0 : lower_block_width(n, b);
  const bool on_device = panel == PanelQR::device ||
                         (panel == PanelQR::automatic &&
                          !std::is_same<Mem, Kokkos::HostSpace>::value);
  if (on_device) {
    // Everything on the device: panel QR, band entries into a device copy of the band, T from
    // V^T V. Look-ahead: once the trailing update has reached panel p+1's columns, panel p+1 is
    // factored on a second (high-priority) instance while `exec` updates the rest.
    Kokkos::View<double*, Mem> bandd(Kokkos::view_alloc(exec, "band_reduce::band"), band.data.size());
    Kokkos::View<double*, Mem> taud(Kokkos::view_alloc(exec, "band_reduce::tau"), b);
    const int ldb = band.ld();
    const ExecSpace side = kx::concurrent_instance(exec);
    core::PanelQrWork<Mem> qr_work;  // flags of the pipelined panel QR, made by its first call
    // Panel p on `on`: QR, its diagonal block and R into the band, explicit V, T. False for the
    // last, band-only block.
    auto factor = [&](const ExecSpace& on, int p) {
      const int j0 = p * b;
      const int w = std::min(b, n - j0);
      if (w <= 0) return false;
      const int m = p == np ? 0 : n - j0 - b, k = std::min(m, b);
      auto P = Kokkos::subview(A, Kokkos::make_pair(std::min(j0 + b, n), n),
                               Kokkos::make_pair(j0, std::min(j0 + b, n)));
      if (m > 0) core::panel_qr_device(on, P, taud, panel_kernel, &qr_work);
      // Diagonal block (lower, r - c <= b) and R into the band; the panel becomes explicit V.
      const int wb = p == np ? w : b;
      Kokkos::parallel_for(
          "band_reduce::band_entries", Kokkos::RangePolicy<ExecSpace>(on, 0, (wb + std::max(m, 0)) * wb),
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
      core::gemm(on, "T", "N", 1.0, Vd, Vd, 0.0, Sk);  // S = V^T V
      core::larft_device(on, Td, Sk, taud);
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
      core::copy2d(exec, "band_reduce::copy_v", Kokkos::subview(VW, rm, Kokkos::make_pair(0, k)), Vd);
      two_sided_w(exec, A22, Td, m, k, X, VW, WV, M, TM, j0 + b, nbk);
      // A22 -= [V W] [W V]^T: the next panel's columns first, then the rest beside its QR.
      const int wn = std::min(b, m);
      rank2k_columns(exec, A22, VW, WV, m, k, 0, wn, j0 + b, 0);
      // Stream order only (CUDA events): the host never waits inside this loop.
      kx::stream_wait(side, exec);  // panel p+1 after its columns' update
      rank2k_columns(exec, A22, VW, WV, m, k, wn, m, j0 + b, nbk);
      more = factor(side, p + 1);
      kx::stream_wait(exec, side);  // panel p+1's V and T before its two-sided update
    }
    Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bh(band.data.data(), band.data.size());
    Kokkos::deep_copy(exec, bh, bandd);
    kx::fence(exec, "band_reduce::done");
    if (host_seconds) *host_seconds = 0;
    return refl;
  }
  HMat Th(Kokkos::view_alloc(Kokkos::WithoutInitializing, "band_reduce::T_host"), b,
          std::max(1, np * b));
  // Work buffers sized for the first (largest) panel; host buffers are page-locked for GPUs.
  using Staging = typename kx::HostStaging<Mem>::type;
  const std::size_t pan = static_cast<std::size_t>(n) * b;
  Kokkos::View<double*, Mem> pbuf(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::panel"), pan);
  Kokkos::View<double*, Staging> pbuf_h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "band_reduce::panel_host"), pan);
  Kokkos::View<double*, Mem> vbuf(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "band_reduce::V"), pan + b * b);
  Kokkos::View<double*, Staging> vbuf_h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "band_reduce::V_host"), pan + b * b);
  std::vector<double> tau(b);
  double host_t = 0;
  // Look-ahead: once the columns of panel p+1 are updated, they travel to the host on `side`
  // while `exec` updates the rest of the trailing matrix, so that the host QR of panel p+1 runs
  // under the device GEMMs of panel p.
  const ExecSpace side = kx::concurrent_instance(exec);
  auto fetch_panel = [&](const ExecSpace& on, int j0) {
    const int rows = n - j0, w = std::min(b, n - j0);
    UMat P(pbuf.data(), rows, w);
    core::copy2d(on, "band_reduce::pack_panel",
                   P, Kokkos::subview(A, Kokkos::make_pair(j0, n), Kokkos::make_pair(j0, j0 + w)));
    Kokkos::View<double**, Kokkos::LayoutLeft, Staging, Kokkos::MemoryTraits<Kokkos::Unmanaged>> Ph(
        pbuf_h.data(), rows, w);
    Kokkos::deep_copy(on, Ph, P);
  };
  if (n > 0) fetch_panel(exec, 0);
  kx::fence(exec, "band_reduce::panel_to_host");

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
      const int info = core::lapack::geqrt3(m, b, pr, ldp, Tk.data(), k);
      require(info == 0, ErrorKind::no_convergence, "band_reduce", "dgeqrt3 failed");
    } else {       // the last, short panel
      const int info = core::lapack::geqrf(m, b, pr, ldp, tau.data());
      require(info == 0, ErrorKind::no_convergence, "band_reduce", "dgeqrf failed");
    }
    // R (upper trapezoidal) is the band part below the diagonal block.
    for (int c = 0; c < b; ++c)
      for (int r = 0; r <= std::min(c, m - 1); ++r) band(j0 + b + r, j0 + c) = pr[r + std::size_t(c) * ldp];
    // Explicit V (m x k) and T (k x k) into one upload buffer.
    for (int c = 0; c < k; ++c)
      for (int r = 0; r < m; ++r)
        Vh(r, c) = r > c ? pr[r + std::size_t(c) * ldp] : (r == c ? 1.0 : 0.0);
    if (m < b) core::lapack::larft('F', 'C', m, k, Vh.data(), m, tau.data(), Tk.data(), k);
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
    core::copy2d(exec, "band_reduce::store_v", Vstore, Vd);
    // Two-sided update of A22 (Eq. 6a as compact-WY GEMMs).
    const auto rm = Kokkos::make_pair(0, m);
    auto A22 = Kokkos::subview(A, r2, r2);
    core::copy2d(exec, "band_reduce::copy_v", Kokkos::subview(VW, rm, Kokkos::make_pair(0, k)), Vd);
    if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
      // Host memory: only the lower triangle of A22 is kept (every later read is on or below the
      // diagonal), X = A22 V by dsymm and the rank-2k update by dsyr2k: 4 m^2 k flops per panel
      // instead of 6 m^2 k.
      kx::fence(exec, "band_reduce::host_update");
      double* a22 = &A(j0 + b, j0 + b);
      const int lda = static_cast<int>(A.stride(1)), ldw = static_cast<int>(VW.stride(1));
      const int ldx = static_cast<int>(X.stride(1)), ldm = static_cast<int>(M.stride(1));
      double* v = VW.data();
      double* w = VW.data() + std::size_t(k) * ldw;
      core::lapack::symm('L', 'L', m, k, 1.0, a22, lda, v, ldw, 0.0, X.data(), ldx);         // X = A22 V
      core::lapack::gemm('N', 'N', m, k, k, 1.0, X.data(), ldx, Td.data(), k, 0.0, w, ldw);  // W = X T
      core::lapack::gemm('T', 'N', k, k, m, 1.0, v, ldw, w, ldw, 0.0, M.data(), ldm);         // M = V^T W
      core::lapack::gemm('T', 'N', k, k, k, 1.0, Td.data(), k, M.data(), ldm, 0.0, TM.data(), ldm);
      core::lapack::gemm('N', 'N', m, k, k, -0.5, v, ldw, TM.data(), ldm, 1.0, w, ldw);       // W -= V TM / 2
      core::lapack::syr2k('L', 'N', m, k, -1.0, v, ldw, w, ldw, 1.0, a22, lda);  // A22 -= V W^T + W V^T
      fetch_panel(side, j0 + b);
      kx::fence(side, "band_reduce::panel_to_host");
      continue;
    }
    two_sided_w(exec, A22, Td, m, k, X, VW, WV, M, TM, j0 + b, nbk);
    // A22 -= [V W] [W V]^T: first the next panel's columns, which then go to the host on `side`,
    // then the rest.
    const int wn = std::min(b, m);
    rank2k_columns(exec, A22, VW, WV, m, k, 0, wn, j0 + b, 0);
    kx::fence(exec, "band_reduce::next_panel_ready");
    fetch_panel(side, j0 + b);
    rank2k_columns(exec, A22, VW, WV, m, k, wn, m, j0 + b, nbk);
    kx::fence(side, "band_reduce::panel_to_host");
  }
  if (np > 0) Kokkos::deep_copy(exec, refl.T, Th);
  kx::fence(exec, "band_reduce::done");
  if (host_seconds) *host_seconds = host_t;
  return refl;
}

}  // namespace kess::detail::eigh
