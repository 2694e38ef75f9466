// cuSPARSE, the GPU peer of kess::spmm: SpMM (Y = A X) with a full CSR matrix (both triangles,
// 32-bit indices) and a dense block of k vectors, row-major with CUSPARSE_SPMM_CSR_ALG2 or
// column-major with CUSPARSE_SPMM_CSR_ALG1. Descriptors and the workspace are made in the
// constructor (untimed); operator() runs the product on the default stream and waits for it.
// Built with cuSPARSE in CUDA builds where CMake finds CUDA::cusparse; otherwise available() is
// false. All pointers are device pointers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace kess::perf::peers::cusparse {

/// Whether this build has cuSPARSE.
bool available();

class Spmm {
 public:
  /// A: n x n CSR (row_ptr n + 1 entries, nnz columns and values); X, Y: n x k, row-major
  /// (leading dimension k) when row_major, else column-major (leading dimension n).
  Spmm(std::int64_t n, std::int64_t nnz, const int* row_ptr, const int* cols, const double* vals,
       int k, bool row_major, const double* x, double* y);
  ~Spmm();
  /// Y = A X; false (and error() says why) when cuSPARSE refused.
  bool operator()();
  std::string label() const;
  const std::string& error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kess::perf::peers::cusparse
