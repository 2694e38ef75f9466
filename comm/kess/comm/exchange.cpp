#include <kess/comm/detail/mpi_handle.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/core/base/error.hpp>

#include <climits>
#include <cstring>
#include <string>

namespace kess::comm::detail {
namespace {

int as_int(std::int64_t v, const char* fn) {
  require(v >= 0 && v <= INT_MAX, ErrorKind::mpi, fn,
          "a part of " + std::to_string(v) + " elements does not fit MPI's int counts");
  return static_cast<int>(v);
}

#if KESS_HAVE_MPI
// A contiguous MPI type of `elem` bytes, freed at scope end.
struct ElemType {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  ElemType(std::size_t elem, const char* fn) {
    check_mpi(MPI_Type_contiguous(static_cast<int>(elem), MPI_BYTE, &t), fn, "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&t), fn, "MPI_Type_commit");
  }
  ~ElemType() {
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
  }
};

void displacements(const std::vector<std::int64_t>& counts, std::vector<int>& c,
                   std::vector<int>& d, const char* fn) {
  c.resize(counts.size());
  d.resize(counts.size());
  std::int64_t off = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    c[r] = as_int(counts[r], fn);
    d[r] = as_int(off, fn);
    off += counts[r];
  }
}
#endif

}  // namespace

void allgather_count(const Communicator& comm, std::int64_t count,
                     std::vector<std::int64_t>& counts) {
  constexpr const char* fn = "comm::allgatherv";
  counts.assign(static_cast<std::size_t>(comm.size()), 0);
#if KESS_HAVE_MPI
  MPI_Comm c = native_or_throw(comm, fn);
  check_mpi(MPI_Allgather(&count, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, c), fn,
            "MPI_Allgather");
#else
  comm.require_valid(fn);
  counts[0] = count;
#endif
}

void allgatherv_bytes(const Communicator& comm, const void* mine, std::int64_t count,
                      std::size_t elem, void* out, const std::vector<std::int64_t>& counts) {
  constexpr const char* fn = "comm::allgatherv";
#if KESS_HAVE_MPI
  MPI_Comm c = native_or_throw(comm, fn);
  std::vector<int> cs, ds;
  displacements(counts, cs, ds, fn);
  ElemType t(elem, fn);
  check_mpi(MPI_Allgatherv(mine, as_int(count, fn), t.t, out, cs.data(), ds.data(), t.t, c), fn,
            "MPI_Allgatherv");
#else
  comm.require_valid(fn);
  (void)counts;
  if (count > 0) std::memcpy(out, mine, static_cast<std::size_t>(count) * elem);
#endif
}

void alltoall_counts(const Communicator& comm, const std::vector<std::int64_t>& send_counts,
                     std::vector<std::int64_t>& recv_counts) {
  constexpr const char* fn = "comm::alltoallv";
  require_arg(send_counts.size() == static_cast<std::size_t>(comm.size()), fn,
              "send_counts has " + std::to_string(send_counts.size()) + " entries for " +
                  std::to_string(comm.size()) + " ranks");
  recv_counts.assign(send_counts.size(), 0);
#if KESS_HAVE_MPI
  MPI_Comm c = native_or_throw(comm, fn);
  check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv_counts.data(), 1, MPI_INT64_T, c),
            fn, "MPI_Alltoall");
#else
  comm.require_valid(fn);
  recv_counts = send_counts;
#endif
}

void alltoallv_bytes(const Communicator& comm, const void* send,
                     const std::vector<std::int64_t>& send_counts, std::size_t elem, void* recv,
                     const std::vector<std::int64_t>& recv_counts) {
  constexpr const char* fn = "comm::alltoallv";
#if KESS_HAVE_MPI
  MPI_Comm c = native_or_throw(comm, fn);
  std::vector<int> sc, sd, rc, rd;
  displacements(send_counts, sc, sd, fn);
  displacements(recv_counts, rc, rd, fn);
  ElemType t(elem, fn);
  check_mpi(MPI_Alltoallv(send, sc.data(), sd.data(), t.t, recv, rc.data(), rd.data(), t.t, c),
            fn, "MPI_Alltoallv");
#else
  comm.require_valid(fn);
  if (!send_counts.empty() && send_counts[0] > 0) {
    std::memcpy(recv, send, static_cast<std::size_t>(send_counts[0]) * elem);
  }
#endif
}

}  // namespace kess::comm::detail

namespace kess::comm {

void reduce_scatter_sum(const Communicator& comm, const double* send, double* recv,
                        const std::vector<std::int64_t>& counts) {
  constexpr const char* fn = "comm::reduce_scatter_sum";
  require_arg(counts.size() == static_cast<std::size_t>(comm.size()), fn,
              "counts has " + std::to_string(counts.size()) + " entries for " +
                  std::to_string(comm.size()) + " ranks");
#if KESS_HAVE_MPI
  MPI_Comm c = detail::native_or_throw(comm, fn);
  std::vector<int> cs(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) cs[r] = detail::as_int(counts[r], fn);
  detail::check_mpi(MPI_Reduce_scatter(send, recv, cs.data(), MPI_DOUBLE, MPI_SUM, c), fn,
                    "MPI_Reduce_scatter");
#else
  comm.require_valid(fn);
  if (counts[0] > 0 && send != recv) {
    std::memcpy(recv, send, static_cast<std::size_t>(counts[0]) * sizeof(double));
  }
#endif
}

void allgatherv_doubles(const Communicator& comm, const double* mine, double* out,
                        const std::vector<std::int64_t>& counts) {
  require_arg(counts.size() == static_cast<std::size_t>(comm.size()), "comm::allgatherv_doubles",
              "counts has " + std::to_string(counts.size()) + " entries for " +
                  std::to_string(comm.size()) + " ranks");
  detail::allgatherv_bytes(comm, mine, counts[static_cast<std::size_t>(comm.rank())],
                           sizeof(double), out, counts);
}

}  // namespace kess::comm
