// The index pass of kess::multiply (host): which block products one panel step computes, grouped
// into runs (all products of one C block, in k order), and C's pattern after the step.
#pragma once

#include <cstdint>
#include <vector>

namespace kess::detail::block_sparse {

/// Blocks grouped by row: panel row r (global block row row_ids[r]) holds blocks
/// [ptr[r], ptr[r + 1]) with global block columns col[], value offsets off[] and norms norm[].
struct PanelIndex {
  std::vector<int> row_ids;
  std::vector<std::int64_t> ptr{0};
  std::vector<int> col;
  std::vector<std::int64_t> off;
  std::vector<double> norm;

  std::int64_t blocks() const noexcept { return static_cast<std::int64_t>(col.size()); }
};

/// One step's products: A panel rows are C's local rows (same order); B panel rows are global
/// inner block indices k.
struct StackInput {
  const PanelIndex* a = nullptr;
  const PanelIndex* b = nullptr;
  int inner_blocks = 0;            ///< number of inner block indices k
  const int* row_sizes = nullptr;  ///< m of each global block row of C
  const int* inner_sizes = nullptr;
  const int* col_sizes = nullptr;
  const int* local_col_of = nullptr;  ///< C's local column of each global block column (-1: not mine)
  int local_cols = 0;
  /// C's current pattern (local rows, ascending columns, offsets with a final total).
  const std::vector<std::int64_t>* c_row_ptr = nullptr;
  const std::vector<int>* c_cols = nullptr;
  const std::vector<std::int64_t>* c_offsets = nullptr;
  /// Per C local row, t = float(eps) / float(n_i) (0: no filter). As DBCSR does it, a product is
  /// skipped iff float(||A_ik||^2) float(||B_kj||^2) < t t, in single precision.
  const std::vector<double>* threshold = nullptr;
  bool retain_sparsity = false;
  int threads = 0;  ///< host threads (0: automatic)
};

struct Stack {
  /// C's pattern after the step; c_old[b]: the block's index before the step, -1 when new.
  std::vector<std::int64_t> c_row_ptr;
  std::vector<int> c_cols;
  std::vector<std::int64_t> c_offsets;
  std::vector<std::int64_t> c_old;
  bool grew = false;
  /// Runs: run r adds products [run_begin[r], run_begin[r + 1]) into the run_m x run_n block at
  /// run_c[r] (offset in C's values after the step).
  std::vector<std::int64_t> run_c, run_begin{0};
  std::vector<int> run_m, run_n;
  /// Products: A block at a_off (m x k), B block at b_off (k x n).
  std::vector<std::int64_t> a_off, b_off;
  std::vector<int> k;
  std::int64_t flops = 0, products = 0, skipped = 0;

  std::int64_t runs() const noexcept { return static_cast<std::int64_t>(run_c.size()); }
};

Stack build_stack(const StackInput& in);

/// Host stack kernel: for every run, C_run += alpha * sum of its products (one thread per run).
void host_stack_multiply(const Stack& s, const double* a, const double* b, double* c, double alpha,
                         int threads);

}  // namespace kess::detail::block_sparse
