#pragma once
// The O(k^2) host loops of a divide-and-conquer merge, with explicit vectors (host/secular.cpp,
// compiled per instruction set): the roots of the secular equation, and the two division-heavy
// loops of the Gu-Eisenstat eigenvectors. Used by stedc_split's merge and tridiag_dc's host merges.

namespace kess::detail::eigh {

/// Roots j0 .. j1 - 1 of 1 + rho sum_i z_i^2 / (d_i - lambda) = 0 (k >= 3; d ascending and
/// distinct, z_i != 0, rho > 0) as lambda_j = d[orig[j]] + tau[j]: tridiag_dc's root finder
/// (secular_root_with) with the secular function summed in 8-wide vectors.
/// d_i - lambda_j = (d_i - d[orig[j]]) - tau[j] is then as accurate as the delta dlaed4 returns.
void secular_roots_host(int k, const double* d, const double* z, double rho, int j0, int j1,
                           int* orig, double* tau);

/// p[i] *= (i == j ? s[i] : s[i] / (d[i] - d[j])), i < k: one column's factors of the
/// Gu-Eisenstat weights (the same operations on each entry as that loop written out).
void secular_products(int k, int j, const double* d, const double* s, double* p);

/// col[i] = what[i] / s[i] for i < k; returns big = max_i |col[i]| and sets *sumsq to
/// sum_i (col[i] / big)^2, summed with compensation (Neumaier) in eight lanes: one or two huge
/// entries sit among thousands of small ones, and a plain sum's rounding shows up as loss of
/// orthogonality (a few times dstedc's).
double secular_column(int k, const double* what, const double* s, double* col, double* sumsq);

}  // namespace kess::detail::eigh
