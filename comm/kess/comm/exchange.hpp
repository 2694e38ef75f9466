// Host-side exchanges of variable-length std::vector data (block lists, index arrays): gather to
// every rank and all-to-all. Counts are in elements; each rank pair may exchange up to 2^31 - 1.
#pragma once

#include <kess/comm/communicator.hpp>
#include <kess/comm/view_comm.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace kess::comm {

namespace detail {
// Byte-level bodies (exchange.cpp); `elem` is sizeof(T), counts and displacements in elements.
void allgatherv_bytes(const Communicator& comm, const void* mine, std::int64_t count,
                      std::size_t elem, void* out, const std::vector<std::int64_t>& counts);
void allgather_count(const Communicator& comm, std::int64_t count,
                     std::vector<std::int64_t>& counts);
void alltoall_counts(const Communicator& comm, const std::vector<std::int64_t>& send_counts,
                     std::vector<std::int64_t>& recv_counts);
void alltoallv_bytes(const Communicator& comm, const void* send,
                     const std::vector<std::int64_t>& send_counts, std::size_t elem, void* recv,
                     const std::vector<std::int64_t>& recv_counts);
}  // namespace detail

/// Collective: the parts of `send` (counts[r] elements for rank r, consecutive, the same counts on
/// every rank) summed over the ranks, part r delivered to rank r's `recv` (MPI_Reduce_scatter).
/// Host buffers; a rank with counts[rank] == 0 receives nothing.
void reduce_scatter_sum(const Communicator& comm, const double* send, double* recv,
                        const std::vector<std::int64_t>& counts);
/// Collective: every rank's `count` doubles from `mine`, concatenated in rank order into `out`
/// (counts[r] from rank r, the same counts on every rank; host buffers).
void allgatherv_doubles(const Communicator& comm, const double* mine, double* out,
                        const std::vector<std::int64_t>& counts);

/// Collective: every rank's `mine`, concatenated in rank order, on every rank. `counts` (when
/// given) receives the length each rank contributed.
template <class T>
std::vector<T> allgatherv(const Communicator& comm, const std::vector<T>& mine,
                          std::vector<std::int64_t>* counts = nullptr) {
  static_assert(std::is_trivially_copyable<T>::value, "comm::allgatherv: trivially copyable T");
  std::vector<std::int64_t> c;
  detail::allgather_count(comm, static_cast<std::int64_t>(mine.size()), c);
  std::int64_t total = 0;
  for (auto x : c) total += x;
  std::vector<T> out(static_cast<std::size_t>(total));
  detail::allgatherv_bytes(comm, mine.data(), static_cast<std::int64_t>(mine.size()), sizeof(T),
                           out.data(), c);
  if (counts) *counts = std::move(c);
  return out;
}

/// Collective: `send` holds consecutive parts for ranks 0, 1, ... of send_counts[r] elements each;
/// returns what every rank sent to this one, in source-rank order (`recv_counts`, when given,
/// receives the part lengths).
template <class T>
std::vector<T> alltoallv(const Communicator& comm, const std::vector<T>& send,
                         const std::vector<std::int64_t>& send_counts,
                         std::vector<std::int64_t>* recv_counts = nullptr) {
  static_assert(std::is_trivially_copyable<T>::value, "comm::alltoallv: trivially copyable T");
  std::vector<std::int64_t> rc;
  detail::alltoall_counts(comm, send_counts, rc);
  std::int64_t total = 0;
  for (auto x : rc) total += x;
  std::vector<T> out(static_cast<std::size_t>(total));
  detail::alltoallv_bytes(comm, send.data(), send_counts, sizeof(T), out.data(), rc);
  if (recv_counts) *recv_counts = std::move(rc);
  return out;
}

/// Collective: v = op(v over all ranks), element by element, in place.
template <class T>
void allreduce(const Communicator& comm, std::vector<T>& v, ReduceOp op) {
  detail::allreduce_raw(comm, nullptr, v.data(), v.size(), detail::DatatypeOf<T>::value, op,
                        "comm::allreduce");
}

/// Collective: op(x over all ranks).
template <class T>
T allreduce(const Communicator& comm, T x, ReduceOp op) {
  detail::allreduce_raw(comm, nullptr, &x, 1, detail::DatatypeOf<T>::value, op,
                        "comm::allreduce");
  return x;
}

}  // namespace kess::comm
