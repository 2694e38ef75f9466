#pragma once
// Eigenvalues j0 .. j1 - 1 (0-based, ascending) of a symmetric tridiagonal matrix by bisection of
// Sturm counts on the host (tridiag_bisect.cpp, compiled per instruction set): 24 eigenvalues a
// pass, one a vector lane, as three independent 8-wide recurrences with one division a row each
// (a single chain waits on its divisions' latency), the groups of 24 over the host threads. For
// a subset of the eigenvalues this is cheaper than all of them by dsterf, and much cheaper than
// LAPACK's scalar dstebz (docs/performance/eigh.md).

namespace kess::detail::eigh {

/// w[j - j0] for j in [j0, j1): the (j+1)-th smallest eigenvalue of the n x n symmetric
/// tridiagonal matrix with diagonal d and off-diagonal e (n - 1), to an absolute accuracy of a
/// few ulps of max(|lambda|, ||T||_1 / 2) (Sturm counts with dstebz's pivot safeguard; what
/// dsterf attains). threads: host threads (0: core::detail::host_threads()).
void tridiag_bisect(int n, const double* d, const double* e, int j0, int j1, double* w,
                    int threads = 0);

/// Whether tridiag_bisect runs vector code made for this CPU (AVX-512, or the 4-wide AVX2 compile
/// of tridiag_bisect_avx2.cpp): else it is slower than dsterf for all eigenvalues, and eigh takes
/// dsterf.
bool tridiag_bisect_fast();

}  // namespace kess::detail::eigh
