// core's templates with device lambdas, compiled once for every enabled execution space: the
// panel QR (panel_qr_impl.hpp) and the blocked Cholesky (cholesky_impl.hpp).
#include <kess/core/linalg/cholesky_impl.hpp>
#include <kess/core/linalg/panel_qr_impl.hpp>

namespace kess::core {

#define KESS_CORE_LINALG_TEMPLATES(Exec)                                                           \
  template PanelKernel panel_qr_device<Exec>(const Exec&, const Matrix<Exec>&,                     \
                                             const Vector<Exec>&, PanelKernel,                     \
                                             PanelQrWork<Exec::memory_space>*);                    \
  template void larft_device<Exec>(const Exec&, const Matrix<Exec>&, const ConstMatrix<Exec>&,     \
                                   const ConstVector<Exec>&);                                      \
  template int potrf_blocked<Exec>(const Exec&, const Matrix<Exec>&, int, double*);

#if defined(KOKKOS_ENABLE_SERIAL)
KESS_CORE_LINALG_TEMPLATES(Kokkos::Serial)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
KESS_CORE_LINALG_TEMPLATES(Kokkos::OpenMP)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
KESS_CORE_LINALG_TEMPLATES(Kokkos::Cuda)
#endif

}  // namespace kess::core
