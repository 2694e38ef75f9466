#pragma once
// Helpers for the tests' error measures and expected errors.
#include <kess/core/base/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace kess_test {

/// The larger of two error measures, NaN if either is NaN. std::max(worst, NaN) returns worst, so a
/// result with NaN entries would pass a check written with it (seen: eigenvectors all NaN in the
/// merge's non-deflated columns, a residual of 1e-16 from the deflated ones).
inline double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}

/// The bit pattern of x (tests that compare values exactly, NaNs and signed zeros included).
inline std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// Runs f, expects a kess::Error of `kind`, and returns it.
template <class F>
kess::Error expect_error(F&& f, kess::ErrorKind kind) {
  try {
    f();
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e;
  }
  ADD_FAILURE() << "no kess::Error thrown";
  return kess::Error(kind, "none", "none");
}

inline bool contains(const kess::Error& e, const std::string& s) {
  return std::string(e.what()).find(s) != std::string::npos;
}

}  // namespace kess_test
