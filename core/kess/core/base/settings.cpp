#include <kess/core/base/settings.hpp>

#include <kess/core/base/error.hpp>

#include <cstdlib>
#include <cstring>

namespace kess::core::settings {
namespace {
const char* get(const char* name) { return std::getenv(name); }
bool is(const char* name, const char* value) {
  const char* s = get(name);
  return s && std::strcmp(s, value) == 0;
}
int integer(const char* name) {
  const char* s = get(name);
  return s ? std::atoi(s) : 0;
}
double real(const char* name) {
  const char* s = get(name);
  return s ? std::atof(s) : 0.0;
}
}  // namespace

int num_threads() {
  const int t = integer("KESS_NUM_THREADS");
  return t > 0 ? t : 0;
}

bool park_blas() {
  static const bool on = !is("KESS_PARK_BLAS", "0");
  return on;
}

bool host_vectors() {
  static const bool on = !is("KESS_HOST_VECTORS", "0");
  return on;
}

int host_gemm() {
  static const int mode = is("KESS_HOST_GEMM", "0") ? 0 : is("KESS_HOST_GEMM", "1") ? 1 : -1;
  return mode;
}

int hh_mma() {
  static const int forced = integer("KESS_HH_MMA");
  return forced;
}

bool chase_kernel_portable() {
  static const bool portable = is("KESS_CHASE_KERNEL", "portable");
  return portable;
}

int bt_merge() {
  static const int merge = integer("KESS_BT_MERGE");
  return merge > 0 ? merge : 0;
}

double peak_gflops() { return real("KESS_PEAK_GFLOPS"); }
double peak_gbs() { return real("KESS_PEAK_GBS"); }

bool fault_injection(const char* site) {
  const char* s = get("KESS_FAULT_INJECT");
  if (!s || !site) return false;
  const std::size_t len = std::strlen(site);
  if (std::strncmp(s, site, len) != 0) return false;
  if (s[len] == '\0') return true;  // no rank: every process
  if (s[len] != ':') return false;
  char* end = nullptr;
  const long rank = std::strtol(s + len + 1, &end, 10);
  if (end == s + len + 1 || *end != '\0') return false;
  const int mine = error_rank();  // the world rank, once comm/ has set it; -1 without MPI
  return rank == (mine < 0 ? 0 : mine);
}

}  // namespace kess::core::settings
