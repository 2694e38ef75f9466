// DBCSR, the distributed CPU peer of kess's block-sparse multiply: C = A * B through DBCSR's C API
// on all ranks of MPI_COMM_WORLD (a Cartesian nprow x npcol grid, block rows and columns dealt
// round-robin). Built with DBCSR when CMake finds it and its Fortran link needs (MPI on);
// otherwise available() is false. Threads: DBCSR's OpenMP (OMP_NUM_THREADS); Open MPI's mpiexec
// binds each rank to one core by default, so 1 rank x 2 threads needs --bind-to none (else both
// threads share a core: 27 instead of 54 GFLOP/s on the 2-core dev machine).
//
// Filtering (filter_eps = eps > 0, passed to c_dbcsr_multiply_d; no separate c_dbcsr_filter), as
// measured with Debian's DBCSR 2.5.0 (1 rank and a 1x2 grid, 1 and 2 threads) and as its source
// (dbcsr_mm_cannon.F, dbcsr_mm_csr.F, dbcsr_mm_multrec.F) does it:
//  * Products: A_ik B_kj is skipped iff ||A_ik||_F ||B_kj||_F < eps / n_i, strictly, where n_i is
//    the number of stored blocks in block row i of A: all of them, over all ranks, including
//    all-zero blocks and blocks that meet no block of B. Evaluated in single precision on squared
//    norms: with s_X = float(the block's sum of squares, summed in double) and
//    t = float(eps) / float(n_i) in float, skipped iff s_A * s_B < t * t, products in float.
//    Probes: eps 1e-2, n_i 2 and 4, products at (1 -+ 1e-3) eps / n_i (1x1 and 3x3 blocks); 6000
//    random probes within 1e-7..1e-4 (relative) of eps / 2 matched this float formula exactly
//    (the same test in double, or on unsquared float norms, got up to 19% of them wrong).
//  * C blocks: after the multiply a block is dropped iff ||C_ij||_F < eps, in double (a block of
//    norm exactly eps stays; 0.01 * (1 - 1e-15) goes). A C block all of whose products were
//    skipped is never created. flops() counts only the products done.
//  * filter_eps <= 0: the argument is left out, nothing is skipped or dropped, C keeps every block
//    that received a product, exact zeros included.
#pragma once

#include "perf_common.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kess::perf::peers::dbcsr {

/// Whether this build has DBCSR; why not otherwise.
bool available();
std::string unavailable_reason();

/// A block-sparse matrix given globally (the same on every rank): block sizes and all its blocks,
/// each block's values column-major, block b at values[offsets[b]], size row_sizes[rows[b]] x
/// col_sizes[cols[b]]. Each (row, col) appears at most once.
struct Blocks {
  std::vector<int> row_sizes, col_sizes;
  std::vector<int> rows, cols;
  std::vector<std::size_t> offsets;
  std::vector<double> values;
};

/// C = A * B (beta 0) with DBCSR on all ranks of MPI_COMM_WORLD, on a nprow x npcol Cartesian grid
/// (squarest by default, as kess::comm::ProcessGrid::squarest), block rows/cols distributed
/// round-robin (row_dist[i] = i % nprow, col_dist[j] = j % npcol). Collective: every rank
/// constructs, runs and destroys it together, before MPI_Finalize.
class Multiply {
 public:
  /// filter_eps <= 0: no filtering (DBCSR's filter_eps argument left out).
  Multiply(const Blocks& A, const Blocks& B, double filter_eps, int nprow = 0, int npcol = 0);
  ~Multiply();  // frees matrices, distribution, grid; dbcsr lib init/finalize handled once per process
  Multiply(const Multiply&) = delete;
  Multiply& operator=(const Multiply&) = delete;

  /// Empty when ready, else what failed (no MPI, bad grid, A's columns unlike B's rows).
  const std::string& error() const;
  /// One dbcsr_multiply (timed between barriers, slowest rank's wall seconds); *ok false on
  /// failure. DBCSR aborts the run itself on its internal errors.
  double run(bool* ok);
  /// DBCSR's flop count of the last multiply (global: DBCSR returns the per-rank mean rounded up,
  /// times the ranks here, so at most ranks - 1 above the exact sum). Skipped products not counted.
  long long flops() const;
  /// Global number of blocks of C after the last multiply.
  long long c_blocks() const;
  /// ||C||_F of the last result (global), for cross-checking kess.
  double c_frobenius() const;
  /// The last C, gathered to a global dense column-major matrix on every rank (for small checks).
  std::vector<double> c_dense() const;
  /// "DBCSR 2.5.0 on 2 ranks (1x2), 1 thread per rank".
  std::string label() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kess::perf::peers::dbcsr
