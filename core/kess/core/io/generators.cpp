#include <kess/core/io/generators.hpp>

#include <kess/core/base/error.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace kess::gen {
namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

DenseHost allocate(const char* label, std::int64_t m, std::int64_t n) {
  return DenseHost(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), m, n);
}

void check_order(const char* fn, const char* name, std::int64_t n, std::int64_t limit) {
  require_arg(n >= 0 && n <= limit, fn,
              std::string("argument '") + name + "' = " + std::to_string(n) + " must be in 0.." +
                  std::to_string(limit));
}

}  // namespace

DenseHost random_symmetric(std::int64_t n, std::uint64_t seed) {
  check_order("gen::random_symmetric", "n", n, kIntMax);
  DenseHost a = allocate("kess::gen::random_symmetric", n, n);
  Kokkos::DefaultHostExecutionSpace host;
  fill_random_symmetric(host, a, 0, 0, seed);
  kx::fence(host, "kess::gen::random_symmetric");
  return a;
}

DenseHost random_general(std::int64_t m, std::int64_t n, std::uint64_t seed) {
  check_order("gen::random_general", "m", m, kIntMax);
  check_order("gen::random_general", "n", n, kIntMax);
  DenseHost a = allocate("kess::gen::random_general", m, n);
  Kokkos::DefaultHostExecutionSpace host;
  fill_random_general(host, a, 0, 0, seed);
  kx::fence(host, "kess::gen::random_general");
  return a;
}

DenseHost random_spd(std::int64_t n, std::uint64_t seed) {
  check_order("gen::random_spd", "n", n, kIntMax);
  DenseHost a = allocate("kess::gen::random_spd", n, n);
  Kokkos::DefaultHostExecutionSpace host;
  fill_random_spd(host, a, 0, 0, n, seed);
  kx::fence(host, "kess::gen::random_spd");
  return a;
}

DenseHost random_orthogonal(std::int64_t n, std::uint64_t seed, std::int64_t reflectors) {
  const char* fn = "gen::random_orthogonal";
  check_order(fn, "n", n, kIntMax);
  const std::int64_t r = reflectors < 0 ? n : reflectors;
  DenseHost q("kess::gen::random_orthogonal", n, n);  // zero-initialized, then the identity
  for (std::int64_t i = 0; i < n; ++i) q(i, i) = 1.0;
  if (n == 0 || r == 0) return q;

  const std::uint64_t useed = splitmix64(seed ^ detail::kDomainReflector);
  const int ni = static_cast<int>(n);
  constexpr std::int64_t kBlock = 32;
  std::vector<double> v(static_cast<std::size_t>(n * kBlock));       // V: n x nb, column-major
  std::vector<double> t(static_cast<std::size_t>(kBlock * kBlock));  // T: nb x nb, upper
  std::vector<double> w(static_cast<std::size_t>(kBlock * n));       // W: nb x n
  std::vector<double> vtv(static_cast<std::size_t>(kBlock));

  for (std::int64_t k0 = 0; k0 < r; k0 += kBlock) {
    const int nb = static_cast<int>(std::min(kBlock, r - k0));
    // Reflector vectors u_k and tau_k = 2 / u_k^T u_k (tau = 0 leaves H = I if u were 0).
    for (int c = 0; c < nb; ++c) {
      double* u = v.data() + static_cast<std::size_t>(c) * n;
      for (std::int64_t i = 0; i < n; ++i) u[i] = random_general_entry(useed, k0 + c, i);
    }
    // H_1 ... H_nb = I - V T V^T, T upper triangular (LAPACK dlarft, forward columnwise):
    // T(c, c) = tau_c, T(0:c, c) = -tau_c T(0:c, 0:c) V(:, 0:c)^T v_c.
    std::fill(t.begin(), t.end(), 0.0);
    for (int c = 0; c < nb; ++c) {
      const double* vc = v.data() + static_cast<std::size_t>(c) * n;
      double uu = 0.0;
      for (std::int64_t i = 0; i < n; ++i) uu += vc[i] * vc[i];
      const double tau = uu > 0.0 ? 2.0 / uu : 0.0;
      for (int l = 0; l < c; ++l) {  // vtv(l) = v_l^T v_c
        const double* vl = v.data() + static_cast<std::size_t>(l) * n;
        double s = 0.0;
        for (std::int64_t i = 0; i < n; ++i) s += vl[i] * vc[i];
        vtv[l] = s;
      }
      for (int l = 0; l < c; ++l) {
        double s = 0.0;
        for (int p = l; p < c; ++p) s += t[l + p * kBlock] * vtv[p];
        t[l + c * kBlock] = -tau * s;
      }
      t[c + c * kBlock] = tau;
    }
    // Q <- H_{k0+nb-1} ... H_{k0} Q = (I - V T V^T)^T Q = Q - V (T^T (V^T Q)).
    core::lapack::gemm('T', 'N', nb, ni, ni, 1.0, v.data(), ni, q.data(), ni, 0.0, w.data(), nb);
    for (std::int64_t j = 0; j < n; ++j) {
      double* wj = w.data() + static_cast<std::size_t>(j) * nb;
      for (int i = nb - 1; i >= 0; --i) {  // bottom up: row i needs rows 0..i, still unchanged
        double s = 0.0;
        for (int l = 0; l <= i; ++l) s += t[l + i * kBlock] * wj[l];
        wj[i] = s;
      }
    }
    core::lapack::gemm('N', 'N', ni, ni, nb, -1.0, v.data(), ni, w.data(), nb, 1.0, q.data(), ni);
  }
  return q;
}

DenseHost prescribed_spectrum(const std::vector<double>& lambda, std::uint64_t seed,
                              DenseHost* q_out) {
  const char* fn = "gen::prescribed_spectrum";
  const std::int64_t n = static_cast<std::int64_t>(lambda.size());
  check_order(fn, "lambda.size()", n, kIntMax);
  for (std::int64_t k = 0; k < n; ++k) {
    require_arg(std::isfinite(lambda[k]), fn,
                "argument 'lambda' has a non-finite value at " + std::to_string(k));
  }
  DenseHost q = random_orthogonal(n, seed);
  DenseHost a = allocate("kess::gen::prescribed_spectrum", n, n);
  if (n > 0) {
    DenseHost ql = allocate("kess::gen::prescribed_spectrum::QL", n, n);  // Q diag(lambda)
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < n; ++i) ql(i, j) = q(i, j) * lambda[j];
    }
    const int ni = static_cast<int>(n);
    core::lapack::gemm('N', 'T', ni, ni, ni, 1.0, ql.data(), ni, q.data(), ni, 0.0, a.data(), ni);
    for (std::int64_t j = 0; j < n; ++j) {  // exact symmetry: the upper triangle from the lower
      for (std::int64_t i = 0; i < j; ++i) a(i, j) = a(j, i);
    }
  }
  if (q_out) *q_out = q;
  return a;
}

}  // namespace kess::gen
