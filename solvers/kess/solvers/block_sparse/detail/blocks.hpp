// Host-side block lists and local index assembly shared by the block-sparse operations: blocks
// travel between ranks as (row, col, values) lists and become a blocked-CSR local part.
#pragma once

#include <kess/solvers/block_sparse.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kess::detail::block_sparse {

/// A list of blocks on the host: block b is (rows[b], cols[b]) with values
/// [offsets[b], offsets[b + 1]) of `values`, column-major.
struct HostBlocks {
  std::vector<int> rows, cols;
  std::vector<std::int64_t> offsets{0};
  std::vector<double> values;

  std::int64_t count() const noexcept { return static_cast<std::int64_t>(rows.size()); }
  /// Appends block (i, j) of `len` values.
  void push(int i, int j, const double* v, std::int64_t len);
};

/// A local part on the host (what BlockSparseMatrix holds, values included).
struct HostCsr {
  std::vector<std::int64_t> row_ptr;
  std::vector<int> cols;
  std::vector<std::int64_t> offsets{0};
  std::vector<double> norms;
  std::vector<double> values;
};

/// Frobenius norm of `len` values, scaled (no overflow or underflow).
double block_norm(const double* v, std::int64_t len);
/// sqrt(sum of squares) of norms, scaled.
double norm_of_norms(const std::vector<double>& norms);

/// Local checks of a list against `dist` (coordinates in range, value counts matching the block
/// sizes, finite values); returns an empty string or what is wrong. Not collective.
std::string check_blocks(const BlockDistribution& dist, const HostBlocks& blocks);

/// Collective over dist.grid().comm(): every block goes to the rank that owns it (by dist);
/// returns the blocks this rank received.
HostBlocks route_to_owners(const BlockDistribution& dist, const HostBlocks& blocks);

/// Collective: sends every block to `root` (rank of the grid's communicator).
HostBlocks gather_to(const BlockDistribution& dist, const HostBlocks& blocks, int root);

/// Collective over `comm` (the grid's communicator or a row or column of it): every rank's
/// blocks on every rank of `comm`.
HostBlocks gather_over(const comm::Communicator& comm, const BlockDistribution& dist,
                       const HostBlocks& blocks);

/// Collective: every rank's blocks on every rank.
HostBlocks gather_all(const BlockDistribution& dist, const HostBlocks& blocks);

/// Collective: the blocks this rank owns (by dist) as a local part, sorted; a block listed twice
/// is an error on every rank (kess::Error invalid_argument naming `fn`).
HostCsr assemble(const BlockDistribution& dist, const HostBlocks& owned, const char* fn);

/// The local part `csr` (of dist) as a block list (global coordinates).
HostBlocks to_blocks(const BlockDistribution& dist, const std::vector<std::int64_t>& row_ptr,
                     const std::vector<int>& cols, const std::vector<std::int64_t>& offsets,
                     const double* values);

}  // namespace kess::detail::block_sparse
