#pragma once
// All eigenpairs of a symmetric tridiagonal matrix on the host, for CPUs where LAPACK's dstedc
// leaves cores idle: dstedc's secular equations, Gu-Eisenstat weights and deflation copies run on
// one thread (at n = 4000 on 2 cores, 0.55 s of its 1.0 s). Cuppen's tear at n/2 gives two halves
// that dstedc solves at once, one host thread each; the top merge (the largest one: half of the
// serial work and most of the GEMM flops) runs LAPACK's deflation (dlaed2) and then spreads its
// secular equations (dlaed4), weights and vectors over the host threads before two GEMMs.
namespace kess::core::detail {

/// All eigenvalues (ascending, into d) and eigenvectors (into z: n x n, leading dimension ldz)
/// of the symmetric tridiagonal matrix with diagonal d (n) and off-diagonal e (n - 1; destroyed).
/// threads: host threads (0: host_threads()); with one thread, or n < 4, this is dstedc. If a
/// LAPACK call in the split path reports a failure, dstedc runs on the whole matrix instead.
/// Returns dstedc's info (0: success).
int stedc_split(int n, double* d, double* e, double* z, int ldz, int threads = 0);

}  // namespace kess::core::detail
