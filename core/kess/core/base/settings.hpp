// The one place that reads kess's environment variables (KESS_*). Each function documents its
// variable; docs/design/architecture.md lists them all.
#pragma once

namespace kess::core::settings {

/// KESS_NUM_THREADS: kess's own host threads when > 0, else 0 (unset, or not a count). Read at
/// each call, so a program may change it between calls.
int num_threads();

/// KESS_PARK_BLAS: false when "0" (leave OpenBLAS's idle worker threads alone); by default kess
/// ends them before its own host threads start. Read once.
bool park_blas();

/// KESS_HOST_VECTORS: false when "0" (never use kess's wide-vector host kernels; LAPACK and the
/// BLAS routines run instead). Read once.
bool host_vectors();

/// KESS_HOST_GEMM: 0 (host products always through the BLAS), 1 (kess's AVX-512 host DGEMM for
/// every large product), -1 when unset (automatic). Read once.
int host_gemm();

/// KESS_HH_MMA: the CUDA stage-4 tensor-core kernel to force (884, 2, 4, 8 or 9); 0 when unset
/// (automatic). Read once.
int hh_mma();

/// KESS_CHASE_KERNEL: true when "portable" (CUDA stage 2 through the portable team kernel instead
/// of its dedicated kernel). Read once.
bool chase_kernel_portable();

/// KESS_BT_MERGE: stage-5 panels per compact-WY block on devices when > 0, else 0 (unset: the
/// default of 8). Read once.
int bt_merge();

/// KESS_PEAK_GFLOPS and KESS_PEAK_GBS: the machine's FP64 and memory-bandwidth ceilings that the
/// benchmarks' floors use; 0 when unset. Read at each call.
double peak_gflops();
double peak_gbs();

/// KESS_FAULT_INJECT=<site>[:<rank>], for tests of the error paths: true when the variable names
/// `site` and, if given, this process's rank in MPI_COMM_WORLD (0 without MPI); the caller then
/// fails there as a real failure would. Sites: "gj_setup_alloc" (std::bad_alloc while a
/// Gauss-Jordan sweep allocates its buffers, or the distributed solve its copy of A), "gj_panel"
/// (std::runtime_error while a rank factors a panel), "mf_setup_alloc" (std::bad_alloc while a
/// distributed sign, Lyapunov or Riccati solver allocates its matrices). Read at each call.
bool fault_injection(const char* site);

}  // namespace kess::core::settings
