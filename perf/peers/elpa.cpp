#include "elpa.hpp"

#if defined(KESS_PERF_ELPA)
#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/block_cyclic_map.hpp>
#include <kess/comm/dense/process_grid.hpp>

#include <elpa/elpa.h>
#include <mpi.h>

#include <algorithm>
#include <vector>
#endif

namespace kess::perf::peers::elpa {

#if defined(KESS_PERF_ELPA)

bool available() { return true; }
std::string unavailable_reason() { return ""; }

struct Eigensolver::Impl {
  int n, nev, stages, nblk;
  kess::comm::Communicator world = kess::comm::Communicator::world();
  kess::comm::ProcessGrid grid = kess::comm::ProcessGrid::squarest(world);
  kess::comm::BlockCyclicMap map;
  int lr, lc;
  std::vector<double> a0, a, z, ev;
  elpa_t handle = nullptr;
  bool initialized = false;
  std::string error;

  Impl(int n_, int nev_, int stages_, int nblk_)
      : n(n_),
        nev(nev_),
        stages(stages_),
        nblk(nblk_),
        map(grid, n_, n_, nblk_, nblk_),
        lr(std::max(1, map.local_rows())),
        lc(std::max(1, map.local_cols())),
        a0(std::size_t(lr) * lc),
        a(a0.size()),
        z(a0.size()),
        ev(n_) {}
};

Eigensolver::Eigensolver(int n, int nev, int stages, int nblk)
    : impl_(std::make_unique<Impl>(n, nev, stages, nblk)) {
  Impl& s = *impl_;
  if (elpa_init(ELPA_API_VERSION) != ELPA_OK) {
    s.error = "elpa_init failed (API version)";
    return;
  }
  s.initialized = true;
  int err = 0;
  s.handle = elpa_allocate(&err);
  elpa_set(s.handle, "na", n, &err);
  elpa_set(s.handle, "nev", nev, &err);
  elpa_set(s.handle, "local_nrows", s.lr, &err);
  elpa_set(s.handle, "local_ncols", s.lc, &err);
  elpa_set(s.handle, "nblk", nblk, &err);
  elpa_set(s.handle, "mpi_comm_parent", static_cast<int>(MPI_Comm_c2f(s.world.native())), &err);
  elpa_set(s.handle, "process_row", s.grid.myrow(), &err);
  elpa_set(s.handle, "process_col", s.grid.mycol(), &err);
  if (elpa_setup(s.handle) != ELPA_OK) {
    s.error = "elpa_setup failed";
    return;
  }
  elpa_set(s.handle, "solver", stages == 1 ? ELPA_SOLVER_1STAGE : ELPA_SOLVER_2STAGE, &err);
}

Eigensolver::~Eigensolver() {
  int err = 0;
  if (impl_->handle) elpa_deallocate(impl_->handle, &err);
  if (impl_->initialized) elpa_uninit(&err);
}

const std::string& Eigensolver::error() const { return impl_->error; }

void Eigensolver::distribute(const HostMatrix& A) {
  Impl& s = *impl_;
  for (int jl = 0; jl < s.map.local_cols(); ++jl)
    for (int il = 0; il < s.map.local_rows(); ++il)
      s.a0[il + std::size_t(jl) * s.lr] = A(s.map.global_row(il), s.map.global_col(jl));
}

double Eigensolver::solve(bool* ok) {
  Impl& s = *impl_;
  s.a = s.a0;
  MPI_Barrier(s.world.native());
  const double t0 = MPI_Wtime();
  int err = 0;
  elpa_eigenvectors(s.handle, s.a.data(), s.ev.data(), s.z.data(), &err);
  double t = MPI_Wtime() - t0, tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, s.world.native());
  *ok = err == ELPA_OK;
  return tmax;
}

std::string Eigensolver::label() const {
  const Impl& s = *impl_;
  return std::string("ELPA ") + (s.stages == 1 ? "1-stage" : "2-stage") + " on " +
         std::to_string(s.world.size()) + " ranks (" + std::to_string(s.grid.nprow()) + "x" +
         std::to_string(s.grid.npcol()) + ", nblk " + std::to_string(s.nblk) + ")";
}

#else  // no ELPA in this build

bool available() { return false; }
std::string unavailable_reason() {
  return "ELPA not found at configure time (needs MPI; Debian: libelpa-dev, "
         "libscalapack-openmpi-dev)";
}

struct Eigensolver::Impl {
  std::string error = unavailable_reason();
};
Eigensolver::Eigensolver(int, int, int, int) : impl_(std::make_unique<Impl>()) {}
Eigensolver::~Eigensolver() = default;
const std::string& Eigensolver::error() const { return impl_->error; }
void Eigensolver::distribute(const HostMatrix&) {}
double Eigensolver::solve(bool* ok) {
  *ok = false;
  return 0.0;
}
std::string Eigensolver::label() const { return "ELPA (not built)"; }

#endif

}  // namespace kess::perf::peers::elpa
