// Placement of the stored triangle over ranks (CsbLayout) and the segment groups of the
// distributed spmm.
#include <kess/comm/triangular_grid.hpp>
#include <kess/core/base/error.hpp>
#include <kess/solvers/lobpcg/detail/layout.hpp>

#include <algorithm>
#include <string>

namespace kess::detail::lobpcg {
namespace {

// Bounds of `parts` near-equal pieces of [lo, hi).
std::vector<std::int64_t> even_cuts(std::int64_t lo, std::int64_t hi, int parts) {
  std::vector<std::int64_t> b(static_cast<std::size_t>(parts) + 1);
  const std::int64_t len = hi - lo;
  for (int p = 0; p <= parts; ++p) b[static_cast<std::size_t>(p)] = lo + len * p / parts;
  return b;
}

}  // namespace

Placement Placement::make(std::int64_t n, CsbLayout layout, int ranks,
                          const std::vector<std::int64_t>& row_nnz) {
  constexpr const char* fn = "CsbMatrix";
  require_arg(ranks >= 1, fn, "no ranks");
  const int nd = comm::TriangularGrid::segments_for(ranks);
  if (layout == CsbLayout::automatic) {
    layout = (ranks > 1 && nd > 0) ? CsbLayout::triangular : CsbLayout::general;
  }
  require_arg(layout != CsbLayout::triangular || nd > 0, fn,
              "layout triangular needs nd(nd+1)/2 ranks with nd odd (1, 6, 15, ...), not " +
                  std::to_string(ranks));
  Placement p;
  p.layout_ = layout;
  p.n_ = n;
  p.parts_.resize(static_cast<std::size_t>(ranks));
  if (layout == CsbLayout::triangular) {
    p.nd_ = nd;
    p.seg_ = even_cuts(0, n, nd);
    const int h = (nd + 1) / 2;
    for (int c = 0; c < nd; ++c) {
      const auto pieces = even_cuts(p.seg_[c], p.seg_[c + 1], h);
      for (int d = 0; d < h; ++d) {
        const int r = (c + d) % nd;
        const int hi = std::max(r, c), lo = std::min(r, c);
        PartGeometry& g = p.parts_[static_cast<std::size_t>(c * h + d)];
        g.row_offset = p.seg_[hi];
        g.part_rows = p.seg_[hi + 1] - p.seg_[hi];
        g.col_offset = p.seg_[lo];
        g.part_cols = p.seg_[lo + 1] - p.seg_[lo];
        g.vec_offset = pieces[d];
        g.vec_rows = pieces[d + 1] - pieces[d];
      }
    }
    return p;
  }
  // general: cut the rows where the running stored count passes q/ranks of the total.
  require_arg(ranks == 1 || static_cast<std::int64_t>(row_nnz.size()) == n, fn,
              "row counts do not match n");
  p.seg_.assign(static_cast<std::size_t>(ranks) + 1, n);
  p.seg_[0] = 0;
  std::int64_t total = 0;
  for (auto c : row_nnz) total += c;
  if (ranks > 1 && total == 0) {
    p.seg_ = even_cuts(0, n, ranks);
  } else if (ranks > 1) {
    std::int64_t run = 0;
    int q = 1;
    for (std::int64_t i = 0; i < n && q < ranks; ++i) {
      run += row_nnz[static_cast<std::size_t>(i)];
      while (q < ranks && run * ranks >= total * q) p.seg_[static_cast<std::size_t>(q++)] = i + 1;
    }
  }
  for (int q = 0; q < ranks; ++q) {
    PartGeometry& g = p.parts_[static_cast<std::size_t>(q)];
    const std::int64_t end = p.seg_[static_cast<std::size_t>(q) + 1];
    g.row_offset = g.col_offset = 0;
    g.part_rows = g.part_cols = end;
    g.vec_offset = p.seg_[static_cast<std::size_t>(q)];
    g.vec_rows = end - g.vec_offset;
  }
  return p;
}

int Placement::segment_of(std::int64_t i) const {
  auto it = std::upper_bound(seg_.begin(), seg_.end(), i);
  return static_cast<int>(it - seg_.begin()) - 1;
}

int Placement::owner(std::int64_t i, std::int64_t j) const {
  if (parts_.size() == 1) return 0;
  if (layout_ == CsbLayout::general) return segment_of(i);
  const int I = segment_of(i), J = segment_of(j);  // I >= J
  const int h = (nd_ + 1) / 2;
  const int delta = I - J;
  if (delta < h) return J * h + delta;  // (c, d) = (J, I - J)
  return I * h + (nd_ - delta);         // (c, d) = (I, nd - (I - J)): row segment J
}

std::shared_ptr<CsbLayoutData> make_layout_data(const Placement& placement,
                                                const comm::Communicator& comm) {
  auto data = std::make_shared<CsbLayoutData>();
  const int ranks = comm.size();
  const auto& seg = placement.segment_bounds();
  if (placement.layout() == CsbLayout::general) {
    SegmentGroup g;
    g.comm = comm;
    g.offset = 0;
    g.rows = seg.back();
    for (int q = 0; q < ranks; ++q) g.counts.push_back(placement.part(q).vec_rows);
    data->groups.push_back(std::move(g));
    return data;
  }
  comm::TriangularGrid grid(comm);
  const int h = grid.column_size(), nd = grid.segments();
  auto group_of = [&](int s) {
    SegmentGroup g;
    g.comm = grid.group(s);
    g.segment = s;
    g.offset = seg[static_cast<std::size_t>(s)];
    g.rows = seg[static_cast<std::size_t>(s) + 1] - g.offset;
    g.counts.assign(static_cast<std::size_t>(nd), 0);
    for (int d = 0; d < h; ++d) g.counts[static_cast<std::size_t>(d)] = placement.part(s * h + d).vec_rows;
    return g;
  };
  const int c = grid.column(), r = grid.row();
  data->groups.push_back(group_of(std::min(r, c)));
  if (r != c) data->groups.push_back(group_of(std::max(r, c)));
  const int col_i = 0, row_i = static_cast<int>(data->groups.size()) - 1;  // part: rows max, cols min
  data->row_group = row_i;
  data->col_group = col_i;
  data->own_group = (c == std::min(r, c)) ? col_i : row_i;
  return data;
}

}  // namespace kess::detail::lobpcg
