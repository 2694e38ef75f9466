// Applies one Householder reflector through the installed kess and checks the result.
#include <kess/comm/scope_guard.hpp>
#include <kess/core/hh_chase.hpp>

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
    status = std::abs(xh(0, 0) + 5.0) < 1e-15 && std::abs(xh(1, 0) + 3.0) < 1e-15 ? 0 : 1;
    std::printf("kess consumer: (%g, %g) %s\n", xh(0, 0), xh(1, 0), status ? "WRONG" : "ok");
  }
  return status;
}
