// The host bulge chase's step (kess::bulge_chase, stage 2 of kess::eigh), compiled once per
// instruction set with GCC (target_clones by feature, picked at load time: a build without
// -march flags runs AVX-512 code on CPUs that have it; stage 2 at n = 4000, b = 96 on 2 cores:
// 0.80 s -> 0.58 s, as fast as a -march=native build; docs/benchmarks.md). "arch=" clones would
// not do: they match CPU models that GCC 12 knows, and this Xeon (model 207) is not one.
#include <kess/core/bulge_chase.hpp>

namespace kess::detail {

namespace {
/// x . y with eight partial sums, so that the compiler vectorizes it without reassociating
/// floating point on its own.
inline double chase_dot(const double* x, const double* y, int len) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int k = 0;
  for (; k + 8 <= len; k += 8)
    for (int u = 0; u < 8; ++u) acc[u] += x[k + u] * y[k + u];
  for (; k < len; ++k) acc[0] += x[k] * y[k];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}
}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && \
    !defined(__CUDACC__)
#define KESS_CHASE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KESS_CHASE_CLONES
#endif

KESS_CHASE_CLONES
bool chase_bulge(double* a, int ld, int n, int b, int i, int j, double* v, double* w, double* y,
                 double* vout, double* tout) {
  auto at = [&](int r, int c) -> double& { return a[static_cast<std::size_t>(r) + std::size_t(c) * ld]; };
  const int r0 = i + 1 + j * b;
  if (r0 >= n - 1) return false;
  const int L = std::min(b, n - r0);
  const int c = j == 0 ? i : r0 - b;
  double* x = &at(r0, c);
  const double t = lapack::larfg(L, x, x + 1, 1);
  v[0] = 1.0;
  for (int k = 1; k < L; ++k) {
    v[k] = x[k];
    x[k] = 0.0;
  }
  if (vout) {
    for (int k = 0; k < L; ++k) vout[k] = v[k];
    *tout = t;  // V was zero-initialized: rows L .. b-1 stay 0
  }
  if (t == 0.0) return true;
  // (a) from the left on the rest of the bulge: rows r0 .. r0+L-1, columns c+1 .. r0-1.
  for (int q = c + 1; q < r0; ++q) {
    double* col = &at(r0, q);
    const double s = t * chase_dot(v, col, L);
    for (int k = 0; k < L; ++k) col[k] -= s * v[k];
  }
  // (b) two-sided on the diagonal block S = A(r0:r0+L, r0:r0+L), lower triangle:
  //     w = t S v, w -= (t/2)(w^T v) v, S -= v w^T + w v^T.
  for (int k = 0; k < L; ++k) w[k] = 0.0;
  for (int q = 0; q < L; ++q) {
    const double* col = &at(r0, r0 + q);  // col[p] = S(p, q) for p >= q
    const double vq = v[q];
    for (int p = q + 1; p < L; ++p) w[p] += col[p] * vq;
    w[q] += col[q] * vq + chase_dot(v + q + 1, col + q + 1, L - q - 1);
  }
  double wv = 0;
  for (int k = 0; k < L; ++k) {
    w[k] *= t;
    wv += w[k] * v[k];
  }
  const double alpha = -0.5 * t * wv;
  for (int k = 0; k < L; ++k) w[k] += alpha * v[k];
  for (int q = 0; q < L; ++q) {
    double* col = &at(r0, r0 + q);
    const double vq = v[q], wq = w[q];
    for (int p = q; p < L; ++p) col[p] -= v[p] * wq + w[p] * vq;
  }
  // (c) from the right on the block below: rows r0+L .. min(n, r0+L+b)-1, columns r0 ..
  //     r0+L-1 (this fills the bulge chased by sweep j+1).
  const int m2 = std::min(n, r0 + L + b) - (r0 + L);
  if (m2 > 0) {
    for (int p = 0; p < m2; ++p) y[p] = 0.0;
    for (int k = 0; k < L; ++k) {
      const double* col = &at(r0 + L, r0 + k);
      const double vk = v[k];
      for (int p = 0; p < m2; ++p) y[p] += col[p] * vk;
    }
    for (int k = 0; k < L; ++k) {
      double* col = &at(r0 + L, r0 + k);
      const double s = t * v[k];
      for (int p = 0; p < m2; ++p) col[p] -= y[p] * s;
    }
  }
  return true;
}

}  // namespace kess::detail
