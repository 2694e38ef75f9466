// Helpers shared by the benchmarks and kess-run: machine ceilings, timing, reference loops, JSON.
#pragma once

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kess::perf {

using HostMatrix = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

/// The unit's FP64 rate (GFLOP/s) and the memory bandwidth (GB/s) the floors are computed from.
/// Defaults: H100 SXM for Cuda (33.5 TFLOP/s FP64 FMA, 3000 GB/s copy rate), otherwise a rate
/// measured once with a host DGEMM; KESS_PEAK_GFLOPS / KESS_PEAK_GBS (core::settings) override.
struct Ceilings {
  double gflops;
  double gbs;
  std::string source;
};
Ceilings ceilings();

/// Floor in seconds for `flops` floating-point operations and `bytes` of memory traffic.
inline double floor_seconds(const Ceilings& c, double flops, double bytes) {
  const double a = flops / (c.gflops * 1e9), b = bytes / (c.gbs * 1e9);
  return a > b ? a : b;
}

double median(std::vector<double> v);

/// Random Householder reflectors: V (b x n, V(0,k) = 1) and tau = 2 / v^T v, from a seed.
void random_reflectors(int b, int n, std::uint64_t seed, const HostMatrix& V, const HostVector& tau);
/// Dense random matrix in [-1, 1), never exactly zero.
void random_matrix(std::uint64_t seed, const HostMatrix& X);
/// The plain host loop that defines the Householder chase (for checks).
void hh_chase_reference(const HostMatrix& V, const HostVector& tau, const HostMatrix& X);
/// max |A - B| / max |B|.
double relative_max_diff(const HostMatrix& A, const HostMatrix& B);

/// ||A||_1 = max_j sum_i |a_ij|, infinite when an entry is not finite (a plain running max would
/// skip a NaN column and report the others' norm: residual checks must fail on NaN results).
double one_norm(const HostMatrix& A);

/// Kokkos's version and enabled backends, for reports.
std::string kokkos_description();

/// "major.minor.patch" of the Kokkos kess is built with.
std::string kokkos_version();

/// The CPU's model name from /proc/cpuinfo ("unknown" where there is none).
std::string cpu_model();

/// The GPU the default execution space runs on (CUDA builds), else "".
std::string gpu_name();

/// The environment variables that change the timings (thread counts, OpenBLAS kernels, binding,
/// KESS_*), as "NAME=value" words in name order: what a rerun must set again.
std::string timing_environment();

/// argv as a shell command line (words with shell metacharacters single-quoted).
std::string command_line(int argc, char** argv);

/// The BLAS in use, for reports: with OpenBLAS its configuration, the kernel set it chose for this
/// CPU and its thread count (looked up at run time); otherwise "BLAS (not OpenBLAS)".
std::string blas_description();

/// Empty, or a hint when OpenBLAS runs kernels far older than the CPU: OpenBLAS 0.3.21 (Debian 12)
/// does not know newer CPUs (e.g. Xeons of family 6, model 207) and falls back to its Prescott
/// (SSE3) kernels, several times slower DGEMM than its SkylakeX ones on the same cores.
std::string blas_hint();

/// Minimal JSON object writer (flat key -> number/string).
class JsonReport {
 public:
  void set(const std::string& key, double value);
  void set(const std::string& key, const std::string& value);
  std::string str() const;
  void write(const std::string& path) const;

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

}  // namespace kess::perf
