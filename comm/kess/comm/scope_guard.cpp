#include <kess/comm/scope_guard.hpp>
#include <kess/core/base/error.hpp>
#include <kess/kess_config.hpp>

#include <Kokkos_Core.hpp>

#if KESS_HAVE_MPI
#include <mpi.h>
#endif

namespace kess {

ScopeGuard::ScopeGuard(int& argc, char**& argv) {
#if KESS_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    finalize_mpi_ = true;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  set_error_rank(rank);
#endif
  if (!Kokkos::is_initialized()) {
    Kokkos::initialize(argc, argv);
    finalize_kokkos_ = true;
  }
}

ScopeGuard::~ScopeGuard() {
  if (finalize_kokkos_ && Kokkos::is_initialized()) Kokkos::finalize();
#if KESS_HAVE_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalize_mpi_ && !finalized) MPI_Finalize();
#endif
}

}  // namespace kess
