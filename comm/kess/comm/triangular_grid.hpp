// kess::comm::TriangularGrid — MFDn's process layout for a symmetric matrix stored as one triangle
// (Maris et al. 2022 §3; Aktulga et al. 2014): the rows cut into nd segments (nd odd), and
// nd(nd+1)/2 ranks, rank (c, d) with d = 0..(nd-1)/2 holding the block of segments
// (c + d mod nd, c). Each unordered pair of segments is held exactly once, every segment is
// touched by nd ranks (its group) and owned, as vector rows, by the (nd+1)/2 ranks of column c.
#pragma once

#include <kess/comm/communicator.hpp>

#include <vector>

namespace kess::comm {

class TriangularGrid {
 public:
  TriangularGrid() = default;
  /// Collective over comm: comm.size() must be nd(nd+1)/2 with nd odd (1, 6, 15, 28, ...);
  /// otherwise kess::Error (invalid_argument) on every rank.
  explicit TriangularGrid(const Communicator& comm);

  /// nd when `ranks` = nd(nd+1)/2 with nd odd, else 0.
  static int segments_for(int ranks);

  const Communicator& comm() const noexcept { return comm_; }
  int segments() const noexcept { return nd_; }
  /// Ranks per column: (nd + 1) / 2.
  int column_size() const noexcept { return (nd_ + 1) / 2; }
  /// This rank's column c (the segment whose vector rows it owns a piece of), offset d, and row
  /// segment (c + d) mod nd.
  int column() const noexcept { return c_; }
  int offset() const noexcept { return d_; }
  int row() const noexcept { return nd_ > 0 ? (c_ + d_) % nd_ : 0; }
  /// Rank of (c, d) in comm().
  int rank_of(int c, int d) const noexcept { return c * column_size() + d; }
  /// The communicator of the ranks touching segment s, for s = column() and s = row() (the
  /// same when offset() == 0): its first column_size() ranks are column s's, in order of d (the
  /// owners of the segment's vector pieces), then the others.
  const Communicator& group(int s) const;

 private:
  Communicator comm_;
  int nd_ = 0, c_ = 0, d_ = 0;
  Communicator col_group_, row_group_;
};

}  // namespace kess::comm
