// The body of stage 4 (hh_chase.hpp), compiled in libkess only.
#pragma once

#include <kess/solvers/eigh/detail/hh_chase.hpp>
#include <kess/solvers/eigh/detail/hh_chase_apply.hpp>

namespace kess::detail::eigh {

#if defined(KOKKOS_ENABLE_CUDA)
/// Stage 4 on CUDA by the register-window tensor-core kernel, all sweeps in one schedule. Task t
/// is column block t % ncb of sweep t / ncb, and launch r runs tasks r G .. r G + G - 1 (G = the
/// multiprocessors, or ncb where that is smaller: then a launch is a sweep). With more column
/// blocks than multiprocessors a launch meets two sweeps (every task's predecessor, t - ncb, is in
/// an earlier launch), and ceil(ncb S / G) full launches replace S ceil(ncb / G) launches whose
/// last wave is nearly empty (n = 20000: 157 blocks of 128 columns on 132 multiprocessors, two
/// waves a sweep). The T factors are built 8 sweeps a launch (HhChaseBuildTSweeps) into a ring of
/// 16 sweeps, before the first launch that needs them (the sweeps whose slots they take are done
/// by then), instead of a launch and an allocation a sweep.
/// Returns false (nothing enqueued) where this does not apply; sweeps with fewer than 32
/// reflectors are left to the caller (`done_sweeps` receives how many were applied).
template <class VView, class TauView, class YView>
bool hh_chase_rounds(const Kokkos::Cuda& exec, const ChaseReflectors& refl,
                                const VView& V, const TauView& tau, const YView& Y,
                                const HhChaseOptions& opts, int& done_sweeps) {
  using Shape = HhChaseMmaShape;
  done_sweeps = 0;
  if (!std::is_same<typename YView::non_const_value_type, double>::value ||
      !std::is_same<typename YView::array_layout, Kokkos::LayoutLeft>::value ||
      !std::is_same<typename VView::array_layout, Kokkos::LayoutLeft>::value)
    return false;
  if (opts.variant != HhChaseVariant::fast || !opts.tuning.tensor_cores || opts.tuning.block > 0 ||
      opts.tuning.cols_per_team > 0 || opts.tuning.round_blocks == 0 || refl.b != Shape::B ||
      !hh_chase_mma_supported(exec) || Y.extent(1) >= (std::size_t(1) << 31))
    return false;
  if (!V.span_is_contiguous() || static_cast<std::int64_t>(V.stride(1)) != refl.b ||
      !tau.span_is_contiguous())
    return false;
  const int NC = static_cast<int>(Y.extent(1));
  int warps = hh_chase_mma_pick(exec, NC);
  // A forced schedule (round_blocks > 0, tests) takes the 8-warp kernel where the pick is m8n8k4.
  if (warps == 0 && opts.tuning.round_blocks > 0 && hh_chase_mma_reg_supported(exec)) warps = 9;
  if (warps == 0) return false;
  const int ncb = (NC + hh_chase_mma_cols(warps) - 1) / hh_chase_mma_cols(warps);
  const int G = std::min(ncb, opts.tuning.round_blocks > 0 ? opts.tuning.round_blocks
                                                    : exec.cuda_device_prop().multiProcessorCount);
  int S = 0;  // sweeps of at least M reflectors (the kernel's full-block path)
  while (S < refl.sweeps() && refl.count(S) >= Shape::M) ++S;
  if (S == 0) return false;
  constexpr int M = Shape::M, ring = 16;
  using Build = HhChaseBuildTSweeps<Kokkos::Cuda>;
  static_assert(ring >= 2 * Build::max_sweeps, "a batch must not take slots still in use");
  const std::int64_t slot = std::int64_t(M) * M * ((refl.count(0) + M - 1) / M);
  Kokkos::View<double*, Kokkos::CudaSpace> Tring(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "hh_chase::T"),
      ring * slot);
  auto T_of = [&](int s) { return Tring.data() + (s % ring) * slot; };
  auto V_of = [&](int s) { return V.data() + refl.offset[s] * refl.b; };
  auto X_of = [&](int s) { return Y.data() + refl.first_row(s); };
  int built = -1;
  const long long total = static_cast<long long>(ncb) * S;
  for (long long t0 = 0; t0 < total; t0 += G) {
    const int blocks = static_cast<int>(std::min<long long>(G, total - t0));
    const int s0 = static_cast<int>(t0 / ncb), s1 = static_cast<int>((t0 + blocks - 1) / ncb);
    if (built < s1) {  // T of the next up to 8 sweeps, in one launch
      Build f{V.data(), tau.data(), Tring.data(), refl.b, M, 0, {}, {}, {}, {}};
      int teams = 0;
      for (int s = built + 1; s < S && f.count < Build::max_sweeps; ++s, ++f.count) {
        f.voff[f.count] = refl.offset[s];
        f.toff[f.count] = (s % ring) * slot;
        f.n[f.count] = static_cast<int>(refl.count(s));
        f.first[f.count] = teams;
        teams += (f.n[f.count] + M - 1) / M;
      }
      f.first[f.count] = teams;
      built += f.count;
      Kokkos::TeamPolicy<Kokkos::Cuda> policy(exec, teams, 128);
      policy.set_scratch_size(0, Kokkos::PerTeam(Build::Block::scratch_bytes(refl.b, M)));
      Kokkos::parallel_for("hh_chase::build_t", policy, f);
    }
    const HhMmaJob job{V_of(s0), T_of(s0), X_of(s0), V_of(s1), T_of(s1), X_of(s1),
                       static_cast<long long>(Y.stride(1)), t0,
                       static_cast<int>(refl.count(s0)), static_cast<int>(refl.count(s1)), ncb, NC};
    hh_chase_mma_round(exec, warps, job, blocks);
  }
  done_sweeps = S;
  return true;
}
#endif

/// Stage 4 (Yu et al. 2020, Eq. 6d): Y <- Q Y for the Q of bulge_chase, through one
/// hh_chase_apply call per sweep index (G_0 first; on CUDA, where the register-window kernel
/// applies, all sweeps in the one schedule of hh_chase_rounds); on host memory
/// `opts.tuning.host_blas` chooses host BLAS for the kernel's compact-WY blocks or its portable team
/// kernel. Y has n + b - 2 rows at least (rows n .. are zero padding that the zero-padded
/// reflectors leave untouched) and any number of columns. V and tau are the recorded reflectors
/// already in exec's memory space.
template <class ExecSpace>
void hh_chase(const ExecSpace& exec, const ChaseReflectors& refl,
              const core::ConstMatrix<ExecSpace>& V, const core::ConstVector<ExecSpace>& tau,
              const core::Matrix<ExecSpace>& Y, HhChaseOptions opts) {
  const int b = refl.b;
  require_arg(static_cast<std::int64_t>(Y.extent(0)) >= std::int64_t(refl.n) + b - 2,
              "hh_chase", "argument 'Y': too few rows for the zero padding");
  if (Y.extent(1) == 0) return;
  opts.check_input = false;  // our own data
  int j0 = 0;
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value)
    hh_chase_rounds(exec, refl, V, tau, Y, opts, j0);
#endif
  for (int j = j0; j < refl.sweeps(); ++j) {
    const std::int64_t nref = refl.count(j), r0 = refl.first_row(j);
    auto Vj = Kokkos::subview(V, Kokkos::ALL, Kokkos::make_pair(refl.offset[j], refl.offset[j] + nref));
    auto tj = Kokkos::subview(tau, Kokkos::make_pair(refl.offset[j], refl.offset[j] + nref));
    auto Xj = Kokkos::subview(Y, Kokkos::make_pair(r0, r0 + nref + b - 1), Kokkos::ALL);
    hh_chase_apply(exec, Vj, tj, Xj, opts);
  }
}

}  // namespace kess::detail::eigh
