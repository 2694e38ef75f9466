// kess::gen — deterministic test matrices.
//
// Entry-wise generators (random_symmetric, random_general, random_spd) define every entry as a pure
// function of (seed, global row, global column) through a counter-based hash (splitmix64 rounds),
// so any piece of a matrix can be produced anywhere, on host or device, in any order: a
// distributed matrix is bit-identical whatever the process grid or block size. The fill_* templates
// write a (local, possibly offset or block-cyclic) View on an execution space instance; they are
// asynchronous on that instance (no fence: fence `exec` before reading on another instance).
//
// Dense generators (prescribed_spectrum, random_orthogonal) run on the host with LAPACK/BLAS and
// return host matrices; they are deterministic for a seed (given the same BLAS).
//
// Entry values: random_entry and random_general_entry lie in [-1, 1), multiples of 2^-52 (exactly
// representable, so host and device agree bit for bit).
#pragma once

#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

namespace kess::gen {

/// Dense host matrix, column-major (LAPACK order); the same type as kess::mm::DenseHost.
using DenseHost = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

// ---- counter-based hash
// --------------------------------------------------------------------------
/// One splitmix64 step (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Hash of (seed, domain, a, b): domains keep the generators' streams apart.
KOKKOS_INLINE_FUNCTION constexpr std::uint64_t hash3(std::uint64_t seed, std::uint64_t domain,
                                                     std::uint64_t a, std::uint64_t b) {
  return splitmix64(splitmix64(splitmix64(seed ^ domain) ^ a) ^ b);
}

/// The top 53 bits of h as a double in [-1, 1) (exact: k 2^-52 - 1 with k < 2^53).
KOKKOS_INLINE_FUNCTION constexpr double to_signed_unit(std::uint64_t h) {
  return static_cast<double>(h >> 11) * (1.0 / 4503599627370496.0) - 1.0;
}

namespace detail {
constexpr std::uint64_t kDomainSymmetric = 0x73796D6D65747269ull;  // "symmetri"
constexpr std::uint64_t kDomainGeneral = 0x67656E6572616C00ull;    // "general"
constexpr std::uint64_t kDomainReflector = 0x7265666C6563746Full;  // "reflecto"
}  // namespace detail

/// Entry (i, j) (global, 0-based) of the random symmetric matrix of `seed`: a value in [-1, 1)
/// depending only on (seed, min(i, j), max(i, j)).
KOKKOS_INLINE_FUNCTION constexpr double random_entry(std::uint64_t seed, std::int64_t i,
                                                     std::int64_t j) {
  return to_signed_unit(hash3(seed, detail::kDomainSymmetric,
                              static_cast<std::uint64_t>(kx::min(i, j)),
                              static_cast<std::uint64_t>(kx::max(i, j))));
}

/// Entry (i, j) of the random general (non-symmetric) matrix of `seed`, in [-1, 1).
KOKKOS_INLINE_FUNCTION constexpr double random_general_entry(std::uint64_t seed, std::int64_t i,
                                                             std::int64_t j) {
  return to_signed_unit(hash3(seed, detail::kDomainGeneral, static_cast<std::uint64_t>(i),
                              static_cast<std::uint64_t>(j)));
}

/// Entry (i, j) of the random SPD matrix of order n: random_entry + (n + 1) on the diagonal.
/// Strictly diagonally dominant, so by Gershgorin its eigenvalues lie in [1, 2n + 1).
KOKKOS_INLINE_FUNCTION constexpr double random_spd_entry(std::uint64_t seed, std::int64_t n,
                                                         std::int64_t i, std::int64_t j) {
  return random_entry(seed, i, j) + (i == j ? static_cast<double>(n) + 1.0 : 0.0);
}

// ---- device fills
// --------------------------------------------------------------------------------
/// Global index of local index l as a plain offset: g = offset + l.
struct OffsetMap {
  std::int64_t offset = 0;
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t operator()(int l) const { return offset + l; }
};

/// ScaLAPACK block-cyclic map of one process coordinate: local index l of process `p` among `np`
/// with block size `nb` and the first block on process `src` is global
/// ((l / nb) * np + (p - src + np) % np) * nb + l % nb.
struct BlockCyclicMap {
  std::int64_t nb = 1;
  int p = 0;
  int np = 1;
  int src = 0;
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t operator()(int l) const {
    return ((l / nb) * np + (p - src + np) % np) * nb + l % nb;
  }
};

namespace detail {
struct SymmetricEntry {
  std::uint64_t seed;
  KOKKOS_INLINE_FUNCTION double operator()(std::int64_t i, std::int64_t j) const {
    return random_entry(seed, i, j);
  }
};
struct GeneralEntry {
  std::uint64_t seed;
  KOKKOS_INLINE_FUNCTION double operator()(std::int64_t i, std::int64_t j) const {
    return random_general_entry(seed, i, j);
  }
};
struct SpdEntry {
  std::uint64_t seed;
  std::int64_t n;
  KOKKOS_INLINE_FUNCTION double operator()(std::int64_t i, std::int64_t j) const {
    return random_spd_entry(seed, n, i, j);
  }
};

template <class View, class RowOf, class ColOf, class Entry>
struct FillFunctor {
  View a;
  RowOf row_of;
  ColOf col_of;
  Entry entry;
  std::int64_t fast;  // extent of the contiguous index
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t k) const {
    // Walk the View in memory order so that the writes coalesce on GPUs.
    constexpr bool right = std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value;
    const int i = static_cast<int>(right ? k / fast : k % fast);
    const int j = static_cast<int>(right ? k % fast : k / fast);
    a(i, j) = entry(row_of(i), col_of(j));
  }
};

template <class ExecSpace, class View, class RowOf, class ColOf, class Entry>
void fill(const ExecSpace& exec, const View& a, const RowOf& row_of, const ColOf& col_of,
          const Entry& entry, const char* label) {
  static_assert(Kokkos::is_view<View>::value && View::rank == 2,
                "kess::gen: a must be a rank-2 View");
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename View::memory_space>::accessible,
                "kess::gen: the View must be accessible from the execution space");
  const std::int64_t m = static_cast<std::int64_t>(a.extent(0));
  const std::int64_t n = static_cast<std::int64_t>(a.extent(1));
  constexpr bool right = std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value;
  FillFunctor<View, RowOf, ColOf, Entry> f{a, row_of, col_of, entry, right ? n : m};
  Kokkos::parallel_for(
      label,
      Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>(exec, std::int64_t{0}, m * n),
      f);
}
}  // namespace detail

/// a(r, c) = random_entry(seed, row_of(r), col_of(c)) for every local (r, c); row_of and col_of are
/// device-callable maps from local (int) to global (int64) indices, e.g. BlockCyclicMap.
template <class ExecSpace, class View, class RowOf, class ColOf>
void fill_random_symmetric_mapped(const ExecSpace& exec, const View& a, const RowOf& row_of,
                                  const ColOf& col_of, std::uint64_t seed) {
  detail::fill(exec, a, row_of, col_of, detail::SymmetricEntry{seed},
               "kess::gen::fill_random_symmetric");
}

/// a(r, c) = random_entry(seed, i0 + r, j0 + c): the block at global offset (i0, j0).
template <class ExecSpace, class View>
void fill_random_symmetric(const ExecSpace& exec, const View& a, std::int64_t i0, std::int64_t j0,
                           std::uint64_t seed) {
  fill_random_symmetric_mapped(exec, a, OffsetMap{i0}, OffsetMap{j0}, seed);
}

/// As fill_random_symmetric_mapped, with random_general_entry.
template <class ExecSpace, class View, class RowOf, class ColOf>
void fill_random_general_mapped(const ExecSpace& exec, const View& a, const RowOf& row_of,
                                const ColOf& col_of, std::uint64_t seed) {
  detail::fill(exec, a, row_of, col_of, detail::GeneralEntry{seed},
               "kess::gen::fill_random_general");
}

/// a(r, c) = random_general_entry(seed, i0 + r, j0 + c).
template <class ExecSpace, class View>
void fill_random_general(const ExecSpace& exec, const View& a, std::int64_t i0, std::int64_t j0,
                         std::uint64_t seed) {
  fill_random_general_mapped(exec, a, OffsetMap{i0}, OffsetMap{j0}, seed);
}

/// As fill_random_symmetric_mapped, with random_spd_entry of the order-n matrix.
template <class ExecSpace, class View, class RowOf, class ColOf>
void fill_random_spd_mapped(const ExecSpace& exec, const View& a, const RowOf& row_of,
                            const ColOf& col_of, std::int64_t n, std::uint64_t seed) {
  detail::fill(exec, a, row_of, col_of, detail::SpdEntry{seed, n}, "kess::gen::fill_random_spd");
}

/// a(r, c) = random_spd_entry(seed, n, i0 + r, j0 + c).
template <class ExecSpace, class View>
void fill_random_spd(const ExecSpace& exec, const View& a, std::int64_t i0, std::int64_t j0,
                     std::int64_t n, std::uint64_t seed) {
  fill_random_spd_mapped(exec, a, OffsetMap{i0}, OffsetMap{j0}, n, seed);
}

// ---- host matrices
// -------------------------------------------------------------------------------
/// The n x n random symmetric matrix of `seed` (entries random_entry(seed, i, j)).
DenseHost random_symmetric(std::int64_t n, std::uint64_t seed);

/// The m x n random general matrix of `seed` (entries random_general_entry(seed, i, j)).
DenseHost random_general(std::int64_t m, std::int64_t n, std::uint64_t seed);

/// The n x n random SPD matrix of `seed` (entries random_spd_entry(seed, n, i, j)).
DenseHost random_spd(std::int64_t n, std::uint64_t seed);

/// A dense random orthogonal n x n matrix Q = H_r ... H_2 H_1, the product of r random Householder
/// reflectors H_k = I - 2 u_k u_k^T / (u_k^T u_k), u_k(i) = random_general_entry of a seed derived
/// from `seed`; r = n when `reflectors` < 0. Applied in compact-WY blocks with BLAS 3.
DenseHost random_orthogonal(std::int64_t n, std::uint64_t seed, std::int64_t reflectors = -1);

/// The symmetric matrix A = Q diag(lambda) Q^T with Q = random_orthogonal(n, seed), n = the length
/// of lambda (any order, repeated values allowed: the eigenvalues of A are exactly the multiset
/// lambda, up to rounding). A is exactly symmetric (upper triangle copied from the lower). When `q`
/// is given, Q is stored there (its columns are the eigenvectors: A Q = Q diag(lambda)).
DenseHost prescribed_spectrum(const std::vector<double>& lambda, std::uint64_t seed,
                              DenseHost* q = nullptr);

}  // namespace kess::gen
