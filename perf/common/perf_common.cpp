#include "perf_common.hpp"

#include <kess/core/io/output_file.hpp>

#include <kess/core/base/error.hpp>
#include <kess/core/base/settings.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/kess_config.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

extern char** environ;

namespace kess::perf {

namespace {
// One timed host DGEMM (n = 1000, after a warm-up): the host's FP64 rate.
double measure_host_gflops() {
  const int n = 1000;
  std::vector<double> a(n * n, 0.5), b(n * n, 0.25), c(n * n, 0.0);
  kess::core::lapack::gemm('N', 'N', n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  auto t0 = std::chrono::steady_clock::now();
  kess::core::lapack::gemm('N', 'N', n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * n * n * n / s * 1e-9;
}
}  // namespace

Ceilings ceilings() {
  static const Ceilings c = [] {
    Ceilings r;
#ifdef KOKKOS_ENABLE_CUDA
    if (std::is_same<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>::value) {
      r = {33500.0, 3000.0, "H100 SXM: 33.5 TFLOP/s FP64 FMA, 3.0 TB/s measured copy"};
    } else
#endif
    {
      r = {measure_host_gflops(), 20.0, "host DGEMM measured now; 20 GB/s assumed"};
    }
    const double gflops = core::settings::peak_gflops(), gbs = core::settings::peak_gbs();
    if (gflops > 0 || gbs > 0) {
      if (gflops > 0) r.gflops = gflops;
      if (gbs > 0) r.gbs = gbs;
      r.source = "KESS_PEAK_GFLOPS/KESS_PEAK_GBS";
    }
    return r;
  }();
  return c;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void random_reflectors(int b, int n, std::uint64_t seed, const HostMatrix& V,
                       const HostVector& tau) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int k = 0; k < n; ++k) {
    double vtv = 1.0;
    V(0, k) = 1.0;
    for (int i = 1; i < b; ++i) {
      V(i, k) = u(rng);
      vtv += V(i, k) * V(i, k);
    }
    tau(k) = 2.0 / vtv;
  }
}

void random_matrix(std::uint64_t seed, const HostMatrix& X) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (size_t j = 0; j < X.extent(1); ++j)
    for (size_t i = 0; i < X.extent(0); ++i) {
      double x = u(rng);
      X(i, j) = x == 0.0 ? 0.5 : x;
    }
}

void hh_chase_reference(const HostMatrix& V, const HostVector& tau, const HostMatrix& X) {
  const int b = V.extent(0), n = V.extent(1), nc = X.extent(1);
  for (int j = 0; j < nc; ++j)
    for (int k = n - 1; k >= 0; --k) {
      double d = 0;
      for (int i = 0; i < b; ++i) d += V(i, k) * X(k + i, j);
      const double td = tau(k) * d;
      for (int i = 0; i < b; ++i) X(k + i, j) -= td * V(i, k);
    }
}

double relative_max_diff(const HostMatrix& A, const HostMatrix& B) {
  double d = 0, s = 0;
  for (size_t j = 0; j < A.extent(1); ++j)
    for (size_t i = 0; i < A.extent(0); ++i) {
      const double e = std::abs(A(i, j) - B(i, j));
      if (!std::isfinite(e)) return std::numeric_limits<double>::infinity();  // NaN never passes
      d = std::max(d, e);
      s = std::max(s, std::abs(B(i, j)));
    }
  return s > 0 ? d / s : d;
}

double one_norm(const HostMatrix& A) {
  double m = 0;
  for (size_t j = 0; j < A.extent(1); ++j) {
    double s = 0;
    for (size_t i = 0; i < A.extent(0); ++i) s += std::abs(A(i, j));
    if (!std::isfinite(s)) return std::numeric_limits<double>::infinity();
    m = std::max(m, s);
  }
  return m;
}

std::string kokkos_description() {
  std::ostringstream os;
  os << "Kokkos " << KOKKOS_VERSION / 10000 << "." << KOKKOS_VERSION / 100 % 100 << "."
     << KOKKOS_VERSION % 100 << ", default execution space "
     << Kokkos::DefaultExecutionSpace::name() << ", kess " << KESS_VERSION_STRING;
  return os.str();
}

std::string kokkos_version() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
         "." + std::to_string(KOKKOS_VERSION % 100);
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto first = line.find_first_not_of(" \t", colon + 1);
    if (first != std::string::npos) return line.substr(first);
  }
  return "unknown";
}

std::string gpu_name() {
#ifdef KOKKOS_ENABLE_CUDA
  if (std::is_same<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>::value) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, Kokkos::Cuda().cuda_device()) == cudaSuccess)
      return prop.name;
    return "unknown CUDA device";
  }
#endif
  return "";
}

std::string timing_environment() {
  static const char* const prefixes[] = {"KESS_", "OPENBLAS_", "OMP_", "MKL_", "GOTO_",
                                         "BLIS_", "CUDA_VISIBLE_DEVICES", "KOKKOS_"};
  std::vector<std::string> words;
  for (char** e = environ; e && *e; ++e)
    for (const char* p : prefixes)
      if (std::strncmp(*e, p, std::strlen(p)) == 0) {
        words.emplace_back(*e);
        break;
      }
  std::sort(words.begin(), words.end());
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_=./:,+@%") == std::string::npos;
    std::string q = a;
    if (!plain) {
      q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      q += "'";
    }
    s += (i ? " " : "") + q;
  }
  return s;
}

namespace {
template <class F>
F blas_symbol(const char* name) {
  return reinterpret_cast<F>(kess::core::lapack::openblas_symbol(name));
}
}  // namespace

std::string blas_description() {
  using Str = char* (*)();
  using Int = int (*)();
  auto config = blas_symbol<Str>("openblas_get_config");
  auto core = blas_symbol<Str>("openblas_get_corename");
  auto threads = blas_symbol<Int>("openblas_get_num_threads");
  if (!config || !core) return "BLAS (not OpenBLAS)";
  std::ostringstream os;
  os << "OpenBLAS (" << config() << "), kernels for " << core();
  if (threads) os << ", " << threads() << " threads";
  return os.str();
}

std::string blas_hint() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  using Str = char* (*)();
  auto core = blas_symbol<Str>("openblas_get_corename");
  if (!core) return "";
  const std::string name = core();
  const bool old = name == "Prescott" || name == "Core2" || name == "Penryn" || name == "Dunnington" ||
                   name == "Nehalem" || name == "Atom" || name == "Katmai" || name == "Northwood";
  if (!old || std::getenv("OPENBLAS_CORETYPE")) return "";
  __builtin_cpu_init();
  const char* better = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : nullptr;
  if (!better) return "";
  return "note: OpenBLAS runs its " + name + " kernels on this CPU (it does not recognize the " +
         "model); OPENBLAS_CORETYPE=" + better + " selects the kernels the CPU supports " +
         "(several times faster DGEMM)";
#else
  return "";
#endif
}

void JsonReport::set(const std::string& key, double value) {
  std::ostringstream os;
  os.precision(17);
  if (std::isfinite(value))
    os << value;
  else
    os << "null";
  items_.emplace_back(key, os.str());
}

void JsonReport::set(const std::string& key, const std::string& value) {
  std::string q = "\"";
  for (char ch : value) {
    if (ch == '"' || ch == '\\') q += '\\';
    q += ch;
  }
  items_.emplace_back(key, q + "\"");
}

std::string JsonReport::str() const {
  std::string s = "{\n";
  for (size_t i = 0; i < items_.size(); ++i)
    s += "  \"" + items_[i].first + "\": " + items_[i].second + (i + 1 < items_.size() ? ",\n" : "\n");
  return s + "}\n";
}

void JsonReport::write(const std::string& path) const {
  core::OutputFile out(path, "JsonReport::write");
  std::fputs(str().c_str(), out.get());
  out.commit();
}

}  // namespace kess::perf
