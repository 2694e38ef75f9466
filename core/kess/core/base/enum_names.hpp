// One to_string / from_string pair for every enum of kess's API: each enum E lists its names once,
// in a specialization of kess::EnumNames<E> beside its declaration.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace kess {

/// A name of an enum value; the first name given for a value is its canonical one (to_string),
/// later ones are accepted aliases (from_string).
template <class E>
struct EnumName {
  E value;
  const char* name;
};

/// Specialized for each API enum E with `static constexpr const char* what` (the option's name in
/// messages, e.g. "eigh method") and `static constexpr EnumName<E> names[]`.
template <class E>
struct EnumNames;

namespace detail {
template <class E, class = void>
struct has_enum_names : std::false_type {};
template <class E>
struct has_enum_names<E, std::void_t<decltype(EnumNames<E>::names)>> : std::true_type {};

/// Throws kess::Error (invalid_argument) from `from_string`: `name` is not one of `expected`.
[[noreturn]] void throw_unknown_enum_name(const char* what, std::string_view name,
                                          const std::string& expected);
/// s with '_' read as '-' and "automatic" as "auto" (the spellings from_string accepts).
std::string canonical_enum_spelling(std::string_view s);
}  // namespace detail

/// The canonical name of e ("auto", "two-stage", "dc", ...).
template <class E, std::enable_if_t<detail::has_enum_names<E>::value, int> = 0>
const char* to_string(E e) noexcept {
  for (const auto& n : EnumNames<E>::names)
    if (n.value == e) return n.name;
  return "?";
}

/// The value named `name` (a canonical name or an alias; '_' may stand for '-', "automatic" for
/// "auto"); throws kess::Error (invalid_argument) listing the canonical names otherwise.
template <class E>
E from_string(std::string_view name) {
  static_assert(detail::has_enum_names<E>::value, "kess::from_string: not a kess enum");
  const std::string s = detail::canonical_enum_spelling(name);
  for (const auto& n : EnumNames<E>::names)
    if (s == detail::canonical_enum_spelling(n.name)) return n.value;
  std::string expected;
  for (const auto& n : EnumNames<E>::names)
    if (to_string(n.value) == std::string_view(n.name))
      expected += (expected.empty() ? "'" : ", '") + std::string(n.name) + "'";
  detail::throw_unknown_enum_name(EnumNames<E>::what, name, expected);
}

}  // namespace kess
