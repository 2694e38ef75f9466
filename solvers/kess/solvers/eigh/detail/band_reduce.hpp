// Stage 1 of the two-stage eigensolver: full -> band of half-width b (Yu et al. 2020, Eq. 6a),
// by blocked Householder QR of b-column panels and two-sided compact-WY updates as GEMMs.
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

#include <kess/core/kokkos/views.hpp>
#include <kess/core/linalg/panel_qr.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/kokkos/instances.hpp>
#include <kess/solvers/eigh/detail/bulge_chase.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kess::detail::eigh {

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


/// Where band_reduce factors its panels.
enum class PanelQR {
  automatic,  ///< device on device memory spaces, host otherwise
  host,       ///< host LAPACK (dgeqrt3) on a page-locked mirror, with look-ahead
  device,     ///< Householder QR on the execution space (no host work, no synchronization)
};

/// Reduces the symmetric n x n matrix A (exec's memory, overwritten: it ends up holding the
/// stage-1 reflectors) to the band matrix `band` (host, half-width b). Returns the reflectors.
/// `host_seconds` receives the time spent in host copies and LAPACK (part of the total).
/// `panel_kernel`: the device panel QR's kernel (core::panel_qr_device; tests pin one).
template <class ExecSpace>
BandReflectors<typename ExecSpace::memory_space> band_reduce(
    const ExecSpace& exec, const core::Matrix<ExecSpace>& A, int b, BandMatrix& band,
    double* host_seconds = nullptr, PanelQR panel = PanelQR::automatic,
    core::PanelKernel panel_kernel = core::PanelKernel::automatic);

}  // namespace kess::detail::eigh
