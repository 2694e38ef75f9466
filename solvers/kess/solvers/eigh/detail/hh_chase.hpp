// Stage 4 of the two-stage eigensolver: the eigenvectors of T back to those of the band matrix,
// Y <- Q Y for the Q of bulge_chase, by one hh_chase_apply call per sweep index (Yu et al. 2020, Eq. 6d;
// on CUDA with the tensor-core kernel, all sweeps in one schedule).
#pragma once

#include <kess/core/base/error.hpp>
#include <kess/solvers/eigh/detail/bulge_chase.hpp>
#include <kess/core/kokkos/views.hpp>
#include <kess/solvers/eigh.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kess::detail::eigh {

/// Stage 4 (Yu et al. 2020, Eq. 6d): Y <- Q Y for the Q of bulge_chase, through one
/// hh_chase_apply call per sweep index (G_0 first; on CUDA, where the register-window kernel
/// applies, all sweeps in the one schedule of hh_chase_rounds); on host memory
/// `opts.tuning.host_blas` chooses host BLAS for the kernel's compact-WY blocks or its portable team
/// kernel. Y has n + b - 2 rows at least (rows n .. are zero padding that the zero-padded
/// reflectors leave untouched) and any number of columns. V and tau are the recorded reflectors
/// already in exec's memory space.
template <class ExecSpace>
void hh_chase(const ExecSpace& exec, const ChaseReflectors& refl,
              const core::ConstMatrix<ExecSpace>& V, const core::ConstVector<ExecSpace>& tau,
              const core::Matrix<ExecSpace>& Y, HhChaseOptions opts = {});

}  // namespace kess::detail::eigh
