// kess::BlockSparseMatrix and kess::multiply — block-sparse matrices of small dense blocks and
// their filtered multiplication (DBCSR style, Schütt et al. 2016, docs/references.md), on one rank
// or distributed over a 2D process grid, with the operations the linear-scaling iterations need.
//
// The bodies are compiled once into libkess for each enabled execution space
// (solvers/kess/solvers/block_sparse/); this header declares them. docs/api/block_sparse.md and
// docs/design/block_sparse.md describe the API and the algorithm.
#pragma once

#include <kess/comm/dense/process_grid.hpp>
#include <kess/core/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kess {

/// The block sizes of a block-sparse matrix's rows and columns and the process that owns each
/// block: block (i, j) lives on grid process (row_dist[i], col_dist[j]), as DBCSR's
/// row_dist/col_dist. Copies share the (immutable) description.
class BlockDistribution {
 public:
  /// No blocks, no grid.
  BlockDistribution() = default;
  /// Collective over grid.comm(): sizes >= 1, 0 <= row_dist[i] < nprow, 0 <= col_dist[j] < npcol,
  /// the same vectors on every rank; otherwise kess::Error (invalid_argument) on every rank.
  BlockDistribution(const comm::ProcessGrid& grid, std::vector<int> row_sizes,
                    std::vector<int> col_sizes, std::vector<int> row_dist,
                    std::vector<int> col_dist);
  /// Round-robin placement: row_dist[i] = i mod nprow, col_dist[j] = j mod npcol.
  BlockDistribution(const comm::ProcessGrid& grid, std::vector<int> row_sizes,
                    std::vector<int> col_sizes);
  /// This process alone (a 1 x 1 grid on comm::Communicator::self()).
  BlockDistribution(std::vector<int> row_sizes, std::vector<int> col_sizes);

  bool empty() const noexcept { return d_ == nullptr; }
  const comm::ProcessGrid& grid() const;
  int block_rows() const;
  int block_cols() const;
  /// Scalar rows and columns (sums of the block sizes).
  std::int64_t rows() const;
  std::int64_t cols() const;
  const std::vector<int>& row_sizes() const;
  const std::vector<int>& col_sizes() const;
  const std::vector<int>& row_dist() const;
  const std::vector<int>& col_dist() const;
  /// First scalar row (column) of block row i (block column j); index block_rows() gives rows().
  const std::vector<std::int64_t>& row_offsets() const;
  const std::vector<std::int64_t>& col_offsets() const;
  /// This process's block rows (columns), ascending.
  const std::vector<int>& local_rows() const;
  const std::vector<int>& local_cols() const;
  /// Position of block row i in local_rows(), -1 when another process row owns it.
  int local_row(int i) const;
  int local_col(int j) const;
  /// Same grid (communicator), block sizes and placement.
  bool operator==(const BlockDistribution& o) const;
  bool operator!=(const BlockDistribution& o) const { return !(*this == o); }

  struct Data;  ///< defined in block_sparse/host/distribution.cpp

 private:
  std::shared_ptr<const Data> d_;
};

/// A block-sparse matrix: blocked CSR over this process's block rows (BlockDistribution), each
/// block's values contiguous and column-major in one View of `MemorySpace`, the Frobenius norm of
/// each block kept on the host. The index (row pointers, block columns, offsets) lives on the
/// host; the values on the execution space's memory.
template <class T = double, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
class BlockSparseMatrix {
 public:
  using value_type = T;
  using memory_space = MemorySpace;
  using values_view = Kokkos::View<T*, MemorySpace>;

  /// No distribution, no blocks.
  BlockSparseMatrix() = default;
  /// No blocks.
  explicit BlockSparseMatrix(const BlockDistribution& dist);

  /// Collective: a matrix holding the blocks that the ranks list (any rank may list any block:
  /// each goes to its owner). rows[b], cols[b]: block coordinates of block b; its
  /// row_sizes[rows[b]] x col_sizes[cols[b]] values follow each other in `values`, column-major,
  /// in the order of the list. Out-of-range coordinates, a values length that does not match,
  /// a block listed twice, NaN or Inf: kess::Error on every rank.
  static BlockSparseMatrix from_blocks(const BlockDistribution& dist, const std::vector<int>& rows,
                                       const std::vector<int>& cols,
                                       const std::vector<T>& values);
  /// Collective: every rank passes the same dense rows() x cols() column-major host matrix
  /// (leading dimension lda); each block with an entry of magnitude > `drop` is stored.
  static BlockSparseMatrix from_dense(const BlockDistribution& dist, const T* a, std::int64_t lda,
                                      double drop = 0);
  /// Collective: rank 0 reads a Matrix Market coordinate file (symmetric files are expanded); a
  /// block exists when any of its entries is listed (an explicit zero too). The file's size must
  /// be dist.rows() x dist.cols().
  static BlockSparseMatrix read_matrix_market(const BlockDistribution& dist,
                                              const std::string& path);
  /// Collective: the whole matrix, dense and column-major (leading dimension rows()), on every
  /// rank.
  std::vector<T> to_dense() const;
  /// Collective: rank 0 writes a `coordinate real general` file listing every entry of every block
  /// (by block row, block column, then column-major inside the block); all or nothing.
  void write_matrix_market(const std::string& path) const;

  const BlockDistribution& distribution() const noexcept { return dist_; }
  /// Blocks on this process.
  std::int64_t local_blocks() const noexcept { return static_cast<std::int64_t>(col_.size()); }
  /// Collective: blocks on all processes.
  std::int64_t blocks() const;
  /// Collective: blocks() / (block_rows() * block_cols()).
  double occupancy() const;

  /// Local index: the blocks of local block row l (dist.local_rows()[l]) are
  /// [row_ptr()[l], row_ptr()[l + 1]), ascending in block column.
  const std::vector<std::int64_t>& row_ptr() const noexcept { return row_ptr_; }
  /// Global block column of each local block.
  const std::vector<int>& col_index() const noexcept { return col_; }
  /// Offset in values() of each local block; local_blocks() + 1 entries (the last: values().size()).
  const std::vector<std::int64_t>& offsets() const noexcept { return offset_; }
  /// Frobenius norm of each local block.
  const std::vector<double>& norms() const noexcept { return norm_; }
  const values_view& values() const noexcept { return values_; }
  /// Local index of block (i, j) (i and j global), -1 when this process does not hold it.
  std::int64_t find(int i, int j) const;

  /// Low-level: replaces the local part (used by kess's operations; the caller keeps the index
  /// consistent: row_ptr over local rows, columns ascending and local, offsets by block sizes).
  void assign(std::vector<std::int64_t> row_ptr, std::vector<int> cols,
              std::vector<std::int64_t> offsets, values_view values, std::vector<double> norms);

 private:
  BlockDistribution dist_;
  std::vector<std::int64_t> row_ptr_;
  std::vector<int> col_;
  std::vector<std::int64_t> offset_{0};
  std::vector<double> norm_;
  values_view values_;
};

/// What kess::multiply computes and how.
struct BlockMultiplyOptions {
  /// Filtering (DBCSR's semantics): a block product A_ik B_kj is skipped iff
  /// ||A_ik||_F ||B_kj||_F < filter_eps / n_i, n_i the number of blocks of block row i of A (of
  /// op(A)); after the multiply a block of C with ||C_ij||_F < filter_eps is dropped (unless
  /// retain_sparsity). Each C block then errs by at most 2 filter_eps in Frobenius norm. 0: exact.
  /// The product test runs as DBCSR 2.5 runs it, in single precision on squared norms
  /// (float(||A_ik||^2) float(||B_kj||^2) < t^2, t = float(eps) / float(n_i)), so that kess skips
  /// the same products as DBCSR even next to the threshold.
  double filter_eps = 0;
  /// C keeps exactly its sparsity pattern: products into absent blocks are skipped.
  bool retain_sparsity = false;
  /// Multiply by the transpose of A (of B).
  bool transpose_a = false;
  bool transpose_b = false;
};

/// What a multiply did (collective totals), for benchmarks and iterations.
struct BlockMultiplyStats {
  std::int64_t flops = 0;     ///< sum of 2 m n k over the block products computed
  std::int64_t products = 0;  ///< block products computed
  std::int64_t skipped = 0;   ///< block products skipped by the filter
  std::int64_t c_blocks = 0;  ///< blocks of C after the multiply
  int steps = 0;              ///< panel steps (Cannon's shifts; 1 for a gathered multiply)
  double seconds_index = 0;   ///< this rank: index passes (stacks, C's pattern, filtering)
  double seconds_kernel = 0;  ///< this rank: stack kernels (fenced)
  double seconds_comm = 0;    ///< this rank: panel exchanges
};

/// Collective over the grid: C = alpha op(A) op(B) + beta C with filtering (BlockMultiplyOptions).
/// The block sizes must chain (op(A)'s column sizes = op(B)'s row sizes, C's = op(A)'s rows and
/// op(B)'s columns) and C's row (column) placement must be op(A)'s rows (op(B)'s columns); A and B
/// may be placed anyhow otherwise (kess moves their panels: Cannon's shifts on square grids, gathers
/// along process rows and columns on others). C may not be A or B. Each C block sums its products
/// in one thread (team) in a fixed order: the result does not depend on timing. Returns the flop
/// count (sum of 2 m n k over the products computed, all ranks).
template <class ExecSpace>
std::int64_t multiply(const ExecSpace& exec, double alpha,
                      const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
                      const BlockSparseMatrix<double, typename ExecSpace::memory_space>& B,
                      double beta, BlockSparseMatrix<double, typename ExecSpace::memory_space>& C,
                      const BlockMultiplyOptions& opts = {}, BlockMultiplyStats* stats = nullptr);

/// B = alpha A + beta B (B's pattern becomes the union); A and B on the same distribution.
template <class ExecSpace>
void add(const ExecSpace& exec, double alpha,
         const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A, double beta,
         BlockSparseMatrix<double, typename ExecSpace::memory_space>& B);

/// A = alpha A.
template <class ExecSpace>
void scale(const ExecSpace& exec, BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
           double alpha);

/// A = A + alpha I (diagonal blocks created where absent); square blocks on the diagonal
/// (row_sizes == col_sizes) and the same row and column placement required.
template <class ExecSpace>
void add_identity(const ExecSpace& exec,
                  BlockSparseMatrix<double, typename ExecSpace::memory_space>& A, double alpha);

/// Collective: the sum of the diagonal (row_sizes == col_sizes required).
template <class ExecSpace>
double trace(const ExecSpace& exec,
             const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A);

/// Collective: sum of a_ij b_ij (the trace of A^T B); same distribution.
template <class ExecSpace>
double dot(const ExecSpace& exec,
           const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
           const BlockSparseMatrix<double, typename ExecSpace::memory_space>& B);

/// Collective: the Frobenius norm (from the block norms, without overflow or underflow).
template <class ExecSpace>
double norm(const ExecSpace& exec,
            const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A);

/// Drops the blocks with ||A_ij||_F < eps.
template <class ExecSpace>
void filter(const ExecSpace& exec, BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
            double eps);

/// Collective: A^T on `dist` (its rows A's columns and vice versa); an empty `dist` takes A's
/// placement swapped on square grids and round-robin placement on others.
template <class ExecSpace>
BlockSparseMatrix<double, typename ExecSpace::memory_space> transpose(
    const ExecSpace& exec, const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
    const BlockDistribution& dist = {});

/// Collective: A's blocks moved to `dist` (same block sizes, any placement on the same grid).
template <class ExecSpace>
BlockSparseMatrix<double, typename ExecSpace::memory_space> redistribute(
    const ExecSpace& exec, const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
    const BlockDistribution& dist);

/// The identity on `dist` (square diagonal blocks required), scaled by alpha.
template <class ExecSpace>
BlockSparseMatrix<double, typename ExecSpace::memory_space> identity(
    const ExecSpace& exec, const BlockDistribution& dist, double alpha = 1);

// ---- Iterations on top of the multiply ---------------------------------------------------------
// Sign, inverse square root and density matrix of block-sparse matrices, built from the operations
// above only (bodies in block_sparse/detail/iterations_impl.hpp, instantiated in libkess);
// docs/api/block_sparse_iterations.md. All collective over the matrix's process grid, with the same
// decisions on every rank (they depend on collective norms, traces and dots only).

/// An upper bound of the spectral radius, from the block Frobenius norms N_ij = ||A_ij||_F:
/// gershgorin sqrt(max_i sum_j N_ij * max_j sum_i N_ij) (>= ||N||_2 >= ||A||_2), frobenius ||A||_F.
enum class BlockNormBound { gershgorin, frobenius };

template <>
struct EnumNames<BlockNormBound> {
  static constexpr const char* what = "block norm bound";
  static constexpr EnumName<BlockNormBound> names[] = {{BlockNormBound::gershgorin, "gershgorin"},
                                                       {BlockNormBound::frobenius, "frobenius"}};
};

/// The record of an iteration: one entry per step, in order.
struct BlockIterationHistory {
  int iterations = 0;  ///< matrix updates done (the last one after the test passed)
  bool converged = false;
  std::vector<double> residual;     ///< the stopping test's value before each update
  std::vector<std::int64_t> flops;  ///< the multiplies' flops of each update (test included)
  std::vector<double> occupancy;    ///< the iterate's occupancy after each update
  std::int64_t total_flops() const {
    std::int64_t s = 0;
    for (auto f : flops) s += f;
    return s;
  }
};

/// kess::sign for block-sparse matrices (Newton-Schulz).
struct BlockSignOptions {
  /// Every multiply's filter (BlockMultiplyOptions::filter_eps); 0: exact.
  double filter_eps = 0;
  /// Stop when ||I - X^2||_F / ||X^2||_F < tol; 0: sqrt(filter_eps), or 1e-8 when filter_eps = 0.
  double tol = 0;
  int max_iterations = 100;
  /// X_0 = A / bound.
  BlockNormBound bound = BlockNormBound::gershgorin;
};

template <class MemorySpace>
struct BlockSignResult {
  BlockSparseMatrix<double, MemorySpace> X;  ///< sign(A)
  double scale = 0;                          ///< the bound A was divided by
  BlockIterationHistory history;
};

/// Collective: sign(A) by Newton-Schulz, X <- 1/2 X (3I - X^2) from X_0 = A / bound, every
/// multiply filtered by opts.filter_eps. For A with real spectrum away from 0 (symmetric A: any
/// nonsingular one). The test runs on X_k before step k; once it passes, that step is still taken
/// (its residual is about the square). Errors: invalid_argument (non-square blocks, bad options,
/// A = 0), no_convergence (max_iterations; the message gives the last residual).
template <class ExecSpace>
BlockSignResult<typename ExecSpace::memory_space> sign(
    const ExecSpace& exec, const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
    const BlockSignOptions& opts = {});

/// kess::inverse_sqrt: the coupled Newton-Schulz iteration.
struct BlockInverseSqrtOptions {
  double filter_eps = 0;
  /// Stop when ||I - Z_k Y_k||_F / ||Z_k Y_k||_F < tol; 0: as BlockSignOptions::tol.
  double tol = 0;
  int max_iterations = 100;
  /// 2: T = (3I - X) / 2; 3: T = (15I - 10X + 3X^2) / 8 (X = Z_k Y_k).
  int order = 2;
  /// S is divided by this upper bound of its spectrum first.
  BlockNormBound bound = BlockNormBound::gershgorin;
};

template <class MemorySpace>
struct BlockInverseSqrtResult {
  BlockSparseMatrix<double, MemorySpace> inv_sqrt;  ///< S^-1/2
  BlockSparseMatrix<double, MemorySpace> sqrt;      ///< S^1/2
  double scale = 0;                                 ///< the bound S was divided by
  BlockIterationHistory history;
};

/// Collective: S^-1/2 and S^1/2 of a symmetric positive definite S by the coupled Newton-Schulz
/// iteration Y_0 = S / bound, Z_0 = I, Y <- Y T, Z <- T Z (orders 2 and 3, filtered multiplies).
/// Errors: invalid_argument (non-square blocks, order not 2 or 3, bad options), not_symmetric,
/// not_positive_definite (the iteration diverges: ||I - Z Y||_F grows past 1, or a trace <= 0),
/// no_convergence (max_iterations; S singular or very ill-conditioned).
template <class ExecSpace>
BlockInverseSqrtResult<typename ExecSpace::memory_space> inverse_sqrt(
    const ExecSpace& exec, const BlockSparseMatrix<double, typename ExecSpace::memory_space>& S,
    const BlockInverseSqrtOptions& opts = {});

/// kess::extremal_eigenvalues: Lanczos on a symmetric matrix.
struct BlockLanczosOptions {
  int max_steps = 48;  ///< matrix-vector products at most
  /// Stop when both extreme Ritz pairs' residuals are below tol * (max - min).
  double tol = 1e-3;
  unsigned seed = 1;  ///< of the start vector (the same on every rank)
};

struct BlockSpectrumEstimate {
  double min = 0, max = 0;                    ///< the extreme Ritz values
  double min_residual = 0, max_residual = 0;  ///< |beta_m s_mi|: an eigenvalue lies that close
  int steps = 0;                              ///< matrix-vector products
  std::int64_t flops = 0;
  /// Estimated bounds: the Ritz values widened by their residuals.
  double lower() const { return min - min_residual; }
  double upper() const { return max + max_residual; }
};

/// Collective: the extreme eigenvalues of a symmetric A by Lanczos (three-term recurrence with
/// local reorthogonalization); the vectors are block-sparse matrices of one block column on A's
/// row placement, so they stay distributed. Ritz values lie inside the spectrum.
template <class ExecSpace>
BlockSpectrumEstimate extremal_eigenvalues(
    const ExecSpace& exec, const BlockSparseMatrix<double, typename ExecSpace::memory_space>& A,
    const BlockLanczosOptions& opts = {});

/// How kess::density_matrix finds the projector.
enum class DensityMethod {
  sign,  ///< 1/2 (I - sign(K - mu I)), mu by bisection on Tr(PS)
  trs4,  ///< Niklasson's trace-resetting 4th-order purification (2002)
};

template <>
struct EnumNames<DensityMethod> {
  static constexpr const char* what = "density matrix method";
  static constexpr EnumName<DensityMethod> names[] = {{DensityMethod::sign, "sign"},
                                                      {DensityMethod::trs4, "trs4"}};
};

struct BlockDensityOptions {
  DensityMethod method = DensityMethod::sign;
  /// Every multiply's filter (S^-1/2, K, the sign or TRS4 steps, P).
  double filter_eps = 0;
  /// The sign's and TRS4's stopping threshold (0: sqrt(filter_eps), or 1e-8 at filter_eps 0).
  double tol = 0;
  int max_iterations = 100;  ///< per sign or TRS4 run
  int sqrt_order = 3;        ///< of the S^-1/2 iteration
  /// Lanczos on K = S^-1/2 H S^-1/2 for the spectrum's ends (TRS4's scaling, sign's bracket).
  BlockLanczosOptions lanczos{};
  /// sign: the bracket of mu when mu_min < mu_max (both ends are evaluated and must bracket N);
  /// otherwise (the default, both 0) the Lanczos bounds of K widened by 1%.
  double mu_min = 0;
  double mu_max = 0;
  /// sign: bisection stops without a mu when the bracket is narrower than this times its width.
  double mu_rel_tol = 1e-8;
};

template <class MemorySpace>
struct BlockDensityResult {
  BlockSparseMatrix<double, MemorySpace> P;  ///< the density matrix
  double mu = 0;                             ///< chemical potential (between HOMO and LUMO)
  double trace_ps = 0;                       ///< Tr(PS)
  double idempotency = 0;                    ///< ||PSPS - PS||_F
  int iterations = 0;                        ///< sign or TRS4 updates, over all mu evaluations
  int sqrt_iterations = 0;                   ///< of S^-1/2
  int mu_evaluations = 0;                    ///< sign runs (1 for TRS4)
  double spectrum_min = 0, spectrum_max = 0;  ///< the bounds of K's spectrum used
  /// Every multiply's, Lanczos and the idempotency check included.
  std::int64_t flops = 0;
  BlockIterationHistory history;  ///< of the last sign or TRS4 run
};

/// Collective: the zero-temperature density matrix of H C = S C E with N = n_electrons orbitals
/// occupied once each (Tr(PS) = N; closed shells with two electrons per orbital pass N / 2), in
/// the orthogonalized form P = Z P_o Z, Z = S^-1/2, P_o the projector on the N lowest
/// eigenvectors of K = Z H Z. H and S symmetric on the same distribution (square blocks), S
/// positive definite. Errors: invalid_argument (N negative, not whole, more than the orbitals;
/// non-square blocks; distributions differ; mu cannot bracket N), not_symmetric,
/// not_positive_definite (S), no_convergence.
template <class ExecSpace>
BlockDensityResult<typename ExecSpace::memory_space> density_matrix(
    const ExecSpace& exec, const BlockSparseMatrix<double, typename ExecSpace::memory_space>& H,
    const BlockSparseMatrix<double, typename ExecSpace::memory_space>& S, double n_electrons,
    const BlockDensityOptions& opts = {});

}  // namespace kess
