// kess::ScopeGuard — initializes MPI (when kess was built with it) and then Kokkos; finalizes in
// reverse order. One per program, in main(), before any other kess call.
#pragma once

namespace kess {

class ScopeGuard {
 public:
  /// Initializes MPI (unless the caller already did; then kess leaves finalizing to the caller)
  /// and Kokkos (likewise), and tells kess::Error this process's rank.
  ScopeGuard(int& argc, char**& argv);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  bool finalize_mpi_ = false;
  bool finalize_kokkos_ = false;
};

}  // namespace kess
