#include <kess/core/base/error.hpp>

#include <atomic>

namespace kess {
namespace {
std::atomic<int> g_error_rank{-1};

std::string decorate(std::string_view function, std::string_view message) {
  std::string s = "kess::";
  s.append(function).append(": ").append(message);
  if (int r = g_error_rank.load(); r >= 0) s.append(" [rank ").append(std::to_string(r)).append("]");
  return s;
}
}  // namespace

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::invalid_argument: return "invalid_argument";
    case ErrorKind::not_symmetric: return "not_symmetric";
    case ErrorKind::not_positive_definite: return "not_positive_definite";
    case ErrorKind::singular: return "singular";
    case ErrorKind::no_convergence: return "no_convergence";
    case ErrorKind::io: return "io";
    case ErrorKind::mpi: return "mpi";
    case ErrorKind::device: return "device";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, std::string_view function, std::string_view message)
    : std::runtime_error(decorate(function, message)),
      kind_(kind),
      function_(function),
      message_(message) {}

void set_error_rank(int rank) noexcept { g_error_rank.store(rank); }
int error_rank() noexcept { return g_error_rank.load(); }

}  // namespace kess
