// kess::mm — Matrix Market I/O (https://math.nist.gov/MatrixMarket/formats.html) on the host.
//
// Supported: object `matrix`; formats `array` (dense) and `coordinate` (sparse); fields `real` and
// `integer` (read as double; always written as `real`); symmetries `general` and `symmetric`.
// Rejected with a clear message: fields `complex` and `pattern`, symmetries `skew-symmetric` and
// `hermitian`, object `vector`.
//
// Conventions
//  - Indices in memory are 0-based (C++); in files 1-based (as the format says).
//  - Symmetric files store the lower triangle only: array files column by column (n(n+1)/2 values),
//    coordinate files entries with row >= col. read_dense expands them to the full matrix;
//    read_coordinate keeps them as stored (CooMatrix::symmetric = true, lower triangle only, which
//    is what CsbMatrix wants) unless asked to expand.
//  - Reading is strict. Every problem is a kess::Error of kind ErrorKind::io whose message names
//  the
//    file and the line ("<path>, line <k>: ..."): missing or bad banner, unknown or unsupported
//    object/format/field/symmetry, bad size line, too few or too many entries, out-of-range
//    indices, upper-triangle entries in a symmetric file, non-square symmetric matrices,
//    non-numeric or trailing tokens, NaN/Inf values, and an unreadable file (line 0).
//  - Duplicate coordinate entries (the same (i, j) twice) are rejected, not summed: the error names
//    the line of the second occurrence (of the first pair in file order).
//  - `%` comment lines and blank lines are allowed anywhere after the banner.
//  - Writing uses 17 significant digits ("%.17g"), so a write → read round trip is bit-exact.
//    Writers refuse NaN/Inf (invalid_argument), non-symmetric data declared symmetric
//    (not_symmetric), and report failures to create or write the file as io.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kess::mm {

/// Dense host matrix, column-major (LAPACK order).
using DenseHost = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using ConstDenseHost = Kokkos::View<const double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

/// A sparse matrix as a list of (row, col, value), 0-based. When `symmetric` is true only the lower
/// triangle (rows[k] >= cols[k]) is held and the upper one is implied; m == n then.
struct CooMatrix {
  std::int64_t m = 0;
  std::int64_t n = 0;
  bool symmetric = false;
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> cols;
  std::vector<double> vals;

  std::size_t nnz() const noexcept { return vals.size(); }
};

/// What a file's banner and size line say (read without the entries).
struct Header {
  bool coordinate = false;  ///< `coordinate` (true) or `array` (false)
  bool symmetric = false;
  bool integer = false;  ///< field `integer` (else `real`)
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t entries = 0;  ///< entries stored in the file (nnz, or m*n / n(n+1)/2 for arrays)
};

/// Reads the banner and the size line only.
Header read_header(const std::string& path);

/// Reads an array or coordinate file into a dense host matrix (absent coordinate entries are 0;
/// symmetric files are expanded to the full matrix).
DenseHost read_dense(const std::string& path);

/// Reads a coordinate file. With `expand_symmetric`, a symmetric file comes back as a general
/// CooMatrix holding both triangles (diagonal entries once); otherwise as stored (lower triangle).
CooMatrix read_coordinate(const std::string& path, bool expand_symmetric = false);

/// Writes an `array real` file; with `symmetric`, `a` must be square and exactly symmetric and only
/// its lower triangle is written (column by column).
void write_dense(const std::string& path, const ConstDenseHost& a, bool symmetric = false);

/// Writes a `coordinate real` file, entries in the given order; `coo.symmetric` selects the
/// `symmetric` banner and then every entry must lie in the lower triangle. Indices are checked
/// (0 <= row < m, 0 <= col < n); duplicates are refused.
void write_coordinate(const std::string& path, const CooMatrix& coo);

/// The general (both triangles) form of a symmetric CooMatrix; a general one is returned as is.
CooMatrix expand_symmetric(const CooMatrix& coo);

/// Dense host matrix of a CooMatrix (symmetric ones expanded).
DenseHost to_dense(const CooMatrix& coo);

}  // namespace kess::mm
