// What the Gauss-Jordan and matrix-function subcommands of kess-run share: their inputs (Matrix
// Market files or generated matrices), the distributed path's 1 x P grid, timing, and the
// report's common lines and JSON fields.
#pragma once

#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/dist_matrix.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/solvers/gauss_jordan.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace kess::run {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using DevMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
using HostMat = perf::HostMatrix;
using HostExec = Kokkos::DefaultHostExecutionSpace;
using Dist = comm::DistMatrix<double, Mem>;

/// Help text of the options every subcommand takes, and of the generator flags.
extern const char* const kCommon;
extern const char* const kGenerateFlags;

/// MPI ranks (1 in a build without MPI).
int ranks();

/// The generator flags, for the subcommands that take them.
std::set<std::string> with_generate(std::set<std::string> names);
/// The options every subcommand takes.
std::set<std::string> with_common(std::set<std::string> names);
/// The switches (options without a value) every subcommand takes.
extern const std::set<std::string> kSwitches;

/// The host matrix of --<what> FILE; for "matrix" and "rhs" with --generate random instead the
/// generated one: A n x n (seed S), B n x nrhs (seed S + 1).
HostMat host_input(const Args& a, const char* what);
/// host_input copied to the default execution space's memory.
DevMat load(const Args& a, const char* what);
HostMat to_host(const DevMat& d);

/// --block and --pivoting.
GaussJordanOptions gj_options(const Args& a);

/// The median of `repeat` timed runs of f; with a communicator the ranks meet before and after
/// each run (the time is the slowest rank's).
template <class F>
double timed(int repeat, F&& f, const comm::Communicator* cm = nullptr) {
  std::vector<double> t;
  Exec exec;
  for (int r = 0; r < repeat; ++r) {
    exec.fence();
    if (cm) cm->barrier();
    Kokkos::Timer timer;
    f();
    exec.fence();
    if (cm) cm->barrier();
    t.push_back(timer.seconds());
  }
  return perf::median(t);
}

// ---- the distributed path -----------------------------------------------------------------------

/// More than one rank, or --distributed: the distributed versions.
bool distributed(const Args& a);

/// Everything the distributed path needs: the 1 x P grid, NB, and the matrices rank 0 read.
struct DistRun {
  comm::Communicator world = comm::Communicator::world();
  comm::ProcessGrid grid{world, 1, world.size()};
  int block = 0;  // --block; 0: the solvers' default for the order of the matrix
  bool root() const { return world.rank() == 0; }

  explicit DistRun(const Args& a);

  /// Rank 0 reads the file or generates the matrix (a failure there fails every rank: missing
  /// flags are found there too), every rank gets its share of the matrix, column-block-cyclic in
  /// blocks of --block (0: the solvers' default NB for its order); `global` keeps rank 0's copy
  /// (empty elsewhere).
  Dist load(const Args& a, const char* what, HostMat& global) const;
};

/// rank 0 of the distributed run, or the local run: the one that reports.
bool reports(bool dist);

// ---- the report ---------------------------------------------------------------------------------

/// JSON fields every subcommand writes.
void common_json(perf::JsonReport& j, const char* cmd, std::int64_t n, double t, double flops,
                 bool dist);
/// The report's first lines: what ran where, time and rate.
void print_common(const char* cmd, std::int64_t n, double t, double flops, bool dist);

}  // namespace kess::run
