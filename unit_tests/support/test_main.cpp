// main() for every kess test binary: MPI and Kokkos through kess::ScopeGuard; on MPI runs only
// rank 0 prints, but every rank's failure sets the exit code (mpiexec then fails the test).
#include <kess/comm/scope_guard.hpp>
#include <kess/kess_config.hpp>

#include <gtest/gtest.h>

#if KESS_HAVE_MPI
#include <mpi.h>
#endif

int main(int argc, char** argv) {
  kess::ScopeGuard guard(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
#if KESS_HAVE_MPI
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
#if KESS_HAVE_MPI
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  failed = any;
#endif
  return failed;
}
