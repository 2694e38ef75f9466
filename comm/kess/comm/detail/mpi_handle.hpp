// Internal to comm/ .cpp files: the MPI handle behind a Communicator and error checking of MPI
// calls. Never included by a public header.
#pragma once

#include <kess/comm/communicator.hpp>
#include <kess/core/base/error.hpp>
#include <kess/kess_config.hpp>

#include <string>

#if KESS_HAVE_MPI
#include <mpi.h>

namespace kess::comm::detail {

struct CommHandle {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
  ~CommHandle();
};

/// Throws kess::Error (mpi) "<call> failed: <MPI error string>" unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* function, const char* call);

/// The communicator's MPI handle; throws kess::Error (mpi) for the null communicator.
MPI_Comm native_or_throw(const Communicator& comm, const char* function);

}  // namespace kess::comm::detail
#endif
