// ELPA, the distributed CPU peer of kess::eigh: ELPA 1-stage and 2-stage through its C API on all
// ranks of MPI_COMM_WORLD (squarest process grid, 2D block-cyclic in blocks of nblk). Built with
// ELPA when CMake finds it (pkg-config "elpa", MPI on); otherwise available() is false.
#pragma once

#include "perf_common.hpp"

#include <memory>
#include <string>

namespace kess::perf::peers::elpa {

/// Whether this build has ELPA; why not otherwise.
bool available();
std::string unavailable_reason();

/// One ELPA handle for an n x n problem with nev eigenvectors, stages 1 or 2.
class Eigensolver {
 public:
  Eigensolver(int n, int nev, int stages, int nblk = 64);
  ~Eigensolver();
  Eigensolver(const Eigensolver&) = delete;
  Eigensolver& operator=(const Eigensolver&) = delete;

  /// Empty when the handle is ready, else what failed (elpa_init, elpa_setup).
  const std::string& error() const;
  /// Untimed: this rank's blocks of the global matrix A (the same on every rank).
  void distribute(const HostMatrix& A);
  /// One elpa_eigenvectors call on a fresh copy of the distributed A (copied before the ranks
  /// meet, untimed); returns the slowest rank's wall time between barriers. *ok: ELPA's status.
  double solve(bool* ok);
  /// "ELPA 2-stage on 2 ranks (1x2, nblk 64)".
  std::string label() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kess::perf::peers::elpa
