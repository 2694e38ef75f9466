// kess::comm::BlockCyclicMap — the ScaLAPACK/ELPA 2D block-cyclic distribution of an m x n matrix
// in mb x nb blocks over an nprow x npcol process grid, block (0,0) on process (rsrc, csrc).
// All indices here are 0-based (ScaLAPACK's INDXG2P/INDXG2L/INDXL2G are 1-based).
#pragma once

#include <Kokkos_Macros.hpp>

#include <array>
#include <cstdint>

namespace kess::comm {

class ProcessGrid;

/// Shape of the process grid and where this process sits in it.
struct GridPosition {
  int nprow = 1, npcol = 1, myrow = 0, mycol = 0;
};

/// ScaLAPACK's array descriptor: DLEN_ = 9 integers.
using Descriptor = std::array<int, 9>;
/// Positions in a Descriptor: desc[Desc::lld] is ScaLAPACK's DESC(LLD_) (0-based here).
struct Desc {
  static constexpr int dtype = 0, ctxt = 1, m = 2, n = 3, mb = 4, nb = 5, rsrc = 6, csrc = 7,
                       lld = 8;
};

/// Trivially copyable: the index functions are usable inside Kokkos kernels.
class BlockCyclicMap {
 public:
  BlockCyclicMap() = default;

  /// Throws kess::Error (invalid_argument) unless m, n >= 0, mb, nb >= 1, 0 <= rsrc < nprow,
  /// 0 <= csrc < npcol and the local sizes fit an int. `lld` < 0 picks max(1, local_rows());
  /// `context` is only carried into descriptor() (a BLACS context for ScaLAPACK/ELPA callers).
  BlockCyclicMap(std::int64_t m, std::int64_t n, int mb, int nb, const GridPosition& where,
                 int rsrc = 0, int csrc = 0, int lld = -1, int context = 0);
  BlockCyclicMap(const ProcessGrid& grid, std::int64_t m, std::int64_t n, int mb, int nb,
                 int rsrc = 0, int csrc = 0, int lld = -1, int context = 0);

  /// From a ScaLAPACK descriptor (dtype must be 1); checks lld >= max(1, local rows).
  static BlockCyclicMap from_descriptor(const Descriptor& desc, const GridPosition& where);
  static BlockCyclicMap from_descriptor(const Descriptor& desc, const ProcessGrid& grid);

  /// {1, context, m, n, mb, nb, rsrc, csrc, lld}; throws kess::Error if m or n exceeds an int.
  Descriptor descriptor() const;

  /// ScaLAPACK's NUMROC: how many of n rows/columns, in blocks of nb, process `iproc` of
  /// `nprocs` holds when block 0 sits on `isrcproc`.
  static KOKKOS_INLINE_FUNCTION int numroc(std::int64_t n, int nb, int iproc, int isrcproc,
                                           int nprocs) {
    const int mydist = (nprocs + iproc - isrcproc) % nprocs;
    const std::int64_t nblocks = n / nb;
    std::int64_t count = (nblocks / nprocs) * nb;
    const std::int64_t extrablks = nblocks % nprocs;
    if (mydist < extrablks) {
      count += nb;
    } else if (mydist == extrablks) {
      count += n % nb;
    }
    return static_cast<int>(count);
  }

  KOKKOS_INLINE_FUNCTION std::int64_t rows() const { return m_; }
  KOKKOS_INLINE_FUNCTION std::int64_t cols() const { return n_; }
  KOKKOS_INLINE_FUNCTION int row_block() const { return mb_; }
  KOKKOS_INLINE_FUNCTION int col_block() const { return nb_; }
  KOKKOS_INLINE_FUNCTION int rsrc() const { return rsrc_; }
  KOKKOS_INLINE_FUNCTION int csrc() const { return csrc_; }
  KOKKOS_INLINE_FUNCTION int lld() const { return lld_; }
  KOKKOS_INLINE_FUNCTION int context() const { return context_; }
  KOKKOS_INLINE_FUNCTION const GridPosition& position() const { return where_; }

  /// Local sizes on this process, and on process row `prow` / column `pcol`.
  KOKKOS_INLINE_FUNCTION int local_rows() const { return local_rows_; }
  KOKKOS_INLINE_FUNCTION int local_cols() const { return local_cols_; }
  KOKKOS_INLINE_FUNCTION int local_rows(int prow) const {
    return numroc(m_, mb_, prow, rsrc_, where_.nprow);
  }
  KOKKOS_INLINE_FUNCTION int local_cols(int pcol) const {
    return numroc(n_, nb_, pcol, csrc_, where_.npcol);
  }

  /// Process row owning global row i (INDXG2P), and i's index in that process's local rows
  /// (INDXG2L). Preconditions: 0 <= i < rows().
  KOKKOS_INLINE_FUNCTION int row_owner(std::int64_t i) const {
    return static_cast<int>((rsrc_ + i / mb_) % where_.nprow);
  }
  KOKKOS_INLINE_FUNCTION int col_owner(std::int64_t j) const {
    return static_cast<int>((csrc_ + j / nb_) % where_.npcol);
  }
  KOKKOS_INLINE_FUNCTION int local_row(std::int64_t i) const {
    return static_cast<int>((i / (std::int64_t(mb_) * where_.nprow)) * mb_ + i % mb_);
  }
  KOKKOS_INLINE_FUNCTION int local_col(std::int64_t j) const {
    return static_cast<int>((j / (std::int64_t(nb_) * where_.npcol)) * nb_ + j % nb_);
  }
  /// {process row, process column} owning global entry (i, j).
  KOKKOS_INLINE_FUNCTION std::array<int, 2> owner(std::int64_t i, std::int64_t j) const {
    return {row_owner(i), col_owner(j)};
  }
  KOKKOS_INLINE_FUNCTION bool is_local(std::int64_t i, std::int64_t j) const {
    return row_owner(i) == where_.myrow && col_owner(j) == where_.mycol;
  }

  /// Global row of local row il on process row prow (INDXL2G); without prow: on this process.
  KOKKOS_INLINE_FUNCTION std::int64_t global_row(int il, int prow) const {
    const int dist = (where_.nprow + prow - rsrc_) % where_.nprow;
    return (std::int64_t(il / mb_) * where_.nprow + dist) * mb_ + il % mb_;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t global_col(int jl, int pcol) const {
    const int dist = (where_.npcol + pcol - csrc_) % where_.npcol;
    return (std::int64_t(jl / nb_) * where_.npcol + dist) * nb_ + jl % nb_;
  }
  KOKKOS_INLINE_FUNCTION std::int64_t global_row(int il) const {
    return global_row(il, where_.myrow);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t global_col(int jl) const {
    return global_col(jl, where_.mycol);
  }

 private:
  std::int64_t m_ = 0, n_ = 0;
  int mb_ = 1, nb_ = 1;
  GridPosition where_{};
  int rsrc_ = 0, csrc_ = 0;
  int lld_ = 1, context_ = 0;
  int local_rows_ = 0, local_cols_ = 0;
};

}  // namespace kess::comm
