// kess::CsbMatrix: builders, Matrix Market I/O, accessors (host code, instantiated per memory
// space).
//
// A build validates the input on every rank, places the stored triangle over the ranks
// (detail::lobpcg::Placement), sends each lower entry to its owner, and each rank sorts its entries
// into blocks: a counting sort by block row, then a radix sort of each block row by (block column,
// entry_key) that also brings duplicates and the two halves of a full input's pairs together.
#include <kess/comm/agree.hpp>
#include <kess/comm/exchange.hpp>
#include <kess/core/host/parallel.hpp>
#include <kess/core/io/matrix_market.hpp>
#include <kess/core/kokkos/compat.hpp>
#include <kess/solvers/lobpcg.hpp>
#include <kess/solvers/lobpcg/detail/csb_format.hpp>
#include <kess/solvers/lobpcg/detail/layout.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kess {
namespace detail::lobpcg {
namespace {

/// An index or count as std::size_t (std::vector's).
constexpr std::size_t uz(std::int64_t x) { return static_cast<std::size_t>(x); }

std::string pair_text(std::int64_t i, std::int64_t j) {
  return "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

std::string num_text(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

/// Throws Error(kind, fn, msg) on every rank when `ok` fails on any (directly on one rank).
void agree(const comm::Communicator& comm, bool ok, ErrorKind kind, const char* fn,
           const std::string& msg) {
  if (comm.size() <= 1) {
    require(ok, kind, fn, msg);
  } else {
    comm::agree(comm, ok, std::string(fn) + ": " + msg, kind);
  }
}

// ---- inputs: visit(f) calls f(i, j, v) for each listed entry, in order ------------------------

template <class T>
struct CooSource {
  const std::int64_t* rows;
  const std::int64_t* cols;
  const T* vals;
  std::int64_t begin, end;
  std::int64_t size() const { return end - begin; }
  template <class F>
  void visit(F&& f) const {
    for (std::int64_t e = begin; e < end; ++e) f(rows[e], cols[e], vals[e]);
  }
  /// "" or the first bad entry, naming the argument.
  std::string check(std::int64_t n) const {
    for (std::int64_t e = begin; e < end; ++e) {
      if (rows[e] < 0 || rows[e] >= n) {
        return "rows[" + std::to_string(e) + "] = " + std::to_string(rows[e]) +
               " is outside [0, n = " + std::to_string(n) + ")";
      }
      if (cols[e] < 0 || cols[e] >= n) {
        return "cols[" + std::to_string(e) + "] = " + std::to_string(cols[e]) +
               " is outside [0, n = " + std::to_string(n) + ")";
      }
      if (!std::isfinite(vals[e])) {
        return std::string("vals[") + std::to_string(e) + "] is " +
               (std::isnan(vals[e]) ? "NaN" : "Inf") + " at " + pair_text(rows[e], cols[e]);
      }
    }
    return {};
  }
};

template <class T>
struct CsrSource {
  std::int64_t n;
  const std::int64_t* row_ptr;
  const std::int64_t* cols;
  const T* vals;
  std::int64_t row_begin, row_end;  ///< rows this rank contributes
  std::int64_t size() const { return row_ptr[row_end] - row_ptr[row_begin]; }
  template <class F>
  void visit(F&& f) const {
    for (std::int64_t i = row_begin; i < row_end; ++i) {
      for (std::int64_t e = row_ptr[i]; e < row_ptr[i + 1]; ++e) f(i, cols[e], vals[e]);
    }
  }
  std::string check() const {
    for (std::int64_t i = row_begin; i < row_end; ++i) {
      for (std::int64_t e = row_ptr[i]; e < row_ptr[i + 1]; ++e) {
        if (cols[e] < 0 || cols[e] >= n) {
          return "cols[" + std::to_string(e) + "] = " + std::to_string(cols[e]) + " (row " +
                 std::to_string(i) + ") is outside [0, n = " + std::to_string(n) + ")";
        }
        if (!std::isfinite(vals[e])) {
          return std::string("vals[") + std::to_string(e) + "] is " +
                 (std::isnan(vals[e]) ? "NaN" : "Inf") + " at " + pair_text(i, cols[e]);
        }
      }
    }
    return {};
  }
};

/// A lower entry on the wire: j2 = 2 j + (1 when the input listed it as (j, i)).
template <class T>
struct WireEntry {
  std::int64_t i, j2;
  T v;
};

/// Entries received from the other ranks, already lower.
template <class T>
struct WireSource {
  const std::vector<WireEntry<T>>* e;
  std::int64_t size() const { return static_cast<std::int64_t>(e->size()); }
};

/// Calls f(i, j, v, mirrored) with i >= j for each entry of src.
template <class T, class Source, class F>
void visit_lower(const Source& src, F&& f) {
  src.visit([&](std::int64_t i, std::int64_t j, T v) {
    if (i >= j) {
      f(i, j, v, false);
    } else {
      f(j, i, v, true);
    }
  });
}
template <class T, class F>
void visit_lower(const WireSource<T>& src, F&& f) {
  for (const auto& w : *src.e) f(w.i, w.j2 >> 1, w.v, (w.j2 & 1) != 0);
}

// ---- the local build ----------------------------------------------------------------------------

/// An entry of a block row being sorted: key = block column << 33 | entry_key << 1 | mirrored.
template <class T>
struct Rec {
  std::uint64_t key;
  T val;
};

constexpr int kKeyShift = 33;

/// LSD radix sort of a[0, m) by key, 8 bits a pass, skipping the bytes all keys share.
template <class T>
void radix_sort(Rec<T>* a, Rec<T>* tmp, std::int64_t m) {
  if (m < 48) {
    for (std::int64_t x = 1; x < m; ++x) {
      const Rec<T> r = a[x];
      std::int64_t y = x;
      for (; y > 0 && a[y - 1].key > r.key; --y) a[y] = a[y - 1];
      a[y] = r;
    }
    return;
  }
  std::uint64_t diff = 0;
  for (std::int64_t x = 1; x < m; ++x) diff |= a[x].key ^ a[0].key;
  Rec<T>* src = a;
  Rec<T>* dst = tmp;
  for (int shift = 0; shift < 64; shift += 8) {
    if (((diff >> shift) & 0xff) == 0) continue;
    std::int64_t count[257] = {};
    for (std::int64_t x = 0; x < m; ++x) ++count[((src[x].key >> shift) & 0xff) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (std::int64_t x = 0; x < m; ++x) dst[count[(src[x].key >> shift) & 0xff]++] = src[x];
    std::swap(src, dst);
  }
  if (src != a) std::memcpy(static_cast<void*>(a), src, sizeof(Rec<T>) * uz(m));
}

/// The worst asymmetry of a full input: |lower - upper| at (i, j), i > j (0 when none).
struct Worst {
  double diff = -1;
  std::int64_t i = -1, j = -1;
  double lower = 0, upper = 0;
  bool worse_than(const Worst& o) const {
    if (diff != o.diff) return diff > o.diff;
    return i != o.i ? i < o.i : j < o.j;
  }
};

/// One rank's part under construction.
template <class T>
class LocalBuild {
 public:
  LocalBuild(int beta, const PartGeometry& g, CooContent content)
      : beta_(beta), g_(g), content_(content) {
    nbr_ = (g.part_rows + beta - 1) / beta;
  }

  /// Sorts the entries into block rows and blocks and merges pairs; returns "" or the first
  /// duplicate (by block row, then storage order).
  template <class Source>
  std::string sort(const Source& src) {
    const std::int64_t m = src.size();
    row_start_.assign(uz(nbr_ + 1), 0);
    visit_lower<T>(src, [&](std::int64_t i, std::int64_t, T, bool) {
      ++row_start_[uz((i - g_.row_offset) / beta_ + 1)];
    });
    for (std::int64_t b = 0; b < nbr_; ++b) row_start_[b + 1] += row_start_[b];
    recs_.reset(new Rec<T>[uz(std::max<std::int64_t>(m, 1))]);
    {
      std::vector<std::int64_t> fill(row_start_.begin(), row_start_.end() - 1);
      visit_lower<T>(src, [&](std::int64_t i, std::int64_t j, T v, bool mirrored) {
        const std::int64_t li = i - g_.row_offset, lj = j - g_.col_offset;
        const std::uint64_t bc = std::uint64_t(lj / beta_);
        const auto r = static_cast<std::uint16_t>(li % beta_);
        const auto c = static_cast<std::uint16_t>(lj % beta_);
        const std::uint64_t key =
            (bc << kKeyShift) | (std::uint64_t(entry_key(r, c)) << 1) | (mirrored ? 1u : 0u);
        recs_[uz(fill[uz(li / beta_)]++)] = Rec<T>{key, v};
      });
    }
    kept_.assign(uz(nbr_), 0);
    blocks_.assign(uz(nbr_), 0);
    const auto cut = chunk_cuts();
    const std::size_t chunks = cut.size() - 1;
    std::vector<std::string> errs(chunks);
    std::vector<Worst> worst(chunks);
    std::vector<double> maxabs(chunks, 0.0);
    for_row_chunks(cut, [&](int c, std::int64_t b0, std::int64_t b1) {
      std::int64_t longest = 0;
      for (std::int64_t b = b0; b < b1; ++b) {
        longest = std::max(longest, row_start_[b + 1] - row_start_[b]);
      }
      std::unique_ptr<Rec<T>[]> tmp(new Rec<T>[uz(std::max<std::int64_t>(longest, 1))]);
      for (std::int64_t b = b0; b < b1; ++b) {
        merge_row(b, tmp.get(), errs[uz(c)], worst[uz(c)], maxabs[uz(c)]);
      }
    });
    for (std::size_t c = 0; c < chunks; ++c) {
      if (worst[c].worse_than(worst_)) worst_ = worst[c];
      maxabs_ = std::max(maxabs_, maxabs[c]);
    }
    for (const auto& e : errs) {
      if (!e.empty()) return e;
    }
    return {};
  }

  const Worst& worst() const { return worst_; }
  double max_abs() const { return maxabs_; }

  /// Writes the part's blocks and entries; diag_out(i, v) receives each stored diagonal entry.
  template <class DiagOut>
  void emit(typename CsbMatrix<T, Kokkos::HostSpace>::Part& p, DiagOut&& diag_out) {
    std::vector<std::int64_t> eoff(uz(nbr_ + 1), 0), boff(uz(nbr_ + 1), 0);
    for (std::int64_t b = 0; b < nbr_; ++b) {
      eoff[b + 1] = eoff[b] + kept_[b];
      boff[b + 1] = boff[b] + blocks_[b];
    }
    const std::int64_t ne = eoff[nbr_], nb = boff[nbr_];
    p.row.resize(uz(ne));
    p.col.resize(uz(ne));
    p.val.resize(uz(ne));
    p.block_row.resize(uz(nb));
    p.block_col.resize(uz(nb));
    p.block_start.resize(uz(nb + 1));
    p.block_start[uz(nb)] = ne;
    for_row_chunks(chunk_cuts(), [&](int, std::int64_t b0, std::int64_t b1) {
      for (std::int64_t b = b0; b < b1; ++b) {
        const Rec<T>* r = recs_.get() + row_start_[b];
        std::int64_t e = eoff[b], blk = boff[b] - 1;
        std::uint64_t prev_bc = ~std::uint64_t(0);
        for (std::int64_t x = 0; x < kept_[b]; ++x, ++e) {
          const std::uint64_t bc = r[x].key >> kKeyShift;
          if (bc != prev_bc) {
            ++blk;
            p.block_row[blk] = static_cast<int>(b);
            p.block_col[blk] = static_cast<int>(bc);
            p.block_start[blk] = e;
            prev_bc = bc;
          }
          std::uint16_t rr, cc;
          entry_of_key(static_cast<std::uint32_t>(r[x].key >> 1), rr, cc);
          p.row[e] = rr;
          p.col[e] = cc;
          p.val[e] = r[x].val;
        }
      }
    });
    // Diagonal entries, in order (sequential: the callback may append).
    for (std::int64_t k = 0; k < nb; ++k) {
      const std::int64_t i0 = g_.row_offset + std::int64_t(p.block_row[k]) * beta_;
      const std::int64_t j0 = g_.col_offset + std::int64_t(p.block_col[k]) * beta_;
      if (i0 >= j0 + beta_ || j0 >= i0 + beta_) continue;
      for (std::int64_t e = p.block_start[k]; e < p.block_start[k + 1]; ++e) {
        if (i0 + p.row[e] == j0 + p.col[e]) diag_out(i0 + p.row[e], p.val[e]);
      }
    }
    recs_.reset();
  }

 private:
  // Bounds of chunks of block rows of about equal entries: one chunk for small parts or one
  // thread, else 8 a host thread.
  std::vector<std::int64_t> chunk_cuts() const {
    const std::int64_t total = row_start_[uz(nbr_)];
    const int threads = core::detail::host_threads();
    const int chunks = static_cast<int>(std::max<std::int64_t>(
        1, std::min<std::int64_t>(nbr_, total < (1 << 16) || threads < 2 ? 1 : 8 * threads)));
    std::vector<std::int64_t> cut(uz(chunks + 1), 0);
    for (int c = 1; c < chunks; ++c) {
      const std::int64_t target = total * c / chunks;
      const std::int64_t b =
          std::lower_bound(row_start_.begin(), row_start_.end(), target) - row_start_.begin();
      cut[uz(c)] = std::min(std::max(cut[uz(c - 1)], b), nbr_);
    }
    cut[uz(chunks)] = nbr_;
    return cut;
  }

  // f(c, b0, b1) for the chunks of `cut`, on kess's host threads.
  template <class F>
  void for_row_chunks(const std::vector<std::int64_t>& cut, F&& f) const {
    const int chunks = static_cast<int>(cut.size()) - 1;
    if (chunks == 1) {
      f(0, cut[0], cut[1]);
      return;
    }
    core::detail::host_parallel_for(chunks, core::detail::host_threads(),
                                    [&](int c) { f(c, cut[uz(c)], cut[uz(c + 1)]); });
  }

  // Global (i, j) of a record in block row b.
  void where(std::int64_t b, std::uint64_t key, std::int64_t& i, std::int64_t& j) const {
    std::uint16_t r, c;
    entry_of_key(static_cast<std::uint32_t>(key >> 1), r, c);
    i = g_.row_offset + b * beta_ + r;
    j = g_.col_offset + std::int64_t(key >> kKeyShift) * beta_ + c;
  }

  void merge_row(std::int64_t b, Rec<T>* tmp, std::string& err, Worst& worst, double& maxabs) {
    Rec<T>* a = recs_.get() + row_start_[b];
    const std::int64_t m = row_start_[b + 1] - row_start_[b];
    radix_sort(a, tmp, m);
    std::int64_t w = 0, blocks = 0;
    std::uint64_t prev_bc = ~std::uint64_t(0);
    for (std::int64_t x = 0; x < m;) {
      const std::uint64_t pos = a[x].key >> 1;
      std::int64_t y = x;
      int lower = 0, upper = 0;
      T vl = 0, vu = 0;
      for (; y < m && (a[y].key >> 1) == pos; ++y) {
        if (a[y].key & 1) {
          ++upper;
          vu = a[y].val;
        } else {
          ++lower;
          vl = a[y].val;
        }
      }
      if (err.empty() && (content_ == CooContent::triangle ? y - x > 1 : lower > 1 || upper > 1)) {
        std::int64_t i, j;
        where(b, a[x].key, i, j);
        if (content_ == CooContent::triangle) {
          err = "the pair " + pair_text(i, j) + " (0-based) is listed " + std::to_string(y - x) +
                " times; a triangle input lists each pair once, in either position";
        } else {
          const bool up = upper > 1;
          err = "entry " + (up ? pair_text(j, i) : pair_text(i, j)) + " (0-based) is listed " +
                std::to_string(up ? upper : lower) + " times";
        }
      }
      const T v = lower > 0 ? vl : vu;
      if (content_ == CooContent::full) {
        maxabs = std::max({maxabs, double(std::abs(vl)), double(std::abs(vu))});
        const double diff = std::abs(double(vl) - double(vu));
        if (diff > worst.diff || (diff == worst.diff && diff > 0)) {
          Worst here;
          where(b, a[x].key, here.i, here.j);
          here.diff = diff;
          here.lower = double(vl);
          here.upper = double(vu);
          // A diagonal entry is its own partner; ties go to the smallest pair (any chunking).
          if (here.i != here.j && here.worse_than(worst)) worst = here;
        }
      }
      const std::uint64_t bc = a[x].key >> kKeyShift;
      if (bc != prev_bc) {
        ++blocks;
        prev_bc = bc;
      }
      a[w++] = Rec<T>{a[x].key & ~std::uint64_t(1), v};
      x = y;
    }
    kept_[b] = w;
    blocks_[b] = blocks;
  }

  int beta_;
  PartGeometry g_;
  CooContent content_;
  std::int64_t nbr_ = 0;
  std::vector<std::int64_t> row_start_;
  std::unique_ptr<Rec<T>[]> recs_;
  std::vector<std::int64_t> kept_, blocks_;
  Worst worst_;
  double maxabs_ = 0;
};

/// The rank whose vector segment holds a row: segments sorted by offset, then a binary search.
class VectorOwners {
 public:
  explicit VectorOwners(const Placement& pl) {
    for (int r = 0; r < pl.ranks(); ++r) {
      if (pl.part(r).vec_rows > 0) seg_.push_back({pl.part(r).vec_offset, r});
    }
    std::sort(seg_.begin(), seg_.end());
  }
  int operator()(std::int64_t i) const {
    auto it = std::upper_bound(seg_.begin(), seg_.end(), std::make_pair(i, INT_MAX));
    return it == seg_.begin() ? 0 : std::prev(it)->second;
  }

 private:
  std::vector<std::pair<std::int64_t, int>> seg_;
};

/// Common argument checks; "" when fine.
std::string check_common(std::int64_t n, const CsbOptions& opts) {
  if (n <= 0) return "n = " + std::to_string(n) + " must be positive";
  if (opts.block_size < 0 || opts.block_size > kMaxBlockSize) {
    return "opts.block_size = " + std::to_string(opts.block_size) + " is outside 0.." +
           std::to_string(kMaxBlockSize) + " (0: automatic)";
  }
  if (!(opts.symmetry_tol >= 0) || !std::isfinite(opts.symmetry_tol)) {
    return "opts.symmetry_tol = " + num_text(opts.symmetry_tol) +
           " must be finite and non-negative";
  }
  const int beta = resolve_block_size(n, opts.block_size);
  if ((n + beta - 1) / beta > INT_MAX) {
    return "n = " + std::to_string(n) + " needs more than 2^31 - 1 blocks of " +
           std::to_string(beta) + " rows; choose a larger opts.block_size";
  }
  return {};
}

/// The collective build from this rank's (already checked) entries.
template <class T, class Mem, class Source>
CsbMatrix<T, Mem> build(const char* fn, std::int64_t n, const Source& src, CooContent content,
                        const CsbOptions& opts, const comm::Communicator& comm) {
  const int np = comm.size(), me = comm.rank();
  const int beta = resolve_block_size(n, opts.block_size);
  // Stored entries per row (of the input: a full input's upper halves are not counted).
  std::vector<std::int64_t> row_nnz(uz(n), 0);
  src.visit([&](std::int64_t i, std::int64_t j, T) {
    if (content == CooContent::triangle) {
      ++row_nnz[uz(std::max(i, j))];
    } else if (i >= j) {
      ++row_nnz[uz(i)];
    }
  });
  if (np > 1) comm::allreduce(comm, row_nnz, comm::ReduceOp::sum);
  const Placement pl = Placement::make(n, opts.layout, np, row_nnz);
  std::vector<std::int64_t>().swap(row_nnz);
  const PartGeometry& g = pl.part(me);

  LocalBuild<T> lb(beta, g, content);
  std::string err;
  if (np > 1) {
    std::vector<std::int64_t> counts(uz(np), 0), start(uz(np + 1), 0);
    std::vector<int> dest(uz(src.size()));
    std::int64_t e = 0;
    visit_lower<T>(src, [&](std::int64_t i, std::int64_t j, T, bool) {
      dest[uz(e)] = pl.owner(i, j);
      ++counts[uz(dest[uz(e++)])];
    });
    for (int r = 0; r < np; ++r) start[r + 1] = start[r] + counts[r];
    std::vector<WireEntry<T>> send(uz(src.size()));
    e = 0;
    visit_lower<T>(src, [&](std::int64_t i, std::int64_t j, T v, bool mirrored) {
      send[uz(start[dest[uz(e++)]]++)] = WireEntry<T>{i, 2 * j + (mirrored ? 1 : 0), v};
    });
    std::vector<int>().swap(dest);
    const auto mine = comm::alltoallv(comm, send, counts);
    std::vector<WireEntry<T>>().swap(send);
    err = lb.sort(WireSource<T>{&mine});
  } else {
    err = lb.sort(src);
  }
  agree(comm, err.empty(), ErrorKind::invalid_argument, fn, err);

  if (content == CooContent::full) {
    Worst worst = lb.worst();
    double maxabs = lb.max_abs();
    if (np > 1) {
      maxabs = comm::allreduce(comm, maxabs, comm::ReduceOp::max);
      const auto all = comm::allgatherv(comm, std::vector<Worst>{worst});
      for (const auto& w : all) {
        if (w.worse_than(worst)) worst = w;
      }
    }
    // The same decision on every rank (the same reduced values).
    if (worst.diff > opts.symmetry_tol * maxabs) {
      throw Error(
          ErrorKind::not_symmetric, fn,
          "the matrix is not symmetric: the worst pair (i, j) = " + pair_text(worst.i, worst.j) +
              " (0-based) has a_ij = " + num_text(worst.lower) +
              ", a_ji = " + num_text(worst.upper) +
              " (a missing entry counts as 0): |a_ij - a_ji| = " + num_text(worst.diff) +
              " > symmetry_tol * max|a| = " + num_text(opts.symmetry_tol * maxabs));
    }
  }

  typename CsbMatrix<T, Kokkos::HostSpace>::Part hp;
  hp.diagonal.assign(uz(g.vec_rows), T(0));
  if (np > 1) {
    std::vector<std::int64_t> di;
    std::vector<T> dv;
    lb.emit(hp, [&](std::int64_t i, T v) {
      di.push_back(i);
      dv.push_back(v);
    });
    std::vector<std::int64_t> counts(uz(np), 0), start(uz(np + 1), 0);
    std::vector<int> to(di.size());
    const VectorOwners vector_owner(pl);
    for (std::size_t k = 0; k < di.size(); ++k) ++counts[uz(to[k] = vector_owner(di[k]))];
    for (int r = 0; r < np; ++r) start[r + 1] = start[r] + counts[r];
    std::vector<std::int64_t> si(di.size());
    std::vector<T> sv(di.size());
    for (std::size_t k = 0; k < di.size(); ++k) {
      const auto slot = uz(start[to[k]]++);
      si[slot] = di[k];
      sv[slot] = dv[k];
    }
    const auto ri = comm::alltoallv(comm, si, counts);
    const auto rv = comm::alltoallv(comm, sv, counts);
    for (std::size_t k = 0; k < ri.size(); ++k) hp.diagonal[uz(ri[k] - g.vec_offset)] = rv[k];
  } else {
    lb.emit(hp, [&](std::int64_t i, T v) { hp.diagonal[uz(i - g.vec_offset)] = v; });
  }
  typename CsbMatrix<T, Mem>::Part p;
  p.n = n;
  p.beta = beta;
  p.layout = pl.layout();
  p.vec_offset = g.vec_offset;
  p.vec_rows = g.vec_rows;
  p.row_offset = g.row_offset;
  p.col_offset = g.col_offset;
  p.part_rows = g.part_rows;
  p.part_cols = g.part_cols;
  p.block_row = std::move(hp.block_row);
  p.block_col = std::move(hp.block_col);
  p.block_start = std::move(hp.block_start);
  p.row = std::move(hp.row);
  p.col = std::move(hp.col);
  p.val = std::move(hp.val);
  p.diagonal = std::move(hp.diagonal);
  if (np > 1) p.layout_data = make_layout_data(pl, comm);
  CsbMatrix<T, Mem> H;
  H.assign(std::move(p), comm);
  return H;
}

/// `count` entries split evenly: this rank's range.
std::pair<std::int64_t, std::int64_t> share(std::int64_t count, const comm::Communicator& comm) {
  const std::int64_t np = comm.size(), r = comm.rank();
  return {count * r / np, count * (r + 1) / np};
}

/// A host View of v's data (v itself in HostSpace, else a copy).
template <class U, class Mem>
Kokkos::View<const U*, Kokkos::HostSpace> on_host(const Kokkos::View<const U*, Mem>& v) {
  if constexpr (std::is_same<Mem, Kokkos::HostSpace>::value) {
    return v;
  } else {
    using Exec = typename Mem::execution_space;
    Kokkos::View<U*, Kokkos::HostSpace> h(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kess::CsbMatrix::host_copy")),
        v.extent(0));
    Exec exec;
    Kokkos::deep_copy(exec, h, v);
    kx::fence(exec, "kess::CsbMatrix::host_copy");
    return h;
  }
}

/// A MemorySpace copy of a host vector.
template <class U, class Mem>
Kokkos::View<const U*, Mem> to_space(const std::vector<U>& h, const char* label) {
  Kokkos::View<U*, Mem> v(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                          h.size());
  if (!h.empty()) {
    using Exec = typename Mem::execution_space;
    Kokkos::View<const U*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> src(
        h.data(), h.size());
    Exec exec;
    Kokkos::deep_copy(exec, v, src);
    kx::fence(exec, label);
  }
  return v;
}

}  // namespace

/// This rank's stored entries as global (row, col, value) triples, in storage order.
template <class T, class Mem>
void local_triples(const CsbMatrix<T, Mem>& H, std::vector<std::int64_t>& rows,
                   std::vector<std::int64_t>& cols, std::vector<T>& vals) {
  const auto r = on_host(H.entry_row());
  const auto c = on_host(H.entry_col());
  const auto v = on_host(H.entry_value());
  const std::int64_t ne = H.local_nonzeros(), beta = H.block_size();
  rows.resize(uz(ne));
  cols.resize(uz(ne));
  vals.resize(uz(ne));
  const auto& br = H.block_row_host();
  const auto& bc = H.block_col_host();
  const auto& bs = H.block_start_host();
  for (std::size_t k = 0; k < br.size(); ++k) {
    const std::int64_t i0 = H.row_offset() + br[k] * beta, j0 = H.col_offset() + bc[k] * beta;
    for (std::int64_t e = bs[k]; e < bs[k + 1]; ++e) {
      rows[uz(e)] = i0 + r(e);
      cols[uz(e)] = j0 + c(e);
      vals[uz(e)] = v(e);
    }
  }
}

/// Sorts (rows, cols, vals) by row then column: a counting sort by row, then each row by column.
template <class T>
void sort_by_row(std::int64_t n, std::vector<std::int64_t>& rows, std::vector<std::int64_t>& cols,
                 std::vector<T>& vals) {
  const std::size_t m = rows.size();
  std::vector<std::int64_t> start(uz(n + 1), 0);
  for (auto i : rows) ++start[uz(i + 1)];
  for (std::int64_t i = 0; i < n; ++i) start[i + 1] += start[i];
  std::vector<std::pair<std::int64_t, T>> cv(m);
  {
    std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
    for (std::size_t e = 0; e < m; ++e) {
      cv[uz(fill[uz(rows[e])]++)] = {cols[e], vals[e]};
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    std::sort(cv.begin() + start[i], cv.begin() + start[i + 1],
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::int64_t e = start[i]; e < start[i + 1]; ++e) {
      rows[uz(e)] = i;
      cols[uz(e)] = cv[uz(e)].first;
      vals[uz(e)] = cv[uz(e)].second;
    }
  }
}

}  // namespace detail::lobpcg

namespace {
using detail::lobpcg::uz;
}  // namespace

// ---- CsbMatrix ----------------------------------------------------------------------------------

template <class T, class Mem>
void CsbMatrix<T, Mem>::assign(Part part, const comm::Communicator& comm) {
  constexpr const char* fn = "CsbMatrix::assign";
  const std::size_t nb = part.block_row.size(), ne = part.val.size();
  require_arg(part.block_col.size() == nb && part.block_start.size() == nb + 1 &&
                  part.block_start.front() == 0 && uz(part.block_start.back()) == ne,
              fn, "part: block_row, block_col and block_start disagree with the entries");
  require_arg(part.row.size() == ne && part.col.size() == ne, fn,
              "part: row, col and val have different lengths");
  require_arg(part.diagonal.size() == uz(part.vec_rows), fn,
              "part: diagonal needs vec_rows values");
  require_arg(part.n >= 0 && part.beta >= 1 && part.beta <= detail::lobpcg::kMaxBlockSize, fn,
              "part: n or beta out of range");
  comm_ = comm;
  layout_ = part.layout;
  n_ = part.n;
  beta_ = part.beta;
  vec_offset_ = part.vec_offset;
  vec_rows_ = part.vec_rows;
  row_offset_ = part.row_offset;
  col_offset_ = part.col_offset;
  part_rows_ = part.part_rows;
  part_cols_ = part.part_cols;
  // Stored diagonal entries (nonzeros() counts them once).
  local_diagonal_nnz_ = 0;
  for (std::size_t k = 0; k < nb; ++k) {
    const std::int64_t i0 = row_offset_ + std::int64_t(part.block_row[k]) * beta_;
    const std::int64_t j0 = col_offset_ + std::int64_t(part.block_col[k]) * beta_;
    if (i0 >= j0 + beta_ || j0 >= i0 + beta_) continue;
    for (std::int64_t e = part.block_start[k]; e < part.block_start[k + 1]; ++e) {
      local_diagonal_nnz_ += i0 + part.row[uz(e)] == j0 + part.col[uz(e)];
    }
  }
  using detail::lobpcg::to_space;
  block_row_ = to_space<int, Mem>(part.block_row, "kess::CsbMatrix::block_row");
  block_col_ = to_space<int, Mem>(part.block_col, "kess::CsbMatrix::block_col");
  block_start_ = to_space<std::int64_t, Mem>(part.block_start, "kess::CsbMatrix::block_start");
  row_ = to_space<std::uint16_t, Mem>(part.row, "kess::CsbMatrix::entry_row");
  std::vector<std::uint16_t>().swap(part.row);
  col_ = to_space<std::uint16_t, Mem>(part.col, "kess::CsbMatrix::entry_col");
  std::vector<std::uint16_t>().swap(part.col);
  val_ = to_space<T, Mem>(part.val, "kess::CsbMatrix::entry_value");
  std::vector<T>().swap(part.val);
  diag_ = to_space<T, Mem>(part.diagonal, "kess::CsbMatrix::diagonal");
  block_row_h_ = std::move(part.block_row);
  block_col_h_ = std::move(part.block_col);
  block_start_h_ = std::move(part.block_start);
  layout_data_ = std::move(part.layout_data);
}

template <class T, class Mem>
CsbMatrix<T, Mem> CsbMatrix<T, Mem>::from_coo(std::int64_t n, const std::vector<std::int64_t>& rows,
                                              const std::vector<std::int64_t>& cols,
                                              const std::vector<T>& vals, CooContent content,
                                              const CsbOptions& opts,
                                              const comm::Communicator& comm) {
  constexpr const char* fn = "CsbMatrix::from_coo";
  namespace dl = detail::lobpcg;
  comm.require_valid(fn);
  std::string err = dl::check_common(n, opts);
  if (err.empty() && (cols.size() != rows.size() || vals.size() != rows.size())) {
    err = "rows, cols and vals have different lengths (" + std::to_string(rows.size()) + ", " +
          std::to_string(cols.size()) + ", " + std::to_string(vals.size()) + ")";
  }
  dl::CooSource<T> src{rows.data(), cols.data(), vals.data(), 0,
                       static_cast<std::int64_t>(rows.size())};
  if (err.empty()) err = src.check(n);
  dl::agree(comm, err.empty(), ErrorKind::invalid_argument, fn, err);
  return dl::build<T, Mem>(fn, n, src, content, opts, comm);
}

template <class T, class Mem>
CsbMatrix<T, Mem> CsbMatrix<T, Mem>::from_csr(std::int64_t n,
                                              const std::vector<std::int64_t>& row_ptr,
                                              const std::vector<std::int64_t>& cols,
                                              const std::vector<T>& vals, CooContent content,
                                              const CsbOptions& opts,
                                              const comm::Communicator& comm) {
  constexpr const char* fn = "CsbMatrix::from_csr";
  namespace dl = detail::lobpcg;
  comm.require_valid(fn);
  std::string err = dl::check_common(n, opts);
  if (err.empty()) {
    if (row_ptr.size() != uz(n + 1)) {
      err = "row_ptr has " + std::to_string(row_ptr.size()) +
            " entries; n + 1 = " + std::to_string(n + 1) + " expected";
    } else if (row_ptr[0] != 0) {
      err = "row_ptr[0] = " + std::to_string(row_ptr[0]) + " must be 0";
    } else if (cols.size() != vals.size() || std::int64_t(cols.size()) != row_ptr[n]) {
      err = "row_ptr[n] = " + std::to_string(row_ptr[uz(n)]) + ", cols has " +
            std::to_string(cols.size()) + " and vals " + std::to_string(vals.size()) +
            " entries: they must agree";
    } else {
      for (std::int64_t i = 0; i < n; ++i) {
        if (row_ptr[i + 1] < row_ptr[i]) {
          err = "row_ptr decreases at row " + std::to_string(i) + " (" +
                std::to_string(row_ptr[i]) + " > " + std::to_string(row_ptr[i + 1]) + ")";
          break;
        }
      }
    }
  }
  dl::CsrSource<T> src{n, row_ptr.data(), cols.data(), vals.data(), 0, err.empty() ? n : 0};
  if (err.empty()) err = src.check();
  dl::agree(comm, err.empty(), ErrorKind::invalid_argument, fn, err);
  return dl::build<T, Mem>(fn, n, src, content, opts, comm);
}

template <class T, class Mem>
CsbMatrix<T, Mem> CsbMatrix<T, Mem>::read_matrix_market(const std::string& path,
                                                        const CsbOptions& opts,
                                                        const comm::Communicator& comm) {
  constexpr const char* fn = "CsbMatrix::read_matrix_market";
  namespace dl = detail::lobpcg;
  comm.require_valid(fn);
  mm::CooMatrix coo;
  std::string err;
  ErrorKind kind = ErrorKind::io;
  if (comm.rank() == 0) {
    try {
      coo = mm::read_coordinate(path, /*expand_symmetric=*/false);
      if (coo.m != coo.n) {
        kind = ErrorKind::invalid_argument;
        err =
            path + " is " + std::to_string(coo.m) + " x " + std::to_string(coo.n) + ", not square";
      } else if (coo.n == 0) {
        kind = ErrorKind::invalid_argument;
        err = path + " is an empty (0 x 0) matrix";
      }
    } catch (const Error& e) {
      err = e.what();
      kind = e.kind();
    } catch (const std::bad_alloc&) {
      err = path + ": out of memory while reading";
      kind = ErrorKind::out_of_memory;
    }
  }
  // Every rank learns rank 0's verdict, n and the file's symmetry.
  std::int64_t n = coo.n, sym = coo.symmetric ? 1 : 0, k = static_cast<std::int64_t>(kind);
  if (comm.size() > 1) {
    std::vector<std::int64_t> v{comm.rank() == 0 ? n : -1, comm.rank() == 0 ? sym : -1,
                                comm.rank() == 0 ? k : -1};
    comm::allreduce(comm, v, comm::ReduceOp::max);
    n = v[0];
    sym = v[1];
    k = v[2];
  }
  dl::agree(comm, err.empty(), static_cast<ErrorKind>(k), fn, err);
  err = dl::check_common(n, opts);
  dl::agree(comm, err.empty(), ErrorKind::invalid_argument, fn, err);
  dl::CooSource<T> src{coo.rows.data(), coo.cols.data(), coo.vals.data(), 0,
                       static_cast<std::int64_t>(coo.vals.size())};
  return dl::build<T, Mem>(fn, n, src, sym ? CooContent::triangle : CooContent::full, opts, comm);
}

template <class T, class Mem>
void CsbMatrix<T, Mem>::write_matrix_market(const std::string& path) const {
  constexpr const char* fn = "CsbMatrix::write_matrix_market";
  namespace dl = detail::lobpcg;
  comm_.require_valid(fn);
  mm::CooMatrix coo;
  dl::local_triples(*this, coo.rows, coo.cols, coo.vals);
  if (comm_.size() > 1) {
    std::vector<std::int64_t> counts(uz(comm_.size()), 0);
    counts[0] = static_cast<std::int64_t>(coo.vals.size());
    coo.rows = comm::alltoallv(comm_, coo.rows, counts);
    coo.cols = comm::alltoallv(comm_, coo.cols, counts);
    coo.vals = comm::alltoallv(comm_, coo.vals, counts);
  }
  std::string err;
  ErrorKind kind = ErrorKind::io;
  if (comm_.rank() == 0) {
    try {
      dl::sort_by_row(n_, coo.rows, coo.cols, coo.vals);
      coo.m = coo.n = n_;
      coo.symmetric = true;
      mm::write_coordinate(path, coo);
    } catch (const Error& e) {
      err = e.what();
      kind = e.kind();
    } catch (const std::bad_alloc&) {
      err = path + ": out of memory while writing";
      kind = ErrorKind::out_of_memory;
    }
  }
  std::int64_t k = static_cast<std::int64_t>(kind);
  if (comm_.size() > 1) k = comm::allreduce(comm_, comm_.rank() == 0 ? k : -1, comm::ReduceOp::max);
  dl::agree(comm_, err.empty(), static_cast<ErrorKind>(k), fn, err);
}

template <class T, class Mem>
void CsbMatrix<T, Mem>::to_coo(std::vector<std::int64_t>& rows, std::vector<std::int64_t>& cols,
                               std::vector<T>& vals) const {
  namespace dl = detail::lobpcg;
  dl::local_triples(*this, rows, cols, vals);
  if (comm_.size() > 1) {
    rows = comm::allgatherv(comm_, rows);
    cols = comm::allgatherv(comm_, cols);
    vals = comm::allgatherv(comm_, vals);
  }
  dl::sort_by_row(n_, rows, cols, vals);
}

template <class T, class Mem>
std::int64_t CsbMatrix<T, Mem>::stored_nonzeros() const {
  const std::int64_t mine = local_nonzeros();
  return comm_.size() > 1 ? comm::allreduce(comm_, mine, comm::ReduceOp::sum) : mine;
}

template <class T, class Mem>
std::int64_t CsbMatrix<T, Mem>::nonzeros() const {
  const std::int64_t mine = 2 * local_nonzeros() - local_diagonal_nnz_;
  return comm_.size() > 1 ? comm::allreduce(comm_, mine, comm::ReduceOp::sum) : mine;
}

template <class T, class Mem>
std::int64_t CsbMatrix<T, Mem>::local_bytes() const noexcept {
  const auto nb = static_cast<std::int64_t>(block_row_h_.size());
  return local_nonzeros() * std::int64_t(2 * sizeof(std::uint16_t) + sizeof(T)) +
         nb * std::int64_t(2 * sizeof(int)) + (nb + 1) * std::int64_t(sizeof(std::int64_t));
}

template <class T, class Mem>
CsbMatrix<T, Mem> make_csb(const SparseProblem& p, const CsbOptions& opts,
                           const comm::Communicator& comm) {
  constexpr const char* fn = "make_csb";
  namespace dl = detail::lobpcg;
  comm.require_valid(fn);
  std::string err = dl::check_common(p.n, opts);
  if (err.empty() && (p.cols.size() != p.rows.size() || p.vals.size() != p.rows.size())) {
    err = "p.rows, p.cols and p.vals have different lengths";
  }
  // Every rank holds the whole problem: each contributes an equal share of it.
  const auto [b, e] = dl::share(err.empty() ? std::int64_t(p.rows.size()) : 0, comm);
  dl::CooSource<T> src{p.rows.data(), p.cols.data(), p.vals.data(), b, e};
  if (err.empty()) err = src.check(p.n);
  dl::agree(comm, err.empty(), ErrorKind::invalid_argument, fn, err);
  return dl::build<T, Mem>(fn, p.n, src, CooContent::triangle, opts, comm);
}

template class CsbMatrix<double, Kokkos::HostSpace>;
template CsbMatrix<double, Kokkos::HostSpace> make_csb<double, Kokkos::HostSpace>(
    const SparseProblem&, const CsbOptions&, const comm::Communicator&);
#if defined(KOKKOS_ENABLE_CUDA)
template class CsbMatrix<double, Kokkos::CudaSpace>;
template CsbMatrix<double, Kokkos::CudaSpace> make_csb<double, Kokkos::CudaSpace>(
    const SparseProblem&, const CsbOptions&, const comm::Communicator&);
#endif

}  // namespace kess
