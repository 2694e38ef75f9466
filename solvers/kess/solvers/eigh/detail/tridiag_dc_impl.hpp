// The body of stage 3 by divide and conquer (tridiag_dc.hpp), compiled in libkess only.
#pragma once

#include <kess/solvers/eigh/detail/tridiag_dc.hpp>

namespace kess::detail::eigh {

template <class ExecSpace, class Mat>
void merge_gemm(const ExecSpace& exec, const Mat& A, const Mat& B, const Mat& C) {
  if (C.extent(0) == 0 || C.extent(1) == 0) return;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Mat::memory_space>::accessible) {
    kx::fence(exec, "tridiag_dc::host_gemm");
    core::lapack::gemm('N', 'N', C.extent(0), C.extent(1), A.extent(1), 1.0, A.data(), A.stride(1),
                 B.data(), B.stride(1), 0.0, C.data(), C.stride(1));
  } else {
    core::gemm(exec, "N", "N", 1.0, A, B, 0.0, C);
  }
}


/// All eigenvalues (ascending, into w: n host doubles) and eigenvectors (into Z: n x n, exec's
/// memory, any layout) of the symmetric tridiagonal matrix with diagonal d (n) and off-diagonal e
/// (n - 1). Throws kess::Error (invalid_argument: sizes, NaN/Inf; no_convergence: a secular
/// equation or leaf that did not converge). Fences `exec`.
template <class ExecSpace>
void tridiag_dc(const ExecSpace& exec, std::vector<double> d, std::vector<double> e, double* w,
                const core::Matrix<ExecSpace>& Z, const TridiagDcTuning& opts,
                TridiagDcStats* stats) {
  using ZView = core::Matrix<ExecSpace>;
  using Mem = typename ExecSpace::memory_space;
  using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>;
  using UMat = Kokkos::View<double**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  static_assert(Kokkos::SpaceAccessibility<ExecSpace, typename ZView::memory_space>::accessible,
                "tridiag_dc: Z must be accessible from the execution space");
  const char* fn = "tridiag_dc";
  kx::ScopedRegion region("tridiag_dc");
  const int n = static_cast<int>(d.size());
  require_arg(e.size() + 1 == d.size() || (n == 0 && e.empty()), fn,
              "argument 'e' has " + std::to_string(e.size()) + " entries; expected n - 1 = " +
                  std::to_string(n - 1));
  require_arg(Z.extent(0) == std::size_t(n) && Z.extent(1) == std::size_t(n), fn,
              "argument 'Z': " + std::to_string(Z.extent(0)) + " x " + std::to_string(Z.extent(1)) +
                  " does not match n = " + std::to_string(n));
  require_arg(opts.leaf >= 2, fn, "argument 'opts.leaf' = " + std::to_string(opts.leaf) + " must be >= 2");
  double scale = 0;
  for (int i = 0; i < n; ++i) {
    require_arg(std::isfinite(d[i]), fn, "argument 'd': entry " + std::to_string(i) + " is NaN or Inf");
    scale = std::max(scale, std::abs(d[i]));
  }
  for (int i = 0; i + 1 < n; ++i) {
    require_arg(std::isfinite(e[i]), fn, "argument 'e': entry " + std::to_string(i) + " is NaN or Inf");
    scale = std::max(scale, std::abs(e[i]));
  }
  TridiagDcStats st;
  if (n == 0) return;
  Kokkos::Timer host_timer;
  double host_s = 0;
  if (scale == 0) {  // T = 0: eigenvalues 0, Z = I
    for (int i = 0; i < n; ++i) w[i] = 0;
    Kokkos::parallel_for("tridiag_dc::identity", Policy(exec, 0, std::int64_t(n) * n),
                         KOKKOS_LAMBDA(std::int64_t t) { Z(t % n, t / n) = (t % n == t / n) ? 1.0 : 0.0; });
    kx::fence(exec, "tridiag_dc::done");
    if (stats) *stats = st;
    return;
  }
  for (auto& x : d) x /= scale;
  for (auto& x : e) x /= scale;

  // ---- the tree (post-order merges) and Cuppen's tearing ----
  struct Node { int off, size, left, right; };
  std::vector<Node> nodes;
  std::vector<int> leaf_ids, merge_ids;
  std::function<int(int, int)> build = [&](int off, int size) -> int {
    const int id = static_cast<int>(nodes.size());
    nodes.push_back({off, size, -1, -1});
    if (size <= opts.leaf) {
      leaf_ids.push_back(id);
      return id;
    }
    const int n1 = size / 2;
    const int l = build(off, n1);
    const int r = build(off + n1, size - n1);
    nodes[id].left = l;
    nodes[id].right = r;
    merge_ids.push_back(id);
    const double beta = e[off + n1 - 1];
    d[off + n1 - 1] -= std::abs(beta);
    d[off + n1] -= std::abs(beta);
    return id;
  };
  build(0, n);

  // ---- leaves on the host, scattered into the zeroed Q ----
  Mat Q(Kokkos::view_alloc(exec, "tridiag_dc::Q"), n, n);  // zero-initialized
  std::vector<double> values(n);
  {
    std::vector<int> off, size;
    std::vector<std::int64_t> at;
    std::int64_t total = 0;
    for (int id : leaf_ids) {
      off.push_back(nodes[id].off);
      size.push_back(nodes[id].size);
      at.push_back(total);
      total += std::int64_t(nodes[id].size) * nodes[id].size;
    }
    Kokkos::View<double*, Kokkos::HostSpace> packed_h(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "tridiag_dc::leaves_host"), total);
    solve_leaves(off, size, at, d, e, values.data(), packed_h.data(), opts.threads);
    Kokkos::View<std::int64_t*, Kokkos::HostSpace> meta_h("tridiag_dc::leaf_meta_host", 3 * off.size());
    for (std::size_t i = 0; i < off.size(); ++i) {
      meta_h(3 * i) = off[i];
      meta_h(3 * i + 1) = size[i];
      meta_h(3 * i + 2) = at[i];
    }
    auto packed = Kokkos::create_mirror_view_and_copy(Mem(), packed_h);
    auto meta = Kokkos::create_mirror_view_and_copy(Mem(), meta_h);
    const int nleaves = static_cast<int>(off.size());
    Kokkos::parallel_for(
        "tridiag_dc::scatter_leaves",
        Kokkos::TeamPolicy<ExecSpace>(exec, nleaves, Kokkos::AUTO),
        KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecSpace>::member_type& team) {
          const int l = team.league_rank();
          const int o = static_cast<int>(meta(3 * l)), s = static_cast<int>(meta(3 * l + 1));
          const std::int64_t a = meta(3 * l + 2);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, s * s), [&](int t) {
            Q(o + t % s, o + t / s) = packed(a + t);
          });
        });
    host_s += host_timer.seconds();
  }

  // ---- merges ----
  const int roots_min = opts.exec_secular_min >= 0
                            ? opts.exec_secular_min
                            : (std::is_same<Mem, Kokkos::HostSpace>::value ? 0 : 256);
  int maxs = 0;
  for (int id : merge_ids) maxs = std::max(maxs, nodes[id].size);
  Kokkos::View<double*, Mem> work1(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::Qc"),
                                   std::size_t(std::max(maxs, 1)) * std::max(maxs, 1));
  Kokkos::View<double*, Mem> work2(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::S"),
                                   std::size_t(std::max(maxs, 1)) * std::max(maxs, 1));

  // Merges one tree level at a time (the merges of a level touch disjoint column ranges): the
  // rank-one vectors of the whole level come to the host in one copy, the host plans them (spread
  // over host threads where they are small), their parameters go back in one copy, the device
  // solves the large merges' secular equations and their roots come back in one more copy; then
  // every merge's kernels and GEMMs are enqueued without waiting. Three synchronizations a level
  // instead of two or three a merge (a 16384 x 16384 problem has 511 merges on 9 levels).
  std::vector<int> depth(nodes.size(), 0);
  for (std::size_t id = 0; id < nodes.size(); ++id)  // parents precede their children in `nodes`
    if (nodes[id].left >= 0) depth[nodes[id].left] = depth[nodes[id].right] = depth[id] + 1;
  int max_depth = 0;
  for (int id : merge_ids) max_depth = std::max(max_depth, depth[id]);
  std::vector<std::vector<int>> levels(max_depth + 1);
  for (int id : merge_ids) levels[depth[id]].push_back(id);
  // Per-merge parameter blocks at offsets bd (doubles) and bi (ints):
  // doubles [pole k | weight k | tau k | rot_c nrot | rot_s nrot | explicit S k*k when k <= 2],
  // ints [gather s | row k | orig k | rot_i nrot | rot_j nrot]; z and the roots in zlev at o.
  Kokkos::View<double*, Mem> zlev(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::z_level"), n);
  auto zlev_h = Kokkos::create_mirror_view(zlev);
  Kokkos::View<double*, Mem> pdl(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::params_level"),
                                 6 * std::size_t(n) + 8);
  Kokkos::View<int*, Mem> pil(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::iparams_level"),
                              6 * std::size_t(n) + 8);
  auto pdl_h = Kokkos::create_mirror_view(pdl);
  auto pil_h = Kokkos::create_mirror_view(pil);
  for (int lev = max_depth; lev >= 0; --lev) {
    const std::vector<int>& ids = levels[lev];
    if (ids.empty()) continue;
    const int count = static_cast<int>(ids.size());
    // z of every merge: last row of Q1 and first row of Q2 (device -> host, one copy).
    for (int id : ids) {
      const int o = nodes[id].off, s = nodes[id].size, n1 = nodes[nodes[id].left].size;
      Kokkos::parallel_for(
          "tridiag_dc::extract_z", Policy(exec, 0, s), KOKKOS_LAMBDA(std::int64_t c) {
            zlev(o + c) = c < n1 ? Q(o + n1 - 1, o + c) : Q(o + n1, o + c);
          });
    }
    Kokkos::deep_copy(exec, zlev_h, zlev);
    kx::fence(exec, "tridiag_dc::z_to_host");
    host_timer.reset();
    std::vector<MergePlan> plans(count);
    int smax = 0;
    for (int id : ids) smax = std::max(smax, nodes[id].size);
    // Small merges (k < 256 roots: one host thread each) spread over the host threads; a level of
    // large ones plans them in turn, each with every thread.
    core::detail::host_parallel_for(count, smax < 256 ? opts.threads : 1, [&](int q) {
      const Node& nd = nodes[ids[q]];
      const int o = nd.off, s = nd.size, n1 = nodes[nd.left].size;
      std::vector<double> Dv(values.begin() + o, values.begin() + o + s);
      std::vector<double> zv(zlev_h.data() + o, zlev_h.data() + o + s);
      plans[q] = merge_plan(Dv, std::move(zv), n1, e[o + n1 - 1], opts.threads, roots_min);
    });
    std::vector<std::size_t> bd(count), bi(count);
    std::size_t nd_used = 0, ni_used = 0;
    bool pending = false;
    for (int q = 0; q < count; ++q) {
      const auto& plan = plans[q];
      const int s = nodes[ids[q]].size, k = plan.k, nrot = static_cast<int>(plan.rot_i.size());
      ++st.merges;
      st.deflated += s - k;
      st.rotations += plan.rotations;
      bd[q] = nd_used;
      bi[q] = ni_used;
      nd_used += 3 * k + 2 * nrot + plan.explicit_s.size();
      ni_used += s + 2 * k + 2 * nrot;
      pending = pending || plan.roots_pending;
    }
    if (nd_used > pdl_h.extent(0)) {  // explicit S blocks (k <= 2) can exceed 6n in principle
      pdl = Kokkos::View<double*, Mem>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "tridiag_dc::params_level"), nd_used);
      pdl_h = Kokkos::create_mirror_view(pdl);
    }
    for (int q = 0; q < count; ++q) {
      const auto& plan = plans[q];
      const int s = nodes[ids[q]].size, k = plan.k, nrot = static_cast<int>(plan.rot_i.size());
      double* dp = pdl_h.data() + bd[q];
      int* ip = pil_h.data() + bi[q];
      for (int i = 0; i < k; ++i) {
        dp[i] = plan.pole[i];
        dp[k + i] = plan.weight[i];
        dp[2 * k + i] = plan.tau[i];
        ip[s + i] = plan.row[i];
        ip[s + k + i] = plan.orig[i];
      }
      for (int r = 0; r < nrot; ++r) {
        dp[3 * k + r] = plan.rot_c[r];
        dp[3 * k + nrot + r] = plan.rot_s[r];
        ip[s + 2 * k + r] = plan.rot_i[r];
        ip[s + 2 * k + nrot + r] = plan.rot_j[r];
      }
      std::copy(plan.explicit_s.begin(), plan.explicit_s.end(), dp + 3 * k + 2 * nrot);
      for (int c = 0; c < s; ++c) ip[c] = plan.gather[c];
    }
    host_s += host_timer.seconds();
    if (nd_used > 0)
      Kokkos::deep_copy(exec, Kokkos::subview(pdl, Kokkos::make_pair(std::size_t(0), nd_used)),
                        Kokkos::subview(pdl_h, Kokkos::make_pair(std::size_t(0), nd_used)));
    Kokkos::deep_copy(exec, Kokkos::subview(pil, Kokkos::make_pair(std::size_t(0), ni_used)),
                      Kokkos::subview(pil_h, Kokkos::make_pair(std::size_t(0), ni_used)));
    if (pending) {
      // The large merges' secular equations on exec, one team a root (every evaluation of the
      // secular function, a k-term sum, is a team reduction): tau and orig into the parameter
      // block (where the host would have put them), lambda_j into zlev for the host's later merges.
      using TeamPolicy = Kokkos::TeamPolicy<ExecSpace>;
      const int ts = std::is_same<Mem, Kokkos::HostSpace>::value ? 1 : 64;
      for (int q = 0; q < count; ++q) {
        const auto& plan = plans[q];
        if (!plan.roots_pending) continue;
        const int o = nodes[ids[q]].off, s = nodes[ids[q]].size, k = plan.k;
        double zz = 0;
        for (int i = 0; i < k; ++i) zz += plan.weight[i] * plan.weight[i];
        const double rho = plan.rho;
        const std::size_t b_d = bd[q], b_i = bi[q];
        const auto pd = pdl;
        const auto pi = pil;
        Kokkos::parallel_for(
            "tridiag_dc::secular", TeamPolicy(exec, k, ts),
            KOKKOS_LAMBDA(const typename TeamPolicy::member_type& tm) {
              const int j = tm.league_rank();
              const double* dp = pd.data() + b_d;
              const double* zp = dp + k;
              // f and df/dtau in one team reduction (a complex number carries the two sums).
              auto secular = [&](double d_o, double t, double& df) {
                Kokkos::complex<double> sum(0.0, 0.0);
                Kokkos::parallel_reduce(
                    Kokkos::TeamThreadRange(tm, k),
                    [&](int i, Kokkos::complex<double>& acc) {
                      const double inv = 1.0 / ((dp[i] - d_o) - t), v = zp[i] * zp[i] * inv;
                      acc += Kokkos::complex<double>(v, v * inv);
                    },
                    sum);
                df = rho * sum.imag();
                return 1.0 + rho * sum.real();
              };
              int org = j;
              double t = 0;
              secular_root_with(k, j, dp, zp, rho, zz, secular, org, t);
              Kokkos::single(Kokkos::PerTeam(tm), [&]() {
                pd(b_d + 2 * k + j) = t;
                pi(b_i + s + k + j) = org;
                zlev(o + j) = pd(b_d + org) + t;
              });
            });
      }
      Kokkos::deep_copy(exec, zlev_h, zlev);
      kx::fence(exec, "tridiag_dc::roots_to_host");
      for (int q = 0; q < count; ++q)
        if (plans[q].roots_pending)
          for (int j = 0; j < plans[q].k; ++j) plans[q].values[j] = zlev_h(nodes[ids[q]].off + j);
    }
    for (int q = 0; q < count; ++q)
      std::copy(plans[q].values.begin(), plans[q].values.end(), values.begin() + nodes[ids[q]].off);

    // Every merge's update, enqueued (the work buffers are reused in stream order).
    for (int q = 0; q < count; ++q) {
      const auto& plan = plans[q];
      const Node& nd = nodes[ids[q]];
      const int o = nd.off, s = nd.size, n1 = nodes[nd.left].size;
      const int k = plan.k, nrot = static_cast<int>(plan.rot_i.size());
      const std::size_t b_d = bd[q], b_i = bi[q];
      const auto pd = pdl;
      const auto pi = pil;
      auto Qb = Kokkos::subview(Q, Kokkos::make_pair(o, o + s), Kokkos::make_pair(o, o + s));
      if (nrot > 0) {
        const std::size_t rc = b_d + 3 * k, ri = b_i + s + 2 * k;
        Kokkos::parallel_for(
            "tridiag_dc::rotate", Policy(exec, 0, s), KOKKOS_LAMBDA(std::int64_t row) {
              for (int r = 0; r < nrot; ++r) {
                const int a = pi(ri + r), b = pi(ri + nrot + r);
                const double c = pd(rc + r), sn = pd(rc + nrot + r);
                const double x = Qb(row, a), y = Qb(row, b);
                Qb(row, a) = c * x + sn * y;
                Qb(row, b) = c * y - sn * x;
              }
            });
      }
      UMat Qc(work1.data(), s, s);
      Kokkos::parallel_for(
          "tridiag_dc::gather", Policy(exec, 0, std::int64_t(s) * s), KOKKOS_LAMBDA(std::int64_t t) {
            const int r = static_cast<int>(t % s), c = static_cast<int>(t / s);
            Qc(r, c) = Qb(r, pi(b_i + c));
          });
      if (k > 0) {
        UMat S(work2.data(), k, k);
        if (!plan.explicit_s.empty()) {
          const std::size_t ps = b_d + 3 * k + 2 * nrot;
          Kokkos::parallel_for(
              "tridiag_dc::small_s", Policy(exec, 0, std::int64_t(k) * k),
              KOKKOS_LAMBDA(std::int64_t t) { S(t % k, t / k) = pd(ps + t); });
        } else {
          // z^ (Gu-Eisenstat) into zlev(o ..), then S column by column.
          const std::size_t pw = b_d + k, pt = b_d + 2 * k, prow = b_i + s, porig = b_i + s + k;
          // One team a pole: the k - 1 ratios' product as a team reduction (a thread's factors are
          // spread over the whole range of j, as mixed in size as the sequential product's).
          Kokkos::parallel_for(
              "tridiag_dc::zhat", Kokkos::TeamPolicy<ExecSpace>(exec, k, Kokkos::AUTO),
              KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecSpace>::member_type& team) {
                const int i = team.league_rank();
                const double di = pd(b_d + i);
                auto delta = [&](int j) { return (di - pd(b_d + pi(porig + j))) - pd(pt + j); };
                double prod = 1.0;
                Kokkos::parallel_reduce(
                    Kokkos::TeamThreadRange(team, k),
                    [&](int j, double& p) {
                      if (j != i) p *= delta(j) / (di - pd(b_d + j));
                    },
                    Kokkos::Prod<double>(prod));
                const double wv = delta(i) * prod;
                const double mag = kx::sqrt(wv < 0 ? -wv : 0.0);
                Kokkos::single(Kokkos::PerTeam(team), [&]() { zlev(o + i) = pd(pw + i) < 0 ? -mag : mag; });
              });
          Kokkos::parallel_for(
              "tridiag_dc::vectors", Kokkos::TeamPolicy<ExecSpace>(exec, k, Kokkos::AUTO),
              KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecSpace>::member_type& team) {
                const int j = team.league_rank();
                const double dorig = pd(b_d + pi(porig + j)), tj = pd(pt + j);
                double ss = 0;
                Kokkos::parallel_reduce(
                    Kokkos::TeamThreadRange(team, k),
                    [&](int i, double& acc) {
                      const double v = zlev(o + i) / ((pd(b_d + i) - dorig) - tj);
                      acc += v * v;
                    },
                    ss);
                const double inv = 1.0 / kx::sqrt(ss);
                Kokkos::parallel_for(Kokkos::TeamThreadRange(team, k), [&](int i) {
                  S(pi(prow + i), j) = zlev(o + i) / ((pd(b_d + i) - dorig) - tj) * inv;
                });
              });
        }
        // Out(top) = Qc(top, top|mixed) S(top|mixed, :); Out(bottom) = Qc(bottom, mixed|bottom) S(...).
        const int ntm = plan.n_top + plan.n_mixed, nmb = k - plan.n_top;
        auto out = Kokkos::subview(Q, Kokkos::make_pair(o, o + s), Kokkos::make_pair(o, o + k));
        const auto rows_top = Kokkos::make_pair(0, n1), rows_bot = Kokkos::make_pair(n1, s);
        if (ntm > 0)
          merge_gemm(exec, UMat(Kokkos::subview(Qc, rows_top, Kokkos::make_pair(0, ntm))),
                                UMat(Kokkos::subview(S, Kokkos::make_pair(0, ntm), Kokkos::ALL)),
                                UMat(Kokkos::subview(out, rows_top, Kokkos::ALL)));
        else
          Kokkos::deep_copy(exec, Kokkos::subview(out, rows_top, Kokkos::ALL), 0.0);
        if (nmb > 0)
          merge_gemm(exec, UMat(Kokkos::subview(Qc, rows_bot, Kokkos::make_pair(plan.n_top, k))),
                                UMat(Kokkos::subview(S, Kokkos::make_pair(plan.n_top, k), Kokkos::ALL)),
                                UMat(Kokkos::subview(out, rows_bot, Kokkos::ALL)));
        else
          Kokkos::deep_copy(exec, Kokkos::subview(out, rows_bot, Kokkos::ALL), 0.0);
      }
      if (k < s) {
        Kokkos::parallel_for(
            "tridiag_dc::copy_deflated", Policy(exec, 0, std::int64_t(s) * (s - k)),
            KOKKOS_LAMBDA(std::int64_t t) {
              const int r = static_cast<int>(t % s), c = k + static_cast<int>(t / s);
              Qb(r, c) = Qc(r, c);
            });
      }
    }
  }

  // ---- ascending order ----
  host_timer.reset();
  std::vector<int> perm(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) { return values[a] < values[b]; });
  Kokkos::View<int*, Kokkos::HostSpace> perm_h("tridiag_dc::perm_host", n);
  for (int i = 0; i < n; ++i) {
    perm_h(i) = perm[i];
    w[i] = values[perm[i]] * scale;
  }
  host_s += host_timer.seconds();
  auto permd = Kokkos::create_mirror_view_and_copy(Mem(), perm_h);
  Kokkos::parallel_for(
      "tridiag_dc::sort_columns", Policy(exec, 0, std::int64_t(n) * n), KOKKOS_LAMBDA(std::int64_t t) {
        Z(t % n, t / n) = Q(t % n, permd(t / n));
      });
  kx::fence(exec, "tridiag_dc::done");
  st.host_seconds = host_s;
  if (stats) *stats = st;
}

}  // namespace kess::detail::eigh
