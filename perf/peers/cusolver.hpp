// cuSOLVER, the GPU peer of kess::eigh and kess::solve: dense syevd / syevdx / sygvd and
// getrf + getrs on the default CUDA stream. Handles and workspaces are made in the constructors
// (untimed); operator() is the call a benchmark times (asynchronous: the caller fences). Built with
// cuSOLVER in CUDA builds where CMake finds CUDA::cusolver; otherwise available() is false.
// Matrices are column-major in device memory, leading dimension = their order.
#pragma once

#include <memory>
#include <string>

namespace kess::perf::peers::cusolver {

/// Whether this build has cuSOLVER.
bool available();

/// syevd (all eigenpairs) or, with nev > 0, syevdx (eigenpairs 1..nev by index range).
class Syevd {
 public:
  /// Workspace for order n (a: any n x n device matrix, for the query); nev <= 0: syevd, else
  /// syevdx.
  Syevd(double* a, int n, int nev);
  ~Syevd();
  /// Eigenpairs of the m x m matrix a (m <= n), the first k of them for syevdx.
  void operator()(double* a, int m, int k);
  std::string label() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// sygvd: A x = lambda B x (itype 1), all vectors.
class Sygvd {
 public:
  Sygvd(double* a, double* b, int n);
  ~Sygvd();
  void operator()(double* a, double* b, int m);
  static const char* label() { return "cuSOLVER sygvd (all vectors)"; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// getrf then getrs (no transpose) with nrhs right-hand sides: A Y = B, or A^-1 for B = I
/// (cuSOLVER has no getri).
class GetrfGetrs {
 public:
  GetrfGetrs(double* a, int n);
  ~GetrfGetrs();
  void operator()(double* a, double* b, int nrhs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kess::perf::peers::cusolver
