// kess::comm::DistMatrix — a dense m x n matrix distributed 2D block-cyclically (ScaLAPACK/ELPA
// layout) over a ProcessGrid; each rank holds its local part as a LayoutLeft View whose leading
// dimension is the descriptor's lld.
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/comm/dense/block_cyclic_map.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/comm/view_comm.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/compat.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kess::comm {

template <class T, class MemSpace = Kokkos::DefaultExecutionSpace::memory_space>
class DistMatrix {
 public:
  using value_type = T;
  using memory_space = MemSpace;
  using execution_space = typename MemSpace::execution_space;
  /// local_rows() x local_cols(); its stride(1) is the leading dimension lld (>= local rows).
  using local_view_type = Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace>;
  /// A whole matrix on the host (what scatter() reads and gather() returns on the root).
  using host_matrix_type = Kokkos::View<T**, Kokkos::LayoutLeft, Kokkos::HostSpace>;

  /// An empty 0 x 0 matrix on no grid.
  DistMatrix() = default;

  /// Allocates (zero-filled) the local part of an m x n matrix in mb x nb blocks, block (0,0) on
  /// process (rsrc, csrc).
  DistMatrix(const ProcessGrid& grid, std::int64_t m, std::int64_t n, int mb, int nb, int rsrc = 0,
             int csrc = 0)
      : DistMatrix(grid, BlockCyclicMap(grid, m, n, mb, nb, rsrc, csrc)) {}
  /// Square blocks: block x block.
  DistMatrix(const ProcessGrid& grid, std::int64_t m, std::int64_t n, int block)
      : DistMatrix(grid, m, n, block, block) {}
  /// Allocates lld x local_cols storage (zero-filled) for `map` (which must be this process's:
  /// map.position() matches the grid).
  DistMatrix(const ProcessGrid& grid, const BlockCyclicMap& map) : grid_(grid), map_(map) {
    check_map_matches_grid("comm::DistMatrix");
    storage_view_type storage("kess::DistMatrix", static_cast<std::size_t>(map.lld()),
                              static_cast<std::size_t>(map.local_cols()));
    set_local(storage);
  }

  /// Wraps local storage that a ScaLAPACK/ELPA caller already holds: `ptr` points to column-major
  /// storage with leading dimension desc[Desc::lld] in MemSpace. No copy; the caller keeps `ptr`
  /// alive. Throws kess::Error (invalid_argument) when lld < local rows or the descriptor is bad.
  static DistMatrix wrap(const ProcessGrid& grid, const Descriptor& desc, T* ptr) {
    constexpr const char* fn = "comm::DistMatrix::wrap";
    BlockCyclicMap map;
    try {
      map = BlockCyclicMap::from_descriptor(desc, grid);
    } catch (const Error& e) {
      throw Error(e.kind(), fn, "bad descriptor: " + e.message());
    }
    require_arg(ptr != nullptr || map.local_rows() == 0 || map.local_cols() == 0, fn,
                "ptr is null but the local part is " + std::to_string(map.local_rows()) + " x " +
                    std::to_string(map.local_cols()));
    DistMatrix A;
    A.grid_ = grid;
    A.map_ = map;
    A.check_map_matches_grid(fn);
    Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace, Kokkos::MemoryUnmanaged> storage(
        ptr, static_cast<std::size_t>(map.lld()), static_cast<std::size_t>(map.local_cols()));
    A.set_local(storage);
    return A;
  }

  const local_view_type& local() const noexcept { return local_; }
  const BlockCyclicMap& map() const noexcept { return map_; }
  const ProcessGrid& grid() const noexcept { return grid_; }
  std::int64_t rows() const noexcept { return map_.rows(); }
  std::int64_t cols() const noexcept { return map_.cols(); }
  int local_rows() const noexcept { return map_.local_rows(); }
  int local_cols() const noexcept { return map_.local_cols(); }
  /// ScaLAPACK descriptor of this matrix's local storage.
  Descriptor descriptor() const { return map_.descriptor(); }

  /// Collective over grid().comm(): every rank's local part becomes its block-cyclic share of
  /// `global`, an m x n host View read on rank `root` only (other ranks may pass an empty View).
  template <class ExecSpace, class HostView,
            std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value, int> = 0>
  void scatter(const ExecSpace& exec, int root, const HostView& global) {
    constexpr const char* fn = "comm::DistMatrix::scatter";
    static_assert(Kokkos::is_view<HostView>::value && HostView::rank == 2,
                  "kess::DistMatrix::scatter: expects a rank-2 Kokkos::View");
    static_assert(
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename HostView::memory_space>::accessible,
        "kess::DistMatrix::scatter: the global View must be readable on the host");
    const Communicator& comm = check_root(root, fn);
    const bool is_root = comm.rank() == root;
    const bool ok = !is_root || (static_cast<std::int64_t>(global.extent(0)) == rows() &&
                                 static_cast<std::int64_t>(global.extent(1)) == cols());
    agree(comm, ok,
          std::string(fn) + ": the global View on root " + std::to_string(root) + " is " +
              std::to_string(global.extent(0)) + " x " + std::to_string(global.extent(1)) +
              ", the matrix " + std::to_string(rows()) + " x " + std::to_string(cols()),
          ErrorKind::invalid_argument);
    kx::ScopedRegion region("kess::DistMatrix::scatter");
    if (is_root) {
      for (int p = 0; p < comm.size(); ++p) {
        if (p == root) continue;
        host_matrix_type buf = pack(global, p);
        if (buf.size() > 0) send(Kokkos::DefaultHostExecutionSpace(), comm, buf, p, message_tag);
      }
      copy_in(exec, pack(global, root));
    } else {
      host_matrix_type buf(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::buf"),
                           local_rows(), local_cols());
      if (buf.size() > 0) recv(Kokkos::DefaultHostExecutionSpace(), comm, buf, root, message_tag);
      copy_in(exec, buf);
    }
  }
  template <class HostView, std::enable_if_t<Kokkos::is_view<HostView>::value, int> = 0>
  void scatter(int root, const HostView& global) {
    scatter(execution_space(), root, global);
  }

  /// Collective over grid().comm(): the whole m x n matrix on rank `root` (a 0 x 0 View elsewhere).
  template <class ExecSpace,
            std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value, int> = 0>
  host_matrix_type gather(const ExecSpace& exec, int root) const {
    constexpr const char* fn = "comm::DistMatrix::gather";
    const Communicator& comm = check_root(root, fn);
    kx::ScopedRegion region("kess::DistMatrix::gather");
    host_matrix_type mine = copy_out(exec);
    if (comm.rank() != root) {
      if (mine.size() > 0) send(Kokkos::DefaultHostExecutionSpace(), comm, mine, root, message_tag);
      return host_matrix_type("kess::DistMatrix::gathered", 0, 0);
    }
    host_matrix_type global(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::gathered"),
        static_cast<std::size_t>(rows()), static_cast<std::size_t>(cols()));
    for (int p = 0; p < comm.size(); ++p) {
      host_matrix_type buf = mine;
      if (p != root) {
        buf = host_matrix_type(
            Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::buf"),
            map_.local_rows(grid_.row_of(p)), map_.local_cols(grid_.col_of(p)));
        if (buf.size() > 0) recv(Kokkos::DefaultHostExecutionSpace(), comm, buf, p, message_tag);
      }
      unpack(buf, p, global);
    }
    return global;
  }
  host_matrix_type gather(int root) const { return gather(execution_space(), root); }

  /// Collective over grid().comm(): the whole m x n matrix on every rank (one broadcast of each
  /// rank's local part; m n values of host memory a rank).
  template <class ExecSpace,
            std::enable_if_t<Kokkos::is_execution_space<ExecSpace>::value, int> = 0>
  host_matrix_type allgather(const ExecSpace& exec) const {
    const Communicator& comm = check_root(0, "comm::DistMatrix::allgather");
    kx::ScopedRegion region("kess::DistMatrix::allgather");
    host_matrix_type mine = copy_out(exec);
    host_matrix_type global(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::allgathered"),
        static_cast<std::size_t>(rows()), static_cast<std::size_t>(cols()));
    for (int p = 0; p < comm.size(); ++p) {
      host_matrix_type buf = mine;
      if (p != comm.rank())
        buf = host_matrix_type(
            Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::buf"),
            map_.local_rows(grid_.row_of(p)), map_.local_cols(grid_.col_of(p)));
      if (buf.size() > 0) bcast(Kokkos::DefaultHostExecutionSpace(), comm, buf, p);
      unpack(buf, p, global);
    }
    return global;
  }
  host_matrix_type allgather() const { return allgather(execution_space()); }

 private:
  using storage_view_type = Kokkos::View<T**, Kokkos::LayoutLeft, MemSpace>;
  // Tag of scatter/gather messages; pairs of ranks exchange them in order (MPI non-overtaking).
  static constexpr int message_tag = 0x6b65;

  template <class Storage>
  void set_local(const Storage& storage) {
    if (map_.local_rows() == 0 || map_.local_cols() == 0) {
      // Nothing here: a plain empty View, contiguous, so that deep_copy and mirrors of it work.
      local_ = local_view_type("kess::DistMatrix", map_.local_rows(), map_.local_cols());
      return;
    }
    // Rows [0, local_rows) of lld x local_cols storage: LayoutLeft with stride(1) == lld.
    local_ = Kokkos::subview(storage, Kokkos::make_pair(0, map_.local_rows()), Kokkos::ALL());
  }

  void check_map_matches_grid(const char* fn) const {
    const GridPosition& w = map_.position();
    require_arg(w.nprow == grid_.nprow() && w.npcol == grid_.npcol() && w.myrow == grid_.myrow() &&
                    w.mycol == grid_.mycol(),
                fn,
                "the map's process grid (" + std::to_string(w.nprow) + " x " +
                    std::to_string(w.npcol) + ", at " + std::to_string(w.myrow) + ", " +
                    std::to_string(w.mycol) + ") differs from the ProcessGrid (" +
                    std::to_string(grid_.nprow()) + " x " + std::to_string(grid_.npcol()) +
                    ", at " + std::to_string(grid_.myrow()) + ", " + std::to_string(grid_.mycol()) +
                    ")");
  }

  const Communicator& check_root(int root, const char* fn) const {
    const Communicator& comm = grid_.comm();
    comm.require_valid(fn);
    require_arg(root >= 0 && root < comm.size(), fn,
                "root = " + std::to_string(root) + " is not a rank of the grid's " +
                    std::to_string(comm.size()) + " ranks");
    return comm;
  }

  /// Rank p's share of `global`, as a local_rows(p) x local_cols(p) host matrix.
  template <class HostView>
  host_matrix_type pack(const HostView& global, int p) const {
    const int prow = grid_.row_of(p), pcol = grid_.col_of(p);
    const int lr = map_.local_rows(prow), lc = map_.local_cols(pcol);
    host_matrix_type buf(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::buf"),
                         lr, lc);
    for (int jl = 0; jl < lc; ++jl) {
      const std::int64_t j = map_.global_col(jl, pcol);
      for (int il = 0; il < lr; ++il) buf(il, jl) = global(map_.global_row(il, prow), j);
    }
    return buf;
  }

  void unpack(const host_matrix_type& buf, int p, const host_matrix_type& global) const {
    const int prow = grid_.row_of(p), pcol = grid_.col_of(p);
    for (int jl = 0; jl < static_cast<int>(buf.extent(1)); ++jl) {
      const std::int64_t j = map_.global_col(jl, pcol);
      for (int il = 0; il < static_cast<int>(buf.extent(0)); ++il) {
        global(map_.global_row(il, prow), j) = buf(il, jl);
      }
    }
  }

  /// local_ <- h (contiguous, host). A padded local_ in memory the host cannot reach goes
  /// through a contiguous copy in MemSpace (deep_copy across spaces needs contiguous Views).
  template <class ExecSpace>
  void copy_in(const ExecSpace& exec, const host_matrix_type& h) {
    if (h.size() == 0) return;
    if (local_.span_is_contiguous() ||
        Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
      Kokkos::deep_copy(exec, local_, h);
    } else {
      local_view_type tmp(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::tmp"),
                          local_.extent(0), local_.extent(1));
      Kokkos::deep_copy(exec, tmp, h);
      Kokkos::deep_copy(exec, local_, tmp);
    }
    kx::fence(exec, "kess::DistMatrix::copy_in");
  }

  /// A contiguous host copy of local_.
  template <class ExecSpace>
  host_matrix_type copy_out(const ExecSpace& exec) const {
    host_matrix_type h(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::buf"),
                       local_.extent(0), local_.extent(1));
    if (h.size() == 0) return h;
    if (local_.span_is_contiguous() ||
        Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible) {
      Kokkos::deep_copy(exec, h, local_);
    } else {
      local_view_type tmp(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::DistMatrix::tmp"),
                          local_.extent(0), local_.extent(1));
      Kokkos::deep_copy(exec, tmp, local_);
      Kokkos::deep_copy(exec, h, tmp);
    }
    kx::fence(exec, "kess::DistMatrix::copy_out");
    return h;
  }

  ProcessGrid grid_;
  BlockCyclicMap map_;
  local_view_type local_;
};

}  // namespace kess::comm

namespace kess {
/// kess::DistMatrix<double> H(grid, n, n, 64) — the name user code and the solvers use.
using comm::DistMatrix;
}  // namespace kess
