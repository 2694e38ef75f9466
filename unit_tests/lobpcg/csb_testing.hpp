// Test helpers shared by the CsbMatrix suites (one process and MPI): a lower triangle as a sorted
// map, a COO listing, host copies of Views and the checks every built matrix must pass.
#pragma once

#include "test_check.hpp"

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace csb_test {

/// A lower triangle as a sorted map (row, col) -> value.
using Lower = std::map<std::pair<std::int64_t, std::int64_t>, double>;

struct Coo {
  std::vector<std::int64_t> rows, cols;
  std::vector<double> vals;
  void push(std::int64_t i, std::int64_t j, double x) {
    rows.push_back(i);
    cols.push_back(j);
    vals.push_back(x);
  }
};

/// A rank-1 View copied to a host vector.
template <class View>
std::vector<typename View::non_const_value_type> host(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<typename View::non_const_value_type>(h.data(), h.data() + h.extent(0));
}

/// H.to_coo() lists exactly m's entries in order (bit for bit), and the entry counts match m.
template <class Matrix>
void expect_entries(const Matrix& H, const Lower& m) {
  std::vector<std::int64_t> r, c;
  std::vector<double> v;
  H.to_coo(r, c, v);
  ASSERT_EQ(r.size(), m.size());
  std::size_t k = 0;
  std::int64_t diag = 0;
  for (const auto& [ij, x] : m) {
    EXPECT_EQ(r[k], ij.first);
    EXPECT_EQ(c[k], ij.second);
    EXPECT_EQ(kess_test::bits(v[k]), kess_test::bits(x))
        << "(" << ij.first << ", " << ij.second << ")";
    diag += ij.first == ij.second;
    ++k;
  }
  EXPECT_EQ(H.stored_nonzeros(), std::int64_t(m.size()));
  EXPECT_EQ(H.nonzeros(), 2 * std::int64_t(m.size()) - diag);
}

}  // namespace csb_test
