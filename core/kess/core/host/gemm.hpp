#pragma once
// kess's own host DGEMM: packed panels (A read in place when C has at most 512 columns) and an
// AVX-512 register-blocked micro-kernel (24 x 8 tiles of C in 24 zmm accumulators), over kess's
// host threads. On AMD's AVX-512 cores it beats OpenBLAS's DGEMM on large shapes and matches it on
// narrow ones (docs/performance/gauss_jordan.md). kess::core::lapack::gemm calls it for large
// enough products where it is preferred; everything else goes to the BLAS.
//
// Available: x86-64, compiled by GCC (not under nvcc), the CPU has AVX-512F, and the environment
// variable KESS_HOST_GEMM is not 0. Preferred for plain products (core::lapack::gemm): available
// on an AMD CPU, where it is faster than OpenBLAS (on Intel's AVX-512 cores OpenBLAS's kernel is
// the faster one), or anywhere with KESS_HOST_GEMM=1. Callers that need what only this kernel
// does (the Gauss-Jordan update reading its pivot rows in place, with the next panel
// beside it) take it wherever it is available. Results do not depend on the thread count: every
// entry of C is summed in the same order (k ascending within blocks of kc, blocks in order).

#include <functional>

namespace kess::core::detail {

/// Whether host_gemm can run here (see the file comment).
bool host_gemm_available();

/// Whether core::lapack::gemm takes host_gemm for large products here (see the file comment).
bool host_gemm_preferred();

/// Whether core::lapack::gemm hands C = alpha op(A) op(B) + beta C (m x n, inner dimension k) to
/// host_gemm: the product is large enough that packing pays (m, n >= 32, k >= 16 and 2mnk >= 2^23
/// flops) and host_gemm is preferred, or it is available while a core::lapack::SerialBlasScope holds
/// OpenBLAS to one thread and no host loop runs (Gauss-Jordan's host sweep: its small products
/// then take all host threads instead of one).
bool host_gemm_pays(int m, int n, int k);

/// One product of host_gemm_parts: C (m x n, leading dimension ldc) and its op(B) (k x n). With
/// b_rows (k row indices; transb 'N' and k <= host_gemm_max_gathered_k only), row r of op(B) is
/// row b_rows[r] of the matrix at b: the rows are gathered while they are packed, and they may be
/// rows of this part's C (b == c): every thread packs its columns' rows before it writes them (the
/// Gauss-Jordan update reads its pivot block row out of the matrix it updates). With b_rows and
/// b_solve as well, op(B) is L^-1 times those rows, L (k x k, column-major, leading dimension
/// ld_solve) unit lower triangular: each packed micro-panel is solved with L after it is
/// gathered (Gauss-Jordan's W = L1^-1 T, with no pass of its own over the scattered rows).
struct HostGemmPart {
  const double* b;
  int ldb;
  double* c;
  int ldc;
  int n;
  const int* b_rows = nullptr;
  const double* b_solve = nullptr;
  int ld_solve = 0;
};

/// The largest inner dimension host_gemm_parts takes with b_rows (one block of the inner
/// dimension: C is written only after all of op(B)'s rows have been read).
constexpr int host_gemm_max_gathered_k = 256;

/// C_i = alpha op(A) op(B_i) + beta C_i for every part, one op(A) for all (m x k): the parts'
/// columns are spread over the threads as one C, and a thread packs op(A) once for all of them
/// (the Gauss-Jordan update's three column ranges). Each part gets the bits host_gemm would
/// give it alone. Requires host_gemm_available().
///
/// side (optional): the caller's own work, run on one of the threads beside the product (the
/// Gauss-Jordan host sweep factors its next panel there while the others start on the update).
/// With k <= 256 and more than one thread the columns are then handed out in shrinking chunks, so
/// the thread that ran side takes fewer; otherwise side runs first. The product is complete when
/// this returns or throws; side's exception, if any, is rethrown here afterwards.
void host_gemm_parts(char transa, char transb, int m, int k, double alpha, const double* a, int lda,
                     const HostGemmPart* parts, int count, double beta, int threads = 0,
                     const std::function<void()>& side = {});

/// C = alpha op(A) op(B) + beta C, column-major, transa / transb 'N' or 'T' ('C' reads as 'T'),
/// as the BLAS defines it (beta == 0: C is not read). Over `threads` host threads (0: automatic,
/// the count of host_parallel_for, at most one per 2^25 flops, and 1 inside another
/// host_parallel_for loop). Requires host_gemm_available().
void host_gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a,
               int lda, const double* b, int ldb, double beta, double* c, int ldc, int threads = 0);

}  // namespace kess::core::detail
