// The one-stage path's Q: LAPACK dsytrd's reflectors applied by blocks of 128, two GEMMs each.
#include <kess/solvers/eigh/detail/one_stage.hpp>

#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/householder.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <algorithm>
#include <vector>

namespace kess::detail::eigh {

namespace {

constexpr int kSytrdQBlock = 128;

/// Reflectors i0 .. i0 + k - 1 of core::lapack::sytrd('L') as a dense V (m x k, m = n - 1 - i0: unit
/// diagonal, zeros above; vd) and the upper triangular T of I - V T V^T (k x k, leading
/// dimension ldt), T by dlarft's recurrence on G = V^T V (one GEMM; dlarft runs a GEMV a
/// reflector).
void sytrd_block(int n, const double* a, int lda, const double* tau, int i0, int k, double* vd,
                 double* G, double* T, int ldt) {
  const int m = n - 1 - i0;
  const double* V = a + (i0 + 1) + std::size_t(i0) * lda;
  for (int c = 0; c < k; ++c) {
    double* col = vd + std::size_t(c) * m;
    std::fill(col, col + c, 0.0);
    col[c] = 1.0;
    std::copy(V + c + 1 + std::size_t(c) * lda, V + m + std::size_t(c) * lda, col + c + 1);
  }
  core::lapack::gemm('T', 'N', k, k, m, 1.0, vd, m, vd, m, 0.0, G, ldt);
  core::compact_wy_t_from_gram(k, tau + i0, G, ldt, T, ldt);
}

/// Z <- (I - V T V^T) Z on rows i0 + 1 .. n - 1 of z (which holds rows row0 ..), nev columns;
/// W: nev x k scratch. Z -= V W^T with W = Z^T V T^T: OpenBLAS runs Z^T V (large M, small N)
/// faster than V^T Z (M = 128), and V W^T faster than V (T V^T Z) (docs/performance/eigh.md).
void sytrd_block_apply(int n, int i0, int k, const double* vd, const double* T, int ldt, int nev,
                       double* z, int ldz, int row0, double* W) {
  const int m = n - 1 - i0;
  double* zb = z + (i0 + 1 - row0);
  core::lapack::gemm('T', 'N', nev, k, m, 1.0, zb, ldz, vd, m, 0.0, W, nev);   // W = Z^T V
  core::lapack::trmm('R', 'U', 'T', 'N', nev, k, 1.0, T, ldt, W, nev);         // W = W T^T
  core::lapack::gemm('N', 'T', m, nev, k, -1.0, vd, m, W, nev, 1.0, zb, ldz);  // Z -= V W^T
}

}  // namespace

void apply_sytrd_q(int n, int nev, const double* a, int lda, const double* tau, double* z,
                        int ldz, int first, int last, int row0) {
  // Q = H(0) H(1) ... H(n-2), H(i) acting on rows i+1 .. n-1 with v below the subdiagonal of
  // column i of a: blocks of 128 reflectors from the last, each I - V T V^T applied as two large
  // GEMMs with V copied into a dense panel (one buffer for all blocks). dormtr applies 32 at a
  // time (ilaenv) and dlarfb works around the triangle with extra copies and TRMMs; this is
  // faster than either (docs/performance/eigh.md).
  constexpr int nb = kSytrdQBlock;
  if (last < 0) last = n - 1;
  if (last <= first || nev <= 0) return;
  std::vector<double> T(std::size_t(nb) * nb), G(std::size_t(nb) * nb),
      Vd(std::size_t(n - 1 - first) * nb), W(std::size_t(nb) * nev);
  for (int hi = last; hi > first; hi -= nb) {
    const int i0 = std::max(first, hi - nb), k = hi - i0;
    sytrd_block(n, a, lda, tau, i0, k, Vd.data(), G.data(), T.data(), nb);
    sytrd_block_apply(n, i0, k, Vd.data(), T.data(), nb, nev, z, ldz, row0, W.data());
  }
}

SytrdQBlocks::SytrdQBlocks(int n, const double* a, int lda, const double* tau, int first, int last)
    : n_(n) {
  constexpr int nb = kSytrdQBlock;
  if (last < 0) last = n - 1;
  std::vector<double> G(std::size_t(nb) * nb);
  for (int hi = last; hi > first; hi -= nb) {
    Block blk;
    blk.i0 = std::max(first, hi - nb);
    blk.k = hi - blk.i0;
    blk.V.resize(std::size_t(n - 1 - blk.i0) * blk.k);
    blk.T.resize(std::size_t(nb) * nb);
    sytrd_block(n, a, lda, tau, blk.i0, blk.k, blk.V.data(), G.data(), blk.T.data(), nb);
    blocks_.push_back(std::move(blk));
  }
}

void SytrdQBlocks::apply(int nev, double* z, int ldz, int row0) const {
  if (nev <= 0) return;
  std::vector<double> W(std::size_t(kSytrdQBlock) * nev);
  for (const Block& blk : blocks_)
    sytrd_block_apply(n_, blk.i0, blk.k, blk.V.data(), blk.T.data(), kSytrdQBlock, nev, z, ldz,
                      row0, W.data());
}

}  // namespace kess::detail::eigh
