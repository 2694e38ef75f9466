// The distributed kess::spmm (MFDn's steps, Maris et al. 2022 §3.2): gather each segment of X the
// local part touches within its segment group, multiply the part (and its transpose) locally, and
// sum the partial products of each segment onto the ranks that own its vector rows. Host staging;
// segments are exchanged in ascending segment order on every rank, so no two groups wait on each
// other.
#pragma once

#include <kess/comm/exchange.hpp>
#include <kess/solvers/lobpcg/detail/layout.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

namespace kess::detail::lobpcg {

/// Y = H X for a distributed H; `local(Xc, Xr, Yr, Yc)` accumulates this rank's part (columns
/// segment Xc, rows segment Xr) into Yr and Yc.
template <class ExecSpace, class Local>
void spmm_distributed(const ExecSpace& exec,
                      const CsbMatrix<double, typename ExecSpace::memory_space>& H,
                      const Kokkos::View<const double**, Kokkos::LayoutRight,
                                         typename ExecSpace::memory_space>& X,
                      const VectorBlock<double, typename ExecSpace::memory_space>& Y,
                      const Local& local) {
  using Mem = typename ExecSpace::memory_space;
  using Block = VectorBlock<double, Mem>;
  using HostBlock = VectorBlock<double, Kokkos::HostSpace>;
  const CsbLayoutData& plan = *H.layout_data();
  const std::int64_t k = static_cast<std::int64_t>(X.extent(1));
  const std::size_t ng = plan.groups.size();

  // 1. Gather every segment this rank touches.
  auto hx = Kokkos::create_mirror_view(X);
  Kokkos::deep_copy(exec, hx, X);
  exec.fence();
  std::vector<Block> xs(ng), ys(ng);
  for (std::size_t g = 0; g < ng; ++g) {
    const SegmentGroup& sg = plan.groups[g];
    std::vector<std::int64_t> counts(sg.counts);
    for (auto& c : counts) c *= k;
    const bool owner = static_cast<int>(g) == plan.own_group;
    HostBlock full(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::spmm::x_segment"),
                   static_cast<std::size_t>(sg.rows), static_cast<std::size_t>(k));
    static const double none = 0;
    comm::allgatherv_doubles(sg.comm, owner ? hx.data() : &none, full.data(), counts);
    xs[g] = Block(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::spmm::x_segment"),
                  static_cast<std::size_t>(sg.rows), static_cast<std::size_t>(k));
    Kokkos::deep_copy(exec, xs[g], full);
    ys[g] = Block(Kokkos::view_alloc(exec, "kess::spmm::y_segment"),
                  static_cast<std::size_t>(sg.rows), static_cast<std::size_t>(k));
  }

  // 2. The local part: rows in the row group's segment, columns in the column group's.
  const SegmentGroup& rg = plan.groups[static_cast<std::size_t>(plan.row_group)];
  const SegmentGroup& cg = plan.groups[static_cast<std::size_t>(plan.col_group)];
  const auto rr = std::make_pair(static_cast<std::size_t>(H.row_offset() - rg.offset),
                                 static_cast<std::size_t>(H.row_offset() - rg.offset + H.part_rows()));
  const auto cr = std::make_pair(static_cast<std::size_t>(H.col_offset() - cg.offset),
                                 static_cast<std::size_t>(H.col_offset() - cg.offset + H.part_cols()));
  const auto all = Kokkos::ALL;
  using ConstBlock = Kokkos::View<const double**, Kokkos::LayoutRight, Mem>;
  ConstBlock xc = Kokkos::subview(xs[static_cast<std::size_t>(plan.col_group)], cr, all);
  ConstBlock xr = Kokkos::subview(xs[static_cast<std::size_t>(plan.row_group)], rr, all);
  local(xc, xr, Block(Kokkos::subview(ys[static_cast<std::size_t>(plan.row_group)], rr, all)),
        Block(Kokkos::subview(ys[static_cast<std::size_t>(plan.col_group)], cr, all)));

  // 3. Sum each segment's partial products onto its owners.
  HostBlock mine(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::spmm::y_piece"),
                 Y.extent(0), Y.extent(1));
  for (std::size_t g = 0; g < ng; ++g) {
    const SegmentGroup& sg = plan.groups[g];
    std::vector<std::int64_t> counts(sg.counts);
    for (auto& c : counts) c *= k;
    auto hy = Kokkos::create_mirror_view(ys[g]);
    Kokkos::deep_copy(exec, hy, ys[g]);
    exec.fence();
    const bool owner = static_cast<int>(g) == plan.own_group;
    double sink = 0;
    comm::reduce_scatter_sum(sg.comm, hy.data(), owner ? mine.data() : &sink, counts);
  }
  Kokkos::deep_copy(exec, Y, mine);
}

}  // namespace kess::detail::lobpcg
