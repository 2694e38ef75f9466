// One problem per key, built on first use and kept for the whole run of a benchmark binary.
#pragma once

#include <Kokkos_Core.hpp>

#include <map>
#include <memory>

namespace kess::perf::bench {

/// The Problem for `key`, built by build(problem) the first time. Device Views must go before
/// Kokkos::finalize, so the cache is emptied by a finalize hook (one cache per Problem and Build).
template <class Problem, class Build>
const Problem& cached_problem(int key, const Build& build) {
  static auto* cache = [] {
    auto* c = new std::map<int, std::unique_ptr<Problem>>;
    Kokkos::push_finalize_hook([c] { c->clear(); });
    return c;
  }();
  auto& p = (*cache)[key];
  if (!p) {
    p = std::make_unique<Problem>();
    build(*p);
  }
  return *p;
}

}  // namespace kess::perf::bench
