// Bodies of kess::lobpcg and the preconditioners for one execution space.
//
// LOBPCG (Knyazev 2001) as MFDn runs it (Maris et al. 2022, Algorithm 1), made robust after
// Hetmaniuk & Lehoucq 2006: each iteration
//   R = A X - B X Θ, per-column test ||r_i|| / ((||A||_est + |θ_i|) ||x_i||) < tol;
//   W = K^-1 R on the active (unconverged) columns only (soft locking: converged columns stay in
//   X and in the Rayleigh–Ritz but get no new directions);
//   W B-orthogonalized against the constraints and [X P], then B-orthonormalized by Cholesky QR
//   with column dropping: one Gram product and one update GEMM a pass, a second pass only when
//   the first lost digits (a shifted first pass when the Gram matrix is ill-conditioned);
//   one product A W (the only SpMM with H), one B W in the generalized case;
//   Rayleigh–Ritz on S = [X P W], B-orthonormal by construction: SᵀBS = I and, since X and P
//   come from the previous small eigenproblem, XᵀAX = Θ, XᵀAP = 0 and PᵀAP is known there, so
//   the one new Gram product is Sᵀ(A W); the small symmetric problem is solved on the host by
//   LAPACK dsyevd;
//   [X P] = S [Z_x Y] in one GEMM (A S, B S likewise) with Y the P, W rows of the active Ritz
//   vectors made orthonormal and orthogonal to Z_x in the small space, so P needs no Gram
//   matrix or SpMM of its own.
// S, A S and B S live in preallocated n x 3k row-major buffers (X, P, W side by side; two of
// each, swapped every iteration): an iteration allocates no vectors.
// A = σH with σ = -1 for the largest eigenvalues. ||A||_est is the ∞-norm max_i Σ_j |h_ij| of H
// (an upper bound on ||H||_2), computed once from the stored entries.
#pragma once

#include <kess/comm/agree.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/linalg/lapack.hpp>
#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/lobpcg/detail/dense_block.hpp>
#include <kess/solvers/lobpcg/detail/fom.hpp>
#include <kess/solvers/lobpcg/detail/spmm_dist.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace kess {
namespace detail::lobpcg {

constexpr std::uint64_t kDomainStart = 0x6C6F627063675830ull;  // "lobpcgX0"

/// The automatic block size: nev plus a few guard vectors (at least 4, at least nev / 2) that
/// speed the convergence of the wanted pairs, at most n.
inline int automatic_block_size(int nev, std::int64_t n) {
  const std::int64_t k =
      std::max<std::int64_t>(nev + 4, (3 * static_cast<std::int64_t>(nev) + 1) / 2);
  return static_cast<int>(std::min<std::int64_t>(n, k));
}

template <class Exec>
class Solver {
 public:
  using Mem = typename Exec::memory_space;
  using B = Block<Mem>;
  using CB = ConstBlock<Mem>;
  using Clock = std::chrono::steady_clock;

  Solver(const Exec& exec, const CsbMatrix<double, Mem>& H, const CsbMatrix<double, Mem>* S,
         const LobpcgOptions& opts, const LobpcgVectors<double, Mem>& vec)
      : exec_(exec), H_(H), S_(S), opts_(opts), vec_(vec), comm_(H.comm()) {}

  LobpcgResult<double, Mem> run();

  // Everything public: nvcc refuses device lambdas in private member functions.
  static constexpr const char* fn = "lobpcg";
  const Exec& exec_;
  const CsbMatrix<double, Mem>& H_;
  const CsbMatrix<double, Mem>* S_;
  const LobpcgOptions& opts_;
  const LobpcgVectors<double, Mem>& vec_;
  comm::Communicator comm_;
  double sigma_ = 1;
  std::int64_t n_ = 0;
  int k_ = 0;
  double normest_ = 0;
  LobpcgResult<double, Mem> res_;
  // Constraints Y, B Y and the Cholesky factor of YᵀBY (lower, column-major).
  B Y_, BY_;
  int nc_ = 0;
  std::vector<double> ly_;
  FomPreconditioner<double, Mem> fom_;

  // Preallocated vectors: S = [X P W] (and A S, B S) twice, row-major n x ld_ with ld_ = 3k
  // (X: k, P and W: at most k each); contiguous scratch blocks
  // for W and its products (v_, bv_: 2k columns) and for R.
  int ld_ = 0;
  int cur_ = 0;  // which of the two S buffers holds the current X, P
  int np_ = 0;   // columns of P
  Kokkos::View<double*, Mem> s_[2], as_[2], bs_[2], v_[2], bv_[2], aw_, r_, ra_, w0_;
  std::vector<double> theta_;  // Ritz values of X (of A = σH)
  std::vector<double> pap_;    // PᵀAP (np x np, column-major)

  bool generalized() const { return S_ != nullptr; }
  Panel spanel(int which, int c, int w) const { return Panel{s_[which].data() + c, w, ld_}; }
  Panel aspanel(int which, int c, int w) const { return Panel{as_[which].data() + c, w, ld_}; }
  Panel bspanel(int which, int c, int w) const { return Panel{bs_[which].data() + c, w, ld_}; }
  /// A contiguous n x w block on a scratch buffer.
  B blk(const Kokkos::View<double*, Mem>& buf, int w) const { return B(buf.data(), n_, w); }
  static Panel as_panel(const B& b) {
    return Panel{b.data(), static_cast<int>(b.extent(1)), static_cast<int>(b.extent(1))};
  }
  double now() const {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  }
  template <class F>
  void timed(double& acc, F&& f) {
    exec_.fence();
    const double t0 = now();
    f();
    exec_.fence();
    acc += now() - t0;
  }

  void check_inputs();
  void check_local_inputs();
  void check_collective_inputs();
  void allocate();
  void abs_row_sums(const CB& xc, const CB& xr, const B& yr, const B& yc);
  double norm_bound();
  void apply_a(const B& V, const B& AV);
  void apply_b(const B& V, const B& BV);
  void project_constraints(B& V, B& BV);
  int orthonormalize(const Panel& Q, const Panel& BQ, B& V, B& BV, double tau);
  bool small_eigen(std::vector<double>& G, int m, std::vector<double>& theta);
  void start_block(const B& X);
  void precondition(const B& R, const std::vector<int>& active, const std::vector<double>& theta,
                    B& W, B& Ra);
};

template <class Exec>
void Solver<Exec>::check_inputs() {
  // The checks of this rank's arguments, then one agreement: an error on one rank raises on all.
  std::string err;
  ErrorKind kind = ErrorKind::invalid_argument;
  try {
    check_local_inputs();
  } catch (const Error& e) {
    err = e.message();
    kind = e.kind();
  }
  if (comm_.size() > 1) {
    // Options must agree too: their min and max over the ranks must be equal.
    std::uint64_t tol_bits = 0;
    std::memcpy(&tol_bits, &opts_.tol, sizeof tol_bits);
    std::vector<std::int64_t> lo{opts_.nev,
                                 opts_.block_size,
                                 opts_.max_iterations,
                                 static_cast<std::int64_t>(tol_bits >> 1),
                                 opts_.largest,
                                 static_cast<std::int64_t>(opts_.preconditioner),
                                 opts_.fom_iterations,
                                 opts_.fom_tile,
                                 static_cast<std::int64_t>(opts_.seed >> 1),
                                 S_ != nullptr,
                                 static_cast<std::int64_t>(vec_.initial.extent(1)),
                                 static_cast<std::int64_t>(vec_.constraints.extent(1))};
    std::vector<std::int64_t> hi(lo);
    comm::allreduce(comm_, lo, comm::ReduceOp::min);
    comm::allreduce(comm_, hi, comm::ReduceOp::max);
    if (err.empty() && lo != hi) err = "the options or inputs differ between ranks";
    comm::agree(comm_, err.empty(), std::string(fn) + ": " + err, kind);
  } else if (!err.empty()) {
    throw Error(kind, fn, err);
  }
  check_collective_inputs();
}

template <class Exec>
void Solver<Exec>::check_local_inputs() {
  const std::int64_t N = H_.rows();
  n_ = H_.vector_rows();
  require_arg(
      opts_.nev >= 1 && opts_.nev <= N, fn,
      "nev = " + std::to_string(opts_.nev) + " must be in [1, n = " + std::to_string(N) + "]");
  require_arg(
      opts_.block_size == 0 || (opts_.block_size >= opts_.nev && opts_.block_size <= N), fn,
      "block_size = " + std::to_string(opts_.block_size) + " must be 0 (automatic) or in [nev, n]");
  require_arg(opts_.tol > 0 && std::isfinite(opts_.tol), fn, "tol must be positive and finite");
  require_arg(opts_.max_iterations >= 1, fn, "max_iterations must be >= 1");
  if (opts_.preconditioner == Preconditioner::fom)
    require_arg(opts_.fom_iterations >= 1 && opts_.fom_iterations <= kMaxFomIterations &&
                    opts_.fom_tile >= 0,
                fn, "fom_iterations must be in [1, 32] and fom_tile >= 0");
  k_ = opts_.block_size > 0 ? opts_.block_size : automatic_block_size(opts_.nev, N);
  if (S_) {
    require_arg(S_->rows() == N && S_->vector_rows() == n_ &&
                    S_->vector_offset() == H_.vector_offset() && S_->layout() == H_.layout() &&
                    S_->comm().size() == comm_.size(),
                fn, "S must have the order, layout and vector rows of H");
  }
  const auto& init = vec_.initial;
  if (init.extent(1) > 0) {
    require_arg(static_cast<std::int64_t>(init.extent(0)) == n_, fn,
                "initial vectors must have vector_rows() rows");
    require_arg(static_cast<int>(init.extent(1)) <= k_, fn,
                "initial vectors: more columns than the block size " + std::to_string(k_));
  }
  const auto& con = vec_.constraints;
  if (con.extent(1) > 0) {
    require_arg(static_cast<std::int64_t>(con.extent(0)) == n_, fn,
                "constraints must have vector_rows() rows");
    require_arg(static_cast<std::int64_t>(con.extent(1)) + k_ <= N, fn,
                "constraints: too many columns (constraints + block size must not exceed n)");
  }
}

template <class Exec>
void Solver<Exec>::check_collective_inputs() {
  const auto& init = vec_.initial;
  if (init.extent(1) > 0) {
    const std::int64_t bad =
        comm::allreduce(comm_, count_nonfinite(exec_, CB(init)), comm::ReduceOp::sum);
    require_arg(bad == 0, fn, "initial vectors hold NaN or Inf");
  }
  const auto& con = vec_.constraints;
  if (con.extent(1) > 0) {
    const std::int64_t bad =
        comm::allreduce(comm_, count_nonfinite(exec_, CB(con)), comm::ReduceOp::sum);
    require_arg(bad == 0, fn, "constraints hold NaN or Inf");
  }
  if (S_) {
    // A positive definite S has a positive diagonal.
    const auto d = S_->diagonal();
    std::int64_t bad = 0;
    Kokkos::parallel_reduce(
        "kess::lobpcg::check_diagonal",
        Kokkos::RangePolicy<Exec>(exec_, 0, static_cast<std::int64_t>(d.extent(0))),
        KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& b) { b += d(i) > 0 ? 0 : 1; }, bad);
    exec_.fence();
    bad = comm::allreduce(comm_, bad, comm::ReduceOp::sum);
    require(bad == 0, ErrorKind::not_positive_definite, fn,
            "S is not positive definite (a diagonal entry is <= 0)");
  }
}

template <class Exec>
void Solver<Exec>::allocate() {
  ld_ = 3 * k_;
  const std::size_t n = static_cast<std::size_t>(n_);
  const auto make = [&](const char* label, int w) {
    return Kokkos::View<double*, Mem>(
        Kokkos::view_alloc(exec_, Kokkos::WithoutInitializing, std::string(label)),
        std::max<std::size_t>(1, n * static_cast<std::size_t>(w)));
  };
  for (int i = 0; i < 2; ++i) {
    s_[i] = make("kess::lobpcg::S", ld_);
    as_[i] = make("kess::lobpcg::AS", ld_);
    v_[i] = make("kess::lobpcg::V", 2 * k_);
    if (generalized()) {
      bs_[i] = make("kess::lobpcg::BS", ld_);
      bv_[i] = make("kess::lobpcg::BV", 2 * k_);
    } else {
      bs_[i] = s_[i];
      bv_[i] = v_[i];
    }
  }
  aw_ = make("kess::lobpcg::AW", k_);
  r_ = make("kess::lobpcg::R", k_);
  ra_ = make("kess::lobpcg::Ra", k_);
  w0_ = make("kess::lobpcg::W", k_);
}

/// Accumulates the row sums of |H| over this rank's part: yr(i) += |h_ij| xc(j) and, off the
/// global diagonal, yc(j) += |h_ij| xr(i) (the SpMM's pattern with |values| and one column).
template <class Exec>
void Solver<Exec>::abs_row_sums(const CB& xc, const CB& xr, const B& yr, const B& yc) {
  if (H_.local_blocks() == 0) return;
  const auto brow = H_.block_row();
  const auto bcol = H_.block_col();
  const auto bstart = H_.block_start();
  const auto er = H_.entry_row();
  const auto ec = H_.entry_col();
  const auto ev = H_.entry_value();
  const std::int64_t beta = H_.block_size();
  const bool diag = H_.on_diagonal();
  using Policy = Kokkos::TeamPolicy<Exec>;
  Kokkos::parallel_for(
      "kess::lobpcg::row_sums", Policy(exec_, static_cast<int>(H_.local_blocks()), Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        const int b = t.league_rank();
        const std::int64_t r0 = brow(b) * beta, c0 = bcol(b) * beta;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, bstart(b), bstart(b + 1)),
                             [&](const std::int64_t e) {
                               const std::int64_t i = r0 + er(e), j = c0 + ec(e);
                               const double v = kx::fabs(ev(e));
                               Kokkos::atomic_add(&yr(i, 0), v * xc(j, 0));
                               if (!(diag && i == j)) Kokkos::atomic_add(&yc(j, 0), v * xr(i, 0));
                             });
      });
}

/// ||H||_∞ = max_i Σ_j |h_ij| >= ||H||_2, from |H| times a vector of ones distributed as the SpMM.
template <class Exec>
double Solver<Exec>::norm_bound() {
  B ones(Kokkos::view_alloc(exec_, Kokkos::WithoutInitializing, "kess::lobpcg::ones"), n_, 1);
  B sums(Kokkos::view_alloc(exec_, "kess::lobpcg::row_sums"), n_, 1);
  Kokkos::deep_copy(exec_, ones, 1.0);
  if (comm_.size() > 1) {
    spmm_distributed(exec_, H_, CB(ones), sums,
                     [&](const CB& xc, const CB& xr, const B& yr, const B& yc) {
                       abs_row_sums(xc, xr, yr, yc);
                     });
  } else {
    abs_row_sums(CB(ones), CB(ones), sums, sums);
  }
  double m = 0;
  Kokkos::parallel_reduce(
      "kess::lobpcg::row_sums_max", Kokkos::RangePolicy<Exec>(exec_, 0, n_),
      KOKKOS_LAMBDA(const std::int64_t i, double& x) { x = kx::max(x, sums(i, 0)); },
      Kokkos::Max<double>(m));
  exec_.fence();
  if (comm_.size() > 1) m = comm::allreduce(comm_, m, comm::ReduceOp::max);
  return m;
}

template <class Exec>
void Solver<Exec>::apply_a(const B& V, const B& AV) {
  timed(res_.seconds.spmm, [&] {
    spmm(exec_, H_, CB(V), AV);
    if (sigma_ < 0) scale(exec_, AV, -1.0);
  });
  ++res_.spmm_count;
}

template <class Exec>
void Solver<Exec>::apply_b(const B& V, const B& BV) {
  if (S_) timed(res_.seconds.spmm, [&] { spmm(exec_, *S_, CB(V), BV); });
}

template <class Exec>
void Solver<Exec>::project_constraints(B& V, B& BV) {
  const int kv = static_cast<int>(V.extent(1));
  if (nc_ == 0 || kv == 0) return;
  // C = (YᵀBY)^-1 (BY)ᵀV; V <- V - Y C, BV <- BV - BY C.
  auto C = gram(exec_, comm_, cols(CB(BY_)), cols(CB(V)));
  core::lapack::trsm('L', 'L', 'N', 'N', nc_, kv, 1.0, ly_.data(), nc_, C.data(), nc_);
  core::lapack::trsm('L', 'L', 'T', 'N', nc_, kv, 1.0, ly_.data(), nc_, C.data(), nc_);
  std::vector<double> T(static_cast<std::size_t>(kv + nc_) * kv, 0.0);
  for (int j = 0; j < kv; ++j) {
    T[j + static_cast<std::size_t>(j) * (kv + nc_)] = 1.0;
    for (int i = 0; i < nc_; ++i)
      T[kv + i + static_cast<std::size_t>(j) * (kv + nc_)] =
          -C[i + static_cast<std::size_t>(j) * nc_];
  }
  B out = new_block<Mem>("kess::lobpcg::block", n_, kv);
  combine(exec_, cols(CB(V), CB(Y_)), T, out);
  if (generalized()) {
    B bout = new_block<Mem>("kess::lobpcg::block", n_, kv);
    combine(exec_, cols(CB(BV), CB(BY_)), T, bout);
    BV = bout;
  } else {
    BV = out;
  }
  V = out;
}

/// V, BV <- the B-orthonormal basis of span(V) B-orthogonal to Q (B-orthonormal, BQ = B Q),
/// dropping the columns whose part outside the span of Q and the earlier columns is below tau
/// relative to the column's norm; returns the columns kept. A pass: one Gram product [Q V]ᵀBV,
/// the Gram matrix of the projected columns as VᵀBV - CᵀC (C = QᵀBV), Cholesky, and
/// V <- (V - Q C) R^-1 in one update; a second pass only when the projection took nearly all of
/// a column (Giraud et al. 2005: twice is enough), three after a shifted Cholesky (Fukaya et al.
/// 2020).
/// The results go to v_/bv_ (never the buffer V is on).
template <class Exec>
int Solver<Exec>::orthonormalize(const Panel& Q, const Panel& BQ, B& V, B& BV, double tau) {
  int kv = static_cast<int>(V.extent(1));
  const int q = Q.w;
  int rounds = 2;
  for (int round = 0; round < rounds && kv > 0; ++round) {
    const int out = V.data() == v_[0].data() ? 1 : 0;
    std::vector<double> C;
    if (q > 0) C = gram(exec_, comm_, n_, Q, as_panel(BV));
    const auto G = gram(exec_, comm_, n_, as_panel(V), as_panel(BV));
    std::vector<double> sc(static_cast<std::size_t>(kv), 0.0);
    for (int j = 0; j < kv; ++j) {
      const double d = G[j + static_cast<std::size_t>(j) * kv];
      require(!(d < 0), ErrorKind::not_positive_definite, fn,
              "S is not positive definite (xᵀSx < 0 for an iterate)");
      if (std::isfinite(d) && d > 0) sc[j] = 1.0 / std::sqrt(d);
    }
    // The Gram matrix of V - Q C in units of V's column norms.
    std::vector<double> Gp(static_cast<std::size_t>(kv) * kv, 0.0);
    for (int j = 0; j < kv; ++j)
      for (int i = 0; i < kv; ++i) {
        double g = G[i + static_cast<std::size_t>(j) * kv];
        for (int l = 0; l < q; ++l)
          g -= C[l + static_cast<std::size_t>(i) * q] * C[l + static_cast<std::size_t>(j) * q];
        Gp[i + static_cast<std::size_t>(j) * kv] = sc[i] * sc[j] * g;
      }
    std::vector<int> kept, nonpos;
    double minp = 1, mins = 1;
    const double t = round == 0 ? tau : 1e-3;
    auto T = cholesky_drop(Gp, kv, t, 0.0, kept, &minp, &nonpos, &mins, false);
    // With S positive definite the pivots are >= 0 up to rounding.
    require(!generalized() || mins > -1e-6, ErrorKind::not_positive_definite, fn,
            "S is not positive definite (an S-Gram matrix of iterates is indefinite)");
    bool shifted = false;
    if (round == 0 && minp < 1e-5) {
      // Ill-conditioned: shifted Cholesky QR, two more passes after it.
      const double eps = std::numeric_limits<double>::epsilon();
      const double N = static_cast<double>(H_.rows());
      const double shift = 11.0 * (N * kv + kv * (kv + 1.0)) * eps * kv;
      T = cholesky_drop(Gp, kv, t, shift, kept, &minp, &nonpos, nullptr, false);
      rounds = 3;
      shifted = true;
    }
    const int kk = static_cast<int>(kept.size());
    // V <- V M - Q (C M), M = diag(sc) T.
    std::vector<double> M(static_cast<std::size_t>(kv) * kk);
    for (int c = 0; c < kk; ++c)
      for (int r = 0; r < kv; ++r)
        M[r + static_cast<std::size_t>(c) * kv] = sc[r] * T[r + static_cast<std::size_t>(c) * kv];
    std::vector<double> CM;
    if (q > 0) {
      CM = small_ab(C, M, q, kv, kk);
      for (double& x : CM) x = -x;
    }
    B Vn = blk(v_[out], kk);
    combine(exec_, n_, as_panel(V), M, as_panel(Vn));
    if (q > 0) combine(exec_, n_, Q, CM, as_panel(Vn), 1.0);
    B BVn = Vn;
    if (generalized()) {
      BVn = blk(bv_[out], kk);
      combine(exec_, n_, as_panel(BV), M, as_panel(BVn));
      if (q > 0) combine(exec_, n_, BQ, CM, as_panel(BVn), 1.0);
    }
    V = Vn;
    BV = BVn;
    kv = kk;
    // One pass suffices when no column lost more than 1 - 0.02 of its norm to the projection:
    // the Gram matrix of the projected columns is then accurate to ε / 0.02² ≈ 3e-13.
    if (round == 0 && !shifted && minp >= 0.02) break;
  }
  return kv;
}

/// The eigenpairs of the symmetric m x m G (symmetrized first): theta ascending, G <- the
/// eigenvectors. False when G is not finite or LAPACK fails.
template <class Exec>
bool Solver<Exec>::small_eigen(std::vector<double>& G, int m, std::vector<double>& theta) {
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < j; ++i) {
      const std::size_t a = i + static_cast<std::size_t>(j) * m,
                        b = j + static_cast<std::size_t>(i) * m;
      G[a] = G[b] = 0.5 * (G[a] + G[b]);
    }
  for (double v : G)
    if (!std::isfinite(v)) return false;
  theta.assign(static_cast<std::size_t>(m), 0.0);
  return core::lapack::syevd('V', 'L', m, G.data(), m, theta.data()) == 0;
}

template <class Exec>
void Solver<Exec>::start_block(const B& X) {
  const auto init = vec_.initial;
  const int m0 = static_cast<int>(init.extent(1));
  const std::uint64_t seed = opts_.seed;
  const std::int64_t off = H_.vector_offset();
  const int k = k_;
  Kokkos::parallel_for(
      "kess::lobpcg::start", Kokkos::RangePolicy<Exec>(exec_, 0, n_),
      KOKKOS_LAMBDA(const std::int64_t i) {
        for (int j = 0; j < k; ++j)
          X(i, j) = j < m0 ? init(i, j)
                           : gen::to_signed_unit(gen::hash3(seed, kDomainStart,
                                                            static_cast<std::uint64_t>(off + i),
                                                            static_cast<std::uint64_t>(j)));
      });
}

/// Ra = the active columns of R; W = K^-1 Ra (W = Ra without a preconditioner).
template <class Exec>
void Solver<Exec>::precondition(const B& R, const std::vector<int>& active,
                                const std::vector<double>& theta, B& W, B& Ra) {
  const int k = static_cast<int>(R.extent(1)), na = static_cast<int>(active.size());
  std::vector<double> th(static_cast<std::size_t>(na));
  for (int c = 0; c < na; ++c) th[c] = theta[active[c]];
  if (na == k) {
    Ra = R;
  } else {
    Ra = blk(ra_, na);
    copy_columns(exec_, n_, as_panel(R), as_panel(Ra), active);
  }
  if (opts_.preconditioner == Preconditioner::none) {
    W = Ra;
    return;
  }
  W = blk(w0_, na);
  const B Wl = W, Ral = Ra;
  timed(res_.seconds.preconditioner, [&] {
    if (opts_.preconditioner == Preconditioner::jacobi) {
      // (σ diag(H) - θ)^-1, |σ d - θ| clamped below by 1e-12 ||A||_est: only a guard against
      // division by zero, since W's columns are normalized and the basis drops dependent ones.
      Kokkos::View<double*, Mem> t(
          Kokkos::view_alloc(exec_, Kokkos::WithoutInitializing, "kess::lobpcg::theta"), na);
      Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> h(th.data(), na);
      Kokkos::deep_copy(exec_, t, h);
      const auto d = H_.diagonal();
      const double sg = sigma_;
      const double delta = std::max(1e-12 * normest_, 1e-300);
      Kokkos::parallel_for(
          "kess::lobpcg::jacobi", Kokkos::RangePolicy<Exec>(exec_, 0, n_),
          KOKKOS_LAMBDA(const std::int64_t i) {
            for (int c = 0; c < na; ++c) {
              double x = sg * d(i) - t(c);
              if (kx::fabs(x) < delta) x = x < 0 ? -delta : delta;
              Wl(i, c) = Ral(i, c) / x;
            }
          });
      exec_.fence();
    } else {
      // (σ H_tile - θ)^-1 = σ (H_tile - σθ)^-1: the sign of a column does not change its span.
      for (auto& v : th) v *= sigma_;
      fom_.apply(exec_, th, CB(Ral), Wl);
    }
  });
}

template <class Exec>
LobpcgResult<double, typename Exec::memory_space> Solver<Exec>::run() {
  const double t_start = now();
  exec_.fence();
  check_inputs();
  sigma_ = opts_.largest ? -1.0 : 1.0;
  const int k = k_, nev = opts_.nev;
  res_.block_size = k;
  allocate();
  timed(res_.seconds.spmm, [&] { normest_ = norm_bound(); });
  normest_ = std::max(normest_, std::numeric_limits<double>::min());
  if (opts_.preconditioner == Preconditioner::fom) {
    timed(res_.seconds.preconditioner,
          [&] { fom_ = FomPreconditioner<double, Mem>(H_, opts_.fom_tile, opts_.fom_iterations); });
  }
  // Constraints: B Y and the Cholesky factor of YᵀBY.
  nc_ = static_cast<int>(vec_.constraints.extent(1));
  if (nc_ > 0) {
    Y_ = new_block<Mem>("kess::lobpcg::Y", n_, nc_);
    Kokkos::deep_copy(exec_, Y_, vec_.constraints);
    BY_ = Y_;
    if (generalized()) {
      BY_ = new_block<Mem>("kess::lobpcg::BY", n_, nc_);
      apply_b(Y_, BY_);
    }
    ly_ = gram(exec_, comm_, cols(CB(Y_)), cols(CB(BY_)));
    const int info = core::lapack::potrf('L', nc_, ly_.data(), nc_);
    require_arg(info == 0, fn, "the constraints are linearly dependent");
  }
  // X: the start block, constrained, B-orthonormal (refilled with fresh random columns when the
  // given vectors are dependent).
  B X = blk(w0_, k), BX;
  start_block(X);
  for (int attempt = 0;; ++attempt) {
    BX = X;
    if (generalized()) {
      BX = blk(bv_[1], k);
      apply_b(X, BX);
    }
    int have = 0;
    timed(res_.seconds.orthonormalization, [&] {
      project_constraints(X, BX);
      have = orthonormalize(Panel{}, Panel{}, X, BX, 1e-8);
    });
    if (have == k) break;
    require(attempt < 8, ErrorKind::no_convergence, fn,
            "could not build an independent start block");
    B Xn = blk(w0_, k);
    const B Xo = X;
    const std::uint64_t seed = opts_.seed;
    const std::int64_t off = H_.vector_offset();
    const std::uint64_t dom = kDomainStart + 1 + static_cast<std::uint64_t>(attempt);
    Kokkos::parallel_for(
        "kess::lobpcg::refill", Kokkos::RangePolicy<Exec>(exec_, 0, n_),
        KOKKOS_LAMBDA(const std::int64_t i) {
          for (int j = 0; j < k; ++j)
            Xn(i, j) =
                j < have
                    ? Xo(i, j)
                    : gen::to_signed_unit(gen::hash3(seed, dom, static_cast<std::uint64_t>(off + i),
                                                     static_cast<std::uint64_t>(j)));
        });
    X = Xn;
  }
  // R = AX - BX Θ and the squared norms of R's and X's columns, from each update.
  B R = blk(r_, k);
  std::vector<double> nr;
  {
    B AX = blk(aw_, k);
    apply_a(X, AX);
    bool ok = false;
    timed(res_.seconds.rayleigh_ritz, [&] {
      auto Z = gram(exec_, comm_, n_, as_panel(X), as_panel(AX));
      if (!small_eigen(Z, k, theta_)) return;
      ok = true;
      nr = update_residual(exec_, comm_, n_, as_panel(X), as_panel(AX), as_panel(BX), Z,
                           spanel(cur_, 0, k), aspanel(cur_, 0, k), bspanel(cur_, 0, k),
                           generalized(), theta_, as_panel(R));
    });
    require(ok, ErrorKind::no_convergence, fn, "the first Rayleigh–Ritz failed");
  }
  np_ = 0;
  theta_.resize(static_cast<std::size_t>(k));
  std::vector<double> rn(static_cast<std::size_t>(k));
  int it = 0;
  for (;;) {
    std::vector<int> active;
    int conv = 0;
    double worst = 0;
    for (int i = 0; i < k; ++i) {
      rn[i] = std::sqrt(nr[i]) / ((normest_ + std::abs(theta_[i])) * std::sqrt(nr[k + i]));
      const bool c = rn[i] < opts_.tol;
      if (!c) active.push_back(i);
      if (i < nev) {
        conv += c ? 1 : 0;
        worst = std::isnan(rn[i]) ? rn[i] : std::max(worst, rn[i]);
      }
    }
    res_.history.emplace_back(rn.begin(), rn.begin() + nev);
    res_.converged_count = conv;
    if (opts_.progress && comm_.rank() == 0)
      std::fprintf(stderr,
                   "kess::lobpcg: iteration %d, %d/%d converged, max residual %.3e, "
                   "lambda_1 = %.15g\n",
                   it, conv, nev, worst, sigma_ * theta_[0]);
    if (conv == nev) {
      res_.converged = true;
      break;
    }
    if (it >= opts_.max_iterations) break;
    ++it;
    // W = K^-1 R on the active columns, B-orthonormal against the constraints, X and P.
    const int na = static_cast<int>(active.size());
    const int q = k + np_;
    const Panel Q = spanel(cur_, 0, q), BQ = bspanel(cur_, 0, q);
    B Ra, W;
    precondition(R, active, theta_, W, Ra);
    const B W0 = W;
    B BW = W;
    if (generalized()) {
      BW = blk(bv_[1], na);
      apply_b(W, BW);
    }
    int nw = 0;
    timed(res_.seconds.orthonormalization, [&] {
      project_constraints(W, BW);
      nw = orthonormalize(Q, BQ, W, BW, 1e-8);
    });
    if (nw < na && opts_.preconditioner != Preconditioner::none) {
      // K^-1 r fell into span(X, P) (K = A - θ exactly gives K^-1 r = x): complete the
      // directions with the plain residuals, at most na columns.
      W = blk(v_[0], 2 * na);
      copy_columns(exec_, n_, as_panel(W0), Panel{W.data(), na, 2 * na});
      copy_columns(exec_, n_, as_panel(Ra), Panel{W.data() + na, na, 2 * na});
      BW = W;
      if (generalized()) {
        BW = blk(bv_[0], 2 * na);
        apply_b(W, BW);
      }
      timed(res_.seconds.orthonormalization, [&] {
        project_constraints(W, BW);
        nw = orthonormalize(Q, BQ, W, BW, 1e-8);
        if (nw > na) {
          // The first na columns, contiguous.
          const int o = W.data() == v_[0].data() ? 1 : 0;
          B Wt = blk(v_[o], na);
          copy_columns(exec_, n_, Panel{W.data(), na, nw}, as_panel(Wt));
          W = Wt;
          if (generalized()) {
            B BWt = blk(bv_[o], na);
            copy_columns(exec_, n_, Panel{BW.data(), na, nw}, as_panel(BWt));
            BW = BWt;
          } else {
            BW = W;
          }
          nw = na;
        }
      });
    }
    if (nw == 0) break;  // no new direction: stagnation, return what we have
    B AW = blk(aw_, nw);
    apply_a(W, AW);
    // Rayleigh–Ritz on S = [X P W] (B-orthonormal): G_A = SᵀAS from Θ, PᵀAP and Sᵀ(AW).
    bool ok = false;
    timed(res_.seconds.rayleigh_ritz, [&] {
      const int m = q + nw;
      copy_columns(exec_, n_, as_panel(W), spanel(cur_, q, nw));
      copy_columns(exec_, n_, as_panel(AW), aspanel(cur_, q, nw));
      if (generalized()) copy_columns(exec_, n_, as_panel(BW), bspanel(cur_, q, nw));
      const auto SAW = gram(exec_, comm_, n_, spanel(cur_, 0, m), as_panel(AW));
      std::vector<double> GA(static_cast<std::size_t>(m) * m, 0.0);
      for (int i = 0; i < k; ++i) GA[i + static_cast<std::size_t>(i) * m] = theta_[i];
      for (int j = 0; j < np_; ++j)
        for (int i = 0; i < np_; ++i)
          GA[k + i + static_cast<std::size_t>(k + j) * m] =
              pap_[i + static_cast<std::size_t>(j) * np_];
      for (int j = 0; j < nw; ++j)
        for (int i = 0; i < m; ++i) {
          const double g = SAW[i + static_cast<std::size_t>(j) * m];
          GA[i + static_cast<std::size_t>(q + j) * m] = g;
          if (i < q) GA[q + j + static_cast<std::size_t>(i) * m] = g;
        }
      std::vector<double> Z(GA), th;
      if (!small_eigen(Z, m, th)) return;
      ok = true;
      // P's coefficients: the P, W rows of the active Ritz vectors, orthogonalized against Z_x
      // (twice) and orthonormalized (Hetmaniuk & Lehoucq 2006).
      std::vector<double> Yp(static_cast<std::size_t>(m) * na, 0.0);
      for (int c = 0; c < na; ++c)
        for (int r = k; r < m; ++r)
          Yp[r + static_cast<std::size_t>(c) * m] = Z[r + static_cast<std::size_t>(active[c]) * m];
      std::vector<double> Zx(Z.begin(), Z.begin() + static_cast<std::ptrdiff_t>(m) * k);
      int np_new = na;
      for (int pass = 0; pass < 2 && np_new > 0; ++pass) {
        const auto C = small_atb(Zx, Yp, m, k, np_new);
        const auto ZC = small_ab(Zx, C, m, k, np_new);
        for (std::size_t e = 0; e < Yp.size(); ++e) Yp[e] -= ZC[e];
        const auto G = small_atb(Yp, Yp, m, np_new, np_new);
        std::vector<int> kept;
        const auto T = cholesky_drop(G, np_new, pass == 0 ? 1e-8 : 1e-3, 0.0, kept);
        Yp = small_ab(Yp, T, m, np_new, static_cast<int>(kept.size()));
        np_new = static_cast<int>(kept.size());
      }
      pap_ = small_atb(Yp, small_ab(GA, Yp, m, m, np_new), m, np_new, np_new);
      std::vector<double> M(Zx);
      M.insert(M.end(), Yp.begin(), Yp.end());
      const int nxt = 1 - cur_, w = k + np_new;
      std::copy(th.begin(), th.begin() + k, theta_.begin());
      nr = update_residual(exec_, comm_, n_, spanel(cur_, 0, m), aspanel(cur_, 0, m),
                           bspanel(cur_, 0, m), M, spanel(nxt, 0, w), aspanel(nxt, 0, w),
                           bspanel(nxt, 0, w), generalized(), theta_, as_panel(R));
      cur_ = nxt;
      np_ = np_new;
    });
    if (!ok) break;  // a non-finite Gram matrix: return what we have
  }
  res_.iterations = it;
  res_.norm_estimate = normest_;
  res_.eigenvalues.resize(static_cast<std::size_t>(nev));
  res_.residuals.assign(rn.begin(), rn.begin() + nev);
  for (int i = 0; i < nev; ++i) res_.eigenvalues[i] = sigma_ * theta_[i];
  res_.vectors = VectorBlock<double, Mem>(
      Kokkos::view_alloc(exec_, Kokkos::WithoutInitializing, "kess::lobpcg::vectors"), n_, nev);
  copy_columns(exec_, n_, spanel(cur_, 0, nev), as_panel(res_.vectors));
  exec_.fence();
  res_.seconds.total = now() - t_start;
  return std::move(res_);
}

}  // namespace detail::lobpcg

template <class ExecSpace>
LobpcgResult<double, typename ExecSpace::memory_space> lobpcg(
    const ExecSpace& exec, const CsbMatrix<double, typename ExecSpace::memory_space>& H,
    const LobpcgOptions& opts,
    const LobpcgVectors<double, typename ExecSpace::memory_space>& vectors) {
  return detail::lobpcg::Solver<ExecSpace>(exec, H, nullptr, opts, vectors).run();
}

template <class ExecSpace>
LobpcgResult<double, typename ExecSpace::memory_space> lobpcg(
    const ExecSpace& exec, const CsbMatrix<double, typename ExecSpace::memory_space>& H,
    const CsbMatrix<double, typename ExecSpace::memory_space>& S, const LobpcgOptions& opts,
    const LobpcgVectors<double, typename ExecSpace::memory_space>& vectors) {
  return detail::lobpcg::Solver<ExecSpace>(exec, H, &S, opts, vectors).run();
}

}  // namespace kess

/// Explicit instantiations of the FOM preconditioner and kess::lobpcg for one execution space.
/// (Serial and OpenMP share HostSpace: the preconditioner's constructor is then instantiated in
/// both units, which the linkers merge.)
#define KESS_LOBPCG_TEMPLATES(EXEC)                                                    \
  template FomPreconditioner<double, EXEC::memory_space>::FomPreconditioner(           \
      const CsbMatrix<double, EXEC::memory_space>&, int, int);                         \
  template void FomPreconditioner<double, EXEC::memory_space>::apply<EXEC>(            \
      const EXEC&, const std::vector<double>&,                                         \
      const Kokkos::View<const double**, Kokkos::LayoutRight, EXEC::memory_space>&,    \
      const VectorBlock<double, EXEC::memory_space>&) const;                           \
  template LobpcgResult<double, EXEC::memory_space> lobpcg<EXEC>(                      \
      const EXEC&, const CsbMatrix<double, EXEC::memory_space>&, const LobpcgOptions&, \
      const LobpcgVectors<double, EXEC::memory_space>&);                               \
  template LobpcgResult<double, EXEC::memory_space> lobpcg<EXEC>(                      \
      const EXEC&, const CsbMatrix<double, EXEC::memory_space>&,                       \
      const CsbMatrix<double, EXEC::memory_space>&, const LobpcgOptions&,              \
      const LobpcgVectors<double, EXEC::memory_space>&);
