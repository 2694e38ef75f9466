// The body of stage 5 (band_backtransform.hpp), compiled in libkess only.
#pragma once

#include <kess/solvers/eigh/detail/band_backtransform.hpp>

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
                        const core::Matrix<ExecSpace>& Z, int merge) {
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using pair = Kokkos::pair<int, int>;
  const int nc = Z.extent(1);
  if (refl.panels == 0 || nc == 0) return;
  const int b = refl.b, n = refl.n, np = refl.panels;
  require_arg(merge >= 0, "band_backtransform", "argument 'merge' must be >= 0, got " + std::to_string(merge));
  const int env_merge = core::settings::bt_merge();
  const int dev_merge = env_merge > 0 ? env_merge : 8;
  const int g =
      std::min(np, merge > 0 ? merge : (std::is_same<Mem, Kokkos::HostSpace>::value ? 1 : dev_merge));
  auto alloc = [&](const char* label) {
    return Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label));
  };
  if (g == 1) {
    // W = V^T Z2, Z2 -= V (T W) per panel; on host memory as Z2 -= V (Z2^T V T^T)^T: OpenBLAS
    // runs Z2^T V and V W^T faster than V^T Z2 (M = b) and V (T W) (docs/performance/eigh.md).
    constexpr bool host = std::is_same<Mem, Kokkos::HostSpace>::value;
    Mat W1(alloc("band_backtransform::W"), host ? nc : b, host ? b : nc);
    Mat W2(alloc("band_backtransform::TW"), host ? nc : b, host ? b : nc);
    for (int p = np - 1; p >= 0; --p) {
      const int j0 = refl.first_col(p), k = refl.width(p);
      const auto r2 = pair(j0 + b, n);
      auto V = Kokkos::subview(refl.A, r2, pair(j0, j0 + k));
      auto T = Kokkos::subview(refl.T, pair(0, k), pair(j0, j0 + k));
      auto Z2 = Kokkos::subview(Z, r2, Kokkos::ALL);
      if (host) {
        auto w1 = Kokkos::subview(W1, Kokkos::ALL, pair(0, k));
        auto w2 = Kokkos::subview(W2, Kokkos::ALL, pair(0, k));
        core::gemm(exec, "T", "N", 1.0, Z2, V, 0.0, w1);
        core::gemm(exec, "N", "T", 1.0, w1, T, 0.0, w2);
        core::gemm(exec, "N", "T", -1.0, V, w2, 1.0, Z2);
      } else {
        auto w1 = Kokkos::subview(W1, pair(0, k), Kokkos::ALL);
        auto w2 = Kokkos::subview(W2, pair(0, k), Kokkos::ALL);
        core::gemm(exec, "T", "N", 1.0, V, Z2, 0.0, w1);
        core::gemm(exec, "N", "N", 1.0, T, w1, 0.0, w2);
        core::gemm(exec, "N", "N", -1.0, V, w2, 1.0, Z2);
      }
    }
    return;
  }
  Mat W1(alloc("band_backtransform::W"), g * b, nc);
  Mat W2(alloc("band_backtransform::TW"), g * b, nc);
  const int gb = g * b;
  Mat Vb(alloc("band_backtransform::V"), std::max(1, n - b), gb);
  Mat Tb(alloc("band_backtransform::T"), gb, gb);
  Mat G(alloc("band_backtransform::VtV"), gb, gb);
  Mat X(alloc("band_backtransform::TG"), gb, b);
  const auto A = refl.A;
  const auto T = refl.T;
  for (int p0 = ((np - 1) / g) * g; p0 >= 0; p0 -= g) {
    const int ng = std::min(g, np - p0);               // panels p0 .. p0+ng-1
    const int j0 = refl.first_col(p0), rows = n - j0 - b;
    const int kk = (ng - 1) * b + refl.width(p0 + ng - 1);  // reflectors in the block
    auto V = Kokkos::subview(Vb, pair(0, rows), pair(0, kk));
    auto Tk = Kokkos::subview(Tb, pair(0, kk), pair(0, kk));
    // V: panel p0+q's reflectors in columns q b .., from row q b (its first row) down.
    Kokkos::parallel_for(
        "band_backtransform::gather_v",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(rows) * kk),
        KOKKOS_LAMBDA(std::int64_t e) {
          const int r = static_cast<int>(e % rows), col = static_cast<int>(e / rows);
          const int q = col / b;
          V(r, col) = r >= q * b ? A(j0 + b + r, j0 + col) : 0.0;
        });
    // T: the panels' T on the diagonal, zero elsewhere; then column block q of the upper part:
    // T(0:qb, qb:) = -T(0:qb, 0:qb) (V(:, 0:qb)^T V_q) T_q.
    Kokkos::parallel_for(
        "band_backtransform::gather_t",
        Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(kk) * kk),
        KOKKOS_LAMBDA(std::int64_t e) {
          const int i = static_cast<int>(e % kk), j = static_cast<int>(e / kk);
          Tk(i, j) = i / b == j / b ? T(i % b, j0 + j) : 0.0;
        });
    if (ng > 1) {
      const int lead = (ng - 1) * b;  // G(0:lead, :) = V(:, 0:lead)^T V is what the recurrence reads
      core::gemm(exec, "T", "N", 1.0, Kokkos::subview(V, Kokkos::ALL, pair(0, lead)), V, 0.0,
               Kokkos::subview(G, pair(0, lead), pair(0, kk)));
      for (int q = 1; q < ng; ++q) {
        const int c0 = q * b, kq = std::min(b, kk - c0);
        auto Xq = Kokkos::subview(X, pair(0, c0), pair(0, kq));
        core::gemm(exec, "N", "N", 1.0, Kokkos::subview(Tk, pair(0, c0), pair(0, c0)),
                 Kokkos::subview(G, pair(0, c0), pair(c0, c0 + kq)), 0.0, Xq);
        core::gemm(exec, "N", "N", -1.0, Xq, Kokkos::subview(Tk, pair(c0, c0 + kq), pair(c0, c0 + kq)), 0.0,
                 Kokkos::subview(Tk, pair(0, c0), pair(c0, c0 + kq)));
      }
    }
    auto Z2 = Kokkos::subview(Z, pair(j0 + b, n), Kokkos::ALL);
    auto w1 = Kokkos::subview(W1, pair(0, kk), Kokkos::ALL);
    auto w2 = Kokkos::subview(W2, pair(0, kk), Kokkos::ALL);
    core::gemm(exec, "T", "N", 1.0, V, Z2, 0.0, w1);
    core::gemm(exec, "N", "N", 1.0, Tk, w1, 0.0, w2);
    core::gemm(exec, "N", "N", -1.0, V, w2, 1.0, Z2);
  }
}

}  // namespace kess::detail::eigh
