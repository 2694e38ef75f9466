// The body of core::potrf_blocked (cholesky.hpp), compiled in libkess only
// (core/linalg/instantiate_*.cpp).
#pragma once

#include <kess/core/kokkos/compat.hpp>
#include <kess/core/kokkos/instances.hpp>
#include <kess/core/linalg/cholesky.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <type_traits>

namespace kess::core {

/// B = L L^T for the symmetric positive definite n x n matrix B (LayoutLeft, in exec's memory;
/// its lower triangle is read), L in B's lower triangle; the strict upper triangle is overwritten
/// with scratch. Right-looking, by blocks of nb columns: each nb x nb diagonal block is factored
/// on the host (LAPACK dpotrf on a page-locked copy, a fraction of a millisecond at nb = 256), the
/// panel below it by a triangular solve (core::trsm) and the trailing matrix by GEMMs (core::gemm) on
/// exec, cuBLAS on CUDA. Look-ahead on device memory: the next block column is updated first and
/// travels to the host on a second stream, so that its dpotrf runs under the trailing GEMM.
/// Returns 0, or the 1-based column j at which the leading minor of order j is not positive
/// (dpotrf's info; the work stops there), with the failing pivot (the non-positive value whose
/// square root was due, dpotrf's convention) in *pivot. Fences exec.
template <class ExecSpace>
int potrf_blocked(const ExecSpace& exec, const Matrix<ExecSpace>& B, int nb, double* pivot) {
  using BView = Matrix<ExecSpace>;
  using Mem = typename ExecSpace::memory_space;
  using Staging = typename kx::HostStaging<Mem>::type;
  using U = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>;
  using UH = Kokkos::View<double**, Kokkos::LayoutLeft, Staging, Kokkos::MemoryUnmanaged>;
  using pair = Kokkos::pair<int, int>;
  static_assert(std::is_same<typename BView::array_layout, Kokkos::LayoutLeft>::value,
                "kess::core::potrf_blocked: B must be LayoutLeft");
  const int n = static_cast<int>(B.extent(0));
  if (n == 0) return 0;
  nb = std::max(1, std::min(nb, n));
  constexpr bool host = std::is_same<Mem, Kokkos::HostSpace>::value;
  Kokkos::View<double*, Mem> dbuf(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::potrf::diagonal"),
      std::size_t(nb) * nb);
  Kokkos::View<double*, Staging> hbuf(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::potrf::diagonal_host"),
      std::size_t(nb) * nb);
  const U Bu = B;
  // The diagonal block at j (w x w) to the host buffer (leading dimension w), on `on`.
  const auto fetch = [&](const ExecSpace& on, int j, int w) {
    const U D(dbuf.data(), w, w);
    core::copy2d(on, "kess::potrf::pack_diagonal", D,
                         Kokkos::subview(Bu, pair(j, j + w), pair(j, j + w)));
    Kokkos::deep_copy(on, UH(hbuf.data(), w, w), D);
  };
  const ExecSpace side = host ? exec : kx::concurrent_instance(exec);
  fetch(exec, 0, nb);
  kx::fence(exec, "kess::potrf::diagonal_to_host");
  for (int j0 = 0; j0 < n; j0 += nb) {
    const int w = std::min(nb, n - j0), j1 = j0 + w;
    const UH Dh(hbuf.data(), w, w);
    const int info = core::lapack::potrf('L', w, Dh.data(), w);
    if (info > 0) {
      if (pivot) *pivot = Dh(info - 1, info - 1);
      kx::fence(exec, "kess::potrf::failed");
      return j0 + info;
    }
    const U D(dbuf.data(), w, w), L11 = Kokkos::subview(Bu, pair(j0, j1), pair(j0, j1));
    Kokkos::deep_copy(exec, D, Dh);
    core::copy2d(exec, "kess::potrf::unpack_diagonal", L11, D);
    if (j1 == n) break;
    const U L21 = Kokkos::subview(Bu, pair(j1, n), pair(j0, j1));
    core::trsm(exec, "R", "L", "T", "N", 1.0, L11, L21);
    // The next block column (rows j1 .. n) first, then the rest of the trailing matrix (its whole
    // square: one GEMM, twice syrk's flops, which cuBLAS runs faster than a syrk).
    const int w1 = std::min(nb, n - j1), j2 = j1 + w1;
    core::gemm(exec, "N", "T", -1.0, L21, Kokkos::subview(L21, pair(0, w1), Kokkos::ALL), 1.0,
             U(Kokkos::subview(Bu, pair(j1, n), pair(j1, j2))));
    if (!host) kx::stream_wait(side, exec);
    fetch(host ? exec : side, j1, w1);
    if (j2 < n) {
      const U L31 = Kokkos::subview(L21, pair(w1, n - j1), Kokkos::ALL);
      core::gemm(exec, "N", "T", -1.0, L31, L31, 1.0,
               U(Kokkos::subview(Bu, pair(j2, n), pair(j2, n))));
    }
    kx::fence(host ? exec : side, "kess::potrf::diagonal_to_host");
  }
  kx::fence(exec, "kess::potrf::done");
  return 0;
}

}  // namespace kess::core
