// The Newton iteration's record (kess::NewtonHistory).
#include <kess/solvers/matrix_functions.hpp>

#include <cstdio>
#include <string>

namespace kess {

std::string NewtonHistory::str() const {
  std::string s;
  const int count = static_cast<int>(rel_change.size());
  const int k0 = count > 12 ? count - 12 : 0;
  if (k0 > 0) s += "...; ";
  for (int k = k0; k < count; ++k) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%sk=%d rel=%.2e mu=%.3g", k > k0 ? "; " : "", k + 1,
                  rel_change[k], mu[k]);
    s += buf;
  }
  return s;
}

}  // namespace kess
