// Where the stored triangle of a CsbMatrix and its vectors sit over the ranks of a communicator
// (CsbLayout): the part of the triangle each rank holds, its row segment of the vectors, and the
// groups of ranks that exchange vector segments in a distributed spmm.
#pragma once

#include <kess/comm/communicator.hpp>
#include <kess/solvers/lobpcg.hpp>

#include <cstdint>
#include <vector>

namespace kess::detail::lobpcg {

/// One rank's share: global rows [row_offset, +part_rows) x columns [col_offset, +part_cols) of
/// the triangle, and vector rows [vec_offset, +vec_rows).
struct PartGeometry {
  std::int64_t row_offset = 0, col_offset = 0, part_rows = 0, part_cols = 0;
  std::int64_t vec_offset = 0, vec_rows = 0;
};

/// The placement of a triangle of order n over `ranks` processes; the same on every rank.
///  - triangular (ranks = nd(nd+1)/2, nd odd; comm::TriangularGrid): nd segments of equal rows;
///    rank (c, d) holds the entries between segments c + d mod nd and c, and owns piece d of
///    segment c's vector rows (each segment cut into (nd+1)/2 equal pieces).
///  - general (any ranks): rows cut into `ranks` segments of about equal stored entries; rank q
///    holds the stored rows of segment q (columns 0 .. its end) and owns segment q's vector rows.
class Placement {
 public:
  /// row_nnz: stored (lower-triangle) entries of each row, the same on every rank (balances the
  /// general layout). `layout` automatic resolves here.
  static Placement make(std::int64_t n, CsbLayout layout, int ranks,
                        const std::vector<std::int64_t>& row_nnz);
  CsbLayout layout() const noexcept { return layout_; }
  int ranks() const noexcept { return static_cast<int>(parts_.size()); }
  /// The rank that stores lower-triangle entry (i, j), i >= j.
  int owner(std::int64_t i, std::int64_t j) const;
  const PartGeometry& part(int rank) const { return parts_[static_cast<std::size_t>(rank)]; }
  /// Segment boundaries: segments() + 1 global rows.
  const std::vector<std::int64_t>& segment_bounds() const noexcept { return seg_; }
  int segments() const noexcept { return static_cast<int>(seg_.size()) - 1; }
  int segment_of(std::int64_t i) const;

 private:
  CsbLayout layout_ = CsbLayout::general;
  std::int64_t n_ = 0;
  int nd_ = 1;  ///< triangular: segments
  std::vector<PartGeometry> parts_;
  std::vector<std::int64_t> seg_;
};

/// The ranks that gather one segment of the vectors and sum its partial products.
struct SegmentGroup {
  comm::Communicator comm;
  std::int64_t offset = 0;  ///< first global row of the segment
  std::int64_t rows = 0;
  std::vector<std::int64_t> counts;  ///< vector rows each member owns (0: not an owner)
  int segment = 0;                   ///< global segment number (collectives go in this order)
};

/// A distributed CsbMatrix's exchange plan (null on one rank): one or two segment groups, in
/// ascending segment order; the part's rows lie in groups[row_group], its columns in
/// groups[col_group]; this rank's vector rows are its piece of groups[own_group].
struct CsbLayoutData {
  std::vector<SegmentGroup> groups;
  int row_group = 0, col_group = 0, own_group = 0;
};

/// Collective over comm (size > 1): the exchange plan of this rank's part.
std::shared_ptr<CsbLayoutData> make_layout_data(const Placement& placement,
                                                const comm::Communicator& comm);

}  // namespace kess::detail::lobpcg
