// Stage 1 of the two-stage eigensolver: full -> band of half-width b (Yu et al. 2020, papers/001,
// Eq. 6a), by blocked Householder QR of b-column panels and two-sided compact-WY updates as GEMMs.
//
// Panel p covers columns j0 = p b .. j0+b-1. Its rows j0+b .. n-1 (m rows) are factored on the host
// (LAPACK dgeqrf + dlarft on a mirror of the panel): Q_p = I - V T V^T, V m x k (k = min(m, b)),
// unit lower trapezoidal. The trailing matrix A22 = A(j0+b:, j0+b:) becomes Q_p^T A22 Q_p through
//   X = A22 V T,  W = X - 1/2 V (T^T (V^T X)),  A22 -= V W^T + W V^T
// (five GEMMs on the execution space). The diagonal block and R go to the host band matrix; the
// explicit V overwrites A(j0+b:, j0:j0+k) (below the band, never read again) and T is kept, so
// stage 5 (band_backtransform.hpp) can apply Q_0 Q_1 ... as GEMMs.
#pragma once

#include <kess/core/bulge_chase.hpp>
#include <kess/core/error.hpp>
#include <kess/core/kokkos_compat.hpp>
#include <kess/core/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
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

/// Reduces the symmetric n x n matrix A (exec's memory, overwritten: it ends up holding the
/// stage-1 reflectors) to the band matrix `band` (host, half-width b). Returns the reflectors.
/// `host_seconds` receives the time spent in host copies and LAPACK (part of the total).
template <class ExecSpace, class AView>
BandReflectors<typename ExecSpace::memory_space> band_reduce(const ExecSpace& exec, const AView& A,
                                                             int b, BandMatrix& band,
                                                             double* host_seconds = nullptr) {
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
  HMat Th(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::band_reduce::T_host"), b,
          std::max(1, np * b));
  // Work buffers sized for the first (largest) panel.
  const std::size_t pan = static_cast<std::size_t>(n) * b;
  Kokkos::View<double*, Mem> pbuf(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::panel"), pan);
  Kokkos::View<double*, Kokkos::HostSpace> pbuf_h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::band_reduce::panel_host"), pan);
  Kokkos::View<double*, Mem> vbuf(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::V"), pan + b * b);
  Kokkos::View<double*, Kokkos::HostSpace> vbuf_h(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::band_reduce::V_host"), pan + b * b);
  Mat X(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::X"), std::max(1, n), b);
  Mat X2(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::XT"), std::max(1, n), b);
  Mat M(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::M"), b, b);
  Mat TM(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_reduce::TM"), b, b);
  std::vector<double> tau(b);
  double host_t = 0;

  for (int p = 0; p <= np; ++p) {
    const int j0 = p * b;
    const int w = std::min(b, n - j0);  // panel width (the last, band-only block may be narrower)
    const int rows = n - j0;
    if (w <= 0) break;
    // Panel A(j0:n, j0:j0+w) to the host; its diagonal block is final.
    UMat P(pbuf.data(), rows, w);
    detail::copy2d(exec, "kess::band_reduce::pack_panel",
                   P, Kokkos::subview(A, Kokkos::make_pair(j0, n), Kokkos::make_pair(j0, j0 + w)));
    UHMat Ph(pbuf_h.data(), rows, w);
    Kokkos::deep_copy(exec, Ph, P);
    kx::fence(exec, "kess::band_reduce::panel_to_host");
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
    const int info = lapack::geqrf(m, b, pr, ldp, tau.data());
    require(info == 0, ErrorKind::no_convergence, "band_reduce", "dgeqrf failed");
    // R (upper trapezoidal) is the band part below the diagonal block.
    for (int c = 0; c < b; ++c)
      for (int r = 0; r <= std::min(c, m - 1); ++r) band(j0 + b + r, j0 + c) = pr[r + std::size_t(c) * ldp];
    // Explicit V (m x k) and T (k x k) into one upload buffer.
    UHMat Vh(vbuf_h.data(), m, k);
    for (int c = 0; c < k; ++c)
      for (int r = 0; r < m; ++r)
        Vh(r, c) = r > c ? pr[r + std::size_t(c) * ldp] : (r == c ? 1.0 : 0.0);
    UHMat Tk(vbuf_h.data() + std::size_t(m) * k, k, k);
    lapack::larft('F', 'C', m, k, Vh.data(), m, tau.data(), Tk.data(), k);
    for (int c = 0; c < k; ++c)
      for (int r = 0; r < k; ++r) {
        if (r > c) Tk(r, c) = 0.0;  // dlarft leaves the strictly lower triangle alone
        Th(r, j0 + c) = Tk(r, c);
      }
    host_t += ht.seconds();
    Kokkos::View<double*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> up(vbuf.data(), std::size_t(m) * k + std::size_t(k) * k);
    Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> up_h(
        vbuf_h.data(), std::size_t(m) * k + std::size_t(k) * k);
    Kokkos::deep_copy(exec, up, up_h);
    UMat Vd(vbuf.data(), m, k);
    UMat Td(vbuf.data() + std::size_t(m) * k, k, k);
    const auto r2 = Kokkos::make_pair(j0 + b, n);
    auto Vstore = Kokkos::subview(A, r2, Kokkos::make_pair(j0, j0 + k));
    detail::copy2d(exec, "kess::band_reduce::store_v", Vstore, Vd);
    // Two-sided update of A22 (Eq. 6a as compact-WY GEMMs).
    auto A22 = Kokkos::subview(A, r2, r2);
    auto Xm = Kokkos::subview(X, Kokkos::make_pair(0, m), Kokkos::make_pair(0, k));
    auto X2m = Kokkos::subview(X2, Kokkos::make_pair(0, m), Kokkos::make_pair(0, k));
    auto Mk = Kokkos::subview(M, Kokkos::make_pair(0, k), Kokkos::make_pair(0, k));
    auto TMk = Kokkos::subview(TM, Kokkos::make_pair(0, k), Kokkos::make_pair(0, k));
    kx::gemm(exec, "N", "N", 1.0, A22, Vd, 0.0, Xm);     // X  = A22 V
    kx::gemm(exec, "N", "N", 1.0, Xm, Td, 0.0, X2m);     // X2 = A22 V T
    kx::gemm(exec, "T", "N", 1.0, Vd, X2m, 0.0, Mk);     // M  = V^T X2
    kx::gemm(exec, "T", "N", 1.0, Td, Mk, 0.0, TMk);     // TM = T^T M
    kx::gemm(exec, "N", "N", -0.5, Vd, TMk, 1.0, X2m);   // W  = X2 - V TM / 2
    kx::gemm(exec, "N", "T", -1.0, Vd, X2m, 1.0, A22);   // A22 -= V W^T
    kx::gemm(exec, "N", "T", -1.0, X2m, Vd, 1.0, A22);   // A22 -= W V^T
  }
  if (np > 0) Kokkos::deep_copy(exec, refl.T, Th);
  kx::fence(exec, "kess::band_reduce::done");
  if (host_seconds) *host_seconds = host_t;
  return refl;
}

/// Stage 5 (Yu et al. 2020, Eq. 6e): Z <- Q_0 Q_1 ... Q_{np-1} Z with the stage-1 reflectors,
/// last panel first, each as three GEMMs: W = V^T Z2, W = T W, Z2 -= V W (Z2 = rows j0+b.. of Z).
template <class ExecSpace, class ZView>
void band_backtransform(const ExecSpace& exec, const BandReflectors<typename ExecSpace::memory_space>& refl,
                        const ZView& Z) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  const int nc = Z.extent(1);
  if (refl.panels == 0 || nc == 0) return;
  const int b = refl.b, n = refl.n;
  Mat W1(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_backtransform::W"), b, nc);
  Mat W2(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::band_backtransform::TW"), b, nc);
  for (int p = refl.panels - 1; p >= 0; --p) {
    const int j0 = refl.first_col(p), k = refl.width(p);
    const auto r2 = Kokkos::make_pair(j0 + b, n);
    auto V = Kokkos::subview(refl.A, r2, Kokkos::make_pair(j0, j0 + k));
    auto T = Kokkos::subview(refl.T, Kokkos::make_pair(0, k), Kokkos::make_pair(j0, j0 + k));
    auto Z2 = Kokkos::subview(Z, r2, Kokkos::ALL);
    auto w1 = Kokkos::subview(W1, Kokkos::make_pair(0, k), Kokkos::ALL);
    auto w2 = Kokkos::subview(W2, Kokkos::make_pair(0, k), Kokkos::ALL);
    kx::gemm(exec, "T", "N", 1.0, V, Z2, 0.0, w1);
    kx::gemm(exec, "N", "N", 1.0, T, w1, 0.0, w2);
    kx::gemm(exec, "N", "N", -1.0, V, w2, 1.0, Z2);
  }
}

}  // namespace kess
