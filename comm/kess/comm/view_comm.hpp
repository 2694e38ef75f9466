// View messaging: send, recv, bcast and allreduce of whole contiguous Kokkos Views of arithmetic
// (or Kokkos::complex) values. Views whose memory the host cannot read are staged through a host
// buffer unless kess was built with KESS_ENABLE_GPU_AWARE_MPI (KESS_GPU_AWARE_MPI == 1).
// Each function takes the execution space instance first; that instance is fenced before MPI
// touches the data and again before returning, never the whole device.
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/comm/communicator.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/kess_config.hpp>

#include <Kokkos_Core.hpp>

#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>

namespace kess::comm {

enum class ReduceOp { sum, max, min };

namespace detail {

/// The element types View messaging knows; mapped to MPI datatypes in view_comm.cpp.
enum class Datatype {
  char_,
  schar,
  uchar,
  short_,
  ushort,
  int_,
  uint,
  long_,
  ulong,
  llong,
  ullong,
  float_,
  double_,
  ldouble,
  bool_,
  cfloat,
  cdouble,
};

template <class T>
struct DatatypeOf;
#define KESS_COMM_DATATYPE(T, D)                   \
  template <>                                      \
  struct DatatypeOf<T> {                           \
    static constexpr Datatype value = Datatype::D; \
  }
KESS_COMM_DATATYPE(char, char_);
KESS_COMM_DATATYPE(signed char, schar);
KESS_COMM_DATATYPE(unsigned char, uchar);
KESS_COMM_DATATYPE(short, short_);
KESS_COMM_DATATYPE(unsigned short, ushort);
KESS_COMM_DATATYPE(int, int_);
KESS_COMM_DATATYPE(unsigned, uint);
KESS_COMM_DATATYPE(long, long_);
KESS_COMM_DATATYPE(unsigned long, ulong);
KESS_COMM_DATATYPE(long long, llong);
KESS_COMM_DATATYPE(unsigned long long, ullong);
KESS_COMM_DATATYPE(float, float_);
KESS_COMM_DATATYPE(double, double_);
KESS_COMM_DATATYPE(long double, ldouble);
KESS_COMM_DATATYPE(bool, bool_);
KESS_COMM_DATATYPE(Kokkos::complex<float>, cfloat);
KESS_COMM_DATATYPE(Kokkos::complex<double>, cdouble);
KESS_COMM_DATATYPE(std::complex<float>, cfloat);
KESS_COMM_DATATYPE(std::complex<double>, cdouble);
#undef KESS_COMM_DATATYPE

template <class T, class = void>
struct has_datatype : std::false_type {};
template <class T>
struct has_datatype<T, std::void_t<decltype(DatatypeOf<T>::value)>> : std::true_type {};

// Byte-level MPI calls (view_comm.cpp). count is in elements; `fn` names the public function.
void send_raw(const Communicator& comm, const void* buf, std::size_t count, Datatype type, int dest,
              int tag, const char* fn);
void recv_raw(const Communicator& comm, void* buf, std::size_t count, Datatype type, int source,
              int tag, const char* fn);
void bcast_raw(const Communicator& comm, void* buf, std::size_t count, Datatype type, int root,
               const char* fn);
/// MPI_Sendrecv: send_count elements to dest and recv_count elements from source at once.
void sendrecv_raw(const Communicator& comm, const void* sendbuf, std::size_t send_count, int dest,
                  void* recvbuf, std::size_t recv_count, int source, Datatype type, int tag,
                  const char* fn);
/// sendbuf == nullptr: in place on recvbuf.
void allreduce_raw(const Communicator& comm, const void* sendbuf, void* recvbuf, std::size_t count,
                   Datatype type, ReduceOp op, const char* fn);

template <class View>
constexpr void check_view_type() {
  static_assert(Kokkos::is_view<View>::value, "kess::comm: expects a Kokkos::View");
  static_assert(has_datatype<typename View::non_const_value_type>::value,
                "kess::comm: View messaging supports arithmetic and Kokkos::complex values only");
}

template <class View>
void require_contiguous(const View& v, const char* fn) {
  require_arg(v.size() == 0 || v.span_is_contiguous(), fn,
              "View '" + v.label() +
                  "' is not contiguous (span_is_contiguous() is false); copy it into a "
                  "contiguous View first");
}

/// True when MPI may read the View's memory directly.
template <class View>
constexpr bool mpi_can_access() {
  return KESS_GPU_AWARE_MPI ||
         Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible;
}

/// The View's elements as one unmanaged rank-1 View (the View must be contiguous).
template <class View>
auto flat(const View& v) {
  return Kokkos::View<typename View::value_type*, typename View::memory_space,
                      Kokkos::MemoryUnmanaged>(v.data(), v.size());
}

template <class View>
Kokkos::View<typename View::non_const_value_type*, Kokkos::HostSpace> staging(const View& v) {
  return Kokkos::View<typename View::non_const_value_type*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::comm::staging"), v.size());
}

template <class View>
constexpr Datatype datatype() {
  return DatatypeOf<typename View::non_const_value_type>::value;
}

template <class T>
using enable_if_exec = std::enable_if_t<Kokkos::is_execution_space<T>::value, int>;

}  // namespace detail

/// Sends all of `v` to rank `dest` of `comm` (blocking, MPI_Send).
template <class ExecSpace, class View, detail::enable_if_exec<ExecSpace> = 0>
void send(const ExecSpace& exec, const Communicator& comm, const View& v, int dest, int tag = 0) {
  constexpr const char* fn = "comm::send";
  detail::check_view_type<View>();
  detail::require_contiguous(v, fn);
  if constexpr (detail::mpi_can_access<View>()) {
    kx::fence(exec, "kess::comm::send");
    detail::send_raw(comm, v.data(), v.size(), detail::datatype<View>(), dest, tag, fn);
  } else {
    auto h = detail::staging(v);
    Kokkos::deep_copy(exec, h, detail::flat(v));
    kx::fence(exec, "kess::comm::send");
    detail::send_raw(comm, h.data(), h.size(), detail::datatype<View>(), dest, tag, fn);
  }
}

/// Receives all of `v` from rank `source` of `comm` (blocking, MPI_Recv); the message must hold
/// exactly v.size() elements.
template <class ExecSpace, class View, detail::enable_if_exec<ExecSpace> = 0>
void recv(const ExecSpace& exec, const Communicator& comm, const View& v, int source, int tag = 0) {
  constexpr const char* fn = "comm::recv";
  detail::check_view_type<View>();
  static_assert(!std::is_const<typename View::value_type>::value,
                "kess::comm::recv: the View must not be const");
  detail::require_contiguous(v, fn);
  if constexpr (detail::mpi_can_access<View>()) {
    kx::fence(exec, "kess::comm::recv");
    detail::recv_raw(comm, v.data(), v.size(), detail::datatype<View>(), source, tag, fn);
  } else {
    auto h = detail::staging(v);
    detail::recv_raw(comm, h.data(), h.size(), detail::datatype<View>(), source, tag, fn);
    Kokkos::deep_copy(exec, detail::flat(v), h);
    kx::fence(exec, "kess::comm::recv");
  }
}

/// Sends all of `s` to rank `dest` and receives all of `r` from rank `source` in one step
/// (MPI_Sendrecv: no deadlock when ranks exchange in a ring). `s` and `r` must not overlap; the
/// message from `source` must hold exactly r.size() elements.
template <class ExecSpace, class SendView, class RecvView, detail::enable_if_exec<ExecSpace> = 0>
void sendrecv(const ExecSpace& exec, const Communicator& comm, const SendView& s, int dest,
              const RecvView& r, int source, int tag = 0) {
  constexpr const char* fn = "comm::sendrecv";
  detail::check_view_type<SendView>();
  detail::check_view_type<RecvView>();
  static_assert(std::is_same<typename SendView::non_const_value_type,
                             typename RecvView::non_const_value_type>::value,
                "kess::comm::sendrecv: both Views must hold the same value type");
  static_assert(!std::is_const<typename RecvView::value_type>::value,
                "kess::comm::sendrecv: the receive View must not be const");
  detail::require_contiguous(s, fn);
  detail::require_contiguous(r, fn);
  if constexpr (detail::mpi_can_access<SendView>() && detail::mpi_can_access<RecvView>()) {
    kx::fence(exec, "kess::comm::sendrecv");
    detail::sendrecv_raw(comm, s.data(), s.size(), dest, r.data(), r.size(), source,
                         detail::datatype<RecvView>(), tag, fn);
  } else {
    auto hs = detail::staging(s);
    auto hr = detail::staging(r);
    Kokkos::deep_copy(exec, hs, detail::flat(s));
    kx::fence(exec, "kess::comm::sendrecv");
    detail::sendrecv_raw(comm, hs.data(), hs.size(), dest, hr.data(), hr.size(), source,
                         detail::datatype<RecvView>(), tag, fn);
    Kokkos::deep_copy(exec, detail::flat(r), hr);
    kx::fence(exec, "kess::comm::sendrecv");
  }
}

/// Collective: as bcast below, with a caller-owned host buffer for the staging (at least v.size()
/// elements, e.g. page-locked memory kept across calls) instead of a new one each call; used only
/// where MPI cannot read v's memory.
template <class ExecSpace, class View, class Staging, detail::enable_if_exec<ExecSpace> = 0>
void bcast(const ExecSpace& exec, const Communicator& comm, const View& v, int root,
           const Staging& staging) {
  constexpr const char* fn = "comm::bcast";
  detail::check_view_type<View>();
  static_assert(!std::is_const<typename View::value_type>::value,
                "kess::comm::bcast: the View must not be const");
  detail::require_contiguous(v, fn);
  if constexpr (detail::mpi_can_access<View>()) {
    (void)staging;
    kx::fence(exec, "kess::comm::bcast");
    detail::bcast_raw(comm, v.data(), v.size(), detail::datatype<View>(), root, fn);
  } else {
    static_assert(Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                             typename Staging::memory_space>::accessible,
                  "kess::comm::bcast: the staging View must be host memory");
    require_arg(staging.size() >= v.size(), fn,
                "staging buffer '" + staging.label() + "' holds " + std::to_string(staging.size()) +
                    " elements, the message " + std::to_string(v.size()));
    auto h = Kokkos::View<typename View::non_const_value_type*, typename Staging::memory_space,
                          Kokkos::MemoryUnmanaged>(staging.data(), v.size());
    if (comm.rank() == root) Kokkos::deep_copy(exec, h, detail::flat(v));
    kx::fence(exec, "kess::comm::bcast");
    detail::bcast_raw(comm, h.data(), h.size(), detail::datatype<View>(), root, fn);
    if (comm.rank() != root) Kokkos::deep_copy(exec, detail::flat(v), h);
    kx::fence(exec, "kess::comm::bcast");
  }
}

/// Collective: every rank's `v` becomes root's (MPI_Bcast). Sizes must agree.
template <class ExecSpace, class View, detail::enable_if_exec<ExecSpace> = 0>
void bcast(const ExecSpace& exec, const Communicator& comm, const View& v, int root) {
  if constexpr (detail::mpi_can_access<View>())
    bcast(exec, comm, v, root, v);
  else
    bcast(exec, comm, v, root, detail::staging(v));
}

/// Collective, in place: v <- op over all ranks of v (MPI_Allreduce). max/min need real values.
template <class ExecSpace, class View, detail::enable_if_exec<ExecSpace> = 0>
void allreduce(const ExecSpace& exec, const Communicator& comm, const View& v, ReduceOp op) {
  constexpr const char* fn = "comm::allreduce";
  detail::check_view_type<View>();
  static_assert(!std::is_const<typename View::value_type>::value,
                "kess::comm::allreduce: the View must not be const");
  detail::require_contiguous(v, fn);
  if constexpr (detail::mpi_can_access<View>()) {
    kx::fence(exec, "kess::comm::allreduce");
    detail::allreduce_raw(comm, nullptr, v.data(), v.size(), detail::datatype<View>(), op, fn);
  } else {
    auto h = detail::staging(v);
    Kokkos::deep_copy(exec, h, detail::flat(v));
    kx::fence(exec, "kess::comm::allreduce");
    detail::allreduce_raw(comm, nullptr, h.data(), h.size(), detail::datatype<View>(), op, fn);
    Kokkos::deep_copy(exec, detail::flat(v), h);
    kx::fence(exec, "kess::comm::allreduce");
  }
}

/// Collective: recv <- op over all ranks of send (same size, same value type).
template <class ExecSpace, class SendView, class RecvView, detail::enable_if_exec<ExecSpace> = 0>
void allreduce(const ExecSpace& exec, const Communicator& comm, const SendView& send,
               const RecvView& recv, ReduceOp op) {
  constexpr const char* fn = "comm::allreduce";
  detail::check_view_type<SendView>();
  detail::check_view_type<RecvView>();
  static_assert(std::is_same<typename SendView::non_const_value_type,
                             typename RecvView::non_const_value_type>::value,
                "kess::comm::allreduce: send and recv must hold the same value type");
  static_assert(!std::is_const<typename RecvView::value_type>::value,
                "kess::comm::allreduce: the recv View must not be const");
  detail::require_contiguous(send, fn);
  detail::require_contiguous(recv, fn);
  require_arg(
      send.size() == recv.size(), fn,
      "send has " + std::to_string(send.size()) + " elements, recv " + std::to_string(recv.size()));
  if constexpr (detail::mpi_can_access<SendView>() && detail::mpi_can_access<RecvView>()) {
    kx::fence(exec, "kess::comm::allreduce");
    detail::allreduce_raw(comm, send.data(), recv.data(), recv.size(), detail::datatype<RecvView>(),
                          op, fn);
  } else {
    auto h = detail::staging(recv);
    Kokkos::deep_copy(exec, h, detail::flat(send));
    kx::fence(exec, "kess::comm::allreduce");
    detail::allreduce_raw(comm, nullptr, h.data(), h.size(), detail::datatype<RecvView>(), op, fn);
    Kokkos::deep_copy(exec, detail::flat(recv), h);
    kx::fence(exec, "kess::comm::allreduce");
  }
}

// ---- the same on the default instance of the View's execution space --------------------------
template <class View, std::enable_if_t<Kokkos::is_view<View>::value, int> = 0>
void send(const Communicator& comm, const View& v, int dest, int tag = 0) {
  send(typename View::execution_space(), comm, v, dest, tag);
}
template <class View, std::enable_if_t<Kokkos::is_view<View>::value, int> = 0>
void recv(const Communicator& comm, const View& v, int source, int tag = 0) {
  recv(typename View::execution_space(), comm, v, source, tag);
}
template <class View, std::enable_if_t<Kokkos::is_view<View>::value, int> = 0>
void bcast(const Communicator& comm, const View& v, int root) {
  bcast(typename View::execution_space(), comm, v, root);
}
template <class View, std::enable_if_t<Kokkos::is_view<View>::value, int> = 0>
void allreduce(const Communicator& comm, const View& v, ReduceOp op) {
  allreduce(typename View::execution_space(), comm, v, op);
}
template <class SendView, class RecvView,
          std::enable_if_t<Kokkos::is_view<SendView>::value, int> = 0>
void allreduce(const Communicator& comm, const SendView& send, const RecvView& recv, ReduceOp op) {
  allreduce(typename RecvView::execution_space(), comm, send, recv, op);
}

}  // namespace kess::comm
