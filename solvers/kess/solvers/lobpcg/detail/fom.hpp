// kess::FomPreconditioner (Maris et al. 2022, §3.4): the diagonal tiles of H as small CSR
// matrices (both triangles), and Z = K^-1 R by a few steps of FOM (Arnoldi with full
// orthogonalization, then the small Hessenberg system) on each (H_tile - θ_r I), one team per
// (tile, column).
#pragma once

#include <kess/comm/exchange.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/solvers/lobpcg.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace kess {

template <class T, class MemorySpace>
struct FomPreconditioner<T, MemorySpace>::Tiles {
  std::int64_t rows = 0;  ///< this rank's vector rows
  int count = 0;          ///< tiles
  int max_rows = 0;       ///< rows of the largest tile
  /// Tile t: local rows [start(t), start(t + 1)).
  Kokkos::View<std::int64_t*, MemorySpace> start;
  /// CSR over the local rows; column indices relative to the row's tile start.
  Kokkos::View<std::int64_t*, MemorySpace> row_ptr;
  Kokkos::View<int*, MemorySpace> col;
  Kokkos::View<T*, MemorySpace> val;
};

namespace detail::lobpcg {
/// Solves H_use y = b0 e1 (H upper Hessenberg, H(p, q) = hess[p * sp + q * sq]) by Gaussian
/// elimination with partial pivoting for use = meff, meff - 1, ... until the leading block is not
/// singular (pivot above 1e-14 scale); a (use x use) is workspace. Returns that use (0: none).
KOKKOS_INLINE_FUNCTION int solve_hessenberg(const double* hess, std::int64_t sp, std::int64_t sq,
                                            int meff, double b0, double scale, double* a,
                                            double* y) {
  int use = meff;
  for (; use >= 1; --use) {
    for (int q = 0; q < use; ++q) {
      for (int p = 0; p < use; ++p) a[p + q * use] = p <= q + 1 ? hess[p * sp + q * sq] : 0;
      y[q] = q == 0 ? b0 : 0;
    }
    bool ok = true;
    for (int q = 0; q < use && ok; ++q) {
      int piv = q;
      for (int p = q + 1; p < use; ++p)
        if (kx::fabs(a[p + q * use]) > kx::fabs(a[piv + q * use])) piv = p;
      if (!(kx::fabs(a[piv + q * use]) > 1e-14 * scale)) {
        ok = false;
        break;
      }
      if (piv != q) {
        for (int r = q; r < use; ++r) {
          const double tmp = a[q + r * use];
          a[q + r * use] = a[piv + r * use];
          a[piv + r * use] = tmp;
        }
        const double tmp = y[q];
        y[q] = y[piv];
        y[piv] = tmp;
      }
      for (int p = q + 1; p < use; ++p) {
        const double f = a[p + q * use] / a[q + q * use];
        for (int r = q; r < use; ++r) a[p + r * use] -= f * a[q + r * use];
        y[p] -= f * y[q];
      }
    }
    if (!ok) continue;
    for (int q = use - 1; q >= 0; --q) {
      double s = y[q];
      for (int r = q + 1; r < use; ++r) s -= a[q + r * use] * y[r];
      y[q] = s / a[q + q * use];
    }
    break;
  }
  return use;
}

/// Largest FOM step count (the Hessenberg matrix lives in team scratch).
constexpr int kMaxFomIterations = 32;
/// Default tile rows when the CSB block size is larger: tiles of this size keep the FOM basis of a
/// (tile, column) pair in cache and still give enough teams on a GPU.
constexpr int kDefaultMaxTile = 2048;
}  // namespace detail::lobpcg

template <class T, class MemorySpace>
FomPreconditioner<T, MemorySpace>::FomPreconditioner(const CsbMatrix<T, MemorySpace>& H, int tile,
                                                     int iterations) {
  constexpr const char* fn = "FomPreconditioner";
  require_arg(tile >= 0, fn, "tile must be >= 0 (0: the CSB block size, at most 2048)");
  require_arg(iterations >= 1 && iterations <= detail::lobpcg::kMaxFomIterations, fn,
              "iterations must be in [1, 32]");
  require_arg(H.block_size() > 0, fn, "H is empty");
  tile_ = tile > 0 ? tile : std::min(H.block_size(), detail::lobpcg::kDefaultMaxTile);
  iterations_ = iterations;
  const std::int64_t nloc = H.vector_rows(), voff = H.vector_offset();
  const std::int64_t tt = tile_;
  // The stored entries that fall in a diagonal tile of some rank's vector rows, sent to that rank
  // (on one rank, and in the general layout, a rank's part holds all of its own tiles; in the
  // triangular layout only rank (c, 0) holds segment c's diagonal block).
  const auto& br = H.block_row_host();
  const auto& bc = H.block_col_host();
  const auto& bs = H.block_start_host();
  auto er = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), H.entry_row());
  auto ec = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), H.entry_col());
  auto ev = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), H.entry_value());
  const std::int64_t beta = H.block_size();
  const comm::Communicator& comm = H.comm();
  const int np = comm.size();
  const std::vector<std::int64_t> offs =
      np > 1 ? comm::allgatherv(comm, std::vector<std::int64_t>{voff})
             : std::vector<std::int64_t>{voff};
  const auto owner = [&](std::int64_t g) {
    return static_cast<int>(std::upper_bound(offs.begin(), offs.end(), g) - offs.begin()) - 1;
  };
  std::vector<std::vector<std::int64_t>> to_r(static_cast<std::size_t>(np)), to_c(to_r);
  std::vector<std::vector<T>> to_v(static_cast<std::size_t>(np));
  for (std::size_t b = 0; b < br.size(); ++b) {
    const std::int64_t r0 = H.row_offset() + br[b] * beta;
    const std::int64_t c0 = H.col_offset() + bc[b] * beta;
    for (std::int64_t e = bs[b]; e < bs[b + 1]; ++e) {
      const std::int64_t gi = r0 + er(e), gj = c0 + ec(e);
      const int o = np > 1 ? owner(gi) : 0;
      if (o < 0 || (np > 1 && owner(gj) != o)) continue;
      const std::int64_t r = gi - offs[static_cast<std::size_t>(o)];
      const std::int64_t c = gj - offs[static_cast<std::size_t>(o)];
      if (r < 0 || c < 0 || r / tt != c / tt) continue;
      to_r[static_cast<std::size_t>(o)].push_back(r);
      to_c[static_cast<std::size_t>(o)].push_back(c);
      to_v[static_cast<std::size_t>(o)].push_back(ev(e));
    }
  }
  std::vector<std::int64_t> ri0, ci0;
  std::vector<T> vi0;
  if (np > 1) {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(np));
    std::vector<std::int64_t> sr, sc;
    std::vector<T> sv;
    for (int q = 0; q < np; ++q) {
      const auto uq = static_cast<std::size_t>(q);
      counts[uq] = static_cast<std::int64_t>(to_r[uq].size());
      sr.insert(sr.end(), to_r[uq].begin(), to_r[uq].end());
      sc.insert(sc.end(), to_c[uq].begin(), to_c[uq].end());
      sv.insert(sv.end(), to_v[uq].begin(), to_v[uq].end());
    }
    ri0 = comm::alltoallv(comm, sr, counts);
    ci0 = comm::alltoallv(comm, sc, counts);
    vi0 = comm::alltoallv(comm, sv, counts);
  } else {
    ri0 = std::move(to_r[0]);
    ci0 = std::move(to_c[0]);
    vi0 = std::move(to_v[0]);
  }
  std::vector<std::int64_t> ri, ci;
  std::vector<T> vi;
  for (std::size_t e = 0; e < ri0.size(); ++e) {
    ri.push_back(ri0[e]);
    ci.push_back(ci0[e]);
    vi.push_back(vi0[e]);
    if (ri0[e] != ci0[e]) {
      ri.push_back(ci0[e]);
      ci.push_back(ri0[e]);
      vi.push_back(vi0[e]);
    }
  }
  auto tiles = std::make_shared<Tiles>();
  tiles->rows = nloc;
  tiles->count = static_cast<int>((nloc + tt - 1) / tt);
  tiles->max_rows = static_cast<int>(std::min<std::int64_t>(tt, nloc));
  std::vector<std::int64_t> start(static_cast<std::size_t>(tiles->count) + 1);
  for (int t = 0; t <= tiles->count; ++t) start[t] = std::min<std::int64_t>(t * tt, nloc);
  std::vector<std::int64_t> ptr(static_cast<std::size_t>(nloc) + 1, 0);
  for (auto r : ri) ++ptr[r + 1];
  for (std::int64_t r = 0; r < nloc; ++r) ptr[r + 1] += ptr[r];
  std::vector<std::int64_t> fill(ptr.begin(), ptr.end() - 1);
  std::vector<int> col(ri.size());
  std::vector<T> val(ri.size());
  for (std::size_t e = 0; e < ri.size(); ++e) {
    const std::int64_t p = fill[ri[e]]++;
    col[p] = static_cast<int>(ci[e] - (ri[e] / tt) * tt);
    val[p] = vi[e];
  }
  const auto upload = [](const auto& v, const char* label, auto& out) {
    using V = std::remove_reference_t<decltype(out)>;
    out = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.size());
    Kokkos::View<const typename V::value_type*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(
        v.data(), v.size());
    Kokkos::deep_copy(out, h);
  };
  upload(start, "kess::fom::tile_start", tiles->start);
  upload(ptr, "kess::fom::row_ptr", tiles->row_ptr);
  upload(col, "kess::fom::col", tiles->col);
  upload(val, "kess::fom::val", tiles->val);
  tiles_ = tiles;
}

namespace detail::lobpcg {
/// w = (K_tile - θ I) v on rows x k blocks (columns contiguous); K > 0: k == K, the row's sums
/// kept in registers.
template <int K, class Tiles>
void tile_product(const Tiles& tl, std::int64_t r0, int len, int k, const double* theta,
                  const double* __restrict v, double* __restrict w) {
  constexpr int KM = K > 0 ? K : 1;
  for (int i = 0; i < len; ++i) {
    const std::int64_t p0 = tl.row_ptr(r0 + i), p1 = tl.row_ptr(r0 + i + 1);
    const double* vi = v + static_cast<std::size_t>(i) * k;
    double* wi = w + static_cast<std::size_t>(i) * k;
    if constexpr (K > 0) {
      double acc[KM];
      for (int c = 0; c < KM; ++c) acc[c] = -theta[c] * vi[c];
      for (std::int64_t p = p0; p < p1; ++p) {
        const double x = tl.val(p);
        const double* vc = v + static_cast<std::size_t>(tl.col(p)) * KM;
        for (int c = 0; c < KM; ++c) acc[c] += x * vc[c];
      }
      for (int c = 0; c < KM; ++c) wi[c] = acc[c];
    } else {
      for (int c = 0; c < k; ++c) wi[c] = -theta[c] * vi[c];
      for (std::int64_t p = p0; p < p1; ++p) {
        const double x = tl.val(p);
        const double* vc = v + static_cast<std::size_t>(tl.col(p)) * k;
        for (int c = 0; c < k; ++c) wi[c] += x * vc[c];
      }
    }
  }
}

/// FomPreconditioner::apply on one host core: the same FOM steps as the team kernel, with the k
/// columns of a tile advanced together, so each tile product reads the tile's entries once for
/// all columns (rows x k blocks, the columns contiguous).
template <class Tiles, class RView, class ZView>
void apply_host_batched(const Tiles& tl, int m, const std::vector<double>& theta, const RView& R,
                        const ZView& Z) {
  const int k = static_cast<int>(R.extent(1));
  const std::size_t ku = static_cast<std::size_t>(k);
  std::vector<double> V(static_cast<std::size_t>(m + 1) * tl.max_rows * ku);
  std::vector<double> h(static_cast<std::size_t>(m + 1) * m * ku), b0(ku), scale(ku), dot(ku);
  std::vector<int> meff(ku);
  std::vector<double> a(static_cast<std::size_t>(m) * m), y(static_cast<std::size_t>(m + 1));
  for (int tile = 0; tile < tl.count; ++tile) {
    const std::int64_t r0 = tl.start(tile);
    const int len = static_cast<int>(tl.start(tile + 1) - r0);
    const std::size_t stride = static_cast<std::size_t>(len) * ku;  // one basis block
    const auto v = [&](int j, int i) {
      return V.data() + j * stride + static_cast<std::size_t>(i) * ku;
    };
    std::fill(b0.begin(), b0.end(), 0.0);
    for (int i = 0; i < len; ++i)
      for (int c = 0; c < k; ++c) b0[c] += R(r0 + i, c) * R(r0 + i, c);
    for (int c = 0; c < k; ++c) {
      b0[c] = std::sqrt(b0[c]);
      // A zero or non-finite column gives z = 0, as the team kernel.
      meff[c] = (b0[c] > 0 && std::isfinite(b0[c])) ? m : -1;
      scale[c] = 0;
    }
    for (int i = 0; i < len; ++i)
      for (int c = 0; c < k; ++c) v(0, i)[c] = meff[c] >= 0 ? R(r0 + i, c) / b0[c] : 0.0;
    for (int j = 0; j < m; ++j) {
      // w = (K - θ I) v_j for every column at once; columns that stopped have v_j = 0.
      if (k == 16)
        tile_product<16>(tl, r0, len, k, theta.data(), v(j, 0), v(j + 1, 0));
      else if (k == 8)
        tile_product<8>(tl, r0, len, k, theta.data(), v(j, 0), v(j + 1, 0));
      else
        tile_product<0>(tl, r0, len, k, theta.data(), v(j, 0), v(j + 1, 0));
      // Full orthogonalization (modified Gram-Schmidt).
      for (int l = 0; l <= j; ++l) {
        std::fill(dot.begin(), dot.end(), 0.0);
        for (int i = 0; i < len; ++i) {
          const double *vl = v(l, i), *w = v(j + 1, i);
          for (int c = 0; c < k; ++c) dot[c] += vl[c] * w[c];
        }
        for (int i = 0; i < len; ++i) {
          const double* vl = v(l, i);
          double* w = v(j + 1, i);
          for (int c = 0; c < k; ++c) w[c] -= dot[c] * vl[c];
        }
        for (int c = 0; c < k; ++c)
          if (meff[c] > j) {
            h[(l + static_cast<std::size_t>(j) * (m + 1)) * ku + c] = dot[c];
            scale[c] = std::max(scale[c], std::abs(dot[c]));
          }
      }
      std::fill(dot.begin(), dot.end(), 0.0);
      for (int i = 0; i < len; ++i) {
        const double* w = v(j + 1, i);
        for (int c = 0; c < k; ++c) dot[c] += w[c] * w[c];
      }
      for (int c = 0; c < k; ++c) {
        const double hn = std::sqrt(dot[c]);
        dot[c] = 0;  // the factor for v_{j+1}: 1 / hn, or 0 where the column stops
        if (meff[c] <= j) continue;
        h[(j + 1 + static_cast<std::size_t>(j) * (m + 1)) * ku + c] = hn;
        scale[c] = std::max(scale[c], hn);
        // Breakdown: the Krylov space is invariant; stop with j + 1 steps.
        if (!(hn > 1e-13 * scale[c])) {
          meff[c] = j + 1;
        } else {
          dot[c] = j + 1 < m ? 1.0 / hn : 1.0;
        }
      }
      for (int i = 0; i < len; ++i) {
        double* w = v(j + 1, i);
        for (int c = 0; c < k; ++c) w[c] *= dot[c];
      }
    }
    // Per column: H_meff y = b0 e1 (solve_hessenberg, as the team kernel); z = V y.
    for (int c = 0; c < k; ++c) {
      int use = solve_hessenberg(h.data() + c, std::int64_t(ku), std::int64_t(m + 1) * ku, meff[c],
                                 b0[c], scale[c], a.data(), y.data());
      if (meff[c] < 0) use = -1;  // zero column
      for (int i = 0; i < len; ++i) {
        double sm = 0;
        for (int q = 0; q < use; ++q) sm += v(q, i)[c] * y[q];
        Z(r0 + i, c) = use > 0 ? sm : (use == 0 ? R(r0 + i, c) : 0.0);
      }
    }
  }
}
}  // namespace detail::lobpcg

template <class T, class MemorySpace>
template <class ExecSpace>
void FomPreconditioner<T, MemorySpace>::apply(
    const ExecSpace& exec, const std::vector<double>& theta,
    const Kokkos::View<const T**, Kokkos::LayoutRight, MemorySpace>& R,
    const VectorBlock<T, MemorySpace>& Z) const {
  constexpr const char* fn = "FomPreconditioner::apply";
  require_arg(tiles_ != nullptr, fn, "the preconditioner is empty (default-constructed)");
  const Tiles& tl = *tiles_;
  const int k = static_cast<int>(R.extent(1));
  require_arg(static_cast<std::int64_t>(R.extent(0)) == tl.rows &&
                  static_cast<std::int64_t>(Z.extent(0)) == tl.rows,
              fn, "R and Z must have vector_rows() rows");
  require_arg(static_cast<int>(Z.extent(1)) == k, fn, "R and Z must have the same columns");
  require_arg(static_cast<int>(theta.size()) == k, fn, "theta must have one value per column");
  if (k == 0 || tl.rows == 0) return;
  if constexpr (std::is_same<MemorySpace, Kokkos::HostSpace>::value) {
    if (exec.concurrency() == 1) {
      exec.fence();
      detail::lobpcg::apply_host_batched(tl, iterations_, theta, R, Z);
      return;
    }
  }
  const int m = iterations_;
  const int ntiles = tl.count;
  // Krylov bases of every (tile, column) pair: rows x (m + 1) per column, column-major in rows.
  Kokkos::View<T**, Kokkos::LayoutLeft, MemorySpace> V(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::fom::basis"), tl.rows,
      static_cast<std::int64_t>(m + 1) * k);
  Kokkos::View<double*, MemorySpace> shift(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kess::fom::shift"), k);
  Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> th(theta.data(), k);
  Kokkos::deep_copy(exec, shift, th);
  const auto start = tl.start;
  const auto ptr = tl.row_ptr;
  const auto col = tl.col;
  const auto val = tl.val;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Scratch =
      Kokkos::View<double*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  // Hessenberg (m + 1) x m, the right-hand side / solution (m + 1), the step count, the
  // elimination's copy (m x m).
  const int hsize = (m + 1) * m + (m + 1) + 1 + m * m;
  const std::size_t bytes = Scratch::shmem_size(hsize);
  Kokkos::parallel_for(
      "kess::fom_apply",
      Policy(exec, ntiles * k, Kokkos::AUTO).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        const int tile = t.league_rank() / k, c = t.league_rank() % k;
        const std::int64_t r0 = start(tile);
        const int len = static_cast<int>(start(tile + 1) - r0);
        const std::int64_t base = static_cast<std::int64_t>(c) * (m + 1);
        const double th_c = shift(c);
        Scratch h(t.team_scratch(0), hsize);
        double* y = h.data() + (m + 1) * m;
        double* steps = y + (m + 1);
        double* a = steps + 1;
        double b0 = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, len),
            [&](const int i, double& s) { s += R(r0 + i, c) * R(r0 + i, c); }, b0);
        b0 = kx::sqrt(b0);
        if (!(b0 > 0) || !kx::isfinite(b0)) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len),
                               [&](const int i) { Z(r0 + i, c) = 0; });
          return;
        }
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len),
                             [&](const int i) { V(r0 + i, base) = R(r0 + i, c) / b0; });
        t.team_barrier();
        int meff = m;
        double scale = 0;  // largest |h| so far: the breakdown test is relative to it
        for (int j = 0; j < m; ++j) {
          // w = (K - θ I) v_j
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const int i) {
            double s = -th_c * V(r0 + i, base + j);
            for (std::int64_t p = ptr(r0 + i); p < ptr(r0 + i + 1); ++p)
              s += val(p) * V(r0 + col(p), base + j);
            V(r0 + i, base + j + 1) = s;
          });
          t.team_barrier();
          // Full orthogonalization (modified Gram-Schmidt).
          for (int l = 0; l <= j; ++l) {
            double hl = 0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(t, len),
                [&](const int i, double& s) { s += V(r0 + i, base + l) * V(r0 + i, base + j + 1); },
                hl);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const int i) {
              V(r0 + i, base + j + 1) -= hl * V(r0 + i, base + l);
            });
            t.team_barrier();
            Kokkos::single(Kokkos::PerTeam(t), [&]() { h(l + j * (m + 1)) = hl; });
            scale = kx::max(scale, kx::fabs(hl));
          }
          double hn = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, len),
              [&](const int i, double& s) {
                s += V(r0 + i, base + j + 1) * V(r0 + i, base + j + 1);
              },
              hn);
          hn = kx::sqrt(hn);
          Kokkos::single(Kokkos::PerTeam(t), [&]() { h(j + 1 + j * (m + 1)) = hn; });
          scale = kx::max(scale, hn);
          // Breakdown: the Krylov space is invariant; stop with j + 1 steps.
          if (!(hn > 1e-13 * scale)) {
            meff = j + 1;
            break;
          }
          if (j + 1 < m) {
            Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len),
                                 [&](const int i) { V(r0 + i, base + j + 1) /= hn; });
          }
          t.team_barrier();
        }
        t.team_barrier();
        // H_meff y = b0 e1 by Gaussian elimination with partial pivoting; a singular leading
        // block (θ near an eigenvalue of the projected tile) drops the last step and retries.
        Kokkos::single(Kokkos::PerTeam(t), [&]() {
          steps[0] = detail::lobpcg::solve_hessenberg(h.data(), 1, m + 1, meff, b0, scale, a, y);
        });
        t.team_barrier();
        const int use = static_cast<int>(steps[0]);
        // z = V y (no usable step: z = r, the unpreconditioned direction).
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, len), [&](const int i) {
          double s = 0;
          for (int q = 0; q < use; ++q) s += V(r0 + i, base + q) * y[q];
          Z(r0 + i, c) = use > 0 ? s : R(r0 + i, c);
        });
      });
}

}  // namespace kess
