#pragma once
// Helpers for the tests' error measures.
#include <algorithm>
#include <cmath>
#include <limits>

namespace kess_test {

/// The larger of two error measures, NaN if either is NaN. std::max(worst, NaN) returns worst, so a
/// result with NaN entries would pass a check written with it (seen: eigenvectors all NaN in the
/// merge's non-deflated columns, a residual of 1e-16 from the deflated ones).
inline double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}

}  // namespace kess_test
