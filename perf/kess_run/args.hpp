// Tiny flag parser for kess-run subcommands: --name value pairs and --flag switches.
#pragma once

#include <kess/core/base/error.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kess::run {

/// The largest value of an int option (block sizes, widths).
inline constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

/// What kess-run's main passes on for --help / -h (Kokkos would answer a bare --help itself).
inline char kHelpFlag[] = "--kess-help";

/// Parses --name value pairs; "--help" is always accepted (as the switch "help").
class Args {
 public:
  /// `known`: every accepted flag (without "--"); `switches`: those that take no value.
  Args(int argc, char** argv, const std::set<std::string>& known,
       const std::set<std::string>& switches = {"help"});
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string str(const std::string& name, const std::string& fallback) const;
  /// --name as an integer in [lo, hi] (fallback when absent); otherwise an invalid_argument error
  /// that names the option and the range.
  std::int64_t integer(const std::string& name, std::int64_t fallback,
                       std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t hi = std::numeric_limits<std::int64_t>::max()) const;
  /// --name as a finite number >= lo (fallback when absent).
  double real(const std::string& name, double fallback,
              double lo = -std::numeric_limits<double>::max()) const;
  /// --name as comma-separated positive ints ("5,13,23"); an error names the option otherwise.
  std::vector<int> positive_ints(const std::string& name) const;
  /// --grid PxQ with P Q = nprocs, or the squarest grid of nprocs when absent: {P, Q}.
  std::pair<int, int> grid(int nprocs) const;

 private:
  std::map<std::string, std::string> values_;
};

/// A subcommand: argv[0] is the subcommand's name; returns the process exit code.
using Command = int (*)(int argc, char** argv);

/// Each kess_run/cmd_*.cpp registers its subcommand with a file-scope Registrar:
///   static const kess::run::Registrar reg("hh-chase", "one-line summary", &cmd_hh_chase);
struct Registrar {
  Registrar(const char* name, const char* summary, Command fn);
};

}  // namespace kess::run
