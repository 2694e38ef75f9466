#include "cusparse.hpp"

#include <Kokkos_Core.hpp>

#if defined(KESS_PERF_CUSPARSE) && defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#include <cusparse.h>
#endif

namespace kess::perf::peers::cusparse {

#if defined(KESS_PERF_CUSPARSE) && defined(KOKKOS_ENABLE_CUDA)

bool available() { return true; }

struct Spmm::Impl {
  cusparseHandle_t handle = nullptr;
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnMatDescr_t x = nullptr, y = nullptr;
  cusparseSpMMAlg_t alg = CUSPARSE_SPMM_CSR_ALG2;
  bool row_major = true;
  void* buffer = nullptr;
  std::string error;
  bool check(cusparseStatus_t s, const char* what) {
    if (s == CUSPARSE_STATUS_SUCCESS) return true;
    if (error.empty()) error = std::string(what) + ": " + cusparseGetErrorString(s);
    return false;
  }
  ~Impl() {
    if (buffer) cudaFree(buffer);
    if (x) cusparseDestroyDnMat(x);
    if (y) cusparseDestroyDnMat(y);
    if (a) cusparseDestroySpMat(a);
    if (handle) cusparseDestroy(handle);
  }
};

Spmm::Spmm(std::int64_t n, std::int64_t nnz, const int* row_ptr, const int* cols,
           const double* vals, int k, bool row_major, const double* x, double* y)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.row_major = row_major;
  s.alg = row_major ? CUSPARSE_SPMM_CSR_ALG2 : CUSPARSE_SPMM_CSR_ALG1;
  const auto order = row_major ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
  const std::int64_t ld = row_major ? k : n;
  if (!s.check(cusparseCreate(&s.handle), "cusparseCreate")) return;
  if (!s.check(cusparseCreateCsr(&s.a, n, n, nnz, const_cast<int*>(row_ptr), const_cast<int*>(cols),
                                 const_cast<double*>(vals), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
               "cusparseCreateCsr"))
    return;
  if (!s.check(cusparseCreateDnMat(&s.x, n, k, ld, const_cast<double*>(x), CUDA_R_64F, order),
               "cusparseCreateDnMat"))
    return;
  if (!s.check(cusparseCreateDnMat(&s.y, n, k, ld, y, CUDA_R_64F, order), "cusparseCreateDnMat"))
    return;
  const double one = 1, zero = 0;
  std::size_t bytes = 0;
  if (!s.check(cusparseSpMM_bufferSize(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &one, s.a, s.x, &zero, s.y,
                                       CUDA_R_64F, s.alg, &bytes),
               "cusparseSpMM_bufferSize"))
    return;
  if (bytes > 0 && cudaMalloc(&s.buffer, bytes) != cudaSuccess) {
    s.error = "cudaMalloc of the SpMM workspace failed";
    return;
  }
  s.check(cusparseSpMM_preprocess(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &one, s.a, s.x, &zero, s.y,
                                  CUDA_R_64F, s.alg, s.buffer),
          "cusparseSpMM_preprocess");
}
Spmm::~Spmm() = default;

bool Spmm::operator()() {
  Impl& s = *impl_;
  if (!s.error.empty()) return false;
  const double one = 1, zero = 0;
  if (!s.check(
          cusparseSpMM(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                       &one, s.a, s.x, &zero, s.y, CUDA_R_64F, s.alg, s.buffer),
          "cusparseSpMM"))
    return false;
  if (cudaStreamSynchronize(nullptr) != cudaSuccess) {
    s.error = "cudaStreamSynchronize failed";
    return false;
  }
  return true;
}

std::string Spmm::label() const {
  return impl_->row_major ? "cuSPARSE SpMM CSR_ALG2 (row-major)"
                          : "cuSPARSE SpMM CSR_ALG1 (column-major)";
}
const std::string& Spmm::error() const { return impl_->error; }

#else

bool available() { return false; }
struct Spmm::Impl {
  std::string error = "cuSPARSE is not built (CUDA builds with CUDA::cusparse only)";
};
Spmm::Spmm(std::int64_t, std::int64_t, const int*, const int*, const double*, int, bool,
           const double*, double*)
    : impl_(std::make_unique<Impl>()) {}
Spmm::~Spmm() = default;
bool Spmm::operator()() { return false; }
std::string Spmm::label() const { return "cuSPARSE (not built)"; }
const std::string& Spmm::error() const { return impl_->error; }

#endif

}  // namespace kess::perf::peers::cusparse
