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

Error::Error(ErrorKind kind, std::string_view function, std::string_view message)
    : std::runtime_error(decorate(function, message)),
      kind_(kind),
      function_(function),
      message_(message) {}

void set_error_rank(int rank) noexcept { g_error_rank.store(rank); }
int error_rank() noexcept { return g_error_rank.load(); }

namespace detail {
void throw_unknown_enum_name(const char* what, std::string_view name, const std::string& expected) {
  throw Error(ErrorKind::invalid_argument, "from_string",
              std::string("unknown ") + what + " '" + std::string(name) + "' (expected " + expected +
                  ")");
}

std::string canonical_enum_spelling(std::string_view s) {
  std::string t(s);
  for (char& c : t)
    if (c == '_') c = '-';
  return t == "automatic" ? std::string("auto") : t;
}
}  // namespace detail

}  // namespace kess
