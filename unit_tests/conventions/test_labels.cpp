// Every kernel kess launches carries a "kess::" label: recorded through the Kokkos Tools callbacks
// while kess functions run. Allowed besides: Kokkos's own deep-copy kernels ("Kokkos::"), and
// kernels that a library launches inside a kess profiling region (Kokkos Kernels' GEMM kernels
// run inside "kess::core::gemm").
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/gemm.hpp>
#include <kess/solvers/eigh.hpp>
#include <kess/solvers/eigh.hpp>

#include "test_backend.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

std::set<std::string>& seen() {
  static std::set<std::string> s;
  return s;
}

std::vector<std::string>& regions() {
  static std::vector<std::string> r;
  return r;
}

// Libraries open regions of their own (Kokkos Kernels: "KokkosBlas::gemm[...]"): any enclosing
// kess:: region counts.
void record(const char* name, std::uint32_t, std::uint64_t*) {
  for (const auto& r : regions())
    if (r.rfind("kess::", 0) == 0) {
      seen().insert("kess::(region " + r + ") " + name);
      return;
    }
  seen().insert(name);
}
void push(const char* name) { regions().emplace_back(name); }
void pop() {
  if (!regions().empty()) regions().pop_back();
}

class LabelRecorder {
 public:
  LabelRecorder() {
    seen().clear();
    regions().clear();
    Kokkos::Tools::Experimental::set_push_region_callback(push);
    Kokkos::Tools::Experimental::set_pop_region_callback(pop);
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(record);
    Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(record);
    Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(record);
  }
  ~LabelRecorder() {
    Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
    Kokkos::Tools::Experimental::set_pop_region_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
    Kokkos::Tools::Experimental::set_begin_parallel_scan_callback(nullptr);
  }
};

void expect_kess_labels() {
  EXPECT_FALSE(seen().empty()) << "no kernel was recorded: the callbacks did not fire";
  for (const auto& name : seen()) {
    const bool ok = name.rfind("kess::", 0) == 0 || name.rfind("Kokkos::", 0) == 0;
    EXPECT_TRUE(ok) << "kernel label without the kess:: prefix: '" << name << "'";
  }
}

using Mat = Kokkos::View<double**, Kokkos::LayoutLeft, TestMemSpace>;

TEST(Labels, HouseholderChaseAndGenerators) {
  TestExecSpace exec;
  const int b = 8, n = 40, nc = 9;
  Mat V("V", b, n), X("X", b + n - 1, nc);
  Kokkos::View<double*, TestMemSpace> tau("tau", n);
  kess::gen::fill_random_general(exec, V, 0, 0, 3);
  kess::gen::fill_random_general(exec, X, 0, 0, 4);
  Kokkos::deep_copy(exec, tau, 0.5);
  exec.fence();
  LabelRecorder rec;
  for (auto variant : {kess::HhChaseVariant::paper, kess::HhChaseVariant::fast})
    for (bool host_blas : {true, false}) {
      kess::HhChaseOptions opts;
      opts.variant = variant;
      opts.tuning.host_blas = host_blas;
      kess::hh_chase_apply(exec, V, tau, X, opts);
    }
  kess::gen::fill_random_symmetric(exec, X, 0, 0, 5);
  exec.fence();
  expect_kess_labels();
}

TEST(Labels, Eigh) {
  TestExecSpace exec;
  const int n = 30;
  Mat A("A", n, n);
  kess::gen::fill_random_symmetric(exec, A, 0, 0, 9);
  exec.fence();
  LabelRecorder rec;
  kess::EighOptions opts;
  opts.method = kess::EighMethod::two_stage;  // every stage's kernels
  opts.band_width = 4;
  auto r = kess::eigh(exec, A, opts);
  exec.fence();
  EXPECT_EQ(r.eigenvalues.extent(0), static_cast<size_t>(n));
  expect_kess_labels();
}

}  // namespace
