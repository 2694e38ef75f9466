// Stage 3 of eigh on the host with LAPACK (the one-stage path, and the two-stage path without
// kess's divide and conquer): all eigenpairs by dstedc, or a subset by dstemr or bisection + dstein.
#pragma once

#include <kess/solvers/eigh/detail/tridiag_split.hpp>

#include <vector>

namespace kess::detail::eigh {

/// Tridiagonal eigenproblem (stage 3) on the host: the first nev eigenpairs of (d, e); vectors
/// into Z (ldz rows, at least n) when `vectors`; eigenvalues into w[0 .. nev) (w holds n: dstemr
/// uses all of it as workspace). Returns the
/// routines used ("dstedc", "dstedc (split)", "dstemr", "dsterf+dstein", "dsterf",
/// "bisection+dstein", "bisection"). bottom: see
/// stedc_split (called only on the split path, all vectors).
const char* tridiagonal(int n, int nev, bool vectors, std::vector<double>& d, std::vector<double>& e,
                      double* w, double* Z, int ldz,
                      const BottomRowsTransform& bottom = {});

}  // namespace kess::detail::eigh
