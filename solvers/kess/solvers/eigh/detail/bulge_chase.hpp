// Stage 2 of the two-stage eigensolver: band -> tridiagonal by Householder bulge chasing, on the
// host (Yu et al. 2020, §2.2 and Eq. 6b), and the record of every reflector v(i,j),
// tau(i,j) laid out for stage 4 (Eq. 6d, kess::hh_chase_apply).
//
// Stage i (i = 0 .. n-3) reduces column i; its sweep j uses the reflector H(i,j) on the rows
//   R(i,j) = [i + 1 + j b, i + (j+1) b]  (cut at n-1),
// sweep 0 annihilating A(i+2 .. i+b, i), sweep j >= 1 the first column of the bulge that sweep j-1
// pushed below the band. T = Q^T B Q with Q = the product of all H(i,j) in the order they were made
// (stage major, sweep minor).
//
// The order stage 4 needs. Two reflectors commute when their row ranges are disjoint. If H(i,j) is
// made before H(i',j') and the two overlap, then i < i' and j' <= j (for j' >= j+1, R(i',j') starts
// at i'+1+j'b > i+(j+1)b, the end of R(i,j); sweeps of one stage are disjoint). So the order
// "sweep j descending, stage i ascending" keeps every overlapping pair in order, and
//   Q = G_J G_{J-1} ... G_0,   G_j = H(0,j) H(1,j) ... H(n-3-jb, j).
// In G_j, reflector k = i acts on rows 1 + jb + k .. jb + k + b: consecutive reflectors are shifted
// by one row, which is exactly the structure of hh_chase_apply. Stage 4 (Y = Q X) is therefore
// G_0 applied first, then G_1, ..., one hh_chase_apply call per sweep index j (about n/b calls,
// each with n-2-jb reflectors of length b, zero padded at the bottom of the matrix).
#pragma once

#include <kess/core/base/settings.hpp>
#include <kess/core/base/error.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/householder.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <thread>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kess::detail::eigh {

/// Symmetric band matrix (lower half-width b) on the host with room for the bulge: entry (r, c),
/// 0 <= r - c <= 2b - 1, lives at data[r + c * ld] with ld = 2b, so any block inside that strip is
/// an ordinary column-major submatrix with leading dimension ld.
struct BandMatrix {
  int n = 0;
  int b = 1;
  std::vector<double> data;

  BandMatrix() = default;
  BandMatrix(int n_, int b_)
      : n(n_), b(std::max(1, b_)),
        data(static_cast<std::size_t>(n_) * (2 * std::max(1, b_) + 1) + 1, 0.0) {}
  int ld() const { return 2 * b; }
  /// Entry (r, c) with 0 <= r - c < 2b (lower triangle).
  double& operator()(int r, int c) { return data[static_cast<std::size_t>(r) + std::size_t(c) * ld()]; }
  double operator()(int r, int c) const {
    return data[static_cast<std::size_t>(r) + std::size_t(c) * ld()];
  }
};

/// The reflectors of the bulge chase in stage-4 order: sweep j's reflectors are columns
/// offset[j] .. offset[j] + count(j) - 1 of V (b x total, LayoutLeft), column offset[j] + i being
/// H(i, j) (v(0) = 1, zero padded to length b), with tau alongside (0 where a sweep does nothing).
struct ChaseReflectors {
  int n = 0;
  int b = 1;
  std::vector<std::int64_t> offset;  ///< offset[j], j = 0 .. sweeps; offset[sweeps] = total
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> V;
  Kokkos::View<double*, Kokkos::HostSpace> tau;

  int sweeps() const { return static_cast<int>(offset.size()) - 1; }
  /// Reflectors of sweep j: n - 2 - jb (stages 0 .. n-3-jb).
  std::int64_t count(int j) const { return offset[j + 1] - offset[j]; }
  /// First row of reflector 0 of sweep j.
  std::int64_t first_row(int j) const { return 1 + std::int64_t(j) * b; }
};

/// One step of the host bulge chase (bulge_chase.cpp): stage i, sweep j on the band a (lower
/// storage, leading dimension ld, order n, half-width b); v and w are b-long scratch. y (2b long)
/// and *pending belong to stage i and carry the step's right update of the block below it, which
/// the stage's next step applies in the same pass as its own left update (*pending = 0 before a
/// stage's first step; it is 0 again once a step returns false). The reflector goes to vout (b
/// entries, zero padded) and tout when they are given. Returns false when the sweep falls off the
/// matrix (the stage is done). Compiled for several instruction sets with GCC (target_clones),
/// chosen at load time.
bool chase_bulge(double* a, int ld, int n, int b, int i, int j, double* v, double* w, double* y,
                 int* pending, double* vout, double* tout);

inline ChaseReflectors make_chase_reflectors(int n, int b, bool host_storage = true) {
  ChaseReflectors r;
  r.n = n;
  r.b = b;
  r.offset.push_back(0);
  for (std::int64_t j = 0; b >= 2 && n - 2 - j * b > 0; ++j) r.offset.push_back(r.offset.back() + n - 2 - j * b);
  const std::int64_t total = r.offset.back();
  if (!host_storage) return r;
  // Not zeroed here: every slot is written, padding included, by its step of the chase (at
  // n = 4000, b = 96 V is 64 MB, whose first touch then happens on the chase's threads).
  r.V = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "bulge_chase::V"), b,
      std::max<std::int64_t>(total, 0));
  r.tau = Kokkos::View<double*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "bulge_chase::tau"), total);
  return r;
}


/// Reduces the band matrix to tridiagonal form in place (Yu et al. 2020, Eq. 6b): d (n) and e (n-1)
/// receive the diagonal and subdiagonal. When `refl` is given, every reflector is recorded there
/// (stage-4 order, see above). Host only; about 6 b n^2 flops.
///
/// Parallel over `threads` host threads (0: core::detail::host_threads()) as a pipeline, like
/// ELPA's: stage i's sweep j touches rows and columns [i+1+(j-1)b, i+1+(j+2)b), which overlaps
/// stage i-1's sweeps up to j+2 and none after, so it may start once stage i-1 has finished sweep
/// j+2. A thread takes
/// `group` consecutive stages at a time (0: automatic) and pipelines them itself, which keeps the
/// band entries they share in its cache. Every entry sees the same operations in the same order
/// as in the sequential loop: the result depends neither on the thread count nor on the group.
inline void bulge_chase(BandMatrix& A, std::vector<double>& d, std::vector<double>& e,
                        ChaseReflectors* refl, int threads = 0, int group = 0) {
  const int n = A.n, b = A.b, ld = A.ld();
  d.assign(static_cast<std::size_t>(n), 0.0);
  e.assign(static_cast<std::size_t>(std::max(0, n - 1)), 0.0);
  if (refl) *refl = make_chase_reflectors(n, b);
  double* a = A.data.data();
  auto at = [&](int r, int c) -> double& { return a[static_cast<std::size_t>(r) + std::size_t(c) * ld]; };
  // Stage i, sweep j; false when the sweep falls off the matrix (the stage is done).
  auto chase = [&](int i, int j, std::vector<double>& v, std::vector<double>& w, double* y,
                   int* pending) -> bool {
    double* vout = nullptr;
    double* tout = nullptr;
    if (refl) {
      const std::int64_t col = refl->offset[j] + i;
      vout = &refl->V(0, col);
      tout = &refl->tau(col);
    }
    return chase_bulge(a, ld, n, b, i, j, v.data(), w.data(), y, pending, vout, tout);
  };
  const int stages = n - 2;
  if (b >= 2 && stages > 0) {
    if (threads <= 0) threads = core::detail::host_threads();
    threads = std::max(1, std::min(threads, stages));
    // done[i]: sweeps of stage i finished (INT_MAX once the stage is complete).
    std::vector<std::atomic<int>> done(static_cast<std::size_t>(stages));
    for (auto& x : done) x.store(0, std::memory_order_relaxed);
    // Groups of `gs` consecutive stages per thread (round robin over groups), run as a small
    // pipeline inside the thread: at time step t stage i0 + s does sweep t - 3s. Stage i+1 then
    // finds in this core's cache the band entries that stage i touched three steps earlier; only
    // the first stage of a group waits for another thread. The order of operations on every
    // entry is the sequential one whatever gs and the thread count.
    // Default (group = 0): on up to 4 threads, groups of up to 4 keeping about 3 groups per thread
    // in flight (a group holds its successor back by 3 gs sweeps; stage 0 has about n/b sweeps);
    // on more threads 1: groups pay on few cores and lose on many (docs/performance/eigh.md).
    const int sweeps0 = (stages + b - 1) / b;
    const int automatic = threads <= 4 ? std::min(4, sweeps0 / (3 * threads)) : 1;
    const int gs = std::max(1, std::min(group > 0 ? group : automatic, stages));
    auto worker = [&](int first) {
      // y and pending: each stage of the group carries its deferred right update (chase_bulge).
      std::vector<double> v(b), w(b), y(std::size_t(2) * b * gs);
      std::vector<int> pending(gs);
      for (int i0 = first * gs; i0 < stages; i0 += threads * gs) {
        const int i1 = std::min(stages, i0 + gs);
        std::fill(pending.begin(), pending.end(), 0);
        for (int t = 0;; ++t) {
          bool active = false;
          for (int i = i0; i < i1; ++i) {
            const int j = t - 3 * (i - i0);
            if (j < 0) break;  // later stages of the group have not started yet
            if (done[i].load(std::memory_order_relaxed) == std::numeric_limits<int>::max())
              continue;
            active = true;
            if (i == i0 && i > 0)
              while (done[i - 1].load(std::memory_order_acquire) < j + 3) std::this_thread::yield();
            if (chase(i, j, v, w, y.data() + std::size_t(2) * b * (i - i0), &pending[i - i0]))
              done[i].store(j + 1, std::memory_order_release);
            else
              done[i].store(std::numeric_limits<int>::max(), std::memory_order_release);
          }
          if (!active && t >= 3 * (i1 - 1 - i0)) break;
        }
      }
    };
    // The pipeline's threads wait on each other: none of them may share its core with OpenBLAS.
    core::lapack::park_blas_threads();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker, t);
    worker(0);
    for (auto& th : pool) th.join();
  }
  for (int i = 0; i < n; ++i) d[i] = at(i, i);
  for (int i = 0; i + 1 < n; ++i) e[i] = at(i + 1, i);
}


/// The band matrix and the reflectors of bulge_chase_team, in an execution space's memory.
template <class MemSpace>
struct ChaseReflectorsOn {
  Kokkos::View<double**, Kokkos::LayoutLeft, MemSpace> V;  ///< b x total, as ChaseReflectors::V
  Kokkos::View<double*, MemSpace> tau;
};

/// Which kernel bulge_chase_team runs. automatic: on CUDA the dedicated kernel of
/// cuda/bulge_chase.hpp (b <= 64; the environment variable KESS_CHASE_KERNEL=portable forces the
/// portable one, for comparisons), elsewhere the portable team pipeline; portable: always that.
enum class ChaseKernel { automatic, portable };

/// Largest b that bulge_chase_team takes (its team scratch holds one b x (b+1) block and 8 b
/// partial sums within the 40 KB that Kokkos grants a team on CUDA).
constexpr int bulge_chase_team_max_b = 64;

/// Stage 2 on an execution space: the same sweeps, reflectors and order as bulge_chase, with a
/// league of teams in place of the host threads. Team g runs stages g, g + G, g + 2G, ... (G teams,
/// all resident: about one per multiprocessor on GPUs, one per thread on host backends). Stage i's
/// sweep j overlaps stage i-1's sweeps up to j+2, and sweep j+2 only in the reflector column it
/// forms first; so it waits, by a progress counter in global memory counting half sweeps, until
/// stage i-1 has finished sweep j+1 and written the column of sweep j+2 (the critical path is
/// about 2.3 sweeps a stage instead of 3). Each sweep loads its three blocks ((a) the bulge row
/// block, (b) the symmetric diagonal block, (c) the block below) at once, into registers on GPUs,
/// stages them in team scratch, and spreads every b-long dot product over the whole team. Band
/// entries written by other teams are read past the GPU's L1 cache (kx::load_uncached: L1 caches
/// are not coherent between multiprocessors). `meta` receives the reflector layout
/// (ChaseReflectors without host storage), `out` the reflectors in exec's memory when not null.
/// On CUDA, with `kernel` automatic, the same pipeline runs as the kernel of cuda/bulge_chase.hpp
/// instead (same results to rounding). Requires 2 <= b <= bulge_chase_team_max_b (use bulge_chase
/// otherwise). Fences `exec`.
template <class ExecSpace>
void bulge_chase_team(const ExecSpace& exec, const BandMatrix& A, std::vector<double>& d,
                      std::vector<double>& e, ChaseReflectors* meta,
                      ChaseReflectorsOn<typename ExecSpace::memory_space>* out,
                      ChaseKernel kernel = ChaseKernel::automatic);

}  // namespace kess::detail::eigh
