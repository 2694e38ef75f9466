// Host kernels of kess::lobpcg's tall-skinny products on row-major blocks (host/dense_kernels.cpp):
// AVX-512 code compiled with GCC outside nvcc, read in place; the BLAS is taken elsewhere.
#pragma once

#include <cstdint>

namespace kess::detail::lobpcg {

/// Whether the kernels below run here (x86-64 with AVX-512F, compiled by GCC outside nvcc).
bool host_panel_kernels();

/// out[i, 0:w] = A[i, 0:m] C + beta out[i, 0:w] for rows [r0, r1): A and out row-major with
/// leading dimensions lda and ldo, C row-major m x wp (wp >= w rounded up to a multiple of 8,
/// zero-padded). out must not overlap A.
void host_rows_times_small(std::int64_t r0, std::int64_t r1, int m, int w, const double* A, int lda,
                           const double* Cp, int wp, double* out, int ldo, double beta);

/// G += A[r0:r1, 0:wa]ᵀ B[r0:r1, 0:wb] (G column-major wa x wb), A and B row-major with leading
/// dimensions lda and ldb; the sum runs over rows in a fixed order.
void host_gram(std::int64_t r0, std::int64_t r1, int wa, int wb, const double* A, int lda,
               const double* B, int ldb, double* G);

}  // namespace kess::detail::lobpcg
