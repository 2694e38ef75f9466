// kess::kx team helpers: team sizes for kernels that hold a column a team in registers, and
// whether a league of teams that wait for one another fits the device at once.
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace kess::kx {

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

}  // namespace kess::kx
