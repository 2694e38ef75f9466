// kess::Error — the one exception type kess throws (docs/design/architecture.md, "Conventions").
#pragma once

#include <kess/core/base/enum_names.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace kess {

enum class ErrorKind {
  invalid_argument,
  not_symmetric,
  not_positive_definite,
  singular,
  no_convergence,
  io,
  mpi,
  device,  ///< the accelerator runtime refused (a kernel launch, a device setting)
  out_of_memory,  ///< an allocation failed, or its size does not fit the address space
};

template <>
struct EnumNames<ErrorKind> {
  static constexpr const char* what = "error kind";
  static constexpr EnumName<ErrorKind> names[] = {
      {ErrorKind::invalid_argument, "invalid_argument"},
      {ErrorKind::not_symmetric, "not_symmetric"},
      {ErrorKind::not_positive_definite, "not_positive_definite"},
      {ErrorKind::singular, "singular"},
      {ErrorKind::no_convergence, "no_convergence"},
      {ErrorKind::io, "io"},
      {ErrorKind::mpi, "mpi"},
      {ErrorKind::device, "device"},
      {ErrorKind::out_of_memory, "out_of_memory"}};
};

/// What went wrong, where (the public function), and on which MPI rank. what() reads
/// "kess::<function>: <message> [rank r]"; the rank part appears once comm/ has told core
/// the process's rank (set_error_rank).
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string_view function, std::string_view message);
  ErrorKind kind() const noexcept { return kind_; }
  const std::string& function() const noexcept { return function_; }
  /// The message without the function and rank decorations.
  const std::string& message() const noexcept { return message_; }

 private:
  ErrorKind kind_;
  std::string function_;
  std::string message_;
};

/// Throws Error(kind, function, message) unless `ok`.
inline void require(bool ok, ErrorKind kind, std::string_view function, std::string_view message) {
  if (!ok) throw Error(kind, function, message);
}

/// Shorthand for the common case: an argument with a bad value.
inline void require_arg(bool ok, std::string_view function, std::string_view message) {
  require(ok, ErrorKind::invalid_argument, function, message);
}

/// Called by the comm layer once the process knows its rank; -1 (the default) omits the rank.
void set_error_rank(int rank) noexcept;
int error_rank() noexcept;

}  // namespace kess
