// Stage 5 of the two-stage eigensolver: the eigenvectors of the band matrix back to those of A,
// Z <- Q_0 Q_1 ... Z with the compact-WY blocks of band_reduce, as GEMMs (Yu et al. 2020, Eq. 6e).
#pragma once

#include <kess/core/base/settings.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/solvers/eigh/detail/band_reduce.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace kess::detail::eigh {

/// Stage 5 (Yu et al. 2020, Eq. 6e): Z <- Q_0 Q_1 ... Q_{np-1} Z with the stage-1 reflectors.
/// `merge` consecutive panels form one compact-WY block (V = [V_p0 ... V_p0+g-1] zero-padded on
/// top, T = [[T_p0, -T_p0 V_p0^T V_p1 T_p1, ...], ...] by the dlarft recurrence over blocks), applied
/// last first as three GEMMs: W = V^T Z2, W = T W, Z2 -= V W (Z2 = rows p0 b + b .. of Z). Larger
/// blocks give the GEMMs an inner dimension of g b instead of b (faster on GPUs) for about
/// g b / n more flops. merge = 0: 8 on device memory (the environment variable KESS_BT_MERGE
/// overrides it there: tuning and A/B runs), 1 on the host.
template <class ExecSpace>
void band_backtransform(const ExecSpace& exec,
                        const BandReflectors<typename ExecSpace::memory_space>& refl,
                        const core::Matrix<ExecSpace>& Z, int merge = 0);

}  // namespace kess::detail::eigh
