// Host parts of tridiag_dc: leaves, deflation and the secular equations (see tridiag_dc.hpp).
#include <kess/solvers/eigh/detail/tridiag_dc.hpp>

#include <kess/solvers/eigh/detail/secular.hpp>

#include <numeric>

namespace kess::detail::eigh {

void solve_leaves(const std::vector<int>& off, const std::vector<int>& size,
                     const std::vector<std::int64_t>& packed_at, const std::vector<double>& d,
                     const std::vector<double>& e, double* w, double* packed, int threads) {
  const int count = static_cast<int>(off.size());
  // Leaves are small (<= opts.leaf rows): one thread each.
  core::detail::host_parallel_for(count, count >= 8 ? threads : 1, [&](int l) {
    const int o = off[l], s = size[l];
    std::vector<double> dl(d.begin() + o, d.begin() + o + s);
    std::vector<double> el(std::max(1, s - 1), 0.0);
    for (int i = 0; i + 1 < s; ++i) el[i] = e[o + i];
    const int info = core::lapack::steqr('I', s, dl.data(), el.data(), packed + packed_at[l], s);
    require(info == 0, ErrorKind::no_convergence, "tridiag_dc",
            "dsteqr on the leaf of rows " + std::to_string(o) + " .. " + std::to_string(o + s - 1) +
                " did not converge (info = " + std::to_string(info) + ")");
    std::copy(dl.begin(), dl.end(), w + o);
  });
}

MergePlan merge_plan(const std::vector<double>& D_in, std::vector<double> z, int n1,
                          double beta, int threads, int roots_min) {
  const int s = static_cast<int>(D_in.size());
  std::vector<double> D = D_in;
  MergePlan plan;
  // The rank-one piece: T = diag(T1, T2) + beta u u^T, u = [e_last; e_first]; in the eigenbases
  // z = [Q1(last, :), sign(beta) Q2(first, :)] / sqrt(2) (unit norm), rho = 2 |beta|.
  if (beta < 0)
    for (int c = n1; c < s; ++c) z[c] = -z[c];
  const double r2 = 1.0 / std::sqrt(2.0);
  for (auto& x : z) x *= r2;
  const double rho = 2.0 * std::abs(beta);
  plan.rho = rho;

  std::vector<int> order(s);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return D[a] < D[b]; });
  double dmax = 0, zmax = 0;
  for (int c = 0; c < s; ++c) {
    dmax = std::max(dmax, std::abs(D[c]));
    zmax = std::max(zmax, std::abs(z[c]));
  }
  const double eps = core::lapack::lamch('E');
  const double tol = 8.0 * eps * std::max(dmax, zmax);

  std::vector<int> type(s);  // 1: rows of the top half only, 2: bottom only, 3: both
  for (int c = 0; c < s; ++c) type[c] = c < n1 ? 1 : 2;
  std::vector<int> keep, defl;
  keep.reserve(s);
  if (rho * zmax > tol) {
    int pj = -1;
    for (int j : order) {
      if (rho * std::abs(z[j]) <= tol) {
        defl.push_back(j);  // z_j negligible: (D_j, column j) is already an eigenpair
        continue;
      }
      if (pj < 0) {
        pj = j;
        continue;
      }
      // Close poles: a rotation in the (pj, j) plane zeroes z_pj; pj then deflates.
      const double tau = std::hypot(z[j], z[pj]);
      const double c = z[j] / tau, sn = -z[pj] / tau;
      const double t = D[j] - D[pj];
      if (std::abs(t * c * sn) <= tol) {
        z[j] = tau;
        z[pj] = 0;
        plan.rot_i.push_back(pj);
        plan.rot_j.push_back(j);
        plan.rot_c.push_back(c);
        plan.rot_s.push_back(sn);
        type[pj] = type[j] = type[pj] | type[j];
        const double dp = D[pj] * c * c + D[j] * sn * sn;
        D[j] = D[pj] * sn * sn + D[j] * c * c;
        D[pj] = dp;
        defl.push_back(pj);
      } else {
        keep.push_back(pj);
      }
      pj = j;
    }
    if (pj >= 0) keep.push_back(pj);
  } else {
    defl = order;
  }
  plan.rotations = static_cast<std::int64_t>(plan.rot_i.size());
  const int k = static_cast<int>(keep.size());
  plan.k = k;

  // Compact column order: top-only, mixed, bottom-only (then the deflated columns).
  plan.gather.assign(s, 0);
  plan.row.assign(k, 0);
  int pos = 0;
  for (int want : {1, 3, 2}) {
    for (int i = 0; i < k; ++i)
      if (type[keep[i]] == want) {
        plan.row[i] = pos;
        plan.gather[pos++] = keep[i];
      }
    if (want == 1) plan.n_top = pos;
    if (want == 3) plan.n_mixed = pos - plan.n_top;
  }
  for (int m = 0; m < static_cast<int>(defl.size()); ++m) plan.gather[k + m] = defl[m];

  plan.values.assign(s, 0.0);
  for (int m = 0; m < static_cast<int>(defl.size()); ++m) plan.values[k + m] = D[defl[m]];
  plan.pole.resize(k);
  plan.weight.resize(k);
  for (int i = 0; i < k; ++i) {
    plan.pole[i] = D[keep[i]];
    plan.weight[i] = z[keep[i]];
  }
  plan.orig.assign(k, 0);
  plan.tau.assign(k, 0.0);
  if (k == 0) return plan;
  if (k == 1) {
    plan.values[0] = plan.pole[0] + rho * plan.weight[0] * plan.weight[0];
    plan.explicit_s = {1.0};
    return plan;
  }
  if (k == 2) {
    plan.explicit_s.assign(4, 0.0);
    for (int j = 0; j < 2; ++j) {
      double delta[2], lam = 0;
      core::lapack::laed5(j + 1, plan.pole.data(), plan.weight.data(), delta, rho, &lam);
      plan.values[j] = lam;
      for (int i = 0; i < 2; ++i) plan.explicit_s[plan.row[i] + 2 * j] = delta[i];
    }
    return plan;
  }
  if (roots_min > 0 && k >= roots_min) {
    plan.roots_pending = true;  // the caller solves them on its execution space
    return plan;
  }
  // The roots as lambda_j = pole[orig_j] + tau_j, the representation the device recomputes
  // d_i - lambda_j = (d_i - d_orig) - tau from (secular_roots_host: faster than dlaed4 on one
  // thread, bench_eigh's BM_secular_roots_*).
  const int chunk = 64, nchunks = (k + chunk - 1) / chunk;
  core::detail::host_parallel_for(nchunks, k >= 256 ? threads : 1, [&](int c) {
    const int j0 = c * chunk, j1 = std::min(k, j0 + chunk);
    secular_roots_host(k, plan.pole.data(), plan.weight.data(), rho, j0, j1, plan.orig.data(),
                          plan.tau.data());
    for (int j = j0; j < j1; ++j) plan.values[j] = plan.pole[plan.orig[j]] + plan.tau[j];
  });
  return plan;
}

}  // namespace kess::detail::eigh
