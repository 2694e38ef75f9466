// kess-run: the command-line driver. One executable, one subcommand per kernel or solver.
#include "args.hpp"
#include "perf_common.hpp"

#include <kess/comm/communicator.hpp>
#include <kess/comm/dense/process_grid.hpp>
#include <kess/comm/scope_guard.hpp>
#include <kess/core/base/error.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <exception>
#include <new>
#include <sstream>
#include <string>

namespace kess::run {

Args::Args(int argc, char** argv, const std::set<std::string>& known,
           const std::set<std::string>& switches) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    require_arg(a.rfind("--", 0) == 0, "kess-run", "unexpected argument '" + a + "' (see --help)");
    std::string name = a.substr(2);
    if (a == kHelpFlag) name = "help";
    require_arg(known.count(name) > 0, "kess-run", "unknown option '" + a + "' (see --help)");
    if (switches.count(name)) {
      values_[name] = "1";
      continue;
    }
    require_arg(i + 1 < argc, "kess-run", "option '" + a + "' needs a value");
    values_[name] = argv[++i];
  }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::int64_t Args::integer(const std::string& name, std::int64_t fallback, std::int64_t lo,
                           std::int64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  require_arg(!s.empty() && end == s.c_str() + s.size(), "kess-run",
              "option '--" + name + "' expects an integer, got '" + s + "'");
  require_arg(errno != ERANGE && v >= lo && v <= hi, "kess-run",
              "option '--" + name + "' must be in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "], got " + s);
  return v;
}

double Args::real(const std::string& name, double fallback, double lo) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  require_arg(!s.empty() && end == s.c_str() + s.size(), "kess-run",
              "option '--" + name + "' expects a number, got '" + s + "'");
  require_arg(std::isfinite(v) && v >= lo, "kess-run",
              "option '--" + name + "' must be a finite number >= " + std::to_string(lo) +
                  ", got " + s);
  return v;
}

std::vector<int> Args::positive_ints(const std::string& name) const {
  const std::string s = str(name, "");
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    require_arg(!item.empty() && end == item.c_str() + item.size() && v >= 1 && v <= kIntMax,
                "kess-run", "option '--" + name + "' expects positive integers separated by "
                            "commas, got '" + s + "'");
    out.push_back(static_cast<int>(v));
  }
  require_arg(!out.empty(), "kess-run", "option '--" + name + "' is empty");
  return out;
}

std::pair<int, int> Args::grid(int nprocs) const {
  if (!has("grid")) return comm::ProcessGrid::squarest_shape(nprocs);
  const std::string s = str("grid", "");
  const auto x = s.find('x');
  int p = 0, q = 0;
  if (x != std::string::npos) {
    p = std::atoi(s.substr(0, x).c_str());
    q = std::atoi(s.substr(x + 1).c_str());
  }
  require_arg(p >= 1 && q >= 1 && p * q == nprocs, "kess-run",
              "--grid '" + s + "' must be PxQ with P Q = " + std::to_string(nprocs) + " ranks");
  return {p, q};
}

namespace {
struct Entry {
  std::string summary;
  Command fn;
};
std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}
}  // namespace

Registrar::Registrar(const char* name, const char* summary, Command fn) {
  registry()[name] = Entry{summary, fn};
}

}  // namespace kess::run

namespace {
std::string usage() {
  std::string s = "usage: kess-run <subcommand> [options]\n\nsubcommands:\n";
  for (const auto& [name, e] : kess::run::registry()) {
    s += "  " + name + std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') + " " +
         e.summary + "\n";
  }
  return s +
         "\n`kess-run <subcommand> --help` lists a subcommand's options.\n"
         "Kokkos options (--kokkos-num-threads=N, --kokkos-device-id=N, ...) are accepted too.\n";
}
}  // namespace

/// Under mpiexec with several ranks: ends all of them (an error this rank alone raised).
static void abort_other_ranks() {
  const auto world = kess::comm::Communicator::world();
  if (world.size() > 1) world.abort(1);
}

int main(int argc, char** argv) {
  // Kokkos answers a bare --help with its own text: hand kess's help flag over under another name.
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) argv[i] = kess::run::kHelpFlag;
  kess::ScopeGuard guard(argc, argv);  // strips the --kokkos-* options
  if (argc < 2 || !std::strcmp(argv[1], kess::run::kHelpFlag)) {
    std::fputs(usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string sub = argv[1];
  bool help = false;
  for (int i = 1; i < argc; ++i) help = help || !std::strcmp(argv[i], kess::run::kHelpFlag);
  if (!help && kess::comm::Communicator::world().rank() == 0) {
    const std::string hint = kess::perf::blas_hint();
    if (!hint.empty()) std::fprintf(stderr, "kess-run: %s\n", hint.c_str());
  }
  try {
    const auto it = kess::run::registry().find(sub);
    if (it != kess::run::registry().end()) return it->second.fn(argc - 1, argv + 1);
    std::fprintf(stderr, "kess-run: unknown subcommand '%s'\n\n%s", sub.c_str(), usage().c_str());
    return 2;
  } catch (const kess::Error& e) {
    // kess's collective errors are raised on every rank; any other may be on this rank alone,
    // and the others would wait for it in a collective: they end with it (below).
    std::fprintf(stderr, "error (%s): %s\n", kess::to_string(e.kind()), e.what());
    return 1;
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "error (out_of_memory): an allocation failed (%s)\n", e.what());
    abort_other_ranks();
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    abort_other_ranks();
    return 1;
  }
}
