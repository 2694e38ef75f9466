#include <kess/solvers/eigh/detail/tridiag_split.hpp>

#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh/detail/secular.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace kess::detail::eigh {

namespace {

// Eigenvectors of diag(dlamda) + rho w w^T (k >= 3) from the secular roots' differences
// S(i, j) = dlamda(i) - lambda_j (k x k, overwritten): the weights recomputed from the roots
// (Gu-Eisenstat: w^(i)^2 = prod_j (dlamda_i - lambda_j) / prod_{j != i} (dlamda_i - dlamda_j)),
// then column j = w^ ./ S(:, j), normalized, its rows in the order indxc (1-based) gives.
void merge_vectors(int k, const double* dlamda, const double* w, const int* indxc, double* S,
                   int threads) {
  // Partial products over column chunks, one set a chunk, multiplied together at the end.
  const int chunk = 128, nchunks = (k + chunk - 1) / chunk;
  std::vector<double> part(std::size_t(nchunks) * k, 1.0);
  core::detail::host_parallel_for(nchunks, threads, [&](int c) {
    double* p = part.data() + std::size_t(c) * k;
    for (int j = c * chunk; j < std::min(k, (c + 1) * chunk); ++j)
      secular_products(k, j, dlamda, S + std::size_t(j) * k, p);
  });
  std::vector<double> what(k);
  for (int i = 0; i < k; ++i) {
    double v = 1.0;
    for (int c = 0; c < nchunks; ++c) v *= part[std::size_t(c) * k + i];
    what[i] = std::copysign(std::sqrt(-v), w[i]);
  }
  core::detail::host_parallel_for(nchunks, threads, [&](int c) {
    std::vector<double> col(k);
    for (int j = c * chunk; j < std::min(k, (c + 1) * chunk); ++j) {
      double* s = S + std::size_t(j) * k;
      double sumsq = 0;
      const double big = secular_column(k, what.data(), s, col.data(), &sumsq);
      const double inv = 1.0 / (big * std::sqrt(sumsq));
      for (int i = 0; i < k; ++i) s[i] = col[indxc[i] - 1] * inv;
    }
  });
}

// Columns of z (n x n) into the order perm (0-based: new column c = old column perm[c]), in place
// by following the permutation's cycles, each thread on its own range of rows.
void permute_columns(int n, double* z, int ldz, const std::vector<int>& perm, int threads) {
  const int parts = std::max(1, std::min(threads, n / 256));
  core::detail::host_parallel_for(parts, parts, [&](int part) {
    const int r0 = int(std::int64_t(n) * part / parts), r1 = int(std::int64_t(n) * (part + 1) / parts);
    const auto col = [&](int c) { return z + std::size_t(c) * ldz + r0; };
    std::vector<char> done(n, 0);
    std::vector<double> tmp(r1 - r0);
    for (int c = 0; c < n; ++c) {
      if (done[c] || perm[c] == c) continue;
      std::copy(col(c), col(c) + (r1 - r0), tmp.begin());
      int dst = c;
      for (int src = perm[dst]; src != c; dst = src, src = perm[src]) {
        std::copy(col(src), col(src) + (r1 - r0), col(dst));
        done[dst] = 1;
      }
      std::copy(tmp.begin(), tmp.end(), col(dst));
      done[dst] = 1;
    }
  });
}

// The smallest half that stedc_split splits again over thread groups (with 4 or more threads).
constexpr int kMinRecursiveHalf = 400;
// On one thread a half is split again, with this merge on it, while its own halves have at least
// this many rows; smaller ones are dstedc. The merge's roots take 5-6 evaluations of an 8-wide
// secular function where dstedc's dlaed4 takes 3-4 scalar ones, so the split beats dstedc down
// to halves of about this size (docs/performance/eigh.md).
constexpr int kMinSerialHalf = 150;

}  // namespace

int stedc_split_bottom_rows(int n, bool with_bottom) {
  // Without a transform the halves are equal. With one the bottom thread also applies it
  // (2 n2^3 flops) after its dstedc: a bottom half of 0.47 n keeps the two threads about even
  // (the best of 0.44 / 0.47 / 0.50 n; docs/performance/eigh.md).
  // dlaed2 takes a first block of at most n / 2 rows (the bottom half, with a transform).
  return with_bottom ? std::min(n / 2, n - static_cast<int>(0.53 * n)) : n - n / 2;
}

namespace {
// stedc_split with its workspace: ws (when not null) holds 2 n^2 doubles (see buf below);
// scaled: T already has max |T_ij| = 1.
int split_in(int n, double* d, double* e, double* z, int ldz, int threads,
             const BottomRowsTransform& bottom, double* ws, bool scaled = false) {
  if (threads <= 0) threads = core::detail::host_threads();
  const int n2 = stedc_split_bottom_rows(n, static_cast<bool>(bottom)), n1 = n - n2;
  // With 4 or more threads each half is split again on its share of them (dstedc alone leaves
  // all but one of a half's threads idle), down to halves of kMinRecursiveHalf rows.
  const bool recurse = threads >= 4 && std::min(n1, n2) >= kMinRecursiveHalf;
  // Each half on `sub[h]` threads, by this function again (thread groups, or on one thread while
  // the half's own halves are large enough) or by dstedc.
  const int sub[2] = {std::max(1, threads / 2), std::max(1, threads - threads / 2)};
  // dstedc on the whole matrix, then the bottom rows' transform on every column.
  const auto whole = [&] {
    const int info = core::lapack::stedc('I', n, d, e, z, ldz);
    if (info == 0 && bottom) bottom(n2, n, z + n1, ldz);
    return info;
  };
  if (n < 4 || (threads < 2 && std::min(n1, n2) < kMinSerialHalf)) return whole();
  if (!scaled) {
    // T scaled to max |T_ij| = 1, as dstedc scales each block: dlaed2's deflation tolerance,
    // 8 eps max(max |d_i|, max |z_i|), mixes d (in T's units) with z (unit norm), so unscaled
    // the merge of a T of norm 1e-10 would deflate z_i up to 1e-5.
    double scale = 0;
    for (int i = 0; i < n; ++i) scale = std::max(scale, std::abs(d[i]));
    for (int i = 0; i + 1 < n; ++i) scale = std::max(scale, std::abs(e[i]));
    if (scale > 0 && scale != 1 && std::isfinite(scale)) {
      for (int i = 0; i < n; ++i) d[i] /= scale;
      for (int i = 0; i + 1 < n; ++i) e[i] /= scale;
      const int info = split_in(n, d, e, z, ldz, threads, bottom, ws, true);
      for (int i = 0; i < n; ++i) d[i] *= scale;
      return info;
    }
  }
  const std::vector<double> d0(d, d + n), e0(e, e + n - 1);  // for the fallback
  auto fallback = [&] {
    std::copy(d0.begin(), d0.end(), d);
    std::copy(e0.begin(), e0.end(), e);
    return whole();
  };
  // Cuppen's tear: T = diag(T1, T2) + rho u u^T, u = e_{n1-1} + sign(rho) e_{n1} (dlaed2 takes
  // care of the sign).
  double rho = e[n1 - 1];
  d[n1 - 1] -= std::abs(rho);
  d[n1] -= std::abs(rho);
  // The merge's layout: dlaed2 wants its first block no larger than n / 2. Without a transform
  // that is the top half (the natural order). With one it is the (smaller) bottom half: the work
  // matrix then holds the bottom half's rows first (positions 0 .. n2 - 1) and the top half's
  // after them. The merge acts on columns only and needs just the two rows at the tear (zv), so
  // each block may keep its rows in its own order; the final GEMMs write each block's rows back
  // where they belong, and only dlaed2's deflated columns are rotated into place.
  const bool swapped = static_cast<bool>(bottom);
  const int nf = swapped ? n2 : n1;        // the first block's rows
  const int off[2] = {swapped ? n1 : 0,    // the first block's original rows start here
                      swapped ? 0 : n1};   // and the second block's
  std::vector<double> dd(n), ee(n);        // d and e of the two blocks, in the merge's layout
  for (int h = 0; h < 2; ++h) {
    const int p = h == 0 ? 0 : nf, s = h == 0 ? nf : n - nf;
    std::copy(d + off[h], d + off[h] + s, dd.begin() + p);
    std::copy(e + off[h], e + off[h] + s - 1, ee.begin() + p);
  }
  // Two buffers of n^2 doubles, one a half: its workspace (dstedc's, or at a level below this
  // function's own two buffers, 2 (n / 2)^2 <= n^2), then the merge's k x k vectors S (k <= n)
  // and dlaed2's Q2. Memory is expensive to touch for the first time: the pages that the halves
  // touch, each on its own thread, are used again by the merge.
  const int size[2] = {nf, n - nf};
  const bool half_split[2] = {recurse || size[0] / 2 >= kMinSerialHalf,
                              recurse || size[1] / 2 >= kMinSerialHalf};
  const int lw[2] = {half_split[0] ? 0 : core::lapack::stedc_lwork('I', size[0]),
                     half_split[1] ? 0 : core::lapack::stedc_lwork('I', size[1])};
  // (dstedc's workspace on s rows, 1 + 4 s + s^2, fits in n^2 for s <= n / 2 + 1 and n >= 4)
  const std::size_t buf_size = std::max({std::size_t(n) * n, std::size_t(lw[0]), std::size_t(lw[1])});
  std::unique_ptr<double[]> own;
  if (!ws) {
    own.reset(new double[2 * buf_size]);
    ws = own.get();
  }
  double* const buf[2] = {ws, ws + buf_size};
  int info[2] = {0, 0};
  std::vector<double> ztear(nf);  // the first block's row at the tear, before the transform
  {
    core::lapack::SerialBlasScope serial;  // each half's BLAS on its own thread's core
    // The transform on the bottom half's own vectors (the first block), in column chunks: the
    // bottom half's thread starts on them right after its dstedc, the top half's thread joins in
    // when its (larger) dstedc is done: the bottom dstedc and the whole transform take longer
    // than the top half's dstedc. This pays when the caller makes the transform's blocks once
    // (eigh's SytrdQBlocks), not per chunk.
    constexpr int xchunks = 8;
    std::atomic<int> next_chunk{0};
    std::atomic<bool> first_done{false};
    const auto transform_chunks = [&] {
      if (info[0] != 0) return;
      for (int c = next_chunk.fetch_add(1); c < xchunks; c = next_chunk.fetch_add(1)) {
        const int c0 = nf * c / xchunks, c1 = nf * (c + 1) / xchunks;
        if (c1 > c0) bottom(nf, c1 - c0, z + std::size_t(c0) * ldz, ldz);
      }
    };
    core::detail::host_parallel_for(2, std::min(threads, 2), [&](int h) {
      const int p = h == 0 ? 0 : nf, s = h == 0 ? nf : n - nf;
      {
        struct Done {  // marks the first block's dstedc as over, also when it fails or throws
          std::atomic<bool>* flag;
          ~Done() {
            if (flag) flag->store(true, std::memory_order_release);
          }
        } done{h == 0 ? &first_done : nullptr};
        double* zh = z + p + std::size_t(p) * ldz;
        // The other block's rows of this block's columns are zero (dlaed2 copies whole columns).
        for (int c = p; c < p + s; ++c)
          std::fill(z + (h == 0 ? nf : 0) + std::size_t(c) * ldz,
                    z + (h == 0 ? n : nf) + std::size_t(c) * ldz, 0.0);
        info[h] = half_split[h] ? split_in(s, dd.data() + p, ee.data() + p, zh, ldz, sub[h], {},
                                           buf[h])
                                : core::lapack::stedc('I', s, dd.data() + p, ee.data() + p, zh, ldz,
                                                buf[h], lw[h]);
        if (h == 0 && info[0] == 0) {
          const int tear_row = swapped ? 0 : nf - 1;
          for (int c = 0; c < nf; ++c) ztear[c] = zh[tear_row + std::size_t(c) * ldz];
        }
      }
      if (!swapped || recurse) return;
      // Index 0 is always taken before index 1, by a running thread: this wait ends.
      if (h == 1)
        while (!first_done.load(std::memory_order_acquire)) std::this_thread::yield();
      transform_chunks();
    });
  }
  if (info[0] != 0 || info[1] != 0) return fallback();
  // Split again: the transform on the first block's vectors once both halves are done, on all
  // threads (still before the merge, where it would act on all n columns).
  if (swapped && recurse) bottom(nf, nf, z, ldz);
  std::copy(dd.begin(), dd.end(), d);

  // ---- the merge (what dlaed1 does, with its dlaed3 part over host threads) ----
  std::vector<int> indxq(n), indx(n), indxc(n), indxp(n), coltyp(n);
  for (int i = 0; i < n; ++i) indxq[i] = i < nf ? i + 1 : i - nf + 1;
  std::vector<double> zv(n), dlamda(n), w(n);
  const int second_tear_row = swapped ? n - 1 : nf;  // the second block's row at the tear
  for (int i = 0; i < n; ++i) zv[i] = i < nf ? ztear[i] : z[second_tear_row + std::size_t(i) * ldz];
  double* const q2 = buf[1];
  int k = 0;
  if (core::lapack::laed2(&k, n, nf, d, z, ldz, indxq.data(), &rho, zv.data(), dlamda.data(), w.data(),
                    q2, indx.data(), indxc.data(), indxp.data(), coltyp.data()) != 0)
    return fallback();
  // dlaed2's deflated columns (z's last n - k) are in the merge's layout: rows back in order.
  if (swapped)
    for (int c = k; c < n; ++c) std::rotate(z + std::size_t(c) * ldz, z + std::size_t(c) * ldz + nf, z + std::size_t(c) * ldz + n);
  if (k == 0) {  // nothing left to do: dlaed2 sorted d and z
    return 0;
  }
  const int ctot0 = coltyp[0], n12 = coltyp[0] + coltyp[1], n23 = coltyp[1] + coltyp[2];
  double* const S = buf[0];  // k x k
  const int chunk = 64, nchunks = (k + chunk - 1) / chunk;
  if (k <= 2) {  // dlaed4 (dlaed5's eigenvector for k = 2)
    for (int j = 0; j < k; ++j)
      if (core::lapack::laed4(k, j + 1, dlamda.data(), w.data(), S + std::size_t(j) * k, rho, d + j) != 0)
        return fallback();
  } else {
    // The roots as lambda_j = d_orig + tau_j (tridiag_dc's root finder with a vectorized secular
    // function), S(:, j) = d - lambda_j formed as dlaed4 forms its delta; several times faster
    // than dlaed4 (docs/performance/eigh.md).
    std::vector<int> orig(k);
    std::vector<double> tau(k);
    core::detail::host_parallel_for(nchunks, threads, [&](int c) {
      const int j0 = c * chunk, j1 = std::min(k, j0 + chunk);
      secular_roots_host(k, dlamda.data(), w.data(), rho, j0, j1, orig.data(), tau.data());
      for (int j = j0; j < j1; ++j) {
        double* s = S + std::size_t(j) * k;
        const double d_o = dlamda[orig[j]], t = tau[j];
        for (int i = 0; i < k; ++i) s[i] = (dlamda[i] - d_o) - t;
        d[j] = d_o + t;
      }
    });
  }
  if (k == 2) {  // dlaed5's vectors, rows into indxc's order
    for (int j = 0; j < 2; ++j) {
      double* s = S + std::size_t(j) * 2;
      const double a = s[0], b = s[1];
      s[0] = indxc[0] == 1 ? a : b;
      s[1] = indxc[1] == 1 ? a : b;
    }
  } else if (k > 2) {
    merge_vectors(k, dlamda.data(), w.data(), indxc.data(), S, threads);
  }
  // The second block's rows from the type 2 and 3 columns, the first block's from the type 1
  // and 2 columns, each written to its original rows.
  // Inside another host loop (a half of a recursive split) a GEMM stays on its calling thread:
  // the product's columns in chunks over this merge's threads there.
  const int parts = core::detail::host_parallel_active() ? std::min(threads, (k + 127) / 128) : 1;
  const auto block_rows = [&](int rows, const double* q, int cols, const double* s, double* out) {
    core::detail::host_parallel_for(parts, parts, [&](int c) {
      const int j0 = static_cast<int>(std::int64_t(k) * c / parts);
      const int j1 = static_cast<int>(std::int64_t(k) * (c + 1) / parts);
      if (cols > 0)
        core::lapack::gemm('N', 'N', rows, j1 - j0, cols, 1.0, q, rows, s + std::size_t(j0) * k, k, 0.0,
                     out + std::size_t(j0) * ldz, ldz);
      else
        for (int j = j0; j < j1; ++j)
          std::fill(out + std::size_t(j) * ldz, out + std::size_t(j) * ldz + rows, 0.0);
    });
  };
  block_rows(n - nf, q2 + std::size_t(nf) * n12, n23, S + ctot0, z + off[1]);
  block_rows(nf, q2, n12, S, z + off[0]);
  // Values and columns into ascending order: the roots (ascending) and dlaed2's deflated values
  // (descending) interleave, and after deflating rotations not always in order (by a few ulps;
  // dstedc ends with a selection sort for the same reason).
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return d[a] < d[b]; });
  std::vector<double> sorted(n);
  for (int i = 0; i < n; ++i) sorted[i] = d[perm[i]];
  std::copy(sorted.begin(), sorted.end(), d);
  permute_columns(n, z, ldz, perm, threads);
  return 0;
}

}  // namespace

int stedc_split(int n, double* d, double* e, double* z, int ldz, int threads,
                const BottomRowsTransform& bottom) {
  return split_in(n, d, e, z, ldz, threads, bottom, nullptr);
}

}  // namespace kess::detail::eigh
