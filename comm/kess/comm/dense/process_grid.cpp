#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/base/error.hpp>

#include <string>

namespace kess::comm {

ProcessGrid::ProcessGrid(const Communicator& comm, int nprow, int npcol) {
  constexpr const char* fn = "comm::ProcessGrid";
  comm.require_valid(fn);
  require_arg(nprow >= 1 && npcol >= 1, fn,
              "nprow = " + std::to_string(nprow) + " and npcol = " + std::to_string(npcol) +
                  " must both be >= 1");
  require_arg(static_cast<long long>(nprow) * npcol == comm.size(), fn,
              "nprow * npcol = " + std::to_string(nprow) + " * " + std::to_string(npcol) + " = " +
                  std::to_string(static_cast<long long>(nprow) * npcol) +
                  " differs from the communicator size " + std::to_string(comm.size()));
  comm_ = comm;
  nprow_ = nprow;
  npcol_ = npcol;
  myrow_ = row_of(comm.rank());
  mycol_ = col_of(comm.rank());
  row_comm_ = comm.split(myrow_, mycol_);
  col_comm_ = comm.split(mycol_, myrow_);
}

std::pair<int, int> ProcessGrid::squarest_shape(int nprocs) {
  require_arg(nprocs >= 1, "comm::ProcessGrid::squarest_shape",
              "nprocs = " + std::to_string(nprocs) + " must be >= 1");
  int nprow = 1;
  for (int r = 1; static_cast<long long>(r) * r <= nprocs; ++r) {
    if (nprocs % r == 0) nprow = r;
  }
  return {nprow, nprocs / nprow};
}

ProcessGrid ProcessGrid::squarest(const Communicator& comm) {
  comm.require_valid("comm::ProcessGrid::squarest");
  auto [nprow, npcol] = squarest_shape(comm.size());
  return ProcessGrid(comm, nprow, npcol);
}

}  // namespace kess::comm
