// The CSB_Coo storage conventions of kess::CsbMatrix: block size limits, the automatic β, and the
// order of the entries inside a block (one key function, used by the builders and the kernels).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kess::detail::lobpcg {

/// Largest β: in-block row and column indices are uint16.
constexpr int kMaxBlockSize = 65536;
/// The automatic β (n smaller: one block). A block's x and y segments of 8-16 vectors (1-2 MiB
/// each at β = 16384) stay in a GPU's L2 and a CPU core's L2/L3 while its entries stream.
constexpr int kAutoBlockSize = 16384;
/// Side of the square tiles that order the entries inside a block.
constexpr int kTile = 256;

/// β for an order-n matrix and a requested block size (0: automatic), 1 <= β <= kMaxBlockSize.
inline int resolve_block_size(std::int64_t n, int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(n < kAutoBlockSize ? (n > 0 ? n : 1) : kAutoBlockSize);
}

/// Sort key of the entry at (r, c) inside its block: kTile x kTile tiles in row-major tile order,
/// inside a tile by row then column. Independent of β (tiles per block row are fixed at
/// kMaxBlockSize / kTile), and a bijection of (r, c).
KOKKOS_INLINE_FUNCTION constexpr std::uint32_t entry_key(std::uint16_t r, std::uint16_t c) {
  constexpr std::uint32_t tiles = kMaxBlockSize / kTile;
  const std::uint32_t tr = r / kTile, tc = c / kTile, ir = r % kTile, ic = c % kTile;
  return ((tr * tiles + tc) * kTile + ir) * kTile + ic;
}

/// The inverse of entry_key.
KOKKOS_INLINE_FUNCTION constexpr void entry_of_key(std::uint32_t key, std::uint16_t& r,
                                                   std::uint16_t& c) {
  constexpr std::uint32_t tiles = kMaxBlockSize / kTile;
  const std::uint32_t ic = key % kTile, ir = (key / kTile) % kTile, t = key / (kTile * kTile);
  r = static_cast<std::uint16_t>((t / tiles) * kTile + ir);
  c = static_cast<std::uint16_t>((t % tiles) * kTile + ic);
}

}  // namespace kess::detail::lobpcg
