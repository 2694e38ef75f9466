// kess::kx — the one place that knows which Kokkos (3.4 from Debian, or >= 4.x) kess is built on.
// No other file may test KOKKOS_VERSION.
#pragma once

#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <KokkosBlas3_trsm.hpp>

#include <kess/core/host_gemm.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>

namespace kess::kx {

// ---- math ----------------------------------------------------------------------------------------
#if KOKKOS_VERSION >= 40000
using Kokkos::fabs;
using Kokkos::isfinite;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::isfinite;
using Kokkos::Experimental::sqrt;
#endif

template <class T>
KOKKOS_INLINE_FUNCTION constexpr const T& min(const T& a, const T& b) {
  return b < a ? b : a;
}
template <class T>
KOKKOS_INLINE_FUNCTION constexpr const T& max(const T& a, const T& b) {
  return a < b ? b : a;
}

// ---- printf from device code ---------------------------------------------------------------------
#if KOKKOS_VERSION >= 40200
using Kokkos::printf;
#else
template <class... Args>
KOKKOS_INLINE_FUNCTION void printf(const char* format, Args... args) {
  ::printf(format, args...);
}
#endif

// ---- fences and profiling regions ----------------------------------------------------------------
/// Fences one execution space instance (never the whole device), with a label where Kokkos has them.
template <class ExecSpace>
void fence(const ExecSpace& exec, const std::string& label) {
#if KOKKOS_VERSION >= 30600
  exec.fence(label);
#else
  (void)label;
  exec.fence();
#endif
}

/// RAII profiling region, visible in Kokkos Tools (and Nsight through the NVTX connector).
class ScopedRegion {
 public:
  explicit ScopedRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ScopedRegion() { Kokkos::Profiling::popRegion(); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;
};

// ---- Views a solver can work in -----------------------------------------------------------------
/// Whether a caller's View can serve as a solver's work matrix in Mem (an "overwrite" option):
/// writable, LayoutLeft, in Mem itself.
template <class View, class Mem>
constexpr bool can_work_in() {
  return !std::is_const<typename View::value_type>::value &&
         std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value &&
         std::is_same<typename View::memory_space, Mem>::value;
}

// ---- dense BLAS 3 on an execution space instance -------------------------------------------------
namespace detail {
/// call(args...) runs a Kokkos Kernels routine with the instance as first argument when given one.
/// Kokkos Kernels >= 4 takes the instance: call(exec). 3.4 does not: the caller's instance is
/// fenced, call() runs on the default instance of `Space`, which is fenced after.
template <class Space, class ExecSpace, class Call>
void blas_on_instance(const ExecSpace& exec, const Call& call) {
#if KOKKOS_VERSION >= 40000
  call(exec);
#else
  exec.fence();
  call();
  Space().fence();
#endif
}
/// Whether gemm's operands are double matrices in host memory that exec can run on.
template <class ExecSpace, class AV, class BV, class CV>
constexpr bool host_double_matrices() {
  using Host = Kokkos::HostSpace;
  return Kokkos::SpaceAccessibility<ExecSpace, Host>::accessible &&
         std::is_same<typename AV::memory_space, Host>::value &&
         std::is_same<typename BV::memory_space, Host>::value &&
         std::is_same<typename CV::memory_space, Host>::value &&
         std::is_same<typename AV::non_const_value_type, double>::value &&
         std::is_same<typename BV::non_const_value_type, double>::value &&
         std::is_same<typename CV::non_const_value_type, double>::value && AV::rank == 2 &&
         BV::rank == 2 && CV::rank == 2;
}
/// Column-major with unit row stride (a BLAS operand), and its leading dimension.
template <class V>
bool unit_stride(const V& X) {
  return X.extent(0) <= 1 || X.stride(0) == 1;
}
template <class V>
int ld(const V& X) {
  const auto rows = static_cast<std::int64_t>(std::max<std::size_t>(1, X.extent(0)));
  return static_cast<int>(X.extent(1) <= 1 ? rows : std::max<std::int64_t>(rows, X.stride(1)));
}
/// Whether a (B, C) pair has work: C not empty.
template <class Pair>
bool has_columns(const Pair& p) {
  return p.second.extent(0) > 0 && p.second.extent(1) > 0;
}
/// C_i = alpha op(A) op(B_i) + beta C_i for the non-empty pairs (B_i, C_i) by kess's host GEMM, in
/// one call (op(A) packed once), when all are BLAS operands on host memory and the product pays
/// (core::detail::host_gemm_pays); returns whether it ran.
template <class ExecSpace, class AV, class... Pairs>
bool host_gemm_views(const ExecSpace& exec, char trans_a, char trans_b, double alpha, const AV& A,
                     double beta, const Pairs&... pairs) {
  if constexpr ((host_double_matrices<ExecSpace, AV, typename Pairs::first_type,
                                      typename Pairs::second_type>() &&
                 ...)) {
    core::detail::HostGemmPart parts[sizeof...(Pairs)];
    int count = 0, total = 0;
    bool unit = unit_stride(A);
    const auto add = [&](const auto& p) {
      if (!has_columns(p)) return;
      unit = unit && unit_stride(p.first) && unit_stride(p.second);
      parts[count++] = {p.first.data(), ld(p.first), p.second.data(), ld(p.second),
                        static_cast<int>(p.second.extent(1))};
      total += static_cast<int>(p.second.extent(1));
    };
    (add(pairs), ...);
    const bool ta = trans_a != 'N' && trans_a != 'n';
    const int m = static_cast<int>(ta ? A.extent(1) : A.extent(0));
    const int k = static_cast<int>(ta ? A.extent(0) : A.extent(1));
    if (count == 0 || !unit || !core::detail::host_gemm_pays(m, total, k)) return false;
    exec.fence();
    core::detail::host_gemm_parts(trans_a, trans_b, m, k, alpha, A.data(), ld(A), parts, count,
                                  beta, 0);
    return true;
  } else {
    return false;
  }
}
}  // namespace detail

/// C = alpha op(A) op(B) + beta C on `exec` (on Kokkos Kernels 3.4 fenced around the call:
/// detail::blas_on_instance).
template <class ExecSpace, class AV, class BV, class CV>
void gemm(const ExecSpace& exec, const char* trans_a, const char* trans_b,
          typename CV::const_value_type alpha, const AV& A, const BV& B,
          typename CV::const_value_type beta, const CV& C) {
  ScopedRegion region("kess::kx::gemm");  // labels the kernels Kokkos Kernels launches
  // Large host products: kess's own kernel where it is available (core::detail::host_gemm).
  if (detail::host_gemm_views(exec, trans_a[0], trans_b[0], alpha, A, beta, std::make_pair(B, C)))
    return;
  detail::blas_on_instance<typename CV::execution_space>(exec, [&](const auto&... on) {
    KokkosBlas::gemm(on..., trans_a, trans_b, alpha, A, B, beta, C);
  });
}

/// C_i = alpha A B_i + beta C_i for each pair (B_i, C_i) (std::pair of Views; empty ones are
/// skipped): on host memory, where kess's host GEMM takes them, one call that packs A once for all
/// pairs (core::detail::host_gemm_parts); elsewhere one gemm a pair.
template <class ExecSpace, class AV, class... Pairs>
void gemm_shared_a(const ExecSpace& exec, double alpha, const AV& A, double beta,
                   const Pairs&... pairs) {
  ScopedRegion region("kess::kx::gemm");
  if (detail::host_gemm_views(exec, 'N', 'N', alpha, A, beta, pairs...)) return;
  const auto one = [&](const auto& p) {
    if (detail::has_columns(p)) gemm(exec, "N", "N", alpha, A, p.first, beta, p.second);
  };
  (one(pairs), ...);
}

/// B <- alpha op(A)^-1 B (side "L") or alpha B op(A)^-1 (side "R"), A triangular (uplo "U"/"L",
/// diag "U" unit / "N"), on exec's stream where Kokkos Kernels takes one (>= 4; cuBLAS dtrsm on
/// CUDA), fenced around the call before that.
template <class ExecSpace, class AV, class BV>
void trsm(const ExecSpace& exec, const char* side, const char* uplo, const char* trans,
          const char* diag, typename BV::const_value_type alpha, const AV& A, const BV& B) {
  ScopedRegion region("kess::kx::trsm");
  detail::blas_on_instance<typename BV::execution_space>(exec, [&](const auto&... on) {
    KokkosBlas::trsm(on..., side, uplo, trans, diag, alpha, A, B);
  });
}

// ---- kernels that hold a column a team in registers ----------------------------------------------
/// Team size for kernels that give each team one column of `rows` entries (thread t holds rows
/// t, t + ts, ...): 1024 threads from 8192 rows, 512 from 2048, 256 below; 1 on host backends.
template <class ExecSpace>
int column_team_size(int rows) {
  if (std::is_same<typename ExecSpace::memory_space, Kokkos::HostSpace>::value) return 1;
  return rows >= 8192 ? 1024 : rows >= 2048 ? 512 : 256;
}

/// Entries of such a column each thread of a team of ts holds: the least of 1, 2, 4, .., 32 that
/// covers `rows`; 0 when 32 do not.
inline int column_rows_per_thread(int rows, int ts) {
  for (int q : {1, 2, 4, 8, 16, 32})
    if (static_cast<long long>(q) * ts >= rows) return q;
  return 0;
}

/// Whether `league` teams of `ts` threads can all be resident at once in half of exec's device
/// (kernels whose teams wait for one another, with other work beside them on another stream).
/// Always on host backends, where teams that wait only for lower league ranks run in order.
template <class ExecSpace>
bool teams_resident(const ExecSpace& exec, int league, int ts) {
  if (std::is_same<typename ExecSpace::memory_space, Kokkos::HostSpace>::value) return true;
  return static_cast<long long>(league) * ts * 2 <= static_cast<long long>(exec.concurrency());
}

// ---- loads of data that other teams write concurrently -------------------------------------------
/// Reads *p past the (non-coherent) L1 cache of GPUs (an L2 load, still pipelined, unlike a
/// volatile one); a plain load on host backends, whose caches are coherent.
KOKKOS_FORCEINLINE_FUNCTION double load_uncached(const double* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}
KOKKOS_FORCEINLINE_FUNCTION int load_uncached(const int* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}

// ---- concurrency ---------------------------------------------------------------------------------
/// An instance of exec's space that can run concurrently with exec (a new CUDA stream with Kokkos
/// >= 4; the same instance where the backend or Kokkos version has no such thing).
template <class ExecSpace>
ExecSpace concurrent_instance(const ExecSpace& exec) {
#if KOKKOS_VERSION >= 40000
  return Kokkos::Experimental::partition_space(exec, 1)[0];
#else
  return exec;
#endif
}
#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: a stream of the highest priority, so that the small kernels of the critical path put on
/// it (panel factorizations) are scheduled ahead of the waiting blocks of a GEMM running beside
/// them; at equal priority they queue behind those blocks and the overlap is lost.
inline Kokkos::Cuda concurrent_instance(const Kokkos::Cuda& exec) {
  int least = 0, greatest = 0;
  cudaStream_t stream = nullptr;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess &&
      cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest) == cudaSuccess)
    return Kokkos::Cuda(stream, Kokkos::Impl::ManageStream::yes);
  return Kokkos::Experimental::partition_space(exec, 1)[0];
}
#endif

/// A point in one instance's work that work enqueued later on other instances can wait for:
/// record(on) marks everything enqueued on `on` so far, wait(waiter) makes what is enqueued on
/// `waiter` afterwards wait for it (CUDA: an event, the host never blocks). Elsewhere record
/// fences `on` and wait does nothing.
template <class ExecSpace>
class StreamMark {
 public:
  void record(const ExecSpace& on) { on.fence(); }
  void wait(const ExecSpace& waiter) const { (void)waiter; }
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
class StreamMark<Kokkos::Cuda> {
 public:
  StreamMark() = default;
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;
  StreamMark(StreamMark&& o) noexcept : ev_(o.ev_), on_(o.on_) { o.ev_ = nullptr; }
  StreamMark& operator=(StreamMark&&) = delete;
  ~StreamMark() {
    if (ev_) cudaEventDestroy(ev_);
  }
  void record(const Kokkos::Cuda& on) {
    on_ = on;
    if (ev_ == nullptr && cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming) != cudaSuccess)
      ev_ = nullptr;
    if (ev_ == nullptr || cudaEventRecord(ev_, on.cuda_stream()) != cudaSuccess) {
      on.fence();  // no event: the work is done before anything waits for it
      if (ev_) cudaEventDestroy(ev_);
      ev_ = nullptr;
    }
  }
  void wait(const Kokkos::Cuda& waiter) const {
    if (ev_ && cudaStreamWaitEvent(waiter.cuda_stream(), ev_, 0) != cudaSuccess) on_.fence();
  }

 private:
  cudaEvent_t ev_ = nullptr;
  Kokkos::Cuda on_;
};
#endif

/// Makes work enqueued on `waiter` after this call wait for the work enqueued on `signaler` so
/// far, without blocking the host where the backend allows (CUDA: an event); elsewhere the host
/// fences `signaler`.
template <class ExecSpace>
void stream_wait(const ExecSpace& waiter, const ExecSpace& signaler) {
  StreamMark<ExecSpace> mark;
  mark.record(signaler);
  mark.wait(waiter);  // the event is released once the wait is satisfied
}

/// Host memory for staging copies to and from MemSpace: page-locked for CUDA device memory (full
/// speed, asynchronous copies), plain host memory otherwise.
template <class MemSpace>
struct HostStaging {
  using type = Kokkos::HostSpace;
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct HostStaging<Kokkos::CudaSpace> {
  using type = Kokkos::CudaHostPinnedSpace;
};
#endif

/// Human-readable name of an execution space ("Serial", "OpenMP", "Cuda").
template <class ExecSpace>
std::string backend_name() {
  return ExecSpace::name();
}

}  // namespace kess::kx
