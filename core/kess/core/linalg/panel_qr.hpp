// Householder QR of a tall panel on an execution space (one team a column, or all columns in one
// pipelined kernel), CholeskyQR2 with Householder reconstruction, and the compact-WY T factor.
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/views.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/kokkos/team.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/linalg/householder.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

namespace kess::core {

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
template <class ExecSpace>
PanelKernel panel_qr_device(const ExecSpace& exec, const Matrix<ExecSpace>& P,
                            const Vector<ExecSpace>& tau, PanelKernel kernel = PanelKernel::automatic,
                            PanelQrWork<typename ExecSpace::memory_space>* work = nullptr);

/// T (k x k, upper) of the compact-WY form from tau and S = V^T V (dlarft, forward columnwise):
/// T(j, j) = tau_j, T(0:j, j) = -tau_j T(0:j, 0:j) S(0:j, j). One team.
template <class ExecSpace>
void larft_device(const ExecSpace& exec, const Matrix<ExecSpace>& T, const ConstMatrix<ExecSpace>& S,
                  const ConstVector<ExecSpace>& tau);

}  // namespace kess::core
