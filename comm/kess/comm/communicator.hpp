// kess::comm::Communicator — a shared handle on an MPI communicator (or on the single process when
// kess was built without MPI).
#pragma once

#include <kess/kess_config.hpp>

#include <memory>

#if KESS_HAVE_MPI
#include <mpi.h>
#endif

namespace kess::comm {

namespace detail {
struct CommHandle;  // defined in communicator.cpp: the MPI_Comm and whether kess frees it
}

/// Copies share one underlying communicator; the last copy of a communicator made by split()
/// frees it (unless MPI was finalized first). Without MPI (KESS_HAVE_MPI == 0) every
/// Communicator is the single process: rank 0 of size 1.
class Communicator {
 public:
  /// The null communicator: size() == 0; every communication on it throws kess::Error.
  Communicator() = default;

  /// MPI_COMM_WORLD (not freed by kess). Throws kess::Error (mpi) when MPI is not initialized.
  static Communicator world();
  /// This process alone: MPI_COMM_SELF (not freed by kess; MPI must be initialized, as for
  /// world()), or the single process of a build without MPI.
  static Communicator self();

#if KESS_HAVE_MPI
  /// Uses `comm` without taking ownership: the caller frees it, after the last kess use.
  static Communicator wrap(MPI_Comm comm);
  /// The MPI handle (MPI_COMM_NULL for the null communicator).
  MPI_Comm native() const;
#endif

  /// Collective: MPI_Comm_split. Ranks with the same `color` form one new communicator, ordered
  /// by `key` (ties by rank here); a negative color gives that rank the null communicator.
  Communicator split(int color, int key) const;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  bool is_null() const noexcept { return size_ == 0; }

  /// Collective: MPI_Barrier (nothing without MPI).
  void barrier() const;

  /// Ends every process of this communicator (MPI_Abort with `code`; std::exit without MPI): for
  /// an error on one rank that the others cannot learn of (they may wait in a collective).
  [[noreturn]] void abort(int code) const;

  /// Throws kess::Error (mpi) naming `function` when this is the null communicator.
  void require_valid(const char* function) const;

  /// The shared MPI handle; only comm/ .cpp files look inside it.
  const std::shared_ptr<const detail::CommHandle>& handle() const noexcept { return handle_; }

 private:
  Communicator(std::shared_ptr<const detail::CommHandle> handle, int rank, int size)
      : handle_(std::move(handle)), rank_(rank), size_(size) {}

  std::shared_ptr<const detail::CommHandle> handle_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace kess::comm
