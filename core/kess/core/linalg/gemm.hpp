// Dense BLAS 3 on an execution space instance (Kokkos Kernels: the host BLAS or cuBLAS; large
// host products through kess's own host DGEMM) and labelled 2D copies.
#pragma once

#include <kess/core/host/gemm.hpp>
#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <KokkosBlas3_trsm.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace kess::core {

namespace detail {
/// Whether gemm's operands are double matrices in host memory that exec can run on.
template <class ExecSpace, class AV, class BV, class CV>
constexpr bool host_double_matrices() {
  using Host = Kokkos::HostSpace;
  return Kokkos::SpaceAccessibility<ExecSpace, Host>::accessible &&
         std::is_same<typename AV::memory_space, Host>::value &&
         std::is_same<typename BV::memory_space, Host>::value &&
         std::is_same<typename CV::memory_space, Host>::value &&
         std::is_same<typename AV::non_const_value_type, double>::value &&
         std::is_same<typename BV::non_const_value_type, double>::value &&
         std::is_same<typename CV::non_const_value_type, double>::value && AV::rank == 2 &&
         BV::rank == 2 && CV::rank == 2;
}
/// Column-major with unit row stride (a BLAS operand), and its leading dimension.
template <class V>
bool unit_stride(const V& X) {
  return X.extent(0) <= 1 || X.stride(0) == 1;
}
template <class V>
int ld(const V& X) {
  const auto rows = static_cast<std::int64_t>(std::max<std::size_t>(1, X.extent(0)));
  return static_cast<int>(X.extent(1) <= 1 ? rows : std::max<std::int64_t>(rows, X.stride(1)));
}
/// Whether a (B, C) pair has work: C not empty.
template <class Pair>
bool has_columns(const Pair& p) {
  return p.second.extent(0) > 0 && p.second.extent(1) > 0;
}
/// C_i = alpha op(A) op(B_i) + beta C_i for the non-empty pairs (B_i, C_i) by kess's host GEMM, in
/// one call (op(A) packed once), when all are BLAS operands on host memory and the product pays
/// (core::detail::host_gemm_pays); returns whether it ran.
template <class ExecSpace, class AV, class... Pairs>
bool host_gemm_views(const ExecSpace& exec, char trans_a, char trans_b, double alpha, const AV& A,
                     double beta, const Pairs&... pairs) {
  if constexpr ((host_double_matrices<ExecSpace, AV, typename Pairs::first_type,
                                      typename Pairs::second_type>() &&
                 ...)) {
    core::detail::HostGemmPart parts[sizeof...(Pairs)];
    int count = 0, total = 0;
    bool unit = unit_stride(A);
    const auto add = [&](const auto& p) {
      if (!has_columns(p)) return;
      unit = unit && unit_stride(p.first) && unit_stride(p.second);
      parts[count++] = {p.first.data(), ld(p.first), p.second.data(), ld(p.second),
                        static_cast<int>(p.second.extent(1))};
      total += static_cast<int>(p.second.extent(1));
    };
    (add(pairs), ...);
    const bool ta = trans_a != 'N' && trans_a != 'n';
    const int m = static_cast<int>(ta ? A.extent(1) : A.extent(0));
    const int k = static_cast<int>(ta ? A.extent(0) : A.extent(1));
    if (count == 0 || !unit || !core::detail::host_gemm_pays(m, total, k)) return false;
    exec.fence();
    core::detail::host_gemm_parts(trans_a, trans_b, m, k, alpha, A.data(), ld(A), parts, count,
                                  beta, 0);
    return true;
  } else {
    return false;
  }
}
}  // namespace detail

/// C = alpha op(A) op(B) + beta C on `exec` (on Kokkos Kernels 3.4 fenced around the call:
/// kx::detail::blas_on_instance).
template <class ExecSpace, class AV, class BV, class CV>
void gemm(const ExecSpace& exec, const char* trans_a, const char* trans_b,
          typename CV::const_value_type alpha, const AV& A, const BV& B,
          typename CV::const_value_type beta, const CV& C) {
  kx::ScopedRegion region("core::gemm");  // labels the kernels Kokkos Kernels launches
  // Large host products: kess's own kernel where it is available (core::detail::host_gemm).
  if (detail::host_gemm_views(exec, trans_a[0], trans_b[0], alpha, A, beta, std::make_pair(B, C)))
    return;
  kx::detail::blas_on_instance<typename CV::execution_space>(exec, [&](const auto&... on) {
    KokkosBlas::gemm(on..., trans_a, trans_b, alpha, A, B, beta, C);
  });
}

/// C_i = alpha A B_i + beta C_i for each pair (B_i, C_i) (std::pair of Views; empty ones are
/// skipped): on host memory, where kess's host GEMM takes them, one call that packs A once for all
/// pairs (core::detail::host_gemm_parts); elsewhere one gemm a pair.
template <class ExecSpace, class AV, class... Pairs>
void gemm_shared_a(const ExecSpace& exec, double alpha, const AV& A, double beta,
                   const Pairs&... pairs) {
  kx::ScopedRegion region("core::gemm");
  if (detail::host_gemm_views(exec, 'N', 'N', alpha, A, beta, pairs...)) return;
  const auto one = [&](const auto& p) {
    if (detail::has_columns(p)) gemm(exec, "N", "N", alpha, A, p.first, beta, p.second);
  };
  (one(pairs), ...);
}

/// B <- alpha op(A)^-1 B (side "L") or alpha B op(A)^-1 (side "R"), A triangular (uplo "U"/"L",
/// diag "U" unit / "N"), on exec's stream where Kokkos Kernels takes one (>= 4; cuBLAS dtrsm on
/// CUDA), fenced around the call before that.
template <class ExecSpace, class AV, class BV>
void trsm(const ExecSpace& exec, const char* side, const char* uplo, const char* trans,
          const char* diag, typename BV::const_value_type alpha, const AV& A, const BV& B) {
  kx::ScopedRegion region("core::trsm");
  kx::detail::blas_on_instance<typename BV::execution_space>(exec, [&](const auto&... on) {
    KokkosBlas::trsm(on..., side, uplo, trans, diag, alpha, A, B);
  });
}

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
}  // namespace kess::core
