#include <kess/core/hh_chase.hpp>

namespace kess {

const char* to_string(HhChaseVariant v) noexcept {
  return v == HhChaseVariant::paper ? "paper" : "fast";
}

HhChaseVariant parse_hh_chase_variant(const std::string& name) {
  if (name == "paper") return HhChaseVariant::paper;
  if (name == "fast") return HhChaseVariant::fast;
  throw Error(ErrorKind::invalid_argument, "parse_hh_chase_variant",
              "argument 'variant' = '" + name + "': expected 'paper' or 'fast'");
}

}  // namespace kess
