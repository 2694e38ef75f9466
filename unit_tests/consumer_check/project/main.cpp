// A user's program built against the installed kess: one Householder reflector through the
// kernel, and a small eigenproblem through kess::eigh, both checked.
#include <kess/kess.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  kess::ScopeGuard guard(argc, argv);
  int status = 0;
  {
    // b = 2, n = 1: H = I - tau v v^T with v = (1, 1), tau = 1 swaps and negates: (3, 5) -> (-5, -3).
    Kokkos::View<double**, Kokkos::LayoutLeft> V("V", 2, 1), X("X", 2, 1);
    Kokkos::View<double*> tau("tau", 1);
    Kokkos::deep_copy(V, 1.0);
    Kokkos::deep_copy(tau, 1.0);
    auto xh = Kokkos::create_mirror_view(X);
    xh(0, 0) = 3.0;
    xh(1, 0) = 5.0;
    Kokkos::deep_copy(X, xh);
    kess::hh_chase_apply(V, tau, X);
    Kokkos::deep_copy(xh, X);
    const bool hh_ok = std::abs(xh(0, 0) + 5.0) < 1e-15 && std::abs(xh(1, 0) + 3.0) < 1e-15;
    std::printf("kess consumer: hh_chase_apply (%g, %g) %s\n", xh(0, 0), xh(1, 0),
                hh_ok ? "ok" : "WRONG");

    // eigh of a random symmetric 40 x 40 matrix: max_j |A z_j - lambda_j z_j| small.
    const int n = 40;
    Kokkos::View<double**, Kokkos::LayoutLeft> A("A", n, n);
    kess::gen::fill_random_symmetric(Kokkos::DefaultExecutionSpace(), A, 0, 0, 7);
    auto r = kess::eigh(Kokkos::DefaultExecutionSpace(), A, kess::EighOptions{});
    auto Ah = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
    auto Zh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), r.eigenvectors);
    double res = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double s = -r.eigenvalues(j) * Zh(i, j);
        for (int k = 0; k < n; ++k) s += Ah(i, k) * Zh(k, j);
        res =
            std::isnan(s) || std::isnan(res) ? s + res : std::fmax(res, std::abs(s));  // NaN stays
      }
    const bool eig_ok = res < 1e-12 * n;
    std::printf("kess consumer: eigh n=%d residual %.2e %s\n", n, res, eig_ok ? "ok" : "WRONG");
    status = hh_ok && eig_ok ? 0 : 1;
  }
  return status;
}
