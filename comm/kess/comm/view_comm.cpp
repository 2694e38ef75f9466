#include <kess/comm/detail/mpi_handle.hpp>
#include <kess/comm/view_comm.hpp>

#include <climits>
#include <cstring>
#include <string>

namespace kess::comm::detail {
namespace {

std::string str(long long v) { return std::to_string(v); }

void check_rank(const Communicator& comm, int r, const char* what, const char* fn) {
  require_arg(r >= 0 && r < comm.size(), fn,
              std::string(what) + " = " + str(r) + " is not a rank of a communicator of size " +
                  str(comm.size()));
}

bool is_complex(Datatype t) { return t == Datatype::cfloat || t == Datatype::cdouble; }

void check_op(Datatype type, ReduceOp op, const char* fn) {
  require_arg(type != Datatype::bool_, fn, "allreduce of bool values is not supported");
  require_arg(!(is_complex(type) && op != ReduceOp::sum), fn,
              "max and min are not defined for complex values");
}

#if KESS_HAVE_MPI
int checked_count(std::size_t count, const char* fn) {
  require_arg(count <= static_cast<std::size_t>(INT_MAX), fn,
              "the View holds " + std::to_string(count) +
                  " elements, more than one MPI message can carry (INT_MAX)");
  return static_cast<int>(count);
}

MPI_Datatype mpi_type(Datatype t) {
  switch (t) {
    case Datatype::char_:
      return MPI_CHAR;
    case Datatype::schar:
      return MPI_SIGNED_CHAR;
    case Datatype::uchar:
      return MPI_UNSIGNED_CHAR;
    case Datatype::short_:
      return MPI_SHORT;
    case Datatype::ushort:
      return MPI_UNSIGNED_SHORT;
    case Datatype::int_:
      return MPI_INT;
    case Datatype::uint:
      return MPI_UNSIGNED;
    case Datatype::long_:
      return MPI_LONG;
    case Datatype::ulong:
      return MPI_UNSIGNED_LONG;
    case Datatype::llong:
      return MPI_LONG_LONG;
    case Datatype::ullong:
      return MPI_UNSIGNED_LONG_LONG;
    case Datatype::float_:
      return MPI_FLOAT;
    case Datatype::double_:
      return MPI_DOUBLE;
    case Datatype::ldouble:
      return MPI_LONG_DOUBLE;
    case Datatype::bool_:
      return MPI_CXX_BOOL;
    case Datatype::cfloat:
      return MPI_CXX_FLOAT_COMPLEX;
    case Datatype::cdouble:
      return MPI_CXX_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  return MPI_OP_NULL;
}
#else
std::size_t size_of(Datatype t) {
  switch (t) {
    case Datatype::char_:
      return sizeof(char);
    case Datatype::schar:
      return sizeof(signed char);
    case Datatype::uchar:
      return sizeof(unsigned char);
    case Datatype::short_:
      return sizeof(short);
    case Datatype::ushort:
      return sizeof(unsigned short);
    case Datatype::int_:
      return sizeof(int);
    case Datatype::uint:
      return sizeof(unsigned);
    case Datatype::long_:
      return sizeof(long);
    case Datatype::ulong:
      return sizeof(unsigned long);
    case Datatype::llong:
      return sizeof(long long);
    case Datatype::ullong:
      return sizeof(unsigned long long);
    case Datatype::float_:
      return sizeof(float);
    case Datatype::double_:
      return sizeof(double);
    case Datatype::ldouble:
      return sizeof(long double);
    case Datatype::bool_:
      return sizeof(bool);
    case Datatype::cfloat:
      return 2 * sizeof(float);
    case Datatype::cdouble:
      return 2 * sizeof(double);
  }
  return 0;
}

[[noreturn]] void no_point_to_point(const char* fn) {
  throw Error(ErrorKind::mpi, fn,
              "point-to-point messages need MPI, and this kess was built with KESS_ENABLE_MPI=OFF "
              "(a single rank)");
}
#endif

}  // namespace

#if KESS_HAVE_MPI

void send_raw(const Communicator& comm, const void* buf, std::size_t count, Datatype type, int dest,
              int tag, const char* fn) {
  MPI_Comm c = native_or_throw(comm, fn);
  check_rank(comm, dest, "dest", fn);
  const int n = checked_count(count, fn);
  check_mpi(MPI_Send(buf, n, mpi_type(type), dest, tag, c), fn, "MPI_Send");
}

void recv_raw(const Communicator& comm, void* buf, std::size_t count, Datatype type, int source,
              int tag, const char* fn) {
  MPI_Comm c = native_or_throw(comm, fn);
  check_rank(comm, source, "source", fn);
  const int n = checked_count(count, fn);
  MPI_Status status;
  check_mpi(MPI_Recv(buf, n, mpi_type(type), source, tag, c, &status), fn, "MPI_Recv");
  int got = 0;
  check_mpi(MPI_Get_count(&status, mpi_type(type), &got), fn, "MPI_Get_count");
  require(got == n, ErrorKind::mpi, fn,
          "received " + str(got) + " elements from rank " + str(source) + ", expected " + str(n));
}

void bcast_raw(const Communicator& comm, void* buf, std::size_t count, Datatype type, int root,
               const char* fn) {
  MPI_Comm c = native_or_throw(comm, fn);
  check_rank(comm, root, "root", fn);
  const int n = checked_count(count, fn);
  check_mpi(MPI_Bcast(buf, n, mpi_type(type), root, c), fn, "MPI_Bcast");
}

void sendrecv_raw(const Communicator& comm, const void* sendbuf, std::size_t send_count, int dest,
                  void* recvbuf, std::size_t recv_count, int source, Datatype type, int tag,
                  const char* fn) {
  MPI_Comm c = native_or_throw(comm, fn);
  check_rank(comm, dest, "dest", fn);
  check_rank(comm, source, "source", fn);
  const int ns = checked_count(send_count, fn), nr = checked_count(recv_count, fn);
  MPI_Status status;
  check_mpi(MPI_Sendrecv(sendbuf, ns, mpi_type(type), dest, tag, recvbuf, nr, mpi_type(type),
                         source, tag, c, &status),
            fn, "MPI_Sendrecv");
  int got = 0;
  check_mpi(MPI_Get_count(&status, mpi_type(type), &got), fn, "MPI_Get_count");
  require(got == nr, ErrorKind::mpi, fn,
          "received " + str(got) + " elements from rank " + str(source) + ", expected " + str(nr));
}

void allreduce_raw(const Communicator& comm, const void* sendbuf, void* recvbuf, std::size_t count,
                   Datatype type, ReduceOp op, const char* fn) {
  MPI_Comm c = native_or_throw(comm, fn);
  check_op(type, op, fn);
  const int n = checked_count(count, fn);
  check_mpi(MPI_Allreduce(sendbuf == nullptr ? MPI_IN_PLACE : sendbuf, recvbuf, n, mpi_type(type),
                          mpi_op(op), c),
            fn, "MPI_Allreduce");
}

#else  // one rank: collectives are copies or nothing

void send_raw(const Communicator& comm, const void*, std::size_t, Datatype, int, int,
              const char* fn) {
  comm.require_valid(fn);
  no_point_to_point(fn);
}

void recv_raw(const Communicator& comm, void*, std::size_t, Datatype, int, int, const char* fn) {
  comm.require_valid(fn);
  no_point_to_point(fn);
}

void bcast_raw(const Communicator& comm, void*, std::size_t, Datatype, int root, const char* fn) {
  comm.require_valid(fn);
  check_rank(comm, root, "root", fn);
}

// The single rank may exchange with itself: a copy.
void sendrecv_raw(const Communicator& comm, const void* sendbuf, std::size_t send_count, int dest,
                  void* recvbuf, std::size_t recv_count, int source, Datatype type, int,
                  const char* fn) {
  comm.require_valid(fn);
  check_rank(comm, dest, "dest", fn);
  check_rank(comm, source, "source", fn);
  require(send_count == recv_count, ErrorKind::mpi, fn,
          "received " + str(static_cast<long long>(send_count)) + " elements from rank 0, expected " +
              str(static_cast<long long>(recv_count)));
  if (send_count > 0) std::memcpy(recvbuf, sendbuf, send_count * size_of(type));
}

void allreduce_raw(const Communicator& comm, const void* sendbuf, void* recvbuf, std::size_t count,
                   Datatype type, ReduceOp op, const char* fn) {
  comm.require_valid(fn);
  check_op(type, op, fn);
  if (sendbuf != nullptr && sendbuf != recvbuf && count > 0) {
    std::memcpy(recvbuf, sendbuf, count * size_of(type));
  }
}

#endif

}  // namespace kess::comm::detail
