// The one-stage path's back-transformation: Q of LAPACK dsytrd('L') applied by blocks of
// reflectors as GEMMs on the host.
#pragma once

#include <memory>
#include <vector>

namespace kess::detail::eigh {

/// Z <- H(first) ... H(last - 1) Z for the reflectors H(i) of core::lapack::sytrd('L') (in a, tau;
/// H(i) acts on rows i + 1 .. n - 1); the defaults give Q Z, what dormtr computes. z holds rows
/// row0 .. n - 1 (row0 <= first + 1), nev columns, leading dimension ldz. Blocks of 128
/// reflectors, two GEMMs each.
void apply_sytrd_q(int n, int nev, const double* a, int lda, const double* tau, double* z,
                        int ldz, int first = 0, int last = -1, int row0 = 0);

/// The same product made once (each block's dense V and T kept), then applied to any number of
/// column ranges, from several threads at once: Z <- H(first) ... H(last - 1) Z.
class SytrdQBlocks {
 public:
  SytrdQBlocks(int n, const double* a, int lda, const double* tau, int first = 0, int last = -1);
  /// z: rows row0 .. n - 1 (row0 <= first + 1), nev columns, leading dimension ldz.
  void apply(int nev, double* z, int ldz, int row0 = 0) const;

 private:
  struct Block {
    int i0 = 0, k = 0;
    std::vector<double> V, T;  // (n - 1 - i0) x k, and 128 x 128 (upper k x k used)
  };
  int n_ = 0;
  std::vector<Block> blocks_;  // the last reflectors first, the order of the product
};

}  // namespace kess::detail::eigh
