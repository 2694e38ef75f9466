// The stack kernels behind kess::multiply, declared for the benchmarks that time them alone;
// instantiated in libkess per execution space (block_sparse_impl.hpp).
#pragma once

#include <kess/solvers/block_sparse/detail/stack.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kess::detail::block_sparse {

/// Which stack kernel runs: the fastest that applies, or one forced (benchmarks, tests).
enum class StackKernel { automatic, generic, tensor_core };

/// A stack's arrays in device memory (empty on host backends, whose kernel reads the Stack).
template <class Mem>
struct DeviceStack {
  std::int64_t runs = 0;
  int max_m = 0, max_n = 0, max_k = 0;
  Kokkos::View<std::int64_t*, Mem> run_c, run_begin, a_off, b_off;
  Kokkos::View<int*, Mem> run_m, run_n, k;
};

/// Copies the stack's arrays to Exec's memory (nothing on host backends).
template <class Exec>
DeviceStack<typename Exec::memory_space> upload_stack(const Exec& exec, const Stack& s);

/// C += alpha * (the stack's products) with A, B, C in Exec's memory (C at the stack's offsets).
/// Host backends run host_stack_multiply on `s`; CUDA the tensor-core kernel for blocks of up to
/// 32 (sm_80 and newer) and the team kernel otherwise, on `d` (upload_stack(exec, s)). Does not
/// fence.
template <class Exec>
void stack_multiply(const Exec& exec, const Stack& s,
                    const DeviceStack<typename Exec::memory_space>& d,
                    const Kokkos::View<double*, typename Exec::memory_space>& a,
                    const Kokkos::View<double*, typename Exec::memory_space>& b,
                    const Kokkos::View<double*, typename Exec::memory_space>& c, double alpha,
                    StackKernel kernel = StackKernel::automatic);

}  // namespace kess::detail::block_sparse
