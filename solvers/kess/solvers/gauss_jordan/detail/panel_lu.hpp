// The device panel LU of Gauss-Jordan on its own, for the tests and benchmarks that pin its leaf
// kernels: declared here, compiled in libkess (gauss_jordan/host, gauss_jordan/cuda), so that its
// device lambdas are instantiated in one translation unit.
#pragma once

#include <kess/core/kokkos/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>

namespace kess::detail::gauss_jordan {

/// Leaf width of the recursive device panel LU (columns).
constexpr int kLuLeaf = 32;

/// Which leaf kernels the device panel LU may take (the defaults are the sweep's).
struct PanelLuOptions {
  bool pipelined_leaves = true;   ///< false: the per-column kernels everywhere
  bool grid_leaves = true;        ///< CUDA: the grid leaf where it fits
  bool tournament_leaves = false; ///< CUDA: tournament pivoting in the leaves where it fits
  int grid_min_rows = 2048;       ///< leaves with fewer rows take the pipelined kernel
  int leaf = kLuLeaf;             ///< leaf width (columns)
};

/// The device panel LU with its work buffers for panels of up to `rows` x `b`: factor() turns P
/// (rows x b) into [L1; L2] \ U, uinv into U^-1 and l1 into L1 (b x b, unit diagonal), writes
/// diag(i) = u_ii and piv(i) = the row interchanged with i (0-based), and applies the
/// interchanges to rowmap; enqueued on exec, not fenced.
template <class ExecSpace>
class PanelLu {
 public:
  using Mem = typename ExecSpace::memory_space;
  PanelLu(std::int64_t rows, int b, const PanelLuOptions& opts = {});
  ~PanelLu();
  PanelLu(const PanelLu&) = delete;
  PanelLu& operator=(const PanelLu&) = delete;
  void factor(const ExecSpace& exec, const core::Matrix<ExecSpace>& P,
              const core::Matrix<ExecSpace>& uinv, const core::Matrix<ExecSpace>& l1,
              const Kokkos::View<double*, Mem>& diag, const Kokkos::View<int*, Mem>& piv,
              const Kokkos::View<int*, Mem>& rowmap);

 private:
  struct Work;
  std::unique_ptr<Work> work_;
};

}  // namespace kess::detail::gauss_jordan
