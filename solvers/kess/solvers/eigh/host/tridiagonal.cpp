// Stage 3 on the host with LAPACK: dstedc (all vectors, split in two halves at once), dstemr, or
// bisection / dsterf with dstein for a subset.
#include <kess/solvers/eigh/detail/tridiagonal.hpp>

#include <kess/core/base/error.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/eigh/detail/tridiag_bisect.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kess::detail::eigh {

namespace {

/// Eigenpairs 1..nev of (d, e) for n / 20 <= nev < n: the eigenvalues by kess's vectorized
/// bisection (tridiag_bisect) when T does not split, nev <= n / 3 and the CPU has
/// AVX-512 or AVX2 (tridiag_bisect_fast), else all of them by dsterf (O(n^2), faster than
/// dstemr's scalar bisection for a subset), the vectors by dstein (inverse iteration,
/// reorthogonalized within clusters). Returns the routines used ("dsterf+dstein",
/// "bisection+dstein", "dsterf", "bisection"), or nullptr, with nothing written, when dstein
/// reports a vector that did not converge.
const char* tridiagonal_sterf_stein(int n, int nev, bool vectors, const std::vector<double>& d,
                                         const std::vector<double>& e, double* w, double* Z,
                                         int ldz) {
  // Split-off blocks by dstebz's criterion; the eigenvalues of each block by dsterf (or of the
  // only block by bisection).
  const double ulp = core::lapack::lamch('P'), safemin = core::lapack::lamch('S');
  std::vector<int> isplit;  // last row of each block, 1-based
  for (int j = 1; j < n; ++j)
    if (std::fabs(d[j] * d[j - 1]) * ulp * ulp + safemin > e[j - 1] * e[j - 1]) isplit.push_back(j);
  isplit.push_back(n);
  struct Pair {
    double value;
    int block;  // 1-based
  };
  std::vector<Pair> all;
  all.reserve(n);
  std::vector<double> db, eb;
  // (Only with vector code made for this CPU: the baseline compile is slower than dsterf.)
  const bool bisect = isplit.size() == 1 && 3 * std::int64_t(nev) <= n && tridiag_bisect_fast();
  if (bisect) {
    // One block, at most a third of its eigenvalues: the nev smallest by bisection, cheaper than
    // all of them by dsterf (tridiag_bisect.hpp).
    db.resize(nev);
    tridiag_bisect(n, d.data(), e.data(), 0, nev, db.data());
    for (double v : db) all.push_back({v, 1});
  }
  for (std::size_t k = 0, first = 0; !bisect && k < isplit.size(); first = isplit[k], ++k) {
    const int m = isplit[k] - int(first);
    db.assign(d.begin() + first, d.begin() + first + m);
    eb.assign(e.begin() + first, e.begin() + first + std::max(0, m - 1));
    const int info = core::lapack::sterf(m, db.data(), eb.data());
    require(info == 0, ErrorKind::no_convergence, "eigh",
            "dsterf failed with info = " + std::to_string(info));
    for (double v : db) all.push_back({v, int(k) + 1});
  }
  std::stable_sort(all.begin(), all.end(), [](const Pair& x, const Pair& y) { return x.value < y.value; });
  if (!vectors) {
    for (int j = 0; j < nev; ++j) w[j] = all[j].value;
    return bisect ? "bisection" : "dsterf";
  }
  // dstein wants the eigenvalues grouped by block: order[k] = position in ascending order.
  std::vector<int> order(nev);
  for (int j = 0; j < nev; ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return all[x].block < all[y].block; });
  std::vector<double> wb(nev);
  std::vector<int> iblock(nev), ifail(nev);
  for (int k = 0; k < nev; ++k) {
    wb[k] = all[order[k]].value;
    iblock[k] = all[order[k]].block;
  }
  // dstein reorthogonalizes a vector against the previous ones of its cluster (eigenvalues of one
  // block less than 1e-3 ||T_block||_1 apart): cut the list where a cluster ends, into about one
  // piece a host thread, and run the pieces concurrently (same vectors up to the random start).
  std::vector<double> block_norm(isplit.size(), 0.0);
  for (std::size_t k = 0, first = 0; k < isplit.size(); first = isplit[k], ++k)
    for (int i = int(first); i < isplit[k]; ++i)
      block_norm[k] = std::max(block_norm[k], std::fabs(d[i]) + (i > int(first) ? std::fabs(e[i - 1]) : 0.0) +
                                                  (i + 1 < isplit[k] ? std::fabs(e[i]) : 0.0));
  auto cut_ok = [&](int k) {  // a piece may start at k
    return iblock[k] != iblock[k - 1] || wb[k] - wb[k - 1] > 1e-3 * block_norm[iblock[k] - 1];
  };
  const int pieces = std::max(1, std::min(core::detail::host_threads(), nev / 64));
  std::vector<int> start{0};
  for (int q = 1; q < pieces; ++q) {
    int k = std::max(start.back() + 1, int(std::int64_t(nev) * q / pieces));
    while (k < nev && !cut_ok(k)) ++k;
    if (k < nev) start.push_back(k);
  }
  start.push_back(nev);
  std::vector<double> Zb(std::size_t(n) * nev);
  std::vector<double> ef(e.begin(), e.end());
  ef.resize(std::max(1, n));
  std::vector<int> info(start.size() - 1, 0);
  core::detail::host_parallel_for(int(start.size()) - 1, 0, [&](int q) {
    const int k = start[q], cnt = start[q + 1] - k;
    info[q] = core::lapack::stein(n, d.data(), ef.data(), cnt, wb.data() + k, iblock.data() + k,
                            isplit.data(), Zb.data() + std::size_t(k) * n, n, ifail.data() + k);
  });
  for (int i : info)
    if (i != 0) return nullptr;
  for (int k = 0; k < nev; ++k) {
    w[order[k]] = wb[k];
    std::copy(Zb.begin() + std::size_t(k) * n, Zb.begin() + std::size_t(k + 1) * n,
              Z + std::size_t(order[k]) * ldz);
  }
  return bisect ? "bisection+dstein" : "dsterf+dstein";
}

}  // namespace

const char* tridiagonal(int n, int nev, bool vectors, std::vector<double>& d,
                             std::vector<double>& e, double* w, double* Z, int ldz,
                             const BottomRowsTransform& bottom) {
  const char* fn = "eigh";
  if (n == 0 || nev == 0) return "";
  int info = 0;
  if (nev < n && n <= 2) {
    // dstemr's n = 2 shortcut orders the two eigenvalues by absolute value (dlaev2), so it can
    // return the larger one for il = iu = 1 (in some LAPACK builds): use dstedc instead.
    std::vector<double> z(4);
    info = core::lapack::stedc(vectors ? 'I' : 'N', n, d.data(), e.data(), z.data(), n);
    require(info == 0, ErrorKind::no_convergence, fn, "dstedc failed with info = " + std::to_string(info));
    for (int j = 0; j < nev; ++j) {
      w[j] = d[j];
      if (vectors)
        for (int i = 0; i < n; ++i) Z[i + std::size_t(j) * ldz] = z[i + std::size_t(j) * n];
    }
    return "dstedc";
  }
  if (nev == n) {
    // All vectors: from n = 300 the split divide and conquer (tridiag_split.hpp:
    // the two halves at once and the top merge over the host threads; on one thread, kess's merge
    // on halves of 150 rows or more), else dstedc: the split is faster than dstedc from there on,
    // on one thread too (docs/performance/eigh.md).
    const int threads = core::detail::host_threads();
    const bool split = vectors && n >= 300;
    info = split ? stedc_split(n, d.data(), e.data(), Z, ldz, threads, bottom)
                 : core::lapack::stedc(vectors ? 'I' : 'N', n, d.data(), e.data(), Z, ldz);
    std::copy(d.begin(), d.end(), w);
    require(info == 0, ErrorKind::no_convergence, fn, "dstedc failed with info = " + std::to_string(info));
    return split ? "dstedc (split)" : "dstedc";
  }
  // dstemr computes a subset's eigenvalues by scalar bisection (dqds only for all of them): above
  // about n / 20 eigenpairs, the eigenvalues by dsterf or kess's vectorized bisection and the
  // vectors by inverse iteration are faster.
  if (nev >= std::max(2, n / 20))
    if (const char* used = tridiagonal_sterf_stein(n, nev, vectors, d, e, w, Z, ldz))
      return used;
  int m = 0;
  double dummy = 0;
  info = core::lapack::stemr(vectors ? 'V' : 'N', n, d.data(), e.data(), 1, nev, &m, w,
                       vectors ? Z : &dummy, vectors ? ldz : 1);
  require(info != 0 || m == nev, ErrorKind::no_convergence, fn,
          "dstemr returned " + std::to_string(m) + " eigenpairs instead of " + std::to_string(nev));
  require(info == 0, ErrorKind::no_convergence, fn, "dstemr failed with info = " + std::to_string(info));
  return "dstemr";
}

}  // namespace kess::detail::eigh
