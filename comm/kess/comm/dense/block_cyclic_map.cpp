#include <kess/comm/dense/block_cyclic_map.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/base/error.hpp>

#include <algorithm>
#include <limits>
#include <string>

namespace kess::comm {
namespace {

constexpr std::int64_t int_max = std::numeric_limits<int>::max();

std::string str(std::int64_t v) { return std::to_string(v); }

GridPosition position_of(const ProcessGrid& grid) {
  return {grid.nprow(), grid.npcol(), grid.myrow(), grid.mycol()};
}

}  // namespace

BlockCyclicMap::BlockCyclicMap(std::int64_t m, std::int64_t n, int mb, int nb,
                               const GridPosition& where, int rsrc, int csrc, int lld,
                               int context) {
  constexpr const char* fn = "comm::BlockCyclicMap";
  require_arg(m >= 0 && n >= 0, fn, "m = " + str(m) + " and n = " + str(n) + " must be >= 0");
  require_arg(mb >= 1 && nb >= 1, fn,
              "block sizes mb = " + str(mb) + " and nb = " + str(nb) + " must be >= 1");
  require_arg(where.nprow >= 1 && where.npcol >= 1, fn,
              "process grid " + str(where.nprow) + " x " + str(where.npcol) + " is empty");
  require_arg(where.myrow >= 0 && where.myrow < where.nprow && where.mycol >= 0 &&
                  where.mycol < where.npcol,
              fn,
              "process (" + str(where.myrow) + ", " + str(where.mycol) + ") lies outside the " +
                  str(where.nprow) + " x " + str(where.npcol) + " grid");
  require_arg(rsrc >= 0 && rsrc < where.nprow, fn,
              "rsrc = " + str(rsrc) + " must lie in [0, nprow = " + str(where.nprow) + ")");
  require_arg(csrc >= 0 && csrc < where.npcol, fn,
              "csrc = " + str(csrc) + " must lie in [0, npcol = " + str(where.npcol) + ")");
  // The largest local part is on the source process: ceil(m / mb / nprow) blocks at most.
  const std::int64_t max_rows = ((m + mb - 1) / mb + where.nprow - 1) / where.nprow * mb;
  const std::int64_t max_cols = ((n + nb - 1) / nb + where.npcol - 1) / where.npcol * nb;
  require_arg(max_rows <= int_max && max_cols <= int_max, fn,
              "local parts of the " + str(m) + " x " + str(n) +
                  " matrix would exceed an int (local indices are int)");
  m_ = m;
  n_ = n;
  mb_ = mb;
  nb_ = nb;
  where_ = where;
  rsrc_ = rsrc;
  csrc_ = csrc;
  context_ = context;
  local_rows_ = numroc(m, mb, where.myrow, rsrc, where.nprow);
  local_cols_ = numroc(n, nb, where.mycol, csrc, where.npcol);
  const int min_lld = std::max(1, local_rows_);
  if (lld < 0) lld = min_lld;
  require_arg(lld >= min_lld, fn,
              "lld = " + str(lld) + " is below max(1, local rows) = " + str(min_lld));
  lld_ = lld;
}

BlockCyclicMap::BlockCyclicMap(const ProcessGrid& grid, std::int64_t m, std::int64_t n, int mb,
                               int nb, int rsrc, int csrc, int lld, int context)
    : BlockCyclicMap(m, n, mb, nb, position_of(grid), rsrc, csrc, lld, context) {}

BlockCyclicMap BlockCyclicMap::from_descriptor(const Descriptor& desc, const GridPosition& where) {
  require_arg(desc[Desc::dtype] == 1, "comm::BlockCyclicMap::from_descriptor",
              "desc[DTYPE_] = " + str(desc[Desc::dtype]) +
                  " is not 1 (only dense block-cyclic descriptors are supported)");
  return BlockCyclicMap(desc[Desc::m], desc[Desc::n], desc[Desc::mb], desc[Desc::nb], where,
                        desc[Desc::rsrc], desc[Desc::csrc],
                        desc[Desc::lld] < 0 ? 0 : desc[Desc::lld], desc[Desc::ctxt]);
}

BlockCyclicMap BlockCyclicMap::from_descriptor(const Descriptor& desc, const ProcessGrid& grid) {
  return from_descriptor(desc, position_of(grid));
}

Descriptor BlockCyclicMap::descriptor() const {
  require_arg(m_ <= int_max && n_ <= int_max, "comm::BlockCyclicMap::descriptor",
              "m = " + str(m_) + " or n = " + str(n_) + " exceeds a ScaLAPACK descriptor's int");
  return {1, context_, static_cast<int>(m_), static_cast<int>(n_), mb_, nb_, rsrc_, csrc_, lld_};
}

}  // namespace kess::comm
