#include <kess/solvers/eigh.hpp>

#include <kess/core/host/parallel.hpp>
#include <kess/core/linalg/householder.hpp>
#include <kess/solvers/eigh/detail/tridiag_bisect.hpp>
#include <kess/solvers/eigh/detail/tridiag_split.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kess {

const char* to_string(EighMethod m) noexcept {
  switch (m) {
    case EighMethod::automatic: return "automatic";
    case EighMethod::one_stage: return "one-stage";
    default: return "two-stage";
  }
}

EighMethod parse_eigh_method(const std::string& name) {
  if (name == "two-stage" || name == "two_stage") return EighMethod::two_stage;
  if (name == "one-stage" || name == "one_stage") return EighMethod::one_stage;
  if (name == "auto" || name == "automatic") return EighMethod::automatic;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_method",
              "argument 'method' = '" + name + "': expected 'auto', 'two-stage' or 'one-stage'");
}

const char* to_string(EighChase c) noexcept {
  switch (c) {
    case EighChase::host: return "host";
    case EighChase::team: return "team";
    default: return "auto";
  }
}

EighChase parse_eigh_chase(const std::string& name) {
  if (name == "auto" || name == "automatic") return EighChase::automatic;
  if (name == "host") return EighChase::host;
  if (name == "team") return EighChase::team;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_chase",
              "argument 'chase' = '" + name + "': expected 'auto', 'host' or 'team'");
}

const char* to_string(EighTridiagonal t) noexcept {
  switch (t) {
    case EighTridiagonal::lapack: return "lapack";
    case EighTridiagonal::divide_conquer: return "dc";
    default: return "auto";
  }
}

EighTridiagonal parse_eigh_tridiagonal(const std::string& name) {
  if (name == "auto" || name == "automatic") return EighTridiagonal::automatic;
  if (name == "lapack") return EighTridiagonal::lapack;
  if (name == "dc" || name == "divide-conquer" || name == "divide_conquer")
    return EighTridiagonal::divide_conquer;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_tridiagonal",
              "argument 'tridiagonal' = '" + name + "': expected 'auto', 'lapack' or 'dc'");
}

const char* to_string(EighGeneralized g) noexcept {
  switch (g) {
    case EighGeneralized::lapack:
      return "lapack";
    case EighGeneralized::blas:
      return "blas";
    default:
      return "auto";
  }
}

EighGeneralized parse_eigh_generalized(const std::string& name) {
  if (name == "auto" || name == "automatic") return EighGeneralized::automatic;
  if (name == "lapack") return EighGeneralized::lapack;
  if (name == "blas") return EighGeneralized::blas;
  throw Error(ErrorKind::invalid_argument, "parse_eigh_generalized",
              "argument 'generalized' = '" + name + "': expected 'auto', 'lapack' or 'blas'");
}

namespace detail {
void eigh_not_positive_definite(const char* fn, int info, double pivot) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "argument 'B' is not positive definite: Cholesky pivot %d (row/column %d, "
                "0-based) is %.6g <= 0 (the leading minor of order %d is not positive)",
                info, info - 1, pivot, info);
  throw Error(ErrorKind::not_positive_definite, fn, buf);
}
}  // namespace detail

int eigh_auto_b(std::int64_t n, bool host, std::string* reason) {
  // Larger b: stage-1 GEMMs of inner dimension b run closer to peak and stage 4's WY blocks get
  // longer; smaller b: the host bulge chase (about 6 b n^2 flops, pipelined over host threads)
  // gets cheaper.
  int b = host ? 96 : 64;
  std::string why = host ? "CPU default 96: stage 4's compact-WY blocks (b + 31 rows) waste less "
                           "at larger b; measured best of 32..96 at n = 2000 and 4000"
                         : "GPU default 64: stage-1 GEMMs near peak, the fastest compiled "
                           "hh_chase kernel shape";
  if (n <= 2 * b) {
    b = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(b, n / 4)));
    why = "small n: b = max(1, n/4)";
  }
  if (reason) *reason = why;
  return b;
}

namespace detail {

namespace {

/// Eigenpairs 1..nev of (d, e) for n / 20 <= nev < n: the eigenvalues by kess's vectorized
/// bisection (core::detail::tridiag_bisect) when T does not split, nev <= n / 3 and the CPU has
/// AVX-512 or AVX2 (core::detail::tridiag_bisect_fast), else all of
/// them by dsterf (O(n^2), 0.23 s at n = 4000, where dstemr's bisection for 800 of them takes
/// 0.97 s and kess's 0.055 s), the vectors by dstein (inverse iteration, reorthogonalized within
/// clusters; 0.30 s for 800). Returns the routines used ("dsterf+dstein", "bisection+dstein",
/// "dsterf", "bisection"), or nullptr, with nothing written, when dstein reports a vector that did
/// not converge.
const char* eigh_tridiagonal_sterf_stein(int n, int nev, bool vectors, const std::vector<double>& d,
                                         const std::vector<double>& e, double* w, double* Z,
                                         int ldz) {
  // Split-off blocks by dstebz's criterion; the eigenvalues of each block by dsterf (or of the
  // only block by bisection).
  const double ulp = lapack::lamch('P'), safemin = lapack::lamch('S');
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
  // (Only with vector code made for this CPU: the baseline compile takes 3.4x dsterf's time.)
  const bool bisect = isplit.size() == 1 && 3 * std::int64_t(nev) <= n && core::detail::tridiag_bisect_fast();
  if (bisect) {
    // One block, at most a third of its eigenvalues: the nev smallest by bisection (n = 4000, 800
    // of them, 2 threads: 0.055 s against dsterf's 0.23 for all; core/kess/core/tridiag_bisect.hpp).
    db.resize(nev);
    core::detail::tridiag_bisect(n, d.data(), e.data(), 0, nev, db.data());
    for (double v : db) all.push_back({v, 1});
  }
  for (std::size_t k = 0, first = 0; !bisect && k < isplit.size(); first = isplit[k], ++k) {
    const int m = isplit[k] - int(first);
    db.assign(d.begin() + first, d.begin() + first + m);
    eb.assign(e.begin() + first, e.begin() + first + std::max(0, m - 1));
    const int info = lapack::sterf(m, db.data(), eb.data());
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
    info[q] = lapack::stein(n, d.data(), ef.data(), cnt, wb.data() + k, iblock.data() + k,
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

constexpr int kSytrdQBlock = 128;

/// Reflectors i0 .. i0 + k - 1 of lapack::sytrd('L') as a dense V (m x k, m = n - 1 - i0: unit
/// diagonal, zeros above; vd) and the upper triangular T of I - V T V^T (k x k, leading
/// dimension ldt), T by dlarft's recurrence on G = V^T V (one GEMM; dlarft runs a GEMV a
/// reflector).
void sytrd_block(int n, const double* a, int lda, const double* tau, int i0, int k, double* vd,
                 double* G, double* T, int ldt) {
  const int m = n - 1 - i0;
  const double* V = a + (i0 + 1) + std::size_t(i0) * lda;
  for (int c = 0; c < k; ++c) {
    double* col = vd + std::size_t(c) * m;
    std::fill(col, col + c, 0.0);
    col[c] = 1.0;
    std::copy(V + c + 1 + std::size_t(c) * lda, V + m + std::size_t(c) * lda, col + c + 1);
  }
  lapack::gemm('T', 'N', k, k, m, 1.0, vd, m, vd, m, 0.0, G, ldt);
  compact_wy_t_from_gram(k, tau + i0, G, ldt, T, ldt);
}

/// Z <- (I - V T V^T) Z on rows i0 + 1 .. n - 1 of z (which holds rows row0 ..), nev columns;
/// W: nev x k scratch. Z -= V W^T with W = Z^T V T^T: OpenBLAS runs Z^T V (large M, small N) at
/// 134 GFLOP/s on 2 cores where V^T Z (M = 128) runs at 93, and V W^T at 144 against 129 for
/// V (T V^T Z) (n = 4000, docs/benchmarks.md, session 10).
void sytrd_block_apply(int n, int i0, int k, const double* vd, const double* T, int ldt, int nev,
                       double* z, int ldz, int row0, double* W) {
  const int m = n - 1 - i0;
  double* zb = z + (i0 + 1 - row0);
  lapack::gemm('T', 'N', nev, k, m, 1.0, zb, ldz, vd, m, 0.0, W, nev);   // W = Z^T V
  lapack::trmm('R', 'U', 'T', 'N', nev, k, 1.0, T, ldt, W, nev);         // W = W T^T
  lapack::gemm('N', 'T', m, nev, k, -1.0, vd, m, W, nev, 1.0, zb, ldz);  // Z -= V W^T
}
}  // namespace

void eigh_apply_sytrd_q(int n, int nev, const double* a, int lda, const double* tau, double* z,
                        int ldz, int first, int last, int row0) {
  // Q = H(0) H(1) ... H(n-2), H(i) acting on rows i+1 .. n-1 with v below the subdiagonal of
  // column i of a: blocks of 128 reflectors from the last, each I - V T V^T applied as two large
  // GEMMs with V copied into a dense panel (one buffer for all blocks). dormtr applies 32 at a
  // time (ilaenv) and dlarfb works around the triangle with extra copies and TRMMs; 2 cores,
  // n = 4000, all vectors: dormtr 1.76 s, dlarft + dlarfb (128) 1.35 s, this 1.13-1.18 s
  // (docs/benchmarks.md, session 9).
  constexpr int nb = kSytrdQBlock;
  if (last < 0) last = n - 1;
  if (last <= first || nev <= 0) return;
  std::vector<double> T(std::size_t(nb) * nb), G(std::size_t(nb) * nb),
      Vd(std::size_t(n - 1 - first) * nb), W(std::size_t(nb) * nev);
  for (int hi = last; hi > first; hi -= nb) {
    const int i0 = std::max(first, hi - nb), k = hi - i0;
    sytrd_block(n, a, lda, tau, i0, k, Vd.data(), G.data(), T.data(), nb);
    sytrd_block_apply(n, i0, k, Vd.data(), T.data(), nb, nev, z, ldz, row0, W.data());
  }
}

SytrdQBlocks::SytrdQBlocks(int n, const double* a, int lda, const double* tau, int first, int last)
    : n_(n) {
  constexpr int nb = kSytrdQBlock;
  if (last < 0) last = n - 1;
  std::vector<double> G(std::size_t(nb) * nb);
  for (int hi = last; hi > first; hi -= nb) {
    Block blk;
    blk.i0 = std::max(first, hi - nb);
    blk.k = hi - blk.i0;
    blk.V.resize(std::size_t(n - 1 - blk.i0) * blk.k);
    blk.T.resize(std::size_t(nb) * nb);
    sytrd_block(n, a, lda, tau, blk.i0, blk.k, blk.V.data(), G.data(), blk.T.data(), nb);
    blocks_.push_back(std::move(blk));
  }
}

void SytrdQBlocks::apply(int nev, double* z, int ldz, int row0) const {
  if (nev <= 0) return;
  std::vector<double> W(std::size_t(kSytrdQBlock) * nev);
  for (const Block& blk : blocks_)
    sytrd_block_apply(n_, blk.i0, blk.k, blk.V.data(), blk.T.data(), kSytrdQBlock, nev, z, ldz,
                      row0, W.data());
}

const char* eigh_tridiagonal(int n, int nev, bool vectors, std::vector<double>& d,
                             std::vector<double>& e, double* w, double* Z, int ldz,
                             const core::detail::BottomRowsTransform& bottom) {
  const char* fn = "eigh";
  if (n == 0 || nev == 0) return "";
  int info = 0;
  if (nev < n && n <= 2) {
    // dstemr's n = 2 shortcut orders the two eigenvalues by absolute value (dlaev2), so it can
    // return the larger one for il = iu = 1 (seen with the LAPACK here): use dstedc instead.
    std::vector<double> z(4);
    info = lapack::stedc(vectors ? 'I' : 'N', n, d.data(), e.data(), z.data(), n);
    require(info == 0, ErrorKind::no_convergence, fn, "dstedc failed with info = " + std::to_string(info));
    for (int j = 0; j < nev; ++j) {
      w[j] = d[j];
      if (vectors)
        for (int i = 0; i < n; ++i) Z[i + std::size_t(j) * ldz] = z[i + std::size_t(j) * n];
    }
    return "dstedc";
  }
  if (nev == n) {
    // All vectors: from n = 300 the split divide and conquer (core/kess/core/tridiag_split.hpp:
    // the two halves at once and the top merge over the host threads; on one thread, kess's merge
    // on halves of 150 rows or more), else dstedc. 2 cores, against dstedc: n = 4000 0.73 s
    // against 1.05, n = 700 0.010 against 0.022, n = 500 0.006 against 0.010; one thread, n = 1000
    // 0.035 against 0.044 (docs/benchmarks.md, eigh session 28).
    const int threads = core::detail::host_threads();
    const bool split = vectors && n >= 300;
    info = split ? core::detail::stedc_split(n, d.data(), e.data(), Z, ldz, threads, bottom)
                 : lapack::stedc(vectors ? 'I' : 'N', n, d.data(), e.data(), Z, ldz);
    std::copy(d.begin(), d.end(), w);
    require(info == 0, ErrorKind::no_convergence, fn, "dstedc failed with info = " + std::to_string(info));
    return split ? "dstedc (split)" : "dstedc";
  }
  // dstemr computes a subset's eigenvalues by scalar bisection (dqds only for all of them): above
  // about n / 20 eigenpairs, the eigenvalues by dsterf or kess's vectorized bisection and the
  // vectors by inverse iteration are faster.
  if (nev >= std::max(2, n / 20))
    if (const char* used = eigh_tridiagonal_sterf_stein(n, nev, vectors, d, e, w, Z, ldz))
      return used;
  int m = 0;
  double dummy = 0;
  info = lapack::stemr(vectors ? 'V' : 'N', n, d.data(), e.data(), 1, nev, &m, w,
                       vectors ? Z : &dummy, vectors ? ldz : 1);
  require(info != 0 || m == nev, ErrorKind::no_convergence, fn,
          "dstemr returned " + std::to_string(m) + " eigenpairs instead of " + std::to_string(nev));
  require(info == 0, ErrorKind::no_convergence, fn, "dstemr failed with info = " + std::to_string(info));
  return "dstemr";
}

}  // namespace detail
}  // namespace kess
