#include <kess/core/base/settings.hpp>
#include <kess/core/host/gemm.hpp>

#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && \
    !defined(__CUDACC__)
#define KESS_HOST_GEMM_AVX512 1
#include <immintrin.h>
#define KESS_AVX512 __attribute__((target("avx512f")))
#else
#define KESS_HOST_GEMM_AVX512 0
#endif

namespace kess::core::detail {

namespace {

#if KESS_HOST_GEMM_AVX512
// Blocking (BLIS's names): a 24 x 8 tile of C in registers; op(A) packed in blocks of mc x kc
// (288 KB, in L2), op(B) in blocks of kc x nc (2 MB, in L3), both in micro-panels of MR rows /
// NR columns, k-major. mc and nc: the fastest of mc 96-288 x nc 512-2048 on large products
// (docs/performance/gauss_jordan.md).
constexpr int MR = 24;
constexpr int NR = 8;
constexpr int MC = 144;
constexpr int KC = 256;
constexpr int NC = 1024;

/// op(X) as a column-major matrix: entry (i, j) of op(X).
struct Operand {
  const double* p;
  std::int64_t ld;
  bool trans;
  const int* rows = nullptr;  // op(B) only, not transposed: row r of op(B) is row rows[r] of B
  const double* solve = nullptr;  // with rows: op(B) is L^-1 times them (L unit lower, ld_solve)
  std::int64_t ld_solve = 0;
};

/// A packing buffer (a thread's block of op(B), or its rows of op(A)), grown as needed and reused
/// across calls (first-touching a fresh 2 MB at every call costs more than a small product).
struct Buffers {
  std::unique_ptr<double, decltype(&std::free)> p{nullptr, &std::free};
  std::size_t count = 0;
  double* get(std::size_t need) {
    if (need > count) {
      void* q = std::aligned_alloc(64, (need * sizeof(double) + 63) / 64 * 64);
      if (!q) throw std::bad_alloc();
      p.reset(static_cast<double*>(q));
      count = need;
    }
    return p.get();
  }
};

class BufferPool {
 public:
  std::unique_ptr<Buffers> acquire() {
    std::lock_guard<std::mutex> lock(m_);
    if (free_.empty()) return std::make_unique<Buffers>();
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void release(std::unique_ptr<Buffers> b) {
    std::lock_guard<std::mutex> lock(m_);
    free_.push_back(std::move(b));
  }

 private:
  std::mutex m_;
  std::vector<std::unique_ptr<Buffers>> free_;
};

/// A buffer from the pool for the current scope.
struct Lease {
  std::unique_ptr<Buffers> b;
  Lease();
  ~Lease();
  double* get(std::size_t need) { return b->get(need); }
};

BufferPool& pool() {
  static BufferPool p;
  return p;
}
Lease::Lease() : b(pool().acquire()) {}
Lease::~Lease() { pool().release(std::move(b)); }

/// dst[p * ldd + q] = src[q * lds + p] for q < 8, p < kc: eight strided runs of kc entries
/// interleaved, by 8 x 8 transposes in registers (the scalar loop stored one entry a cycle).
KESS_AVX512 void interleave8(const double* src, std::int64_t lds, int kc, double* dst, int ldd) {
  int p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m512d r[8];
    for (int q = 0; q < 8; ++q) r[q] = _mm512_loadu_pd(src + q * lds + p);
    const __m512d t0 = _mm512_unpacklo_pd(r[0], r[1]), t1 = _mm512_unpackhi_pd(r[0], r[1]);
    const __m512d t2 = _mm512_unpacklo_pd(r[2], r[3]), t3 = _mm512_unpackhi_pd(r[2], r[3]);
    const __m512d t4 = _mm512_unpacklo_pd(r[4], r[5]), t5 = _mm512_unpackhi_pd(r[4], r[5]);
    const __m512d t6 = _mm512_unpacklo_pd(r[6], r[7]), t7 = _mm512_unpackhi_pd(r[6], r[7]);
    const __m512d u0 = _mm512_shuffle_f64x2(t0, t2, 0x88), u1 = _mm512_shuffle_f64x2(t0, t2, 0xdd);
    const __m512d u2 = _mm512_shuffle_f64x2(t1, t3, 0x88), u3 = _mm512_shuffle_f64x2(t1, t3, 0xdd);
    const __m512d u4 = _mm512_shuffle_f64x2(t4, t6, 0x88), u5 = _mm512_shuffle_f64x2(t4, t6, 0xdd);
    const __m512d u6 = _mm512_shuffle_f64x2(t5, t7, 0x88), u7 = _mm512_shuffle_f64x2(t5, t7, 0xdd);
    double* d = dst + std::int64_t(p) * ldd;
    _mm512_storeu_pd(d + 0 * ldd, _mm512_shuffle_f64x2(u0, u4, 0x88));
    _mm512_storeu_pd(d + 1 * ldd, _mm512_shuffle_f64x2(u2, u6, 0x88));
    _mm512_storeu_pd(d + 2 * ldd, _mm512_shuffle_f64x2(u1, u5, 0x88));
    _mm512_storeu_pd(d + 3 * ldd, _mm512_shuffle_f64x2(u3, u7, 0x88));
    _mm512_storeu_pd(d + 4 * ldd, _mm512_shuffle_f64x2(u0, u4, 0xdd));
    _mm512_storeu_pd(d + 5 * ldd, _mm512_shuffle_f64x2(u2, u6, 0xdd));
    _mm512_storeu_pd(d + 6 * ldd, _mm512_shuffle_f64x2(u1, u5, 0xdd));
    _mm512_storeu_pd(d + 7 * ldd, _mm512_shuffle_f64x2(u3, u7, 0xdd));
  }
  for (; p < kc; ++p)
    for (int q = 0; q < 8; ++q) dst[std::int64_t(p) * ldd + q] = src[q * lds + p];
}

/// P <- rows [i0, i0 + mc) x columns [p0, p0 + kc) of op(A), in micro-panels of MR rows (entry
/// (r, p) of a panel at p * MR + r), the last panel padded with zeros.
KESS_AVX512 void pack_a(const Operand& A, std::int64_t i0, std::int64_t p0, int mc, int kc,
                        double* P) {
  if (!A.trans) {
    // Groups of eight panels: each column of op(A) is read in runs of 192 contiguous rows (one
    // panel at a time would touch kc pages per 24 rows).
    constexpr int group = 8 * MR;
    for (int g = 0; g < mc; g += group) {
      const int rows = std::min(group, mc - g);
      for (int p = 0; p < kc; ++p) {
        const double* src = A.p + (i0 + g) + (p0 + p) * A.ld;
        for (int ir = 0; ir < rows; ir += MR) {
          const int mr = std::min(MR, rows - ir);
          double* dst = P + std::int64_t(g + ir) * kc + std::int64_t(p) * MR;
          if (mr == MR) {
            std::memcpy(dst, src + ir, sizeof(double) * MR);  // a fixed size: inlined
          } else {
            std::memcpy(dst, src + ir, sizeof(double) * mr);
            for (int r = mr; r < MR; ++r) dst[r] = 0.0;
          }
        }
      }
    }
    return;
  }
  // op(A) = A^T: row r of op(A) is contiguous; eight rows at a time are interleaved.
  for (int ir = 0; ir < mc; ir += MR) {
    const int mr = std::min(MR, mc - ir);
    double* panel = P + std::int64_t(ir) * kc;
    int r = 0;
    for (; r + 8 <= mr; r += 8)
      interleave8(A.p + p0 + (i0 + ir + r) * A.ld, A.ld, kc, panel + r, MR);
    for (; r < mr; ++r) {
      const double* src = A.p + p0 + (i0 + ir + r) * A.ld;
      for (int p = 0; p < kc; ++p) panel[std::int64_t(p) * MR + r] = src[p];
    }
    for (int p = 0; p < kc; ++p)
      for (int q = mr; q < MR; ++q) panel[std::int64_t(p) * MR + q] = 0.0;
  }
}

/// P <- rows [p0, p0 + kc) x columns [j0, j0 + nc) of op(B), in micro-panels of NR columns (entry
/// (p, c) of a panel at p * NR + c), the last panel padded with zeros.
KESS_AVX512 void pack_b(const Operand& B, std::int64_t p0, std::int64_t j0, int kc, int nc,
                        double* P) {
  for (int jr = 0; jr < nc; jr += NR) {
    const int nr = std::min(NR, nc - jr);
    double* panel = P + std::int64_t(jr) * kc;
    if (B.rows) {  // scattered rows: one cache line a value, the column four ahead prefetched
      const int* rows = B.rows + p0;
      for (int c = 0; c < nr; ++c) {
        const std::int64_t j = j0 + jr + c;
        if (jr + c + 4 < nc) {
          const double* ahead = B.p + (j + 4) * B.ld;
          for (int p = 0; p < kc; ++p) __builtin_prefetch(ahead + rows[p]);
        }
        const double* src = B.p + j * B.ld;
        for (int p = 0; p < kc; ++p) panel[std::int64_t(p) * NR + c] = src[rows[p]];
      }
      if (B.solve) {  // forward substitution with L on the panel (all kc rows: p0 == 0)
        for (int c = nr; c < NR; ++c)
          for (int p = 0; p < kc; ++p) panel[std::int64_t(p) * NR + c] = 0.0;
        static_assert(NR == 8, "a micro-panel row is one AVX-512 vector");
        for (int p = 0; p < kc; ++p) {
          const __m512d xp = _mm512_loadu_pd(panel + std::int64_t(p) * NR);
          const double* l = B.solve + std::int64_t(p) * B.ld_solve;
          for (int q = p + 1; q < kc; ++q) {
            double* xq = panel + std::int64_t(q) * NR;
            _mm512_storeu_pd(xq, _mm512_fnmadd_pd(_mm512_set1_pd(l[q]), xp, _mm512_loadu_pd(xq)));
          }
        }
      }
    } else if (!B.trans) {  // column c of op(B) is contiguous: the panel's eight are interleaved
      if (nr == NR) {
        interleave8(B.p + p0 + (j0 + jr) * B.ld, B.ld, kc, panel, NR);
      } else {
        for (int c = 0; c < nr; ++c) {
          const double* src = B.p + p0 + (j0 + jr + c) * B.ld;
          for (int p = 0; p < kc; ++p) panel[std::int64_t(p) * NR + c] = src[p];
        }
      }
    } else {
      for (int p = 0; p < kc; ++p) {
        const double* src = B.p + (j0 + jr) + (p0 + p) * B.ld;
        double* dst = panel + std::int64_t(p) * NR;
        if (nr == NR)
          std::memcpy(dst, src, sizeof(double) * NR);  // a fixed size: inlined
        else
          std::memcpy(dst, src, sizeof(double) * nr);
      }
    }
    if (nr < NR)
      for (int p = 0; p < kc; ++p)
        for (int c = nr; c < NR; ++c) panel[std::int64_t(p) * NR + c] = 0.0;
  }
}

/// The 24 x 8 tile: C = alpha * (A panel) (B panel) + beta * C (beta == 0: C not read). The
/// accumulators take the k products in ascending order; the final scaling is the same vector
/// arithmetic for every tile, so the result of an entry does not depend on where tiles start.
KESS_AVX512 void micro_kernel(int kc, const double* __restrict A, std::int64_t a_step,
                              const double* __restrict B, double* __restrict C, std::int64_t ldc,
                              double alpha, double beta) {
  __m512d c0[NR], c1[NR], c2[NR];
  if (beta != 0.0)  // C's tile (up to four lines a column) arrives while the products run
    for (int j = 0; j < NR; ++j) {
      const char* q = reinterpret_cast<const char*>(C + j * ldc);
      _mm_prefetch(q, _MM_HINT_T0);
      _mm_prefetch(q + 64, _MM_HINT_T0);
      _mm_prefetch(q + 128, _MM_HINT_T0);
      _mm_prefetch(q + 184, _MM_HINT_T0);
    }
  for (int j = 0; j < NR; ++j) c0[j] = c1[j] = c2[j] = _mm512_setzero_pd();
  for (int p = 0; p < kc; ++p) {
    const __m512d a0 = _mm512_loadu_pd(A), a1 = _mm512_loadu_pd(A + 8),
                  a2 = _mm512_loadu_pd(A + 16);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512d b = _mm512_set1_pd(B[j]);
      c0[j] = _mm512_fmadd_pd(a0, b, c0[j]);
      c1[j] = _mm512_fmadd_pd(a1, b, c1[j]);
      c2[j] = _mm512_fmadd_pd(a2, b, c2[j]);
    }
    A += a_step;
    B += NR;
  }
  const __m512d va = _mm512_set1_pd(alpha), vb = _mm512_set1_pd(beta);
  for (int j = 0; j < NR; ++j) {
    double* cj = C + j * ldc;
    __m512d t0 = _mm512_mul_pd(va, c0[j]), t1 = _mm512_mul_pd(va, c1[j]),
            t2 = _mm512_mul_pd(va, c2[j]);
    if (beta == 1.0) {
      t0 = _mm512_add_pd(_mm512_loadu_pd(cj), t0);
      t1 = _mm512_add_pd(_mm512_loadu_pd(cj + 8), t1);
      t2 = _mm512_add_pd(_mm512_loadu_pd(cj + 16), t2);
    } else if (beta != 0.0) {
      t0 = _mm512_add_pd(_mm512_mul_pd(vb, _mm512_loadu_pd(cj)), t0);
      t1 = _mm512_add_pd(_mm512_mul_pd(vb, _mm512_loadu_pd(cj + 8)), t1);
      t2 = _mm512_add_pd(_mm512_mul_pd(vb, _mm512_loadu_pd(cj + 16)), t2);
    }
    _mm512_storeu_pd(cj, t0);
    _mm512_storeu_pd(cj + 8, t1);
    _mm512_storeu_pd(cj + 16, t2);
  }
}

/// Rows [i0, i1) x columns [j0, j1) of C (i0 a multiple of MR) for inner indices [pc, pc + kc),
/// on the calling thread. PA holds those columns of op(A) packed from row pa_row0 on (a multiple
/// of MR); with direct (op(A) = A, at column pc), the full tiles read A where it is and PA holds
/// only the last, partial tile's rows.
KESS_AVX512 void gemm_block(const double* PA, std::int64_t pa_row0, const double* direct,
                            std::int64_t lda, const Operand& B, std::int64_t i0, std::int64_t i1,
                            std::int64_t j0, std::int64_t j1, int pc, int kc, double alpha,
                            double beta, double* C, std::int64_t ldc, double* PB) {
  alignas(64) double edge[MR * NR] = {};
  for (std::int64_t jc = j0; jc < j1; jc += NC) {
    const int nc = static_cast<int>(std::min<std::int64_t>(NC, j1 - jc));
    pack_b(B, pc, jc, kc, nc, PB);
    for (std::int64_t ic = i0; ic < i1; ic += MC) {
      const int mc = static_cast<int>(std::min<std::int64_t>(MC, i1 - ic));
      for (int jr = 0; jr < nc; jr += NR) {
        const int nr = std::min(NR, nc - jr);
        const double* pb = PB + std::int64_t(jr) * kc;
        for (int ir = 0; ir < mc; ir += MR) {
          const int mr = std::min(MR, mc - ir);
          const bool in_place = direct && mr == MR;
          const double* pa = in_place ? direct + (ic + ir) : PA + (ic + ir - pa_row0) * kc;
          const std::int64_t a_step = in_place ? lda : MR;
          double* c = C + (ic + ir) + (jc + jr) * ldc;
          if (mr == MR && nr == NR) {
            micro_kernel(kc, pa, a_step, pb, c, ldc, alpha, beta);
          } else {  // through a full tile, with the same arithmetic
            if (beta != 0.0)
              for (int j = 0; j < nr; ++j)
                std::memcpy(edge + j * MR, c + j * ldc, sizeof(double) * mr);
            micro_kernel(kc, pa, a_step, pb, edge, MR, alpha, beta);
            for (int j = 0; j < nr; ++j)
              std::memcpy(c + j * ldc, edge + j * MR, sizeof(double) * mr);
          }
        }
      }
    }
  }
}
#endif

bool cpu_has_avx512f() {
#if KESS_HOST_GEMM_AVX512
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

/// Where the kernel is faster than the BLAS: AMD's AVX-512 cores. On Intel's AVX-512 cores
/// OpenBLAS's SkylakeX kernel is the faster one (docs/performance/gauss_jordan.md).
bool cpu_prefers_kess_kernel() {
#if KESS_HOST_GEMM_AVX512
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}

}  // namespace

bool host_gemm_available() {
  static const bool available = settings::host_gemm() != 0 && cpu_has_avx512f();
  return available;
}

bool host_gemm_preferred() {
  static const bool preferred =
      host_gemm_available() && (settings::host_gemm() == 1 || cpu_prefers_kess_kernel());
  return preferred;
}

bool host_gemm_pays(int m, int n, int k) {
  if (m < 32 || n < 32 || k < 16 || 2.0 * double(m) * double(n) * double(k) < double(1 << 23))
    return false;
  if (host_gemm_preferred()) return true;
  // OpenBLAS held to one thread while this thread is the only one at work: products such as H's
  // two in Gauss-Jordan's host sweep would run on one core; kess's kernel spreads them instead.
  return host_gemm_available() && core::lapack::serial_blas_scope_active() && !host_parallel_active() &&
         host_threads() > 1;
}

void host_gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a,
               int lda, const double* b, int ldb, double beta, double* c, int ldc, int threads) {
  const HostGemmPart part{b, ldb, c, ldc, n};
  host_gemm_parts(transa, transb, m, k, alpha, a, lda, &part, 1, beta, threads);
}

namespace {
/// host_gemm_parts with a side task that does not throw.
void gemm_parts(char transa, char transb, int m, int k, double alpha, const double* a, int lda,
                const HostGemmPart* parts, int count, double beta, int threads,
                const std::function<void()>& side) {
  std::int64_t n = 0;
  for (int q = 0; q < count; ++q) n += std::max(0, parts[q].n);
  if (side && (m <= 0 || n <= 0 || k <= 0 || alpha == 0.0 || !KESS_HOST_GEMM_AVX512)) {
    side();  // nothing to run it beside
    gemm_parts(transa, transb, m, k, alpha, a, lda, parts, count, beta, threads, {});
    return;
  }
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0) {  // C = beta C (beta == 0: zeros, C not read)
    for (int q = 0; q < count; ++q)
      for (int j = 0; j < parts[q].n; ++j) {
        double* cj = parts[q].c + std::int64_t(j) * parts[q].ldc;
        for (int i = 0; i < m; ++i) cj[i] = beta == 0.0 ? 0.0 : beta * cj[i];
      }
    return;
  }
#if KESS_HOST_GEMM_AVX512
  if (!host_gemm_available())
    throw std::logic_error("kess: host_gemm called where it is not available");
  const Operand A{a, lda, transa != 'N' && transa != 'n'};
  const bool trans_b = transb != 'N' && transb != 'n';
  // Some op(B) given by rows: columns split only, one block of the inner dimension.
  bool gathered = false;
  for (int q = 0; q < count; ++q) gathered = gathered || parts[q].b_rows;
  static_assert(KC >= host_gemm_max_gathered_k, "gathered rows are read in one block of k");
  if (gathered && (trans_b || k > host_gemm_max_gathered_k))
    throw std::logic_error("kess: host_gemm_parts with b_rows needs transb 'N' and k <= 256");
  const bool automatic = threads <= 0;
  if (automatic) threads = host_parallel_active() ? 1 : host_threads();
  // Pieces of C for the threads: column ranges (whole micro-panels of the parts, in order) when C
  // has at least as many columns as rows, else row ranges (whole tiles), so that the operand
  // every thread packs in full is the smaller one. A thread packs op(A) for its rows once per
  // block of the inner dimension, for all its columns (not once per block of columns, or per
  // part, which packs the same rows again and again), and op(B) per block of its columns.
  const bool by_columns = n >= m || gathered || side;
  std::vector<std::int64_t> first_unit(count + 1, 0);  // micro-panels before each part
  for (int q = 0; q < count; ++q)
    first_unit[q + 1] = first_unit[q] + (std::max(0, parts[q].n) + NR - 1) / NR;
  const std::int64_t units = by_columns ? first_unit[count] : (m + MR - 1) / MR;
  // Automatic: a thread for at least 2^23 flops, work that takes far longer than the few
  // microseconds that waking one of host_parallel_for's pool costs.
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const auto by_work = automatic
                           ? std::max<std::int64_t>(1, static_cast<std::int64_t>(flops / (1 << 23)))
                           : std::int64_t(threads);
  const int pieces = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>({std::int64_t(threads), units, by_work})));
  // Up to 512 columns of C, the tiles read op(A) = A in place: each entry serves only n / 8
  // tiles, too few to repay packing's extra pass over A; from 1024 columns packing pays.
  const bool direct_a = !A.trans && n <= 512;
  // A thread's rows [i0, i1) of op(A) for the inner block at pc into PA (room for them padded to
  // whole tiles), except the full tiles that read A in place; returns the first packed row.
  const auto pack_rows = [&](std::int64_t i0, std::int64_t i1, int pc, int kc, double* PA) {
    const std::int64_t full = direct_a ? i0 + (i1 - i0) / MR * MR : i0;
    if (full < i1) pack_a(A, full, pc, static_cast<int>(i1 - full), kc, PA);
    return full;
  };
  const auto pa_size = [&](std::int64_t rows) {
    return std::size_t((rows + MR - 1) / MR * MR) * std::min(KC, k);
  };
  // Rows [i0, i1) of the columns of the parts from unit u0 to u1 (micro-panels, counted over all
  // parts), for the inner block at pc, on the calling thread; PA holds the packed rows of op(A)
  // from row `full` on.
  const auto run_units = [&](std::int64_t i0, std::int64_t i1, std::int64_t u0, std::int64_t u1,
                             int pc, int kc, double* PA, std::int64_t full, double* PB) {
    for (int q = 0; q < count; ++q) {
      const HostGemmPart& p = parts[q];
      const std::int64_t j0 =
          (std::clamp(u0, first_unit[q], first_unit[q + 1]) - first_unit[q]) * NR;
      const std::int64_t j1 = std::min<std::int64_t>(
          p.n, (std::clamp(u1, first_unit[q], first_unit[q + 1]) - first_unit[q]) * NR);
      if (j1 <= j0) continue;
      gemm_block(PA, full, direct_a ? a + std::int64_t(pc) * lda : nullptr, lda,
                 Operand{p.b, p.ldb, trans_b, p.b_rows, p.b_solve, p.ld_solve}, i0, i1, j0, j1,
                 pc, kc, alpha,
                 pc == 0 ? beta : 1.0, p.c, p.ldc, PB);
    }
  };
  if (side) {
    if (pieces < 2 || k > KC) {
      side();
    } else {
      // The caller's work on one thread, the product's columns handed out in shrinking chunks
      // (from 1/(2 x threads) of what is left down to 64 columns), so that the thread that ran
      // side takes fewer of them. One block of the inner dimension: op(A) packed once per thread.
      std::atomic<std::int64_t> next{0};
      host_parallel_for(pieces, pieces, [&](int t) {
        if (t == 0) side();
        Lease la, lb;
        double* PA = nullptr;
        double* PB = nullptr;
        std::int64_t full = 0;
        for (std::int64_t u0 = next.load();;) {
          if (u0 >= units) break;
          const std::int64_t c = std::min(
              units - u0, std::max<std::int64_t>(8, (units - u0) / (2 * std::int64_t(pieces))));
          if (!next.compare_exchange_weak(u0, u0 + c)) continue;
          if (!PB) {
            PA = la.get(pa_size(m));
            PB = lb.get(std::size_t(KC) * NC);
            full = pack_rows(0, m, 0, k, PA);
          }
          run_units(0, m, u0, u0 + c, 0, k, PA, full, PB);
          u0 = next.load();
        }
      });
      return;
    }
  }
  host_parallel_for(pieces, pieces, [&](int t) {
    const std::int64_t u0 = units * t / pieces, u1 = units * (t + 1) / pieces;
    const std::int64_t i0 = by_columns ? 0 : u0 * MR,
                       i1 = by_columns ? m : std::min<std::int64_t>(m, u1 * MR);
    if (i1 <= i0 || u1 <= u0) return;
    Lease la, lb;
    double* PA = la.get(pa_size(i1 - i0));
    double* PB = lb.get(std::size_t(KC) * NC);
    for (int pc = 0; pc < k; pc += KC) {
      const int kc = std::min(KC, k - pc);
      const std::int64_t full = pack_rows(i0, i1, pc, kc, PA);
      // Split by rows: every thread takes all columns of every part.
      run_units(i0, i1, by_columns ? u0 : 0, by_columns ? u1 : first_unit[count], pc, kc, PA, full,
                PB);
    }
  });
#else
  (void)transa, (void)transb, (void)a, (void)lda, (void)threads, (void)side;
  throw std::logic_error("kess: host_gemm called where it is not available");
#endif
}
}  // namespace

void host_gemm_parts(char transa, char transb, int m, int k, double alpha, const double* a, int lda,
                     const HostGemmPart* parts, int count, double beta, int threads,
                     const std::function<void()>& side) {
  if (!side)
    return gemm_parts(transa, transb, m, k, alpha, a, lda, parts, count, beta, threads, {});
  // The product completes whatever side does; side's exception comes back afterwards.
  std::exception_ptr failure;
  gemm_parts(transa, transb, m, k, alpha, a, lda, parts, count, beta, threads, [&] {
    try {
      side();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kess::core::detail
