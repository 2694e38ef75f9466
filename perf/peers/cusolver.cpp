#include "cusolver.hpp"

#include <Kokkos_Core.hpp>

#if defined(KESS_PERF_CUSOLVER) && defined(KOKKOS_ENABLE_CUDA)
#include <cusolverDn.h>
#endif

namespace kess::perf::peers::cusolver {

#if defined(KESS_PERF_CUSOLVER) && defined(KOKKOS_ENABLE_CUDA)

namespace {
using DeviceVector = Kokkos::View<double*, Kokkos::CudaSpace>;
}

bool available() { return true; }

struct Syevd::Impl {
  int n, nev;
  cusolverDnHandle_t handle;
  DeviceVector w{"kess::bench::cusolver_w", std::size_t(n)};
  Kokkos::View<int, Kokkos::CudaSpace> info{"kess::bench::cusolver_info"};
  DeviceVector work;
  int lwork = 0, found = 0;
  Impl(int n_, int nev_) : n(n_), nev(nev_) { cusolverDnCreate(&handle); }
  ~Impl() { cusolverDnDestroy(handle); }
};

Syevd::Syevd(double* a, int n, int nev) : impl_(std::make_unique<Impl>(n, nev)) {
  Impl& s = *impl_;
  const auto vec = CUSOLVER_EIG_MODE_VECTOR;
  const auto low = CUBLAS_FILL_MODE_LOWER;
  if (nev > 0)
    cusolverDnDsyevdx_bufferSize(s.handle, vec, CUSOLVER_EIG_RANGE_I, low, n, a, n, 0.0, 0.0, 1,
                                 nev, &s.found, s.w.data(), &s.lwork);
  else
    cusolverDnDsyevd_bufferSize(s.handle, vec, low, n, a, n, s.w.data(), &s.lwork);
  s.work = DeviceVector("kess::bench::cusolver_work", s.lwork);
}
Syevd::~Syevd() = default;

void Syevd::operator()(double* a, int m, int k) {
  Impl& s = *impl_;
  const auto vec = CUSOLVER_EIG_MODE_VECTOR;
  const auto low = CUBLAS_FILL_MODE_LOWER;
  if (s.nev > 0)
    cusolverDnDsyevdx(s.handle, vec, CUSOLVER_EIG_RANGE_I, low, m, a, m, 0.0, 0.0, 1, k, &s.found,
                      s.w.data(), s.work.data(), s.lwork, s.info.data());
  else
    cusolverDnDsyevd(s.handle, vec, low, m, a, m, s.w.data(), s.work.data(), s.lwork,
                     s.info.data());
}

std::string Syevd::label() const {
  return impl_->nev > 0 ? "cuSOLVER syevdx (" + std::to_string(impl_->nev) + " vectors)"
                        : std::string("cuSOLVER syevd (all vectors)");
}

struct Sygvd::Impl {
  int n;
  cusolverDnHandle_t handle;
  DeviceVector w{"kess::bench::cusolver_w", std::size_t(n)};
  Kokkos::View<int, Kokkos::CudaSpace> info{"kess::bench::cusolver_info"};
  DeviceVector work;
  int lwork = 0;
  explicit Impl(int n_) : n(n_) { cusolverDnCreate(&handle); }
  ~Impl() { cusolverDnDestroy(handle); }
};

Sygvd::Sygvd(double* a, double* b, int n) : impl_(std::make_unique<Impl>(n)) {
  Impl& s = *impl_;
  cusolverDnDsygvd_bufferSize(s.handle, CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR,
                              CUBLAS_FILL_MODE_LOWER, n, a, n, b, n, s.w.data(), &s.lwork);
  s.work = DeviceVector("kess::bench::cusolver_work", s.lwork);
}
Sygvd::~Sygvd() = default;

void Sygvd::operator()(double* a, double* b, int m) {
  Impl& s = *impl_;
  cusolverDnDsygvd(s.handle, CUSOLVER_EIG_TYPE_1, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                   m, a, m, b, m, s.w.data(), s.work.data(), s.lwork, s.info.data());
}

struct GetrfGetrs::Impl {
  int n;
  cusolverDnHandle_t handle;
  Kokkos::View<int*, Kokkos::CudaSpace> ipiv{"kess::bench::ipiv", std::size_t(n)};
  Kokkos::View<int, Kokkos::CudaSpace> info{"kess::bench::info"};
  DeviceVector work;
  int lwork = 0;
  explicit Impl(int n_) : n(n_) { cusolverDnCreate(&handle); }
  ~Impl() { cusolverDnDestroy(handle); }
};

GetrfGetrs::GetrfGetrs(double* a, int n) : impl_(std::make_unique<Impl>(n)) {
  Impl& s = *impl_;
  cusolverDnDgetrf_bufferSize(s.handle, n, n, a, n, &s.lwork);
  s.work = DeviceVector("kess::bench::work", s.lwork);
}
GetrfGetrs::~GetrfGetrs() = default;

void GetrfGetrs::operator()(double* a, double* b, int nrhs) {
  Impl& s = *impl_;
  const int n = s.n;
  cusolverDnDgetrf(s.handle, n, n, a, n, s.work.data(), s.ipiv.data(), s.info.data());
  cusolverDnDgetrs(s.handle, CUBLAS_OP_N, n, nrhs, a, n, s.ipiv.data(), b, n, s.info.data());
}

#else  // no cuSOLVER in this build: the benchmarks skip these peers

bool available() { return false; }

struct Syevd::Impl {};
Syevd::Syevd(double*, int, int) {}
Syevd::~Syevd() = default;
void Syevd::operator()(double*, int, int) {}
std::string Syevd::label() const { return "cuSOLVER (not built)"; }

struct Sygvd::Impl {};
Sygvd::Sygvd(double*, double*, int) {}
Sygvd::~Sygvd() = default;
void Sygvd::operator()(double*, double*, int) {}

struct GetrfGetrs::Impl {};
GetrfGetrs::GetrfGetrs(double*, int) {}
GetrfGetrs::~GetrfGetrs() = default;
void GetrfGetrs::operator()(double*, double*, int) {}

#endif

}  // namespace kess::perf::peers::cusolver
