#include <kess/comm/triangular_grid.hpp>
#include <kess/core/base/error.hpp>

#include <string>

namespace kess::comm {

int TriangularGrid::segments_for(int ranks) {
  for (int nd = 1; nd * (nd + 1) / 2 <= ranks; nd += 2) {
    if (nd * (nd + 1) / 2 == ranks) return nd;
  }
  return 0;
}

TriangularGrid::TriangularGrid(const Communicator& comm) : comm_(comm) {
  constexpr const char* fn = "comm::TriangularGrid";
  comm.require_valid(fn);
  nd_ = segments_for(comm.size());
  require_arg(nd_ > 0, fn,
              std::to_string(comm.size()) +
                  " ranks: a triangular grid needs nd(nd+1)/2 ranks with nd odd (1, 6, 15, 28, ...)");
  const int h = column_size();
  c_ = comm.rank() / h;
  d_ = comm.rank() % h;
  const int r = row();
  // One split per segment: a rank joins the groups of its column and of its row segment.
  for (int s = 0; s < nd_; ++s) {
    const bool owner = c_ == s;
    const bool member = owner || (r == s && d_ > 0);
    Communicator g = comm.split(member ? 0 : -1, owner ? d_ : h - 1 + d_);
    if (owner) col_group_ = g;
    if (r == s && d_ > 0) row_group_ = g;
  }
  if (d_ == 0) row_group_ = col_group_;
}

const Communicator& TriangularGrid::group(int s) const {
  if (s == c_) return col_group_;
  require_arg(s == row(), "comm::TriangularGrid::group",
              "segment " + std::to_string(s) + " is neither this rank's column (" +
                  std::to_string(c_) + ") nor its row (" + std::to_string(row()) + ")");
  return row_group_;
}

}  // namespace kess::comm
