#include "dbcsr.hpp"

#if defined(KESS_PERF_DBCSR)
#include <kess/comm/dense/process_grid.hpp>

#include <dbcsr.h>
#include <mpi.h>
#include <omp.h>

#include <cmath>
#include <tuple>
#endif

namespace kess::perf::peers::dbcsr {

#if defined(KESS_PERF_DBCSR)

bool available() { return true; }
std::string unavailable_reason() { return ""; }

namespace {

// Multiply objects alive on this rank: DBCSR's finalize aborts while their sub-communicators exist.
int live_objects = 0;

// Runs first thing in MPI_Finalize (MPI deletes MPI_COMM_SELF's attributes then, with MPI still
// fully usable), so DBCSR is finalized before MPI is gone; an atexit hook would run after
// MPI_Finalize and crash. Skipped where a Multiply outlives MPI_Finalize (DBCSR would abort).
int finalize_dbcsr(MPI_Comm, int, void*, void*) {
  if (live_objects == 0) c_dbcsr_finalize_lib();
  return MPI_SUCCESS;
}

// c_dbcsr_init_lib once per process, on MPI_COMM_WORLD (collective: every rank's first Multiply).
void init_dbcsr() {
  static const bool done = [] {
    int io_unit = 0;  // DBCSR's Fortran unit for messages: 0 = stderr, keeps them out of stdout
    c_dbcsr_init_lib(MPI_COMM_WORLD, &io_unit);
    int key = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_dbcsr, &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    return true;
  }();
  (void)done;
}

std::vector<int> round_robin(std::size_t n, int np) {
  std::vector<int> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<int>(i % np);
  return d;
}

}  // namespace

struct Multiply::Impl {
  std::string error;
  int nranks = 1, nprow = 1, npcol = 1, myrow = 0, mycol = 0;
  double filter_eps = 0;
  MPI_Comm cart = MPI_COMM_NULL;
  // DBCSR's distributions are per shape: A is m x k blocks, B k x n, C m x n.
  dbcsr_distribution dist_a = nullptr, dist_b = nullptr, dist_c = nullptr;
  dbcsr_matrix a = nullptr, b = nullptr, c = nullptr;
  std::vector<int> m_sizes, k_sizes, n_sizes;
  long long flops = 0, c_blocks = 0;
  double c_frobenius = 0;

  dbcsr_distribution distribution(std::size_t nrows, std::size_t ncols) {
    std::vector<int> rd = round_robin(nrows, nprow), cd = round_robin(ncols, npcol);
    dbcsr_distribution d = nullptr;
    c_dbcsr_distribution_new(&d, cart, rd.data(), static_cast<int>(rd.size()), cd.data(),
                             static_cast<int>(cd.size()));
    return d;
  }

  // A DBCSR matrix holding this rank's blocks of X (block (i, j) lives on grid (i % nprow, j % npcol)).
  dbcsr_matrix matrix(const char* name, dbcsr_distribution dist, std::vector<int>& rs,
                      std::vector<int>& cs, const Blocks* X) {
    dbcsr_matrix m = nullptr;
    const int real8 = dbcsr_type_real_8;
    c_dbcsr_create_new(&m, name, dist, dbcsr_type_no_symmetry, rs.data(), static_cast<int>(rs.size()),
                       cs.data(), static_cast<int>(cs.size()), nullptr, &real8, nullptr, nullptr,
                       nullptr, nullptr);
    if (X) {
      for (std::size_t blk = 0; blk < X->rows.size(); ++blk) {
        const int i = X->rows[blk], j = X->cols[blk];
        if (i % nprow != myrow || j % npcol != mycol) continue;
        c_dbcsr_put_block2d_d(m, i, j, X->values.data() + X->offsets[blk], rs[i], cs[j], nullptr,
                              nullptr);
      }
    }
    c_dbcsr_finalize(m);
    return m;
  }

  // Visits this rank's blocks of C: f(row, col, block pointer (column-major), rows, cols).
  template <class F>
  void for_each_c_block(F&& f) const {
    dbcsr_iterator it = nullptr;
    c_dbcsr_iterator_start(&it, c, nullptr, nullptr, nullptr, nullptr, nullptr);
    while (c_dbcsr_iterator_blocks_left(it)) {
      int i = 0, j = 0, rs = 0, cs = 0;
      double* blk = nullptr;
      bool transposed = false;
      c_dbcsr_iterator_next_2d_block_d(it, &i, &j, &blk, &transposed, nullptr, &rs, &cs, nullptr,
                                       nullptr);
      f(i, j, blk, rs, cs);
    }
    c_dbcsr_iterator_stop(&it);
  }
};

Multiply::Multiply(const Blocks& A, const Blocks& B, double filter_eps, int nprow, int npcol)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    s.error = "MPI is not initialized";
    return;
  }
  MPI_Comm_size(MPI_COMM_WORLD, &s.nranks);
  if (nprow <= 0 || npcol <= 0) std::tie(nprow, npcol) = kess::comm::ProcessGrid::squarest_shape(s.nranks);
  if (nprow * npcol != s.nranks) {
    s.error = "grid " + std::to_string(nprow) + "x" + std::to_string(npcol) + " does not match " +
              std::to_string(s.nranks) + " ranks";
    return;
  }
  if (A.col_sizes != B.row_sizes) {
    s.error = "A's block columns differ from B's block rows";
    return;
  }
  s.nprow = nprow;
  s.npcol = npcol;
  s.filter_eps = filter_eps;
  s.m_sizes = A.row_sizes;
  s.k_sizes = A.col_sizes;
  s.n_sizes = B.col_sizes;
  init_dbcsr();
  ++live_objects;
  // DBCSR reads its process grid from a Cartesian communicator (MPI_Cart_get): a plain
  // communicator aborts. Row-major, no reordering: rank = myrow * npcol + mycol as in kess.
  int dims[2] = {nprow, npcol}, periods[2] = {0, 0}, coords[2] = {0, 0}, rank = 0;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &s.cart);
  MPI_Comm_rank(s.cart, &rank);
  MPI_Cart_coords(s.cart, rank, 2, coords);
  s.myrow = coords[0];
  s.mycol = coords[1];
  s.dist_a = s.distribution(s.m_sizes.size(), s.k_sizes.size());
  s.dist_b = s.distribution(s.k_sizes.size(), s.n_sizes.size());
  s.dist_c = s.distribution(s.m_sizes.size(), s.n_sizes.size());
  s.a = s.matrix("A", s.dist_a, s.m_sizes, s.k_sizes, &A);
  s.b = s.matrix("B", s.dist_b, s.k_sizes, s.n_sizes, &B);
  s.c = s.matrix("C", s.dist_c, s.m_sizes, s.n_sizes, nullptr);
}

Multiply::~Multiply() {
  Impl& s = *impl_;
  if (s.cart == MPI_COMM_NULL) return;  // never got as far as DBCSR
  for (dbcsr_matrix* m : {&s.a, &s.b, &s.c})
    if (*m) c_dbcsr_release(m);
  for (dbcsr_distribution* d : {&s.dist_a, &s.dist_b, &s.dist_c})
    if (*d) c_dbcsr_distribution_release(d);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&s.cart);
  --live_objects;
}

const std::string& Multiply::error() const { return impl_->error; }

double Multiply::run(bool* ok) {
  Impl& s = *impl_;
  if (!s.error.empty()) {
    *ok = false;
    return 0.0;
  }
  // filter_eps left out when not filtering: DBCSR then also keeps its dense-multiply option.
  const double* eps = s.filter_eps > 0 ? &s.filter_eps : nullptr;
  long long flop = 0;
  MPI_Barrier(s.cart);
  const double t0 = MPI_Wtime();
  c_dbcsr_multiply_d(dbcsr_no_transpose, dbcsr_no_transpose, 1.0, s.a, s.b, 0.0, s.c, nullptr,
                     nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, eps, &flop);
  double t = MPI_Wtime() - t0, tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, s.cart);
  // DBCSR's flop is the mean over ranks rounded up: the global count is that times the ranks.
  s.flops = flop * s.nranks;
  long long nblk = 0;
  double sq = 0;
  s.for_each_c_block([&](int, int, const double* blk, int rs, int cs) {
    ++nblk;
    for (long long e = 0; e < static_cast<long long>(rs) * cs; ++e) sq += blk[e] * blk[e];
  });
  MPI_Allreduce(&nblk, &s.c_blocks, 1, MPI_LONG_LONG, MPI_SUM, s.cart);
  double sq_all = 0;
  MPI_Allreduce(&sq, &sq_all, 1, MPI_DOUBLE, MPI_SUM, s.cart);
  s.c_frobenius = std::sqrt(sq_all);
  *ok = true;
  return tmax;
}

long long Multiply::flops() const { return impl_->flops; }
long long Multiply::c_blocks() const { return impl_->c_blocks; }
double Multiply::c_frobenius() const { return impl_->c_frobenius; }

std::vector<double> Multiply::c_dense() const {
  const Impl& s = *impl_;
  if (!s.error.empty()) return {};
  std::vector<long long> row0(s.m_sizes.size() + 1, 0), col0(s.n_sizes.size() + 1, 0);
  for (std::size_t i = 0; i < s.m_sizes.size(); ++i) row0[i + 1] = row0[i] + s.m_sizes[i];
  for (std::size_t j = 0; j < s.n_sizes.size(); ++j) col0[j + 1] = col0[j] + s.n_sizes[j];
  const long long ld = row0.back();
  std::vector<double> local(static_cast<std::size_t>(ld * col0.back()), 0.0), all(local.size());
  s.for_each_c_block([&](int i, int j, const double* blk, int rs, int cs) {
    for (int q = 0; q < cs; ++q)
      for (int p = 0; p < rs; ++p)
        local[static_cast<std::size_t>(row0[i] + p + (col0[j] + q) * ld)] = blk[p + std::size_t(q) * rs];
  });
  // Every block lives on one rank only: the sum is the gather.
  MPI_Allreduce(local.data(), all.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_SUM, s.cart);
  return all;
}

std::string Multiply::label() const {
  const Impl& s = *impl_;
  const std::string version = KESS_PERF_DBCSR_VERSION;
  return std::string("DBCSR") + (version.empty() ? "" : " " + version) + " on " +
         std::to_string(s.nranks) + (s.nranks == 1 ? " rank (" : " ranks (") +
         std::to_string(s.nprow) + "x" + std::to_string(s.npcol) + "), " +
         std::to_string(omp_get_max_threads()) +
         (omp_get_max_threads() == 1 ? " thread" : " threads") + " per rank";
}

#else  // no DBCSR in this build

bool available() { return false; }
std::string unavailable_reason() {
  return "DBCSR not found at configure time (needs MPI, DBCSR's C API and gfortran's runtime; "
         "Debian: libdbcsr-dev)";
}

struct Multiply::Impl {
  std::string error = unavailable_reason();
};
Multiply::Multiply(const Blocks&, const Blocks&, double, int, int) : impl_(std::make_unique<Impl>()) {}
Multiply::~Multiply() = default;
const std::string& Multiply::error() const { return impl_->error; }
double Multiply::run(bool* ok) {
  *ok = false;
  return 0.0;
}
long long Multiply::flops() const { return 0; }
long long Multiply::c_blocks() const { return 0; }
double Multiply::c_frobenius() const { return 0.0; }
std::vector<double> Multiply::c_dense() const { return {}; }
std::string Multiply::label() const { return "DBCSR (not built)"; }

#endif

}  // namespace kess::perf::peers::dbcsr
