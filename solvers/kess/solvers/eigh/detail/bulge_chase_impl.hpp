// The body of stage 2 on an execution space (bulge_chase_team), compiled in libkess only.
#pragma once

#include <kess/solvers/eigh/cuda/bulge_chase.hpp>
#include <kess/solvers/eigh/detail/bulge_chase.hpp>

namespace kess::detail::eigh {

/// Stage 2 on an execution space: the same sweeps, reflectors and order as bulge_chase, with a
/// league of teams in place of the host threads. Team g runs stages g, g + G, g + 2G, ... (G teams,
/// all resident: about one per multiprocessor on GPUs, one per thread on host backends). Stage i's
/// sweep j overlaps stage i-1's sweeps up to j+2, and sweep j+2 only in the reflector column it
/// forms first; so it waits, by a progress counter in global memory counting half sweeps, until
/// stage i-1 has finished sweep j+1 and written the column of sweep j+2 (the critical path is
/// about 2.3 sweeps a stage instead of 3). Each sweep loads its three blocks ((a) the bulge row
/// block, (b) the symmetric diagonal block, (c) the block below) at once, into registers on GPUs,
/// stages them in team scratch, and spreads every b-long dot product over the whole team. Band
/// entries written by other teams are read past the GPU's L1 cache (kx::load_uncached: L1 caches
/// are not coherent between multiprocessors). `meta` receives the reflector layout
/// (ChaseReflectors without host storage), `out` the reflectors in exec's memory when not null.
/// On CUDA, with `kernel` automatic, the same pipeline runs as the kernel of cuda/bulge_chase.hpp
/// instead (same results to rounding). Requires 2 <= b <= bulge_chase_team_max_b (use bulge_chase
/// otherwise). Fences `exec`.
template <class ExecSpace>
void bulge_chase_team(const ExecSpace& exec, const BandMatrix& A, std::vector<double>& d,
                      std::vector<double>& e, ChaseReflectors* meta,
                      ChaseReflectorsOn<typename ExecSpace::memory_space>* out,
                      ChaseKernel kernel) {
  using Mem = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  const int n = A.n, b = A.b, ld = A.ld();
  require_arg(b >= 2 && b <= bulge_chase_team_max_b, "bulge_chase_team",
              "argument 'A': band half-width " + std::to_string(b) + " outside 2 .. " +
                  std::to_string(bulge_chase_team_max_b));
  d.assign(static_cast<std::size_t>(n), 0.0);
  e.assign(static_cast<std::size_t>(std::max(0, n - 1)), 0.0);
  ChaseReflectors layout = make_chase_reflectors(n, b, false);
  const std::int64_t total = layout.offset.back();
  const bool record = out != nullptr;
  if (record) {
    out->V = Kokkos::View<double**, Kokkos::LayoutLeft, Mem>("bulge_chase::V", b, std::max<std::int64_t>(total, 0));
    out->tau = Kokkos::View<double*, Mem>("bulge_chase::tau", total);
  }
  if (meta) *meta = layout;
  if (n == 0) return;
  Kokkos::View<double*, Mem> band(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bulge_chase::band"),
                                  A.data.size());
  {
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bh(A.data.data(), A.data.size());
    Kokkos::deep_copy(exec, band, bh);
  }
  const int stages = n - 2;
  if (stages > 0) {
    Kokkos::View<int*, Mem> progress(Kokkos::view_alloc(exec, "bulge_chase::progress"), stages);
    Kokkos::View<std::int64_t*, Mem> offset(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bulge_chase::offset"),
                                            layout.offset.size());
    {
      Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> oh(
          layout.offset.data(), layout.offset.size());
      Kokkos::deep_copy(exec, offset, oh);
    }
    auto Vd = record ? out->V : Kokkos::View<double**, Kokkos::LayoutLeft, Mem>();
    auto taud = record ? out->tau : Kokkos::View<double*, Mem>();
    bool launched = false;
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      if (kernel == ChaseKernel::automatic && !core::settings::chase_kernel_portable()) {
        bulge_chase_cuda(exec, n, b, band.data(), progress.data(), offset.data(),
                               record ? Vd.data() : nullptr, record ? taud.data() : nullptr);
        launched = true;
      }
    }
#endif
    const bool host = std::is_same<Mem, Kokkos::HostSpace>::value;
    if (!launched) {
      const int conc = static_cast<int>(std::max<std::int64_t>(1, exec.concurrency()));
      // All teams must be resident at once (they wait for each other): host backends one team per
      // thread; GPUs about one team per multiprocessor (2048 resident threads each).
      const int G = std::max(1, std::min(stages, host ? conc : std::max(1, conc / 2048)));
      const int ts = host ? 1 : 512;  // the fastest of 64..1024 on GPUs (docs/performance/eigh.md)
      const int lds = b + 1;
      constexpr int parts = 8;  // a b-long dot product is split in 8 partial sums over the team
      const std::size_t scratch =
          sizeof(double) * (std::size_t(b) * lds + 3 * std::size_t(b) + parts * std::size_t(std::max(b, 3)) + 8);
      // 512 threads must fit one multiprocessor: at most 128 registers a thread.
      Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<512, 1>> policy(exec, G, ts);
      policy.set_scratch_size(0, Kokkos::PerTeam(scratch));
      Kokkos::parallel_for(
          "bulge_chase::team_pipeline", policy, KOKKOS_LAMBDA(const Member& tm) {
            double* buf = static_cast<double*>(tm.team_scratch(0).get_shmem(scratch));
            double* v = buf + std::size_t(b) * lds;
            double* w = v + b;
            double* y = w + b;
            double* red = y + b;  // parts x b partial sums
            double* a = band.data();
            volatile int* pg = progress.data();
            // Band entries: read past L1 (other teams write them), written directly.
            auto get = [&](int r, int c) { return kx::load_uncached(a + r + std::size_t(c) * ld); };
            auto at = [&](int r, int c) -> double& { return a[r + std::size_t(c) * ld]; };
            // A thread's entries of a rows x cols block (rows <= b): on GPU teams (nt >= 64) thread t
            // owns row t % 64 and columns t / 64, t / 64 + nt / 64, ... (no integer division in the
            // loops); teams smaller than that (host) take rows rank, rank + nt, ... of every column.
            const int rank = tm.team_rank(), nt = tm.team_size();
            const bool wide = nt >= 64;
            const int r_me = rank & 63, c_me = rank >> 6, cs = nt >> 6;
            auto for_block = [&](int rows, int cols, auto f) {
              if (wide) {
                if (r_me < rows)
                  for (int c = c_me; c < cols; c += cs) f(r_me, c);
              } else {
                for (int c = 0; c < cols; ++c)
                  for (int r = rank; r < rows; r += nt) f(r, c);
              }
            };
            // The three blocks a sweep works on are disjoint from one another and from the
            // reflector's column, so all their loads are issued at once, right after the wait: into
            // registers on GPU teams (R columns a thread), the rest when staged.
            constexpr int R = 8;
            struct Pre {
              double x[R];
            };
            auto prefetch = [&](Pre& pre, int rows, int cols, auto src) {
              if (wide && r_me < rows) {
  #pragma unroll
                for (int q = 0; q < R; ++q) {
                  const int c = c_me + q * cs;
                  pre.x[q] = c < cols ? src(r_me, c) : 0.0;
                }
              }
            };
            auto stage_in = [&](const Pre& pre, int rows, int cols, auto src) {
              if (wide) {
                if (r_me < rows) {
  #pragma unroll
                  for (int q = 0; q < R; ++q) {
                    const int c = c_me + q * cs;
                    if (c < cols) buf[r_me + c * lds] = pre.x[q];
                  }
                  for (int c = c_me + R * cs; c < cols; c += cs) buf[r_me + c * lds] = src(r_me, c);
                }
              } else {
                for_block(rows, cols, [&](int r, int c) { buf[r + c * lds] = src(r, c); });
              }
            };
            // out(i) = tau * sum_k M(i, k) v(k) for i < count, M(i, k) = buf[i*si + k*sk], k < L:
            // `parts` partial sums a row over the team, then one thread a row adds them.
            auto matvec = [&](int count, int L, int si, int sk, double tau, double* out) {
              const int kp = (L + parts - 1) / parts;
              for (int t = rank; t < parts * count; t += nt) {
                const int i = t / parts, part = t % parts;  // parts is a constant: shifts
                const int k1 = kx::min(L, (part + 1) * kp);
                double acc = 0;
                for (int k = part * kp; k < k1; ++k) acc += buf[i * si + k * sk] * v[k];
                red[t] = acc;
              }
              tm.team_barrier();
              for (int i = rank; i < count; i += nt) {
                double acc = 0;
                for (int part = 0; part < parts; ++part) acc += red[i * parts + part];
                out[i] = tau * acc;
              }
              tm.team_barrier();
            };
            for (int i = tm.league_rank(); i < stages; i += G) {
              for (int j = 0;; ++j) {
                const int r0 = i + 1 + j * b;
                if (r0 >= n - 1) break;
                if (i > 0) {
                  // One thread waits and fences (acquire); the barrier passes it on to the team.
                  Kokkos::single(Kokkos::PerTeam(tm), [&]() {
                    while (pg[i - 1] < 2 * j + 5) {
                    }
                    Kokkos::memory_fence();
                  });
                  tm.team_barrier();
                }
                const int L = kx::min(b, n - r0);
                const int kp2 = (L + parts - 1) / parts;
                const int c = j == 0 ? i : r0 - b;
                const int nq = r0 - c - 1;                        // (a): columns c+1 .. r0-1
                const int m2 = kx::min(n, r0 + L + b) - (r0 + L);  // (c): rows below the block
                auto src_a = [&](int k, int q) { return get(r0 + k, c + 1 + q); };
                auto src_b = [&](int p, int q) {  // lower triangle stored, mirrored
                  return p >= q ? get(r0 + p, r0 + q) : get(r0 + q, r0 + p);
                };
                auto src_c = [&](int p, int k) { return get(r0 + L + p, r0 + k); };
                Pre pa, pb, pc;
                for (int k = rank; k < L; k += nt) v[k] = get(r0 + k, c);  // x, raw
                if (nq > 0) prefetch(pa, L, nq, src_a);
                prefetch(pb, L, L, src_b);
                if (m2 > 0) prefetch(pc, m2, L, src_c);
                tm.team_barrier();
                // Householder reflector of x = A(r0 .. r0+L-1, c) (dlarfg's convention): the sum of
                // squares of x(1:) from `parts` partial results, unscaled; only when it under- or
                // overflows (the same test on every thread) max |x(1:)| and the scaled sum.
                const int kp = (L - 1 + parts - 1) / parts;
                auto part_range = [&](int part, int& k0, int& k1) {
                  k0 = 1 + part * kp;
                  k1 = kx::min(L, k0 + kp);
                };
                for (int part = rank; part < parts; part += nt) {
                  int k0, k1;
                  part_range(part, k0, k1);
                  double acc = 0;
                  for (int k = k0; k < k1; ++k) acc += v[k] * v[k];
                  red[part] = acc;
                }
                tm.team_barrier();
                double ssq = 0;
                for (int part = 0; part < parts; ++part) ssq += red[part];
                double amax = ssq > 0 ? 1.0 : 0.0;
                if (!(ssq > 1e-280 && ssq < 1e280)) {
                  for (int part = rank; part < parts; part += nt) {
                    int k0, k1;
                    part_range(part, k0, k1);
                    double m = 0;
                    for (int k = k0; k < k1; ++k) m = kx::max(m, kx::fabs(v[k]));
                    red[parts + part] = m;
                  }
                  tm.team_barrier();
                  amax = 0;
                  for (int part = 0; part < parts; ++part) amax = kx::max(amax, red[parts + part]);
                  ssq = 0;
                  if (amax > 0) {
                    const double inv = 1.0 / amax;  // one division: FP64 division is long on GPUs
                    for (int part = rank; part < parts; part += nt) {
                      int k0, k1;
                      part_range(part, k0, k1);
                      double acc = 0;
                      for (int k = k0; k < k1; ++k) {
                        const double t = v[k] * inv;
                        acc += t * t;
                      }
                      red[2 * parts + part] = acc;
                    }
                    tm.team_barrier();
                    for (int part = 0; part < parts; ++part) ssq += red[2 * parts + part];
                  }
                }
                const double alpha = v[0];
                double tau = 0, beta = alpha, scal = 0;
                core::householder_coefficients(alpha, amax, ssq, beta, tau, scal);
                tm.team_barrier();  // everyone has read x
                const std::int64_t col = record ? offset(j) + i : 0;
                for (int k = rank; k < L; k += nt) {
                  const double vk = k == 0 ? 1.0 : v[k] * scal;
                  v[k] = vk;
                  at(r0 + k, c) = k == 0 ? beta : 0.0;
                  if (record) Vd(k, col) = vk;
                }
                if (record && rank == 0) taud(col) = tau;
                if (tau != 0.0 && nq > 0) stage_in(pa, L, nq, src_a);
                // Half-way mark: the reflector's column is written, the only part of this sweep that
                // stage i+1's sweep j-2 touches (the rest of this sweep and of it are disjoint).
                tm.team_barrier();
                Kokkos::single(Kokkos::PerTeam(tm), [&]() {
                  Kokkos::memory_fence();
                  pg[i] = 2 * j + 1;
                });
                if (tau != 0.0) {
                  // (a) from the left on the rest of the bulge: rows r0 .., columns c+1 .. r0-1:
                  // s = tau A^T v, A -= v s^T.
                  if (nq > 0) {
                    matvec(nq, L, lds, 1, tau, w);
                    for_block(L, nq, [&](int k, int q) { at(r0 + k, c + 1 + q) = buf[k + q * lds] - w[q] * v[k]; });
                    tm.team_barrier();
                  }
                  // (b) two-sided on the diagonal block (lower triangle stored, mirrored in scratch):
                  // w = tau A v, w += -tau/2 (w^T v) v, A -= v w^T + w v^T.
                  stage_in(pb, L, L, src_b);
                  tm.team_barrier();
                  matvec(L, L, 1, lds, tau, w);
                  for (int part = rank; part < parts; part += nt) {
                    const int k1 = kx::min(L, (part + 1) * kp2);
                    double acc = 0;
                    for (int k = part * kp2; k < k1; ++k) acc += w[k] * v[k];
                    red[part] = acc;
                  }
                  tm.team_barrier();
                  double wv = 0;
                  for (int part = 0; part < parts; ++part) wv += red[part];
                  const double al = -0.5 * tau * wv;
                  for_block(L, L, [&](int p, int q) {
                    if (p >= q) at(r0 + p, r0 + q) = buf[p + q * lds] - v[p] * (w[q] + al * v[q]) - (w[p] + al * v[p]) * v[q];
                  });
                  tm.team_barrier();
                  // (c) from the right on the block below (fills the bulge of sweep j+1):
                  // y = tau A v, A -= y v^T.
                  if (m2 > 0) {
                    stage_in(pc, m2, L, src_c);
                    tm.team_barrier();
                    matvec(m2, L, 1, lds, tau, y);
                    for_block(m2, L, [&](int p, int k) { at(r0 + L + p, r0 + k) = buf[p + k * lds] - y[p] * v[k]; });
                  }
                }
                // The barrier gathers the team's writes, one fence (release) orders them before the flag.
                tm.team_barrier();
                Kokkos::single(Kokkos::PerTeam(tm), [&]() {
                  Kokkos::memory_fence();
                  pg[i] = 2 * j + 2;
                });
              }
              Kokkos::memory_fence();
              tm.team_barrier();
              Kokkos::single(Kokkos::PerTeam(tm), [&]() { pg[i] = 0x7fffffff; });
            }
          });
    }
  }
  Kokkos::View<double*, Mem> de(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bulge_chase::de"),
                                2 * std::size_t(n));
  Kokkos::parallel_for(
      "bulge_chase::extract", Kokkos::RangePolicy<ExecSpace>(exec, 0, n), KOKKOS_LAMBDA(int i) {
        de(i) = band(i + std::size_t(i) * ld);
        de(n + i) = i + 1 < n ? band(i + 1 + std::size_t(i) * ld) : 0.0;
      });
  auto deh = Kokkos::create_mirror_view(de);
  Kokkos::deep_copy(exec, deh, de);
  kx::fence(exec, "bulge_chase::done");
  for (int i = 0; i < n; ++i) d[i] = deh(i);
  for (int i = 0; i + 1 < n; ++i) e[i] = deh(n + i);
}

}  // namespace kess::detail::eigh
