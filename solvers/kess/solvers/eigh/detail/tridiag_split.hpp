#pragma once
// All eigenpairs of a symmetric tridiagonal matrix on the host, for CPUs where LAPACK's dstedc
// leaves cores idle: dstedc's secular equations, Gu-Eisenstat weights and deflation copies run on
// one thread (about half of its time on a few cores). Cuppen's tear at n/2 gives two halves
// that dstedc solves at once, one host thread each; the top merge (the largest one: half of the
// serial work and most of the GEMM flops) runs LAPACK's deflation (dlaed2) and then spreads its
// secular equations (secular.hpp: vectorized), weights and vectors over the host threads
// before two GEMMs. With 4 or more threads each half is split the same way again on its share of
// the threads (down to halves of 400 rows), so that every thread has a leaf or a merge's part; on
// one thread a half is split again while its own halves keep 150 rows or more (this merge's
// vectorized roots beat dlaed4's inside dstedc).
#include <functional>

namespace kess::detail::eigh {

/// M <- X M for a fixed X acting on the bottom rows of stedc_split's z: m holds those rows
/// (rows x cols, leading dimension ld).
using BottomRowsTransform = std::function<void(int rows, int cols, double* m, int ld)>;

/// All eigenvalues (ascending, into d) and eigenvectors (into z: n x n, leading dimension ldz)
/// of the symmetric tridiagonal matrix with diagonal d (n) and off-diagonal e (n - 1; destroyed).
/// threads: host threads (0: core::detail::host_threads()); with one thread below 300 rows, or n < 4, this is
/// dstedc. If a LAPACK call in the split path reports a failure, dstedc runs on the whole matrix
/// instead.
/// Returns dstedc's info (0: success).
///
/// bottom (optional): a transform X of the bottom rows n - n2 .. n - 1 (n2 =
/// stedc_split_bottom_rows(n, true)); z then comes back as diag(I, X) Z. Every step of the merge
/// acts on z's columns and commutes with X, so the split path applies X to the bottom half's own
/// n2 vectors, in column ranges that the bottom half's thread starts on right after its dstedc
/// and the top half's thread joins when its own dstedc is done (bottom may be called for several
/// ranges at once, from two threads; with 4 or more threads, once for all n2 columns on all
/// threads after both halves are done); the other paths (dstedc alone, a failure) apply it to all
/// n columns at the end. A caller whose next step is Q Z with Q = Q_top diag(I, X) (dsytrd's
/// reflectors that touch only the bottom rows) then applies only Q_top: at n2 = 0.47 n, 0.44 n^3 of
/// Q's 2 n^3 flops leave the back-transformation and 0.21 n^3 run beside the top half's dstedc.
int stedc_split(int n, double* d, double* e, double* z, int ldz, int threads = 0,
                const BottomRowsTransform& bottom = {});

/// The rows of stedc_split's bottom half: n - n / 2 without a transform, about 0.47 n with one.
int stedc_split_bottom_rows(int n, bool with_bottom);

}  // namespace kess::detail::eigh
