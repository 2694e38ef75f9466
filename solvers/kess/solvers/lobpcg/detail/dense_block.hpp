// The tall-skinny dense operations of kess::lobpcg on n x k row-major blocks in the execution
// space's memory. Panels (column windows of the preallocated n x 3k buffers) go through one
// product each: Gram matrices AᵀB (summed over the ranks of the vectors' communicator) and
// updates A·C with C small (from the host); on one host core with AVX-512 by kess's in-place
// kernels (host/dense_kernels.cpp), on other host spaces by the BLAS, on GPUs by core::gemm
// (cuBLAS) on the blocks read column-major (k x n). Contiguous blocks (constraints) keep the
// older per-block gram/combine over Cols. The small k x k and 3k x 3k matrices live on the host,
// column-major, as std::vector<double>.
#pragma once

#include <kess/comm/exchange.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/lobpcg/detail/dense_kernels.hpp>
#include <kess/solvers/lobpcg/detail/tall_gram.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kess::detail::lobpcg {

template <class Mem>
using Block = Kokkos::View<double**, Kokkos::LayoutRight, Mem>;
template <class Mem>
using ConstBlock = Kokkos::View<const double**, Kokkos::LayoutRight, Mem>;

/// Up to three blocks with the same rows read side by side as one n x m matrix (S = [X W P]).
template <class Mem>
struct Cols {
  ConstBlock<Mem> b0, b1, b2;
  int o1 = 0, o2 = 0, m = 0;
  KOKKOS_INLINE_FUNCTION double operator()(std::int64_t i, int j) const {
    return j < o1 ? b0(i, j) : (j < o2 ? b1(i, j - o1) : b2(i, j - o2));
  }
};

template <class Mem>
Cols<Mem> cols(const ConstBlock<Mem>& a, const ConstBlock<Mem>& b = {},
               const ConstBlock<Mem>& c = {}) {
  Cols<Mem> s;
  s.b0 = a;
  s.b1 = b;
  s.b2 = c;
  s.o1 = static_cast<int>(a.extent(1));
  s.o2 = s.o1 + static_cast<int>(b.extent(1));
  s.m = s.o2 + static_cast<int>(c.extent(1));
  return s;
}

template <class Mem>
Block<Mem> new_block(const std::string& label, std::int64_t n, int k) {
  return Block<Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), n, k);
}

/// Block i (0..2) of a Cols: its view and first column.
template <class Mem>
std::pair<ConstBlock<Mem>, int> block_of(const Cols<Mem>& s, int i) {
  return i == 0 ? std::make_pair(s.b0, 0)
                : (i == 1 ? std::make_pair(s.b1, s.o1) : std::make_pair(s.b2, s.o2));
}

/// A LayoutRight n x k block seen as the column-major k x n matrix it is in memory (a BLAS
/// operand); the blocks here are contiguous (allocated by this family or row subviews).
template <class Mem>
Kokkos::View<const double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged> as_columns(
    const ConstBlock<Mem>& a) {
  return Kokkos::View<const double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged>(
      a.data(), a.extent(1), a.extent(0));
}

/// out[p] = the sum over chunks c of part(c, p) (part: chunks x out.size()), summed on `exec`'s
/// space and copied to the host. Fences `exec`.
template <class Exec>
void sum_chunks(
    const Exec& exec,
    const Kokkos::View<double**, Kokkos::LayoutRight, typename Exec::memory_space>& part,
    const char* label, std::vector<double>& out) {
  using Mem = typename Exec::memory_space;
  const std::int64_t nchunks = static_cast<std::int64_t>(part.extent(0));
  const int width = static_cast<int>(out.size());
  Kokkos::View<double*, Mem> sum(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, std::string(label)), width);
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Exec>(exec, 0, width), KOKKOS_LAMBDA(const int p) {
        double s = 0;
        for (std::int64_t c = 0; c < nchunks; ++c) s += part(c, p);
        sum(p) = s;
      });
  Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(out.data(), out.size());
  Kokkos::deep_copy(exec, h, sum);
  exec.fence();
}

/// G = AᵀB (A.m x B.m, column-major on the host; with diag_only, the A.m values a_jᵀb_j), summed
/// over `comm` (the one reduction over vector rows of kess::lobpcg). symmetric: AᵀB is known to
/// be symmetric (A and B the same blocks, or B = H A), only its upper block triangle is computed.
/// The full product: one GEMM per pair of blocks (BLAS or cuBLAS through core::gemm); the diagonal:
/// rows in chunks, one team a chunk, then a sum over chunks. Fences `exec`.
template <class Exec>
std::vector<double> gram(const Exec& exec, const comm::Communicator& comm,
                         const Cols<typename Exec::memory_space>& A,
                         const Cols<typename Exec::memory_space>& B, bool diag_only = false,
                         bool symmetric = false) {
  using Mem = typename Exec::memory_space;
  const std::int64_t n = static_cast<std::int64_t>(A.b0.extent(0));
  const int ma = A.m, mb = B.m;
  const int pairs = diag_only ? ma : ma * mb;
  std::vector<double> out(static_cast<std::size_t>(pairs), 0.0);
  if (n > 0 && pairs > 0 && !diag_only) {
    for (int i = 0; i < 3; ++i) {
      const auto [a, oa] = block_of(A, i);
      const int ka = static_cast<int>(a.extent(1));
      if (ka == 0) continue;
      for (int j = symmetric ? i : 0; j < 3; ++j) {
        const auto [b, ob] = block_of(B, j);
        const int kb = static_cast<int>(b.extent(1));
        if (kb == 0) continue;
        Kokkos::View<double**, Kokkos::LayoutLeft, Mem> g(
            Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::gram_block"), ka,
            kb);
        core::gemm(exec, "N", "T", 1.0, as_columns(a), as_columns(b), 0.0, g);
        auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), g);
        Kokkos::deep_copy(exec, h, g);
        exec.fence();
        for (int c = 0; c < kb; ++c)
          for (int r = 0; r < ka; ++r) {
            out[(oa + r) + static_cast<std::size_t>(ob + c) * ma] = h(r, c);
            if (symmetric && j != i)
              out[(ob + c) + static_cast<std::size_t>(oa + r) * ma] = h(r, c);
          }
      }
    }
  } else if (n > 0 && pairs > 0) {
    constexpr std::int64_t chunk = 1024;
    const std::int64_t nchunks = (n + chunk - 1) / chunk;
    Kokkos::View<double**, Kokkos::LayoutRight, Mem> part(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::gram_partial"),
        nchunks, pairs);
    using Policy = Kokkos::TeamPolicy<Exec>;
    Kokkos::parallel_for(
        "kess::lobpcg::gram_diagonal", Policy(exec, static_cast<int>(nchunks), Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Policy::member_type& t) {
          const std::int64_t c = t.league_rank();
          const std::int64_t r0 = c * chunk, r1 = kx::min(n, r0 + chunk);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, pairs), [&](const int p) {
            double s = 0;
            for (std::int64_t i = r0; i < r1; ++i) s += A(i, p) * B(i, p);
            part(c, p) = s;
          });
        });
    sum_chunks(exec, part, "kess::lobpcg::gram_sum", out);
  }
  if (comm.size() > 1) comm::allreduce(comm, out, comm::ReduceOp::sum);
  return out;
}

/// out1 = (A C)[:, :k1], out2 = (A C)[:, k1:], C (A.m x (k1 + k2), column-major, host): one GEMM
/// per (output, block of A) pair. The outputs must not alias A's blocks. Fences `exec`.
template <class Exec>
void combine(const Exec& exec, const Cols<typename Exec::memory_space>& A,
             const std::vector<double>& C, const Block<typename Exec::memory_space>& out1,
             const Block<typename Exec::memory_space>& out2 = {}) {
  using Mem = typename Exec::memory_space;
  using LL = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  const std::int64_t n = static_cast<std::int64_t>(A.b0.extent(0));
  const int m = A.m, k1 = static_cast<int>(out1.extent(1)), k2 = static_cast<int>(out2.extent(1));
  if (n == 0 || k1 + k2 == 0) return;
  for (int o = 0; o < 2; ++o) {
    const Block<Mem>& out = o == 0 ? out1 : out2;
    const int w = o == 0 ? k1 : k2, c0 = o == 0 ? 0 : k1;
    if (w == 0) continue;
    Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryUnmanaged> outT(out.data(), w, n);
    bool first = true;
    for (int i = 0; i < 3; ++i) {
      const auto [a, oa] = block_of(A, i);
      const int ka = static_cast<int>(a.extent(1));
      if (ka == 0) continue;
      LL c(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::coefficients"), ka,
           w);
      auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), c);
      for (int q = 0; q < w; ++q)
        for (int r = 0; r < ka; ++r) h(r, q) = C[(oa + r) + static_cast<std::size_t>(c0 + q) * m];
      Kokkos::deep_copy(exec, c, h);
      core::gemm(exec, "T", "N", 1.0, c, as_columns(a), first ? 0.0 : 1.0, outT);
      first = false;
      exec.fence();  // h is released at the end of this scope
    }
    if (first) Kokkos::deep_copy(exec, outT, 0.0);
  }
  exec.fence();
}

/// V *= alpha.
template <class Exec>
void scale(const Exec& exec, const Block<typename Exec::memory_space>& V, double alpha) {
  const int k = static_cast<int>(V.extent(1));
  Kokkos::parallel_for(
      "kess::lobpcg::scale",
      Kokkos::RangePolicy<Exec>(exec, 0, static_cast<std::int64_t>(V.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) {
        for (int j = 0; j < k; ++j) V(i, j) *= alpha;
      });
}

/// Entries of V that are NaN or Inf.
template <class Exec>
std::int64_t count_nonfinite(const Exec& exec, const ConstBlock<typename Exec::memory_space>& V) {
  const int k = static_cast<int>(V.extent(1));
  std::int64_t bad = 0;
  Kokkos::parallel_reduce(
      "kess::lobpcg::check_finite",
      Kokkos::RangePolicy<Exec>(exec, 0, static_cast<std::int64_t>(V.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& b) {
        for (int j = 0; j < k; ++j) b += kx::isfinite(V(i, j)) ? 0 : 1;
      },
      bad);
  exec.fence();
  return bad;
}

/// Cholesky with column dropping of a small symmetric Gram matrix G (m x m, column-major): the
/// columns are scaled to unit diagonal, then R (upper, RᵀR = G_scaled + shift I) is built column
/// by column; a column whose pivot is below tau² (its distance from the span of the kept columns
/// before it, relative to its norm, is below tau) or whose diagonal is not positive is dropped.
/// Returns T (m x kept.size()) such that V T has orthonormal columns when G = VᵀV; `kept` lists
/// the kept columns, min_pivot the smallest kept sqrt(pivot) (1 for orthonormal input),
/// nonpositive the columns whose diagonal was <= 0 or not finite, min_signed the smallest pivot
/// before dropping (clearly negative only when G is not a Gram matrix of a positive definite form).
/// With scale = false the columns are taken as they are (G already in the units that tau refers
/// to, e.g. the Gram of projected columns scaled by their norms before the projection).
inline std::vector<double> cholesky_drop(const std::vector<double>& G, int m, double tau,
                                         double shift, std::vector<int>& kept,
                                         double* min_pivot = nullptr,
                                         std::vector<int>* nonpositive = nullptr,
                                         double* min_signed = nullptr, bool scale = true) {
  kept.clear();
  std::vector<double> d(static_cast<std::size_t>(m), 0.0);
  for (int j = 0; j < m; ++j) {
    const double g = G[j + static_cast<std::size_t>(j) * m];
    if (std::isfinite(g) && g > 0) {
      d[j] = scale ? 1.0 / std::sqrt(g) : 1.0;
    } else if (nonpositive) {
      nonpositive->push_back(j);
    }
  }
  // R over the kept columns only: R(p, q) for kept positions p <= q.
  std::vector<double> R(static_cast<std::size_t>(m) * m, 0.0);
  double minp = 1.0, mins = 1.0;
  for (int j = 0; j < m; ++j) {
    if (d[j] == 0) continue;
    const int q = static_cast<int>(kept.size());
    double diag = G[j + static_cast<std::size_t>(j) * m] * d[j] * d[j] + shift;
    for (int p = 0; p < q; ++p) {
      const int l = kept[p];
      double s = G[l + static_cast<std::size_t>(j) * m] * d[l] * d[j];
      for (int r = 0; r < p; ++r)
        s -= R[r + static_cast<std::size_t>(p) * m] * R[r + static_cast<std::size_t>(q) * m];
      R[p + static_cast<std::size_t>(q) * m] = s / R[p + static_cast<std::size_t>(p) * m];
      diag -= R[p + static_cast<std::size_t>(q) * m] * R[p + static_cast<std::size_t>(q) * m];
    }
    if (std::isfinite(diag)) mins = std::min(mins, diag);
    if (!(diag > tau * tau) || !std::isfinite(diag)) {
      for (int p = 0; p < q; ++p) R[p + static_cast<std::size_t>(q) * m] = 0;
      continue;
    }
    R[q + static_cast<std::size_t>(q) * m] = std::sqrt(diag);
    minp = std::min(minp, std::sqrt(diag));
    kept.push_back(j);
  }
  const int kk = static_cast<int>(kept.size());
  // T = D[:, kept] R^-1: back substitution column by column of the identity.
  std::vector<double> Rinv(static_cast<std::size_t>(kk) * kk, 0.0);
  for (int c = 0; c < kk; ++c) {
    for (int r = c; r >= 0; --r) {
      double s = r == c ? 1.0 : 0.0;
      for (int p = r + 1; p <= c; ++p)
        s -= R[r + static_cast<std::size_t>(p) * m] * Rinv[p + static_cast<std::size_t>(c) * kk];
      Rinv[r + static_cast<std::size_t>(c) * kk] = s / R[r + static_cast<std::size_t>(r) * m];
    }
  }
  std::vector<double> T(static_cast<std::size_t>(m) * kk, 0.0);
  for (int c = 0; c < kk; ++c)
    for (int r = 0; r <= c; ++r)
      T[kept[r] + static_cast<std::size_t>(c) * m] =
          d[kept[r]] * Rinv[r + static_cast<std::size_t>(c) * kk];
  if (min_pivot) *min_pivot = minp;
  if (min_signed) *min_signed = mins;
  return T;
}

// ---- Panels: column windows of row-major n x ld buffers, seen by the BLAS as ld-strided
// column-major w x n matrices (one GEMM then spans several blocks of vectors side by side).

/// Columns [c, c + w) of an n x ld row-major buffer in exec's memory.
struct Panel {
  double* p = nullptr;
  int w = 0;
  int ld = 0;
  Panel cols(int c, int cw) const { return Panel{p + c, cw, ld}; }
  bool contiguous() const { return ld == w; }
};

/// C = alpha op(A) op(B) + beta C, column-major operands by pointer and leading dimension in
/// exec's memory (BLAS conventions). Host memory: the BLAS dgemm directly (at these tall-skinny
/// shapes it beats the packing kernels core::gemm may route to); elsewhere core::gemm (cuBLAS),
/// operands with padded leading dimensions copied to packed temporaries first.
template <class Exec>
void gemm_ptr(const Exec& exec, char ta, char tb, int m, int nn, int kk, double alpha,
              const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  using Mem = typename Exec::memory_space;
  if (m == 0 || nn == 0) return;
  if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
    exec.fence();
    core::lapack::blas_gemm(ta, tb, m, nn, kk, alpha, A, std::max(1, lda), B, std::max(1, ldb),
                            beta, C, std::max(1, ldc));
  } else {
    using LL = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
    const auto packed = [&](const double* p, int rows, int cols, int ld, bool in) {
      if (ld == rows || cols <= 1) return LL(const_cast<double*>(p), rows, cols);
      LL t(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::packed"), rows,
           cols);
      if (in)
        Kokkos::parallel_for(
            "kess::lobpcg::pack",
            Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(
                exec, 0, static_cast<std::int64_t>(rows) * cols),
            KOKKOS_LAMBDA(const std::int64_t e) {
              t(e % rows, e / rows) = p[e % rows + (e / rows) * ld];
            });
      return t;
    };
    const bool na = ta == 'N' || ta == 'n', nb = tb == 'N' || tb == 'n';
    const LL a = packed(A, na ? m : kk, na ? kk : m, lda, true);
    const LL b = packed(B, nb ? kk : nn, nb ? nn : kk, ldb, true);
    const LL c = packed(C, m, nn, ldc, beta != 0.0);
    const char sa[2] = {ta, 0}, sb[2] = {tb, 0};
    core::gemm(exec, sa, sb, alpha, a, b, beta, c);
    if (c.data() != C)
      Kokkos::parallel_for(
          "kess::lobpcg::unpack",
          Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(
              exec, 0, static_cast<std::int64_t>(m) * nn),
          KOKKOS_LAMBDA(const std::int64_t e) { C[e % m + (e / m) * ldc] = c(e % m, e / m); });
    exec.fence();
  }
}

/// Whether the fused update-and-residual pass of a host execution space runs on one core with
/// kess's panel kernels (host/dense_kernels.cpp, an AVX-512 CPU); threaded host spaces run the
/// kernels over row chunks (gram, combine) instead.
template <class Exec>
bool host_one_core(const Exec& exec) {
  return exec.concurrency() == 1 && host_panel_kernels();
}

/// Row chunks of the panel kernels on a threaded host space: f(c, r0, r1) for `chunks` equal
/// chunks of [0, n), in parallel on exec, then a fence. One chunk (no threads) when the space has
/// one thread or the rows are too few to share.
template <class Exec, class F>
void host_row_chunks(const Exec& exec, std::int64_t n, int chunks, const F& f) {
  exec.fence();
  if (chunks <= 1) {
    f(0, std::int64_t(0), n);
    return;
  }
  Kokkos::parallel_for("kess::lobpcg::row_chunks", Kokkos::RangePolicy<Exec>(exec, 0, chunks),
                       [=](const int c) { f(c, n * c / chunks, n * (c + 1) / chunks); });
  exec.fence();
}

/// Chunks for host_row_chunks: a few per thread, none shorter than 2048 rows.
template <class Exec>
int host_chunks(const Exec& exec, std::int64_t n) {
  const std::int64_t by_rows = n / 2048;
  return static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(by_rows, 4 * static_cast<std::int64_t>(exec.concurrency()))));
}

/// AᵀB (A.w x B.w, column-major on the host) of two panels of n rows, summed over `comm`.
template <class Exec>
std::vector<double> gram(const Exec& exec, const comm::Communicator& comm, std::int64_t n,
                         const Panel& A, const Panel& B) {
  using Mem = typename Exec::memory_space;
  std::vector<double> out(static_cast<std::size_t>(A.w) * B.w, 0.0);
  if (n > 0 && A.w > 0 && B.w > 0) {
    if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
      if (host_panel_kernels()) {
        // Partial sums per chunk, added in chunk order: the same result whatever the threads.
        const int chunks = host_chunks(exec, n);
        const std::size_t g = out.size();
        std::vector<double> part(g * static_cast<std::size_t>(chunks), 0.0);
        double* pp = part.data();
        const Panel a = A, b = B;
        host_row_chunks(exec, n, chunks, [=](int c, std::int64_t r0, std::int64_t r1) {
          host_gram(r0, r1, a.w, b.w, a.p, a.ld, b.p, b.ld, pp + g * static_cast<std::size_t>(c));
        });
        for (int c = 0; c < chunks; ++c)
          for (std::size_t e = 0; e < g; ++e) out[e] += part[g * static_cast<std::size_t>(c) + e];
      } else {
        gemm_ptr(exec, 'N', 'T', A.w, B.w, static_cast<int>(n), 1.0, A.p, A.ld, B.p, B.ld, 0.0,
                 out.data(), A.w);
      }
    } else {
      Kokkos::View<double**, Kokkos::LayoutLeft, Mem> g(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::gram"), A.w, B.w);
      if (A.w <= kDeviceMaxWidth && B.w <= kDeviceMaxWidth)
        device_gram(exec, n, A.p, A.w, A.ld, B.p, B.w, B.ld, g.data());
      else
        gemm_ptr(exec, 'N', 'T', A.w, B.w, static_cast<int>(n), 1.0, A.p, A.ld, B.p, B.ld, 0.0,
                 g.data(), A.w);
      Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(
          out.data(), A.w, B.w);
      Kokkos::deep_copy(exec, h, g);
      exec.fence();
    }
  }
  if (comm.size() > 1) comm::allreduce(comm, out, comm::ReduceOp::sum);
  return out;
}

/// Out = A C + beta Out (Out: n x w panel, A: n x A.w, C: A.w x w column-major on the host). Out
/// must not overlap A. Fences `exec`.
template <class Exec>
void combine(const Exec& exec, std::int64_t n, const Panel& A, const std::vector<double>& C,
             const Panel& out, double beta = 0.0) {
  using Mem = typename Exec::memory_space;
  if (n == 0 || out.w == 0) return;
  if (A.w == 0) {
    if (beta == 0.0)
      gemm_ptr(exec, 'T', 'N', out.w, static_cast<int>(n), 0, 0.0, A.p, 1, A.p, 1, 0.0, out.p,
               out.ld);
    return;
  }
  if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
    if (host_panel_kernels()) {
      // C row-major, padded to whole 8-wide vectors.
      const int m = A.w, wp = (out.w + 7) / 8 * 8;
      std::vector<double> cp(static_cast<std::size_t>(m) * wp, 0.0);
      for (int j = 0; j < out.w; ++j)
        for (int l = 0; l < m; ++l)
          cp[static_cast<std::size_t>(l) * wp + j] = C[l + static_cast<std::size_t>(j) * m];
      const double* cpp = cp.data();
      const Panel a = A, o = out;
      host_row_chunks(exec, n, host_chunks(exec, n), [=](int, std::int64_t r0, std::int64_t r1) {
        host_rows_times_small(r0, r1, m, o.w, a.p, a.ld, cpp, wp, o.p, o.ld, beta);
      });
    } else {
      gemm_ptr(exec, 'T', 'N', out.w, static_cast<int>(n), A.w, 1.0, C.data(), A.w, A.p, A.ld, beta,
               out.p, out.ld);
    }
  } else {
    Kokkos::View<double*, Mem> c(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::coefficients"),
        C.size());
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(C.data(), C.size());
    Kokkos::deep_copy(exec, c, h);
    if (A.w <= kDeviceMaxWidth && out.w <= kDeviceMaxWidth) {
      device_combine(exec, n, A.p, A.w, A.ld, c.data(), out.w, out.p, out.ld, beta);
      exec.fence();  // c is released at the end of this scope
    } else {
      gemm_ptr(exec, 'T', 'N', out.w, static_cast<int>(n), A.w, 1.0, c.data(), A.w, A.p, A.ld, beta,
               out.p, out.ld);
    }
  }
}

/// dst[:, j] = src[:, idx[j]] (idx on the host; empty: the identity) for j < dst.w.
template <class Exec>
void copy_columns(const Exec& exec, std::int64_t n, const Panel& src, const Panel& dst,
                  const std::vector<int>& idx = {}) {
  using Mem = typename Exec::memory_space;
  const int w = dst.w, lds = src.ld, ldd = dst.ld;
  if (n == 0 || w == 0) return;
  Kokkos::View<int*, Mem> ix(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::columns"),
      static_cast<std::size_t>(w));
  {
    std::vector<int> all(static_cast<std::size_t>(w));
    for (int j = 0; j < w; ++j) all[j] = idx.empty() ? j : idx[j];
    Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(all.data(), all.size());
    Kokkos::deep_copy(exec, ix, h);
    exec.fence();
  }
  const double* s = src.p;
  double* d = dst.p;
  if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
    if (idx.empty()) {
      Kokkos::parallel_for(
          "kess::lobpcg::copy_columns", Kokkos::RangePolicy<Exec>(exec, 0, n),
          [=](const std::int64_t i) { std::copy(s + i * lds, s + i * lds + w, d + i * ldd); });
      return;
    }
  }
  Kokkos::parallel_for(
      "kess::lobpcg::copy_columns", Kokkos::RangePolicy<Exec>(exec, 0, n),
      KOKKOS_LAMBDA(const std::int64_t i) {
        for (int j = 0; j < w; ++j) d[i * ldd + j] = s[i * lds + ix(j)];
      });
}

/// R = AX - BX diag(theta) (R contiguous, k columns) and, summed over `comm`, the squared column
/// norms of R (values 0..k-1) and of X (k..2k-1): the residual test in one pass.
template <class Exec>
std::vector<double> residual_norms(const Exec& exec, const comm::Communicator& comm, std::int64_t n,
                                   const Panel& AX, const Panel& BX, const Panel& X,
                                   const std::vector<double>& theta, const Panel& R) {
  using Mem = typename Exec::memory_space;
  const int k = R.w, lda = AX.ld, ldb = BX.ld, ldx = X.ld, ldr = R.ld;
  std::vector<double> out(static_cast<std::size_t>(2 * k), 0.0);
  if (n > 0 && k > 0) {
    Kokkos::View<double*, Mem> t(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::theta"), k);
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> ht(theta.data(), k);
    Kokkos::deep_copy(exec, t, ht);
    constexpr std::int64_t chunk = 1024;
    const std::int64_t nchunks = (n + chunk - 1) / chunk;
    Kokkos::View<double**, Kokkos::LayoutRight, Mem> part(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::lobpcg::residual_partial"),
        nchunks, 2 * k);
    const double *ax = AX.p, *bx = BX.p, *x = X.p;
    double* r = R.p;
    if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
      // Rows in order within a chunk (the rows are the contiguous direction here).
      Kokkos::parallel_for("kess::lobpcg::residual", Kokkos::RangePolicy<Exec>(exec, 0, nchunks),
                           [=](const std::int64_t c) {
                             std::vector<double> sums(static_cast<std::size_t>(3 * k), 0.0);
                             double* __restrict sr = sums.data();
                             double* __restrict sx = sr + k;
                             double* __restrict th = sx + k;
                             for (int j = 0; j < k; ++j) th[j] = t(j);
                             const std::int64_t r1 = std::min(n, (c + 1) * chunk);
                             for (std::int64_t i = c * chunk; i < r1; ++i) {
                               const double* __restrict axi = ax + i * lda;
                               const double* __restrict bxi = bx + i * ldb;
                               const double* __restrict xi = x + i * ldx;
                               double* __restrict ri = r + i * ldr;
                               for (int j = 0; j < k; ++j) {
                                 const double v = axi[j] - bxi[j] * th[j];
                                 ri[j] = v;
                                 sr[j] += v * v;
                                 sx[j] += xi[j] * xi[j];
                               }
                             }
                             for (int j = 0; j < 2 * k; ++j) part(c, j) = sr[j];
                           });
    } else {
      using Policy = Kokkos::TeamPolicy<Exec>;
      Kokkos::parallel_for(
          "kess::lobpcg::residual", Policy(exec, static_cast<int>(nchunks), Kokkos::AUTO),
          KOKKOS_LAMBDA(const typename Policy::member_type& tm) {
            const std::int64_t c = tm.league_rank();
            const std::int64_t r0 = c * chunk, r1 = kx::min(n, r0 + chunk);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, k), [&](const int j) {
              double sr = 0, sx = 0;
              const double tj = t(j);
              for (std::int64_t i = r0; i < r1; ++i) {
                const double v = ax[i * lda + j] - bx[i * ldb + j] * tj;
                r[i * ldr + j] = v;
                sr += v * v;
                sx += x[i * ldx + j] * x[i * ldx + j];
              }
              part(c, j) = sr;
              part(c, k + j) = sx;
            });
          });
    }
    sum_chunks(exec, part, "kess::lobpcg::residual_sum", out);
  }
  if (comm.size() > 1) comm::allreduce(comm, out, comm::ReduceOp::sum);
  return out;
}

/// [S2 AS2 BS2] = [S AS BS] M (M: S.w x S2.w, column-major on the host; BS only when
/// `generalized`, else BS2 aliases S2), then the residual of the first k = R.w columns,
/// R = AS2 - BS2 diag(theta), and its squared column norms with those of S2 (as residual_norms,
/// summed over `comm`). On one host core the rows go in chunks that stay in cache from the update
/// to the residual.
template <class Exec>
std::vector<double> update_residual(const Exec& exec, const comm::Communicator& comm,
                                    std::int64_t n, const Panel& S, const Panel& AS,
                                    const Panel& BS, const std::vector<double>& M, const Panel& S2,
                                    const Panel& AS2, const Panel& BS2, bool generalized,
                                    const std::vector<double>& theta, const Panel& R) {
  using Mem = typename Exec::memory_space;
  const int k = R.w;
  const Panel X = S2.cols(0, k), AX = AS2.cols(0, k), BX = (generalized ? BS2 : S2).cols(0, k);
  if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
    if (host_one_core(exec) && S.w > 0) {
      const int m = S.w, w = S2.w, wp = (w + 7) / 8 * 8;
      std::vector<double> cp(static_cast<std::size_t>(m) * wp, 0.0);
      for (int j = 0; j < w; ++j)
        for (int l = 0; l < m; ++l)
          cp[static_cast<std::size_t>(l) * wp + j] = M[l + static_cast<std::size_t>(j) * m];
      std::vector<double> out(static_cast<std::size_t>(3 * k), 0.0);
      double* __restrict sr = out.data();
      double* __restrict sx = sr + k;
      double* __restrict th = sx + k;
      for (int j = 0; j < k; ++j) th[j] = theta[j];
      exec.fence();
      constexpr std::int64_t chunk = 128;
      for (std::int64_t c = 0; c < n; c += chunk) {
        const std::int64_t c1 = std::min(n, c + chunk);
        host_rows_times_small(c, c1, m, w, S.p, S.ld, cp.data(), wp, S2.p, S2.ld, 0.0);
        host_rows_times_small(c, c1, m, w, AS.p, AS.ld, cp.data(), wp, AS2.p, AS2.ld, 0.0);
        if (generalized)
          host_rows_times_small(c, c1, m, w, BS.p, BS.ld, cp.data(), wp, BS2.p, BS2.ld, 0.0);
        for (std::int64_t i = c; i < c1; ++i) {
          const double* __restrict axi = AX.p + i * AX.ld;
          const double* __restrict bxi = BX.p + i * BX.ld;
          const double* __restrict xi = X.p + i * X.ld;
          double* __restrict ri = R.p + i * R.ld;
          for (int j = 0; j < k; ++j) {
            const double v = axi[j] - bxi[j] * th[j];
            ri[j] = v;
            sr[j] += v * v;
            sx[j] += xi[j] * xi[j];
          }
        }
      }
      out.resize(static_cast<std::size_t>(2 * k));
      if (comm.size() > 1) comm::allreduce(comm, out, comm::ReduceOp::sum);
      return out;
    }
  }
  combine(exec, n, S, M, S2);
  combine(exec, n, AS, M, AS2);
  if (generalized) combine(exec, n, BS, M, BS2);
  return residual_norms(exec, comm, n, AX, BX, X, theta, R);
}

/// C = AᵀB for small host matrices (A: r x a, B: r x b, column-major).
inline std::vector<double> small_atb(const std::vector<double>& A, const std::vector<double>& B,
                                     int r, int a, int b) {
  std::vector<double> C(static_cast<std::size_t>(a) * b, 0.0);
  for (int j = 0; j < b; ++j)
    for (int i = 0; i < a; ++i) {
      double s = 0;
      for (int l = 0; l < r; ++l)
        s += A[l + static_cast<std::size_t>(i) * r] * B[l + static_cast<std::size_t>(j) * r];
      C[i + static_cast<std::size_t>(j) * a] = s;
    }
  return C;
}

/// C = A B (A: r x c, B: c x b).
inline std::vector<double> small_ab(const std::vector<double>& A, const std::vector<double>& B,
                                    int r, int c, int b) {
  std::vector<double> C(static_cast<std::size_t>(r) * b, 0.0);
  for (int j = 0; j < b; ++j)
    for (int l = 0; l < c; ++l) {
      const double x = B[l + static_cast<std::size_t>(j) * c];
      for (int i = 0; i < r; ++i)
        C[i + static_cast<std::size_t>(j) * r] += A[i + static_cast<std::size_t>(l) * r] * x;
    }
  return C;
}

}  // namespace kess::detail::lobpcg
