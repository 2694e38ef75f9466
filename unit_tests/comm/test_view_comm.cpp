// View messaging (send/recv, sendrecv, bcast, allreduce) and collective error agreement.
#include <kess/comm/agree.hpp>
#include <kess/comm/communicator.hpp>
#include <kess/comm/view_comm.hpp>
#include <kess/core/base/error.hpp>
#include <kess/kess_config.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <string>

namespace {

using kess::comm::Communicator;
using kess::comm::ReduceOp;
using MemSpace = Kokkos::DefaultExecutionSpace::memory_space;

template <class View>
auto on_host(const View& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

TEST(CommViewComm, SendRecvRing) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
#if !KESS_HAVE_MPI
  Kokkos::View<double*, MemSpace> x("x", 3);
  EXPECT_THROW(kess::comm::send(comm, x, 0), kess::Error);
  EXPECT_THROW(kess::comm::recv(comm, x, 0), kess::Error);
  GTEST_SKIP() << "no point-to-point messages without MPI";
#endif
  if (P == 1) GTEST_SKIP() << "a ring needs two ranks";
  const int next = (r + 1) % P, prev = (r + P - 1) % P;
  // A rank-2 LayoutLeft View (contiguous) of doubles and a rank-1 View of ints, both ways round.
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> out("out", 3, 4), in("in", 3, 4);
  auto h = Kokkos::create_mirror_view(out);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) h(i, j) = 100.0 * r + 10 * i + j + 0.25;
  Kokkos::deep_copy(out, h);
  Kokkos::View<long long*, MemSpace> iout("iout", 5), iin("iin", 5);
  Kokkos::deep_copy(iout, 7LL * r + 1);
  if (r % 2 == 0) {
    kess::comm::send(comm, out, next, 3);
    kess::comm::recv(comm, in, prev, 3);
    kess::comm::send(Kokkos::DefaultExecutionSpace(), comm, iout, prev);
    kess::comm::recv(Kokkos::DefaultExecutionSpace(), comm, iin, next);
  } else {
    kess::comm::recv(comm, in, prev, 3);
    kess::comm::send(comm, out, next, 3);
    kess::comm::recv(Kokkos::DefaultExecutionSpace(), comm, iin, next);
    kess::comm::send(Kokkos::DefaultExecutionSpace(), comm, iout, prev);
  }
  auto hin = on_host(in);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(hin(i, j), 100.0 * prev + 10 * i + j + 0.25);
  auto hiin = on_host(iin);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(hiin(k), 7LL * next + 1);
}

// sendrecv around a ring, message sizes differing by rank (one rank: an exchange with itself).
TEST(CommViewComm, SendRecvExchange) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
  const int next = (r + 1) % P, prev = (r + P - 1) % P;
  Kokkos::View<double*, MemSpace> out("out", 2 + r), in("in", 2 + prev);
  Kokkos::deep_copy(out, 10.0 * r + 0.5);
  kess::comm::sendrecv(Kokkos::DefaultExecutionSpace(), comm, out, next, in, prev, 5);
  auto h = on_host(in);
  for (int k = 0; k < 2 + prev; ++k) EXPECT_EQ(h(k), 10.0 * prev + 0.5);
}

TEST(CommViewComm, RejectsNonContiguousViews) {
  auto comm = Communicator::world();
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> a("a", 4, 3);
  // Rows 0-1 of every column: stride 4 between columns, not contiguous.
  auto rows = Kokkos::subview(a, Kokkos::make_pair(0, 2), Kokkos::ALL());
  ASSERT_FALSE(rows.span_is_contiguous());
  try {
    kess::comm::send(comm, rows, 0);
    ADD_FAILURE() << "send of a non-contiguous View did not throw";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("not contiguous"), std::string::npos) << e.what();
  }
  EXPECT_THROW(kess::comm::bcast(comm, rows, 0), kess::Error);
  EXPECT_THROW(kess::comm::allreduce(comm, rows, ReduceOp::sum), kess::Error);
  // Every rank threw before any MPI call: the communicator is still in step.
  comm.barrier();
}

TEST(CommViewComm, Bcast) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
  for (int root = 0; root < P; ++root) {
    Kokkos::View<int*, MemSpace> v("v", 6);
    auto h = Kokkos::create_mirror_view(v);
    for (int k = 0; k < 6; ++k) h(k) = r == root ? 1000 * root + k * k + 1 : -1;
    Kokkos::deep_copy(v, h);
    kess::comm::bcast(comm, v, root);
    auto got = on_host(v);
    for (int k = 0; k < 6; ++k) EXPECT_EQ(got(k), 1000 * root + k * k + 1) << "root " << root;
  }
  // Complex values.
  Kokkos::View<Kokkos::complex<double>*, MemSpace> z("z", 3);
  if (r == P - 1) Kokkos::deep_copy(z, Kokkos::complex<double>(1.5, -2.5));
  kess::comm::bcast(comm, z, P - 1);
  auto hz = on_host(z);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(hz(k).real(), 1.5);
    EXPECT_EQ(hz(k).imag(), -2.5);
  }
  EXPECT_THROW(kess::comm::bcast(comm, z, P), kess::Error);
}

// The same with a caller-owned host staging buffer (larger than the message: only its first
// v.size() entries carry it); where MPI reads the View's memory directly the buffer is not used,
// elsewhere a buffer smaller than the message is refused on every rank alike.
TEST(CommViewComm, BcastWithStaging) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
  Kokkos::DefaultExecutionSpace exec;
  Kokkos::View<double*, Kokkos::HostSpace> stage("stage", 9), small("small", 2);
  for (int root = 0; root < P; ++root) {
    Kokkos::View<double*, MemSpace> v("v", 6);
    auto h = Kokkos::create_mirror_view(v);
    for (int k = 0; k < 6; ++k) h(k) = r == root ? 0.5 * root + k : -7.0;
    Kokkos::deep_copy(v, h);
    kess::comm::bcast(exec, comm, v, root, stage);
    auto got = on_host(v);
    for (int k = 0; k < 6; ++k) EXPECT_EQ(got(k), 0.5 * root + k) << "root " << root;
  }
  Kokkos::View<double*, MemSpace> w("w", 6);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible ||
                KESS_GPU_AWARE_MPI)
    EXPECT_NO_THROW(kess::comm::bcast(exec, comm, w, 0, small));
  else
    EXPECT_THROW(kess::comm::bcast(exec, comm, w, 0, small), kess::Error);
}

TEST(CommViewComm, AllreduceSumMaxMin) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
  const int n = 7;
  Kokkos::View<double*, MemSpace> s("s", n), m("m", n);
  Kokkos::View<int*, MemSpace> lo("lo", n);
  auto hs = Kokkos::create_mirror_view(s);
  auto hm = Kokkos::create_mirror_view(m);
  auto hl = Kokkos::create_mirror_view(lo);
  for (int k = 0; k < n; ++k) {
    hs(k) = r + 0.5 * k;
    hm(k) = (r == k % P) ? 1000.0 + k : -r - 1.0;
    hl(k) = 10 * (r + 1) + k;
  }
  Kokkos::deep_copy(s, hs);
  Kokkos::deep_copy(m, hm);
  Kokkos::deep_copy(lo, hl);
  kess::comm::allreduce(comm, s, ReduceOp::sum);
  kess::comm::allreduce(Kokkos::DefaultExecutionSpace(), comm, m, ReduceOp::max);
  kess::comm::allreduce(comm, lo, ReduceOp::min);
  auto gs = on_host(s);
  auto gm = on_host(m);
  auto gl = on_host(lo);
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(gs(k), P * (P - 1) / 2.0 + 0.5 * k * P);
    EXPECT_EQ(gm(k), 1000.0 + k);
    EXPECT_EQ(gl(k), 10 + k);
  }
  // Out of place, from a const View; the input stays as it was.
  Kokkos::View<long*, MemSpace> in("in", 2), out("out", 2);
  Kokkos::deep_copy(in, static_cast<long>(r + 1));
  Kokkos::View<const long*, MemSpace> cin = in;
  kess::comm::allreduce(comm, cin, out, ReduceOp::sum);
  auto gout = on_host(out);
  auto gin = on_host(in);
  EXPECT_EQ(gout(0), static_cast<long>(P) * (P + 1) / 2);
  EXPECT_EQ(gout(1), static_cast<long>(P) * (P + 1) / 2);
  EXPECT_EQ(gin(0), r + 1);
  // max of complex values is refused (on every rank, before MPI).
  Kokkos::View<Kokkos::complex<double>*, MemSpace> z("z", 2);
  EXPECT_THROW(kess::comm::allreduce(comm, z, ReduceOp::max), kess::Error);
  Kokkos::deep_copy(z, Kokkos::complex<double>(1.0, r));
  kess::comm::allreduce(comm, z, ReduceOp::sum);
  auto hz = on_host(z);
  EXPECT_EQ(hz(1).real(), P);
  EXPECT_EQ(hz(1).imag(), P * (P - 1) / 2.0);
  Kokkos::View<double*, MemSpace> wrong("wrong", 3);
  EXPECT_THROW(kess::comm::allreduce(comm, s, wrong, ReduceOp::sum), kess::Error);
}

TEST(CommAgree, AllRanksOk) {
  auto comm = Communicator::world();
  EXPECT_NO_THROW(kess::comm::agree(comm, true, "never shown"));
}

TEST(CommAgree, LastRankFailsEveryRankThrows) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
  const bool ok = r != P - 1;
  bool caught = false;
  try {
    kess::comm::agree(comm, ok, "boom: value 42 on the last rank");
  } catch (const kess::Error& e) {
    caught = true;
    EXPECT_EQ(e.kind(), kess::ErrorKind::mpi);
    EXPECT_EQ(e.function(), "comm::agree");
    const std::string what = e.what();
    EXPECT_NE(what.find("failed on rank " + std::to_string(P - 1) + " "), std::string::npos)
        << what;
    EXPECT_NE(what.find("boom: value 42 on the last rank"), std::string::npos) << what;
  }
  EXPECT_TRUE(caught) << "rank " << r << " did not throw";
  // Nobody was left behind: one more collective completes.
  comm.barrier();
}

TEST(CommAgree, FirstFailingRanksMessageAndKind) {
  auto comm = Communicator::world();
  const int P = comm.size(), r = comm.rank();
  // Ranks from P/2 up fail (rank 0 when P == 1), each with its own message.
  const int first = P / 2;
  const bool ok = r < first;
  try {
    kess::comm::agree(comm, ok, "bad pivot on rank " + std::to_string(r),
                      kess::ErrorKind::singular);
    ADD_FAILURE() << "rank " << r << " did not throw";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::singular);
    const std::string what = e.what();
    EXPECT_NE(what.find("bad pivot on rank " + std::to_string(first)), std::string::npos) << what;
    EXPECT_NE(what.find("(" + std::to_string(P - first) + " of " + std::to_string(P) + ")"),
              std::string::npos)
        << what;
    for (int q = first; q < P; ++q) {
      EXPECT_NE(what.find(std::to_string(q)), std::string::npos) << what;
    }
  }
  comm.barrier();
}

}  // namespace
