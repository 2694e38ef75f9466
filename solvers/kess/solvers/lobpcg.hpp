// kess::CsbMatrix, kess::spmm and kess::lobpcg — the lowest (or highest) eigenpairs of large sparse
// symmetric matrices stored as one triangle in CSB_Coo (MFDn style, Maris et al. 2022,
// docs/references.md), with the FOM block preconditioner, on one rank or distributed.
//
// The bodies are compiled once into libkess for each enabled execution space
// (solvers/kess/solvers/lobpcg/); this header declares them. docs/api/lobpcg.md and
// docs/design/lobpcg.md describe the API and the algorithm.
#pragma once

#include <kess/comm/communicator.hpp>
#include <kess/core/base/enum_names.hpp>
#include <kess/core/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kess {

// ---- The matrix ---------------------------------------------------------------------------------

/// How the stored triangle and the vectors are spread over the ranks of a communicator.
enum class CsbLayout {
  automatic,   ///< triangular when the rank count is nd(nd+1)/2, general otherwise
  triangular,  ///< MFDn: nd(nd+1)/2 ranks, rank (I, J), I >= J, owns block (I, J) of the triangle
  general,     ///< any rank count: the stored entries split by rows into equal-nonzero parts
};

template <>
struct EnumNames<CsbLayout> {
  static constexpr const char* what = "CSB layout";
  static constexpr EnumName<CsbLayout> names[] = {{CsbLayout::automatic, "automatic"},
                                                  {CsbLayout::triangular, "triangular"},
                                                  {CsbLayout::general, "general"}};
};

struct CsbOptions {
  /// β, the rows (and columns) of a CSB block: 1..65536, or 0 for the automatic choice
  /// (CsbMatrix::block_size() reports it).
  int block_size = 0;
  CsbLayout layout = CsbLayout::automatic;
  /// Relative tolerance of the symmetry check of full (two-triangle) inputs:
  /// |a_ij - a_ji| <= symmetry_tol * max|a|.
  double symmetry_tol = 1e-12;
};

/// What a coordinate or CSR input lists.
enum class CooContent {
  triangle,  ///< one triangle (lower, upper or mixed): (i, j) stands for (i, j) and (j, i); a
             ///< pair listed in both positions is refused
  full,      ///< the whole matrix: checked for symmetry (not_symmetric names the worst pair), the
             ///< lower triangle kept
};

namespace detail::lobpcg {
struct CsbLayoutData;  ///< where this rank's part sits; defined in lobpcg/detail/layout.hpp
}

/// The lower triangle (diagonal included) of a symmetric n x n matrix in CSB_Coo: the rows and
/// columns cut into blocks of β, each non-empty block of the triangle stored as a list of
/// (uint16 row, uint16 col, value) relative to the block's corner, ordered for locality inside
/// the block (by tiles, Morton order inside a tile). Distributed, each rank holds the blocks of its
/// part of the triangle (layout()) and a row segment of the vectors (vector_offset(),
/// vector_rows()). The block index is on the host and on MemorySpace; the entries on MemorySpace.
template <class T = double, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
class CsbMatrix {
 public:
  using value_type = T;
  using memory_space = MemorySpace;
  template <class U>
  using view = Kokkos::View<U*, MemorySpace>;

  CsbMatrix() = default;

  /// Collective over `comm`: a matrix from (rows[e], cols[e], vals[e]), 0-based, that each rank
  /// lists (any rank may list any entry; together they are the matrix). Duplicates, indices out of
  /// [0, n), NaN or Inf: kess::Error (invalid_argument) on every rank.
  static CsbMatrix from_coo(std::int64_t n, const std::vector<std::int64_t>& rows,
                            const std::vector<std::int64_t>& cols, const std::vector<T>& vals,
                            CooContent content, const CsbOptions& opts = {},
                            const comm::Communicator& comm = comm::Communicator::self());
  /// As from_coo, from CSR arrays (row_ptr of n + 1 entries, column indices, values).
  static CsbMatrix from_csr(std::int64_t n, const std::vector<std::int64_t>& row_ptr,
                            const std::vector<std::int64_t>& cols, const std::vector<T>& vals,
                            CooContent content, const CsbOptions& opts = {},
                            const comm::Communicator& comm = comm::Communicator::self());
  /// Collective: rank 0 reads a Matrix Market coordinate file (a symmetric file is exactly the
  /// stored triangle; a general one is checked for symmetry) and the parts are sent to their
  /// ranks.
  static CsbMatrix read_matrix_market(const std::string& path, const CsbOptions& opts = {},
                                       const comm::Communicator& comm =
                                           comm::Communicator::self());
  /// Collective: rank 0 writes a `coordinate real symmetric` file (the lower triangle, by rows);
  /// all or nothing.
  void write_matrix_market(const std::string& path) const;
  /// Collective: the lower triangle as (row, col, value), 0-based, sorted by row then column, on
  /// every rank (for checks and small problems).
  void to_coo(std::vector<std::int64_t>& rows, std::vector<std::int64_t>& cols,
              std::vector<T>& vals) const;

  /// Order n of the matrix.
  std::int64_t rows() const noexcept { return n_; }
  /// β.
  int block_size() const noexcept { return beta_; }
  /// Blocks per dimension: ceil(n / β).
  std::int64_t block_rows() const noexcept { return beta_ > 0 ? (n_ + beta_ - 1) / beta_ : 0; }
  /// Collective: entries of the stored triangle (diagonal included), over all ranks.
  std::int64_t stored_nonzeros() const;
  /// Collective: entries of the whole matrix, 2 stored - diagonal.
  std::int64_t nonzeros() const;
  /// This rank's stored entries and non-empty blocks.
  std::int64_t local_nonzeros() const noexcept { return static_cast<std::int64_t>(val_.extent(0)); }
  std::int64_t local_blocks() const noexcept { return static_cast<std::int64_t>(block_row_h_.size()); }
  /// Bytes of this rank's matrix storage (entries and block index).
  std::int64_t local_bytes() const noexcept;

  // ---- Distribution
  const comm::Communicator& comm() const noexcept { return comm_; }
  CsbLayout layout() const noexcept { return layout_; }
  /// This rank's vector rows: X and Y of spmm and lobpcg hold global rows
  /// [vector_offset(), vector_offset() + vector_rows()) here (all n rows on one rank).
  std::int64_t vector_offset() const noexcept { return vec_offset_; }
  std::int64_t vector_rows() const noexcept { return vec_rows_; }

  // ---- This rank's part of the triangle: global rows [row_offset(), row_offset() + part_rows())
  // x columns [col_offset(), col_offset() + part_cols()); block (r, c) of the part covers rows
  // row_offset() + r β ... and columns col_offset() + c β ...; on_diagonal(): the part holds the
  // global diagonal (row_offset() == col_offset()), whose entries are applied once.
  std::int64_t row_offset() const noexcept { return row_offset_; }
  std::int64_t col_offset() const noexcept { return col_offset_; }
  std::int64_t part_rows() const noexcept { return part_rows_; }
  std::int64_t part_cols() const noexcept { return part_cols_; }
  bool on_diagonal() const noexcept { return row_offset_ == col_offset_ && part_rows_ > 0; }
  /// Blocks of the part, in storage order: block b holds entries [block_start[b],
  /// block_start[b + 1]) at block coordinates (block_row[b], block_col[b]) of the part.
  const std::vector<int>& block_row_host() const noexcept { return block_row_h_; }
  const std::vector<int>& block_col_host() const noexcept { return block_col_h_; }
  const std::vector<std::int64_t>& block_start_host() const noexcept { return block_start_h_; }
  const view<const int>& block_row() const noexcept { return block_row_; }
  const view<const int>& block_col() const noexcept { return block_col_; }
  const view<const std::int64_t>& block_start() const noexcept { return block_start_; }
  /// Entries: row and column inside their block, value.
  const view<const std::uint16_t>& entry_row() const noexcept { return row_; }
  const view<const std::uint16_t>& entry_col() const noexcept { return col_; }
  const view<const T>& entry_value() const noexcept { return val_; }
  /// The diagonal of H for this rank's vector rows (Jacobi and the preconditioner's shifts).
  const view<const T>& diagonal() const noexcept { return diag_; }

  /// Low-level, used by the builders: installs this rank's part (host arrays, copied to
  /// MemorySpace). Blocks are given in storage order with entries sorted inside each block.
  struct Part {
    std::int64_t n = 0;
    int beta = 0;
    CsbLayout layout = CsbLayout::general;
    std::int64_t vec_offset = 0, vec_rows = 0;
    std::int64_t row_offset = 0, col_offset = 0, part_rows = 0, part_cols = 0;
    std::vector<int> block_row, block_col;
    std::vector<std::int64_t> block_start{0};
    std::vector<std::uint16_t> row, col;
    std::vector<T> val;
    std::vector<T> diagonal;  ///< vec_rows values
    /// Distributed: the exchange plan (detail::lobpcg::make_layout_data); null on one rank.
    std::shared_ptr<detail::lobpcg::CsbLayoutData> layout_data;
  };
  void assign(Part part, const comm::Communicator& comm);
  /// The distributed layout's communicators and buffers (null on one rank).
  const std::shared_ptr<detail::lobpcg::CsbLayoutData>& layout_data() const noexcept {
    return layout_data_;
  }

 private:
  comm::Communicator comm_;
  CsbLayout layout_ = CsbLayout::general;
  std::int64_t n_ = 0;
  int beta_ = 0;
  std::int64_t vec_offset_ = 0, vec_rows_ = 0;
  std::int64_t row_offset_ = 0, col_offset_ = 0, part_rows_ = 0, part_cols_ = 0;
  std::vector<int> block_row_h_, block_col_h_;
  std::vector<std::int64_t> block_start_h_{0};
  view<const int> block_row_, block_col_;
  view<const std::int64_t> block_start_;
  view<const std::uint16_t> row_, col_;
  view<const T> val_;
  view<const T> diag_;
  std::int64_t local_diagonal_nnz_ = 0;  ///< stored diagonal entries here (nonzeros())
  std::shared_ptr<detail::lobpcg::CsbLayoutData> layout_data_;
};

/// A block of vectors: n x k, the k values of a row contiguous (MFDn's order).
template <class T, class MemorySpace>
using VectorBlock = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;

/// Y = H X using each stored entry twice (H and its transpose), fused in one pass. X and Y hold
/// this rank's vector rows (H.vector_rows() x k, k >= 1; fastest for k = 8 and 16); collective
/// over H.comm(). Asynchronous on `exec` on one rank; distributed, it returns when Y is complete.
template <class ExecSpace>
void spmm(const ExecSpace& exec,
          const CsbMatrix<double, typename ExecSpace::memory_space>& H,
          const Kokkos::View<const double**, Kokkos::LayoutRight,
                             typename ExecSpace::memory_space>& X,
          const VectorBlock<double, typename ExecSpace::memory_space>& Y);

// ---- Generators ---------------------------------------------------------------------------------

/// The test problems users know, as one triangle in COO (0-based, row >= col, sorted by row then
/// column), built on the host. Each is symmetric; every diagonal entry is stored (zeros included,
/// as structural entries: the Heisenberg ring of L = 26 at S^z = 0 has n = 10,400,600, 80,708,656
/// stored and 151,016,712 full nonzeros). The docs (docs/api/lobpcg.md) give the basis, ordering
/// and closed forms.
struct SparseProblem {
  std::string name;  ///< e.g. "heisenberg L=26 Sz=0"
  std::int64_t n = 0;
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;
};

namespace gen {
/// Dirichlet Laplacians on 1D, 2D, 3D grids of nx (x ny x nz) interior points, h = 1:
/// diagonal 2d, off-diagonal -1. Eigenvalues sum_d (2 - 2 cos(pi j_d / (n_d + 1))).
SparseProblem laplace1d(std::int64_t nx);
SparseProblem laplace2d(std::int64_t nx, std::int64_t ny);
SparseProblem laplace3d(std::int64_t nx, std::int64_t ny, std::int64_t nz);
/// Spin-1/2 Heisenberg model H = J sum_i S_i . S_{i+1} (ring when periodic, open chain otherwise)
/// on the states of L sites with total S^z = sz2 / 2 (sz2 = 2 S^z, same parity as L), in
/// ascending order of their bit patterns (bit i set: site i up). The ring's bond (L - 1, 0) is
/// added for L >= 3 only.
SparseProblem heisenberg(int L, int sz2 = 0, double J = 1.0, bool periodic = true);
/// Hubbard chain of L sites, n_up and n_down fermions, hopping -t, on-site U (open, or ring for
/// L >= 3 with the fermionic sign (-1)^(N_sigma - 1) on the boundary hop), basis index
/// i_up * C(L, n_down) + i_down over ascending bit patterns.
SparseProblem hubbard(int L, int n_up, int n_down, double t = 1.0, double U = 4.0,
                      bool periodic = false);
/// Richardson pairing model on L doubly degenerate levels with energies eps_p = p (p = 0..L-1)
/// and Np pairs, seniority zero: H = sum_p 2 eps_p N_p - g sum_{pq} P_p^+ P_q, basis by pair
/// occupation patterns.
SparseProblem pairing(int L, int Np, double g = 0.5);
/// Random sparse symmetric matrix: each off-diagonal pair present with probability `density`
/// (about density * n^2 entries in full), the whole diagonal, values kess::gen::random_entry(seed,
/// i, j) in [-1, 1), diagonal shifted by `diagonal_shift`; deterministic for a seed.
SparseProblem random_sparse(std::int64_t n, double density, std::uint64_t seed = 1,
                            double diagonal_shift = 0.0);
}  // namespace gen

/// The CsbMatrix of a generated problem (every rank passes the same problem; collective).
template <class T, class MemorySpace>
CsbMatrix<T, MemorySpace> make_csb(const SparseProblem& p, const CsbOptions& opts = {},
                                   const comm::Communicator& comm = comm::Communicator::self());

// ---- Preconditioners ----------------------------------------------------------------------------

enum class Preconditioner {
  none,
  jacobi,  ///< (diag(H) - θ)^-1 with θ each column's Ritz value, guarded near zero
  fom,     ///< FomPreconditioner: shifted diagonal tiles, a few FOM steps per tile
};

template <>
struct EnumNames<Preconditioner> {
  static constexpr const char* what = "preconditioner";
  static constexpr EnumName<Preconditioner> names[] = {{Preconditioner::none, "none"},
                                                       {Preconditioner::jacobi, "jacobi"},
                                                       {Preconditioner::fom, "fom"}};
};

/// MFDn's block-diagonal preconditioner (Maris et al. 2022, §3.4): the diagonal tiles of H (the
/// tile rows of this rank's vector segment, each tile the square diagonal sub-block of H on its
/// rows), each column r of R solved approximately against (H_tile - θ_r I) by `iterations` steps of
/// FOM (full orthogonalization), one team per tile. No communication.
template <class T, class MemorySpace>
class FomPreconditioner {
 public:
  FomPreconditioner() = default;
  /// Extracts the diagonal tiles of H (tile rows; 0: the CSB block size); collective.
  FomPreconditioner(const CsbMatrix<T, MemorySpace>& H, int tile = 0, int iterations = 4);
  int tile() const noexcept { return tile_; }
  int iterations() const noexcept { return iterations_; }
  /// Z = K^-1 R, column r shifted by theta[r] (host values); R, Z: vector_rows() x k.
  template <class ExecSpace>
  void apply(const ExecSpace& exec, const std::vector<double>& theta,
             const Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace>& R,
             const VectorBlock<T, MemorySpace>& Z) const;

  struct Tiles;  ///< the tiles in CSR form; defined in lobpcg/detail/fom.hpp

 private:
  int tile_ = 0;
  int iterations_ = 0;
  std::shared_ptr<const Tiles> tiles_;
};

// ---- LOBPCG -------------------------------------------------------------------------------------

struct LobpcgOptions {
  int nev = 1;          ///< eigenpairs wanted, 1 <= nev <= n
  int block_size = 0;   ///< k >= nev vectors iterated (0: automatic, reported)
  /// ||r_i|| / ((||H|| + |λ_i|) ||x_i||) below which pair i has converged, r_i = H x_i - λ_i x_i
  /// (S x_i in the generalized problem) and ||H|| the bound LobpcgResult::norm_estimate.
  double tol = 1e-8;
  int max_iterations = 1000;
  bool largest = false;  ///< the largest eigenvalues instead of the smallest
  Preconditioner preconditioner = Preconditioner::fom;
  int fom_iterations = 4;  ///< FOM steps per tile
  int fom_tile = 0;        ///< FOM tile rows (0: the CSB block size)
  std::uint64_t seed = 1;  ///< random start (deterministic; the same on every backend and layout)
  bool progress = false;   ///< one line per iteration on stderr (rank 0)
};

/// Input vectors of LOBPCG, all optional: this rank's vector rows.
template <class T, class MemorySpace>
struct LobpcgVectors {
  /// Initial guess: vector_rows() x m, m <= block size (the rest random).
  Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace> initial;
  /// Constraints: vector_rows() x c; the iterates stay orthogonal to them (S-orthogonal in the
  /// generalized problem).
  Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace> constraints;
};

template <class T, class MemorySpace>
struct LobpcgResult {
  std::vector<double> eigenvalues;  ///< nev values, ascending (descending with `largest`)
  VectorBlock<T, MemorySpace> vectors;  ///< this rank's rows of the nev eigenvectors
  std::vector<double> residuals;        ///< final backward residual of each pair
  std::vector<std::vector<double>> history;  ///< residuals of the nev pairs at each iteration
  bool converged = false;  ///< all nev pairs below tol (else: no_convergence, the best found)
  int converged_count = 0;
  int iterations = 0;
  std::int64_t spmm_count = 0;  ///< products with H (S not counted), one per block of vectors
  int block_size = 0;
  /// The ||H|| of the convergence test: the ∞-norm max_i Σ_j |h_ij| (>= ||H||_2), computed once
  /// from the stored entries before the iteration.
  double norm_estimate = 0;
  struct Times {
    double spmm = 0, orthonormalization = 0, rayleigh_ritz = 0, preconditioner = 0, total = 0;
  } seconds;
};

/// The `nev` smallest (or largest) eigenpairs of H. Collective over H.comm(). A run that does not
/// converge in max_iterations returns converged = false with what it has (never a silent wrong
/// answer); bad inputs raise kess::Error on every rank.
template <class ExecSpace>
LobpcgResult<double, typename ExecSpace::memory_space> lobpcg(
    const ExecSpace& exec, const CsbMatrix<double, typename ExecSpace::memory_space>& H,
    const LobpcgOptions& opts,
    const LobpcgVectors<double, typename ExecSpace::memory_space>& vectors = {});

/// Generalized H x = λ S x, S symmetric positive definite (not_positive_definite otherwise), with
/// the same layout as H.
template <class ExecSpace>
LobpcgResult<double, typename ExecSpace::memory_space> lobpcg(
    const ExecSpace& exec, const CsbMatrix<double, typename ExecSpace::memory_space>& H,
    const CsbMatrix<double, typename ExecSpace::memory_space>& S, const LobpcgOptions& opts,
    const LobpcgVectors<double, typename ExecSpace::memory_space>& vectors = {});

}  // namespace kess
