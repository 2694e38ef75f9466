// The two dense products of LOBPCG on a device, for tall, narrow panels (n rows of w <= 64 values,
// row r at p + r ld): G = AᵀB and Out = A C + beta Out with C small. A vendor GEMM runs the first
// (inner dimension n, a w x w result) on a handful of thread blocks and needs packed copies of
// padded panels for both; here a team per chunk of rows stages tiles of rows in scratch and keeps
// its partial G in registers (then one pass sums the partials), and a thread per (row, 8 columns)
// forms the update with C in scratch.
#pragma once

#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace kess::detail::lobpcg {

constexpr int kGramPerThread = 16;  ///< entries of G a thread accumulates
constexpr int kGramTeam = 256;
constexpr int kGramTileRows = 32;
/// Largest panel width the device kernels take (kGramPerThread kGramTeam entries of G).
constexpr int kDeviceMaxWidth = 64;

/// G (wa x wb, column-major, device memory, leading dimension wa) = AᵀB over n rows.
template <class Exec>
void device_gram(const Exec& exec, std::int64_t n, const double* a, int wa, std::int64_t lda,
                 const double* b, int wb, std::int64_t ldb, double* g) {
  using Mem = typename Exec::memory_space;
  const int pairs = wa * wb;
  if (pairs == 0) return;
  const int teams = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(1024, (n + 8 * kGramTileRows - 1) / (8 * kGramTileRows))));
  const std::int64_t chunk = (n + teams - 1) / teams;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> part(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::gram_partial"), teams,
      pairs);
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Scratch = Kokkos::View<double*, typename Exec::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const int tile = kGramTileRows * (wa + wb);
  const std::size_t bytes = Scratch::shmem_size(static_cast<std::size_t>(tile));
  Kokkos::parallel_for(
      "kess::lobpcg::gram_tall",
      Policy(exec, teams, kGramTeam).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        Scratch s(t.team_scratch(0), static_cast<std::size_t>(tile));
        double* sa = s.data();
        double* sb = s.data() + kGramTileRows * wa;
        const int me = t.team_rank();
        double acc[kGramPerThread];
        for (int q = 0; q < kGramPerThread; ++q) acc[q] = 0;
        const std::int64_t r0 = t.league_rank() * chunk;
        const std::int64_t r1 = kx::min(n, r0 + chunk);
        for (std::int64_t rt = r0; rt < r1; rt += kGramTileRows) {
          const int rows = static_cast<int>(kx::min<std::int64_t>(kGramTileRows, r1 - rt));
          for (int e = me; e < rows * wa; e += kGramTeam) sa[e] = a[(rt + e / wa) * lda + e % wa];
          for (int e = me; e < rows * wb; e += kGramTeam) sb[e] = b[(rt + e / wb) * ldb + e % wb];
          t.team_barrier();
          for (int q = 0; q < kGramPerThread; ++q) {
            const int p = me + q * kGramTeam;
            if (p >= pairs) break;
            const int i = p % wa, j = p / wa;
            double sum = 0;
            for (int r = 0; r < rows; ++r) sum += sa[r * wa + i] * sb[r * wb + j];
            acc[q] += sum;
          }
          t.team_barrier();
        }
        for (int q = 0; q < kGramPerThread; ++q) {
          const int p = me + q * kGramTeam;
          if (p < pairs) part(t.league_rank(), p) = acc[q];
        }
      });
  Kokkos::parallel_for(
      "kess::lobpcg::gram_tall_sum", Kokkos::RangePolicy<Exec>(exec, 0, pairs),
      KOKKOS_LAMBDA(const int p) {
        double sum = 0;
        for (int c = 0; c < teams; ++c) sum += part(c, p);
        g[p] = sum;
      });
}

/// Out (n x w, row r at out + r ldo) = A C + beta Out, A n x m (row r at a + r lda), C m x w
/// column-major in device memory. Out must not overlap A.
template <class Exec>
void device_combine(const Exec& exec, std::int64_t n, const double* a, int m, std::int64_t lda,
                    const double* c, int w, double* out, std::int64_t ldo, double beta) {
  constexpr int R = kGramTileRows;  // rows a team forms at a time
  if (n == 0 || w == 0) return;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Scratch = Kokkos::View<double*, typename Exec::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const int cm = m * w, tile = R * m;
  const std::size_t bytes = Scratch::shmem_size(static_cast<std::size_t>(cm + tile));
  const int teams = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(4096, (n + 4 * R - 1) / (4 * R))));
  const std::int64_t chunk = (n + teams - 1) / teams;
  Kokkos::parallel_for(
      "kess::lobpcg::combine_tall",
      Policy(exec, teams, kGramTeam).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        Scratch s(t.team_scratch(0), static_cast<std::size_t>(cm + tile));
        double* cs = s.data();       // C row-major (cs[l w + j]): a warp's j are consecutive
        double* as = s.data() + cm;  // a tile of A's rows
        const int me = t.team_rank();
        for (int e = me; e < cm; e += kGramTeam) cs[(e % m) * w + e / m] = c[e];
        const std::int64_t r0 = t.league_rank() * chunk;
        const std::int64_t r1 = kx::min(n, r0 + chunk);
        for (std::int64_t rt = r0; rt < r1; rt += R) {
          const int rows = static_cast<int>(kx::min<std::int64_t>(R, r1 - rt));
          t.team_barrier();
          for (int e = me; e < rows * m; e += kGramTeam) as[e] = a[(rt + e / m) * lda + e % m];
          t.team_barrier();
          for (int e = me; e < rows * w; e += kGramTeam) {
            const int r = e / w, j = e % w;
            double sum = 0;
            for (int l = 0; l < m; ++l) sum += as[r * m + l] * cs[l * w + j];
            double* o = out + (rt + r) * ldo + j;
            *o = (beta == 0.0 ? 0.0 : beta * *o) + sum;
          }
        }
      });
}

}  // namespace kess::detail::lobpcg
