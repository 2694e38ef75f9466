// The only place that declares Fortran BLAS/LAPACK symbols.
#include <kess/core/base/settings.hpp>
#include <kess/core/linalg/lapack.hpp>

#include <kess/core/host/gemm.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if __has_include(<dlfcn.h>)
#include <dlfcn.h>
#define KESS_HAVE_DLSYM 1
#endif

extern "C" {
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*,
            const double*, const int*, const double*, const int*, const double*, double*,
            const int*);
void dsymm_(const char*, const char*, const int*, const int*, const double*, const double*,
            const int*, const double*, const int*, const double*, double*, const int*);
void dsyr2k_(const char*, const char*, const int*, const int*, const double*, const double*,
             const int*, const double*, const int*, const double*, double*, const int*);
void dgesv_(const int*, const int*, double*, const int*, int*, double*, const int*, int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);
void dgetri_(const int*, double*, const int*, const int*, double*, const int*, int*);
void dpotrf_(const char*, const int*, double*, const int*, int*);
void dgeqrf_(const int*, const int*, double*, const int*, double*, double*, const int*, int*);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*,
             const int*, int*, const int*, int*);
void dsygvd_(const int*, const char*, const char*, const int*, double*, const int*, double*,
             const int*, double*, double*, const int*, int*, const int*, int*);
void dgees_(const char*, const char*, int (*)(const double*, const double*), const int*, double*,
            const int*, int*, double*, double*, double*, const int*, double*, const int*, int*,
            int*);
void dtrsyl_(const char*, const char*, const int*, const int*, const int*, const double*,
             const int*, const double*, const int*, double*, const int*, double*, int*);
void dsyevr_(const char*, const char*, const char*, const int*, double*, const int*,
             const double*, const double*, const int*, const int*, const double*, int*, double*,
             double*, const int*, int*, double*, const int*, int*, const int*, int*);
void dstedc_(const char*, const int*, double*, double*, double*, const int*, double*, const int*,
             int*, const int*, int*);
void dstemr_(const char*, const char*, const int*, double*, double*, const double*, const double*,
             const int*, const int*, int*, double*, double*, const int*, const int*, int*, int*,
             double*, const int*, int*, const int*, int*);
double dlamch_(const char*);
void dsterf_(const int*, double*, double*, int*);
void dstein_(const int*, const double*, const double*, const int*, const double*, const int*,
             const int*, double*, const int*, double*, int*, int*, int*);
void dsteqr_(const char*, const int*, double*, double*, double*, const int*, double*, int*);
void dlaed4_(const int*, const int*, const double*, const double*, double*, const double*, double*,
             int*);
void dlaed5_(const int*, const double*, const double*, double*, const double*, double*);
void dlaed2_(int*, const int*, const int*, double*, double*, const int*, int*, double*, double*,
             double*, double*, double*, int*, int*, int*, int*, int*);
void dlarfg_(const int*, double*, double*, const int*, double*);
void dgeqrt3_(const int*, const int*, double*, const int*, double*, const int*, int*);
void dlarft_(const char*, const char*, const int*, const int*, const double*, const int*,
             const double*, double*, const int*);
void dsytrd_(const char*, const int*, double*, const int*, double*, double*, double*, double*,
             const int*, int*);
void dsygst_(const int*, const char*, const int*, double*, const int*, const double*, const int*,
             int*);
void dtrmm_(const char*, const char*, const char*, const char*, const int*, const int*,
            const double*, const double*, const int*, double*, const int*);
void dtrsm_(const char*, const char*, const char*, const char*, const int*, const int*,
            const double*, const double*, const int*, double*, const int*);
}

namespace kess::core::lapack {

namespace {
/// LAPACK workspace as a Fortran caller allocates it: not zeroed (std::vector<double>(lwork)
/// would write every entry first; dsyevd's is 1 + 6n + 2n^2 doubles, 256 MB at n = 4000).
template <class T>
struct Workspace {
  std::unique_ptr<T[]> p;
  explicit Workspace(std::size_t count) : p(new T[std::max<std::size_t>(1, count)]) {}
  T* data() const { return p.get(); }
};

int as_size(double w) { return std::max(1, static_cast<int>(w)); }
}  // namespace

void gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  if (m == 0 || n == 0) return;
  if (core::detail::host_gemm_pays(m, n, k))
    return core::detail::host_gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  dgemm_(&transa, &transb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

void blas_gemm(char transa, char transb, int m, int n, int k, double alpha, const double* a,
               int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  if (m == 0 || n == 0) return;
  dgemm_(&transa, &transb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

void symm(char side, char uplo, int m, int n, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  if (m == 0 || n == 0) return;
  dsymm_(&side, &uplo, &m, &n, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

void syr2k(char uplo, char trans, int n, int k, double alpha, const double* a, int lda,
           const double* b, int ldb, double beta, double* c, int ldc) {
  if (n == 0) return;
  dsyr2k_(&uplo, &trans, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc);
}

int gesv(int n, int nrhs, double* a, int lda, int* ipiv, double* b, int ldb) {
  int info = 0;
  dgesv_(&n, &nrhs, a, &lda, ipiv, b, &ldb, &info);
  return info;
}

int getrf(int m, int n, double* a, int lda, int* ipiv) {
  int info = 0;
  dgetrf_(&m, &n, a, &lda, ipiv, &info);
  return info;
}

int getri(int n, double* a, int lda, const int* ipiv) {
  int info = 0, lwork = -1;
  double q = 0;
  dgetri_(&n, a, &lda, ipiv, &q, &lwork, &info);
  lwork = as_size(q);
  Workspace<double> work(lwork);
  dgetri_(&n, a, &lda, ipiv, work.data(), &lwork, &info);
  return info;
}

int potrf(char uplo, int n, double* a, int lda) {
  int info = 0;
  dpotrf_(&uplo, &n, a, &lda, &info);
  return info;
}

int geqrf(int m, int n, double* a, int lda, double* tau) {
  int info = 0, lwork = -1;
  double q = 0;
  dgeqrf_(&m, &n, a, &lda, tau, &q, &lwork, &info);
  lwork = as_size(q);
  Workspace<double> work(lwork);
  dgeqrf_(&m, &n, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}

int syevd(char jobz, char uplo, int n, double* a, int lda, double* w) {
  int info = 0, lwork = -1, liwork = -1, iq = 0;
  double q = 0;
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, &q, &lwork, &iq, &liwork, &info);
  lwork = as_size(q);
  liwork = std::max(1, iq);
  Workspace<double> work(lwork);
  Workspace<int> iwork(liwork);
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info);
  return info;
}

int sygvd(int itype, char jobz, char uplo, int n, double* a, int lda, double* b, int ldb,
          double* w) {
  int info = 0, lwork = -1, liwork = -1, iq = 0;
  double q = 0;
  dsygvd_(&itype, &jobz, &uplo, &n, a, &lda, b, &ldb, w, &q, &lwork, &iq, &liwork, &info);
  lwork = as_size(q);
  liwork = std::max(1, iq);
  Workspace<double> work(lwork);
  Workspace<int> iwork(liwork);
  dsygvd_(&itype, &jobz, &uplo, &n, a, &lda, b, &ldb, w, work.data(), &lwork, iwork.data(), &liwork,
          &info);
  return info;
}

namespace {
int select_stable(const double* wr, const double*) { return *wr < 0.0 ? 1 : 0; }
}  // namespace

int gees(int n, double* a, int lda, double* wr, double* wi, double* vs, int ldvs, bool stable_first,
         int* sdim) {
  const char jobvs = 'V', sort = stable_first ? 'S' : 'N';
  int info = 0, lwork = -1, k = 0;
  double q = 0;
  std::vector<int> bwork(std::max(1, n));
  dgees_(&jobvs, &sort, select_stable, &n, a, &lda, &k, wr, wi, vs, &ldvs, &q, &lwork, bwork.data(),
         &info);
  lwork = as_size(q);
  Workspace<double> work(lwork);
  dgees_(&jobvs, &sort, select_stable, &n, a, &lda, &k, wr, wi, vs, &ldvs, work.data(), &lwork,
         bwork.data(), &info);
  if (sdim) *sdim = k;
  return info;
}

int trsyl(char trana, char tranb, int isgn, int m, int n, const double* a, int lda, const double* b,
          int ldb, double* c, int ldc, double* scale) {
  int info = 0;
  // LAPACK >= 3.11's blocked dtrsyl3 where the library has it (looked up at run time).
  using Trsyl3 = void (*)(const char*, const char*, const int*, const int*, const int*,
                          const double*, const int*, const double*, const int*, double*, const int*,
                          double*, int*, const int*, double*, const int*, int*);
  static const auto trsyl3 = reinterpret_cast<Trsyl3>(openblas_symbol("dtrsyl3_"));
  if (trsyl3) {
    int iq = 0, liwork = -1, ldswork = -1;
    double sq[2] = {0, 0};
    trsyl3(&trana, &tranb, &isgn, &m, &n, a, &lda, b, &ldb, c, &ldc, scale, &iq, &liwork, sq,
           &ldswork, &info);
    if (info == 0) {
      liwork = std::max(1, iq);
      const int rows = std::max(2, static_cast<int>(sq[0])), cols = as_size(sq[1]);
      ldswork = rows;
      Workspace<int> iwork(liwork);
      Workspace<double> swork(std::size_t(rows) * cols);
      trsyl3(&trana, &tranb, &isgn, &m, &n, a, &lda, b, &ldb, c, &ldc, scale, iwork.data(), &liwork,
             swork.data(), &ldswork, &info);
      return info;
    }
  }
  dtrsyl_(&trana, &tranb, &isgn, &m, &n, a, &lda, b, &ldb, c, &ldc, scale, &info);
  return info;
}

int syevr(char jobz, char uplo, int n, double* a, int lda, int il, int iu, int* m, double* w,
          double* z, int ldz) {
  const char range = 'I';
  const double vl = 0, vu = 0, abstol = 0;
  int info = 0, lwork = -1, liwork = -1, iq = 0;
  double q = 0;
  std::vector<int> isuppz(2 * std::max(1, n));
  dsyevr_(&jobz, &range, &uplo, &n, a, &lda, &vl, &vu, &il, &iu, &abstol, m, w, z, &ldz,
          isuppz.data(), &q, &lwork, &iq, &liwork, &info);
  lwork = as_size(q);
  liwork = std::max(1, iq);
  Workspace<double> work(lwork);
  Workspace<int> iwork(liwork);
  dsyevr_(&jobz, &range, &uplo, &n, a, &lda, &vl, &vu, &il, &iu, &abstol, m, w, z, &ldz,
          isuppz.data(), work.data(), &lwork, iwork.data(), &liwork, &info);
  return info;
}

namespace {
// dstedc's workspace query: doubles and ints for (compz, n).
void stedc_query(char compz, int n, int* lwork, int* liwork) {
  int info = 0, lq = -1, liq = -1, iq = 0;
  double q = 0, dummy = 0;
  const int ldz = std::max(1, n);
  dstedc_(&compz, &n, &dummy, &dummy, &dummy, &ldz, &q, &lq, &iq, &liq, &info);
  *lwork = as_size(q);
  *liwork = std::max(1, iq);
}
}  // namespace

int stedc_lwork(char compz, int n) {
  int lwork = 0, liwork = 0;
  stedc_query(compz, n, &lwork, &liwork);
  return lwork;
}

int stedc(char compz, int n, double* d, double* e, double* z, int ldz, double* work, int lwork) {
  int info = 0, lw = 0, liwork = 0;
  stedc_query(compz, n, &lw, &liwork);
  Workspace<int> iwork(liwork);
  dstedc_(&compz, &n, d, e, z, &ldz, work, &lwork, iwork.data(), &liwork, &info);
  return info;
}

int stedc(char compz, int n, double* d, double* e, double* z, int ldz) {
  const int lwork = stedc_lwork(compz, n);
  // n^2 + 4n doubles for all vectors: left uninitialized (dstedc writes before it reads).
  std::unique_ptr<double[]> work(new double[lwork]);
  return stedc(compz, n, d, e, z, ldz, work.get(), lwork);
}

int stemr(char jobz, int n, double* d, double* e, int il, int iu, int* m, double* w, double* z,
          int ldz) {
  const char range = 'I';
  const double vl = 0, vu = 0;
  int nzc = std::max(1, iu - il + 1), tryrac = 1, info = 0, lwork = -1, liwork = -1, iq = 0;
  double q = 0;
  std::vector<int> isuppz(2 * std::max(1, n));
  // dstemr needs e of length n (the last entry is workspace).
  std::vector<double> e_ext(static_cast<std::size_t>(std::max(1, n)), 0.0);
  std::copy(e, e + std::max(0, n - 1), e_ext.begin());
  dstemr_(&jobz, &range, &n, d, e_ext.data(), &vl, &vu, &il, &iu, m, w, z, &ldz, &nzc,
          isuppz.data(), &tryrac, &q, &lwork, &iq, &liwork, &info);
  lwork = as_size(q);
  liwork = std::max(1, iq);
  Workspace<double> work(lwork);
  Workspace<int> iwork(liwork);
  dstemr_(&jobz, &range, &n, d, e_ext.data(), &vl, &vu, &il, &iu, m, w, z, &ldz, &nzc,
          isuppz.data(), &tryrac, work.data(), &lwork, iwork.data(), &liwork, &info);
  return info;
}

int sterf(int n, double* d, double* e) {
  int info = 0;
  dsterf_(&n, d, e, &info);
  return info;
}

int stein(int n, const double* d, const double* e, int m, const double* w, const int* iblock,
          const int* isplit, double* z, int ldz, int* ifail) {
  int info = 0;
  Workspace<double> work(5 * static_cast<std::size_t>(std::max(1, n)));
  Workspace<int> iwork(std::max(1, n));
  dstein_(&n, d, e, &m, w, iblock, isplit, z, &ldz, work.data(), iwork.data(), ifail, &info);
  return info;
}

double lamch(char cmach) { return dlamch_(&cmach); }

void* openblas_symbol(const char* name) {
#if defined(KESS_HAVE_DLSYM)
  return dlsym(RTLD_DEFAULT, name);
#else
  (void)name;
  return nullptr;
#endif
}

int geqrt3(int m, int n, double* a, int lda, double* t, int ldt) {
  int info = 0;
  dgeqrt3_(&m, &n, a, &lda, t, &ldt, &info);
  return info;
}

int steqr(char compz, int n, double* d, double* e, double* z, int ldz) {
  int info = 0;
  Workspace<double> work(std::max(1, 2 * n - 2));
  dsteqr_(&compz, &n, d, e, z, &ldz, work.data(), &info);
  return info;
}

int laed4(int n, int i, const double* d, const double* z, double* delta, double rho, double* dlam) {
  int info = 0;
  dlaed4_(&n, &i, d, z, delta, &rho, dlam, &info);
  return info;
}

void laed5(int i, const double* d, const double* z, double* delta, double rho, double* dlam) {
  dlaed5_(&i, d, z, delta, &rho, dlam);
}

int laed2(int* k, int n, int n1, double* d, double* q, int ldq, int* indxq, double* rho, double* z,
          double* dlamda, double* w, double* q2, int* indx, int* indxc, int* indxp, int* coltyp) {
  int info = 0;
  dlaed2_(k, &n, &n1, d, q, &ldq, indxq, rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp, &info);
  return info;
}

void park_blas_threads() {
  // blas_thread_shutdown_ signals and joins the workers; OpenBLAS's next threaded call makes them
  // again (blas_thread_init). Looked up once, like the environment switch.
  using Shutdown = int (*)();
  static const Shutdown shutdown = [] {
    if (!settings::park_blas()) return Shutdown(nullptr);
    return reinterpret_cast<Shutdown>(openblas_symbol("blas_thread_shutdown_"));
  }();
  if (shutdown) shutdown();
}

namespace {
// OpenBLAS's thread count is one process-wide setting: scopes that overlap (kess called from
// several threads) share one saved value, set on the first entry and restored on the last exit.
std::mutex serial_blas_mutex;
int serial_blas_depth = 0, serial_blas_saved = 0;

/// OpenBLAS's thread-count entry points, looked up once (all null for other BLAS libraries).
/// openblas_set_num_threads starts OpenBLAS's worker pool when it is down (after
/// park_blas_threads), and the new workers then spin beside kess's threads for their first ~0.1 s:
/// at every scope inside a Gauss-Jordan step, many times a solve. So
/// while the pool is down, set() writes the count (blas_cpu_number, exported by OpenBLAS's pthreads
/// builds) directly, and the pool starts at the next threaded call, as after a park. Other builds
/// (OpenMP, sequential: openblas_get_parallel() != 1) always go through the setter.
struct OpenBlasThreads {
  int (*get)() = nullptr;
  void (*setter)(int) = nullptr;
  int* cpu_number = nullptr;
  const int* server_avail = nullptr;
  bool found() const { return get && setter; }
  void set(int count) const {
    if (cpu_number && server_avail && *server_avail == 0)
      *cpu_number = count;
    else
      setter(count);
  }
};

const OpenBlasThreads& openblas_threads() {
  static const OpenBlasThreads t = [] {
    OpenBlasThreads o;
    o.get = reinterpret_cast<int (*)()>(openblas_symbol("openblas_get_num_threads"));
    o.setter = reinterpret_cast<void (*)(int)>(openblas_symbol("openblas_set_num_threads"));
    const auto parallel = reinterpret_cast<int (*)()>(openblas_symbol("openblas_get_parallel"));
    if (parallel && parallel() == 1) {
      o.cpu_number = static_cast<int*>(openblas_symbol("blas_cpu_number"));
      o.server_avail = static_cast<const int*>(openblas_symbol("blas_server_avail"));
    }
    return o;
  }();
  return t;
}
}  // namespace

int blas_threads() {
  const OpenBlasThreads& ob = openblas_threads();
  if (!ob.get) return 0;
  std::lock_guard<std::mutex> lock(serial_blas_mutex);
  return serial_blas_depth > 0 ? serial_blas_saved : ob.get();
}

bool serial_blas_scope_active() {
  if (!openblas_threads().found()) return false;
  std::lock_guard<std::mutex> lock(serial_blas_mutex);
  return serial_blas_depth > 0;
}

SerialBlasScope::SerialBlasScope() {
  const OpenBlasThreads& ob = openblas_threads();
  if (!ob.found()) return;
  std::lock_guard<std::mutex> lock(serial_blas_mutex);
  if (serial_blas_depth++ == 0) {
    serial_blas_saved = ob.get();
    if (serial_blas_saved > 1) ob.set(1);
  }
}

SerialBlasScope::~SerialBlasScope() {
  const OpenBlasThreads& ob = openblas_threads();
  if (!ob.found()) return;
  std::lock_guard<std::mutex> lock(serial_blas_mutex);
  if (--serial_blas_depth == 0 && serial_blas_saved > 1) ob.set(serial_blas_saved);
}

double larfg(int n, double* alpha, double* x, int incx) {
  double tau = 0;
  dlarfg_(&n, alpha, x, &incx, &tau);
  return tau;
}

void larft(char direct, char storev, int n, int k, const double* v, int ldv, const double* tau,
           double* t, int ldt) {
  if (k == 0) return;
  dlarft_(&direct, &storev, &n, &k, v, &ldv, tau, t, &ldt);
}

int sytrd(char uplo, int n, double* a, int lda, double* d, double* e, double* tau) {
  int info = 0, lwork = -1;
  double q = 0;
  dsytrd_(&uplo, &n, a, &lda, d, e, tau, &q, &lwork, &info);
  lwork = as_size(q);
  Workspace<double> work(lwork);
  dsytrd_(&uplo, &n, a, &lda, d, e, tau, work.data(), &lwork, &info);
  return info;
}

int sygst(int itype, char uplo, int n, double* a, int lda, const double* b, int ldb) {
  int info = 0;
  dsygst_(&itype, &uplo, &n, a, &lda, b, &ldb, &info);
  return info;
}

void trsm(char side, char uplo, char transa, char diag, int m, int n, double alpha,
          const double* a, int lda, double* b, int ldb) {
  if (m == 0 || n == 0) return;
  dtrsm_(&side, &uplo, &transa, &diag, &m, &n, &alpha, a, &lda, b, &ldb);
}

void trmm(char side, char uplo, char transa, char diag, int m, int n, double alpha,
          const double* a, int lda, double* b, int ldb) {
  if (m == 0 || n == 0) return;
  dtrmm_(&side, &uplo, &transa, &diag, &m, &n, &alpha, a, &lda, b, &ldb);
}

}  // namespace kess::core::lapack
