// kess::comm::ProcessGrid — a 2D nprow x npcol grid of the ranks of a communicator, placed in
// row-major order like BLACS' default ('R'): rank = myrow * npcol + mycol.
#pragma once

#include <kess/comm/communicator.hpp>

#include <utility>

namespace kess::comm {

class ProcessGrid {
 public:
  /// An empty 0 x 0 grid (placeholder for default-constructed DistMatrix).
  ProcessGrid() = default;

  /// Collective over `comm`. Throws kess::Error (invalid_argument) unless nprow >= 1, npcol >= 1
  /// and nprow * npcol == comm.size(); the check uses only values equal on every rank.
  ProcessGrid(const Communicator& comm, int nprow, int npcol);

  /// Collective: the grid with nprow * npcol == comm.size(), nprow <= npcol, nprow largest.
  static ProcessGrid squarest(const Communicator& comm);
  /// The shape squarest() picks for `nprocs` ranks: {nprow, npcol}.
  static std::pair<int, int> squarest_shape(int nprocs);

  const Communicator& comm() const noexcept { return comm_; }
  /// The ranks of my process row (npcol of them; my rank there is mycol()).
  const Communicator& row_comm() const noexcept { return row_comm_; }
  /// The ranks of my process column (nprow of them; my rank there is myrow()).
  const Communicator& col_comm() const noexcept { return col_comm_; }

  int nprow() const noexcept { return nprow_; }
  int npcol() const noexcept { return npcol_; }
  int myrow() const noexcept { return myrow_; }
  int mycol() const noexcept { return mycol_; }
  int size() const noexcept { return nprow_ * npcol_; }

  /// Rank in comm() of the process at grid coordinates (prow, pcol).
  int rank_of(int prow, int pcol) const noexcept { return prow * npcol_ + pcol; }
  /// Grid row / column of rank `rank` of comm().
  int row_of(int rank) const noexcept { return rank / npcol_; }
  int col_of(int rank) const noexcept { return rank % npcol_; }

 private:
  Communicator comm_, row_comm_, col_comm_;
  int nprow_ = 0, npcol_ = 0, myrow_ = 0, mycol_ = 0;
};

}  // namespace kess::comm
