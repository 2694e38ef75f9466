// The bodies of kess::sign, kess::lyapunov and kess::riccati (matrix_functions.hpp), compiled once
// per enabled execution space (matrix_functions/host/instantiate_*.cpp, matrix_functions/cuda/).
#pragma once

#include <kess/solvers/matrix_functions/detail/lyapunov.hpp>
#include <kess/solvers/matrix_functions/detail/riccati.hpp>
#include <kess/solvers/matrix_functions/detail/sign.hpp>

namespace kess::detail::matrix_functions {

#define KESS_MATRIX_FUNCTIONS_TEMPLATES(Exec)                                                      \
  template SignResult<core::Matrix<Exec>> sign<Exec>(                                              \
      const Exec&, const core::ConstMatrix<Exec>&, const SignOptions&);                            \
  template SignResult<core::Matrix<Exec>> sign_pencil<Exec>(                                       \
      const Exec&, const core::ConstMatrix<Exec>&, const core::ConstMatrix<Exec>&,                 \
      const SignOptions&);                                                                         \
  template SignResult<DistMatrix<Exec>> sign_distributed<Exec>(                                    \
      const Exec&, const DistMatrix<Exec>&, const SignOptions&);                                   \
  template SignResult<DistMatrix<Exec>> sign_pencil_distributed<Exec>(                             \
      const Exec&, const DistMatrix<Exec>&, const DistMatrix<Exec>&, const SignOptions&);          \
  template LyapunovResult<core::Matrix<Exec>> lyapunov<Exec>(                                      \
      const Exec&, const core::ConstMatrix<Exec>&, const core::ConstMatrix<Exec>&,                 \
      const SignOptions&);                                                                         \
  template LyapunovResult<DistMatrix<Exec>> lyapunov_distributed<Exec>(                            \
      const Exec&, const DistMatrix<Exec>&, const DistMatrix<Exec>&, const SignOptions&);          \
  template double lyapunov_residual<Exec>(const Exec&, const core::ConstMatrix<Exec>&,             \
                                                 const core::ConstMatrix<Exec>&,                   \
                                                 const core::ConstMatrix<Exec>&);                  \
  template RiccatiResult<core::Matrix<Exec>> riccati<Exec>(                                        \
      const Exec&, const core::ConstMatrix<Exec>&, const core::ConstMatrix<Exec>&,                 \
      const core::ConstMatrix<Exec>&, const SignOptions&);                                         \
  template RiccatiResult<DistMatrix<Exec>> riccati_distributed<Exec>(                              \
      const Exec&, const DistMatrix<Exec>&, const DistMatrix<Exec>&, const DistMatrix<Exec>&,      \
      const SignOptions&);                                                                         \
  template double riccati_residual<Exec>(                                                          \
      const Exec&, const core::ConstMatrix<Exec>&, const core::ConstMatrix<Exec>&,                 \
      const core::ConstMatrix<Exec>&, const core::ConstMatrix<Exec>&);

}  // namespace kess::detail::matrix_functions
