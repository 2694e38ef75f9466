#include <kess/core/io/matrix_market.hpp>
#include <kess/core/io/output_file.hpp>

#include <kess/core/base/error.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <string_view>
#include <utility>

namespace kess::mm {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) tokens.push_back(s.substr(i, j - i));
    i = j;
  }
  return tokens;
}

/// a * b, or -1 when it overflows int64 (a, b >= 0).
std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  if (a != 0 && b > kInt64Max / a) return -1;
  return a * b;
}

/// Number of entries of the lower triangle of an n x n matrix, or -1 on overflow.
std::int64_t lower_count(std::int64_t n) {
  std::int64_t a = n % 2 == 0 ? n / 2 : n;
  std::int64_t b = n % 2 == 0 ? n + 1 : (n + 1) / 2;
  return checked_mul(a, b);
}

/// Index k of the first entry that repeats an earlier (row, col), with the index of that earlier
/// one; {-1, -1} when all pairs are distinct. "First" means smallest k (file order).
std::pair<std::int64_t, std::int64_t> first_duplicate(const std::vector<std::int64_t>& rows,
                                                      const std::vector<std::int64_t>& cols) {
  std::vector<std::int64_t> perm(rows.size());
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  std::sort(perm.begin(), perm.end(), [&](std::int64_t a, std::int64_t b) {
    if (cols[a] != cols[b]) return cols[a] < cols[b];
    if (rows[a] != rows[b]) return rows[a] < rows[b];
    return a < b;
  });
  std::pair<std::int64_t, std::int64_t> best{-1, -1};
  for (std::size_t k = 1; k < perm.size(); ++k) {
    std::int64_t a = perm[k - 1], b = perm[k];
    if (rows[a] == rows[b] && cols[a] == cols[b] && (best.first < 0 || b < best.first)) {
      best = {b, a};
    }
  }
  return best;
}

/// Line-oriented reader that knows where it is, for error messages.
/// s with control bytes (a NUL inside a number, say) shown as \xHH.
std::string printable(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

/// The m x n dense host matrix (zero-filled or not), or kess::Error(out_of_memory) that names
/// `what`, the size and the bytes when their count overflows or the allocation fails.
DenseHost allocate_dense(std::int64_t m, std::int64_t n, bool zero, const char* fn,
                         const std::string& what) {
  const std::int64_t entries = checked_mul(m, n);
  const std::int64_t bytes = entries < 0 ? -1 : checked_mul(entries, sizeof(double));
  const std::string size = std::to_string(m) + " x " + std::to_string(n) + " dense matrix";
  if (bytes < 0 || static_cast<std::uint64_t>(bytes) > std::numeric_limits<std::size_t>::max() / 2)
    throw Error(ErrorKind::out_of_memory, fn,
                what + ": the " + size + " needs more bytes than the address space holds");
  try {
    if (zero) return DenseHost("kess::mm::dense", m, n);
    return DenseHost(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kess::mm::dense"), m, n);
  } catch (const std::exception& e) {  // std::bad_alloc, Kokkos's allocation failure
    throw Error(ErrorKind::out_of_memory, fn,
                what + ": cannot allocate the " + size + " (" + std::to_string(bytes) +
                    " bytes): " + e.what());
  }
}

class Reader {
 public:
  Reader(const std::string& path, const char* function) : path_(path), function_(function) {
    in_.open(path, std::ios::in | std::ios::binary);
    if (!in_) {
      int err = errno;
      throw Error(ErrorKind::io, function_,
                  "'" + path_ + "': cannot open the file for reading (" + std::strerror(err) + ")");
    }
  }

  [[noreturn]] void fail(std::int64_t line, const std::string& what) const {
    throw Error(ErrorKind::io, function_,
                "'" + path_ + "', line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(line_no_, what); }

  /// Next physical line (without the end-of-line characters); false at the end of the file.
  bool next_line() {
    if (!std::getline(in_, line_)) {
      if (in_.bad()) fail(line_no_ + 1, "read error");
      return false;
    }
    ++line_no_;
    while (!line_.empty() && (line_.back() == '\r' || line_.back() == '\n')) line_.pop_back();
    return true;
  }

  /// Next line that is neither blank nor a % comment, split into tokens; false at the end.
  bool next_data_line() {
    while (next_line()) {
      tokens_ = split(line_);
      if (tokens_.empty() || tokens_[0][0] == '%') continue;
      return true;
    }
    tokens_.clear();
    return false;
  }

  const std::string& line() const { return line_; }
  const char* function() const { return function_; }
  /// "'<path>'", for messages about the whole file.
  std::string where() const { return "'" + path_ + "'"; }
  const std::vector<std::string_view>& tokens() const { return tokens_; }
  std::int64_t line_no() const { return line_no_; }

  std::int64_t parse_int(std::string_view token, const char* what) const {
    std::string s(token);
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() + s.size() || s.empty())
      fail(std::string(what) + " '" + printable(s) + "' is not an integer");
    if (errno == ERANGE) fail(std::string(what) + " '" + s + "' is out of the int64 range");
    return static_cast<std::int64_t>(v);
  }

  double parse_value(std::string_view token, bool integer) const {
    if (integer) return static_cast<double>(parse_int(token, "value"));
    std::string s(token);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || s.empty())
      fail("value '" + printable(s) + "' is not a real number");
    if (!std::isfinite(v)) fail("value '" + s + "' is not finite (NaN and Inf are not allowed)");
    return v;
  }

  /// Number of tokens on the current data line must be `count`.
  void expect_tokens(std::size_t count, const char* what) const {
    if (tokens_.size() != count) {
      fail(std::string(what) + " must have " + std::to_string(count) + " field" +
           (count == 1 ? "" : "s") + ", found " + std::to_string(tokens_.size()) + ": '" + line_ +
           "'");
    }
  }

 private:
  std::string path_;
  const char* function_;
  std::ifstream in_;
  std::string line_;
  std::vector<std::string_view> tokens_;
  std::int64_t line_no_ = 0;
};

/// Banner and size line.
Header parse_header(Reader& r) {
  Header h;
  if (!r.next_line()) r.fail(1, "empty file: missing the '%%MatrixMarket' banner");
  auto t = split(r.line());
  if (t.empty() || t[0] != "%%MatrixMarket") {
    r.fail(
        "missing or bad banner: expected '%%MatrixMarket matrix <format> <field> <symmetry>', "
        "found '" +
        r.line() + "'");
  }
  if (t.size() != 5) {
    r.fail(
        "bad banner: expected 5 words '%%MatrixMarket matrix <format> <field> <symmetry>', found "
        "'" +
        r.line() + "'");
  }
  std::string object = lower(t[1]), format = lower(t[2]), field = lower(t[3]),
              symmetry = lower(t[4]);
  if (object == "vector") r.fail("object 'vector' is not supported (only 'matrix')");
  if (object != "matrix") r.fail("unknown object '" + std::string(t[1]) + "' (expected 'matrix')");
  if (format == "coordinate") {
    h.coordinate = true;
  } else if (format != "array") {
    r.fail("unknown format '" + std::string(t[2]) + "' (expected 'array' or 'coordinate')");
  }
  if (field == "integer") {
    h.integer = true;
  } else if (field == "complex" || field == "pattern") {
    r.fail("field '" + field + "' is not supported (only 'real' and 'integer')");
  } else if (field != "real") {
    r.fail("unknown field '" + std::string(t[3]) + "' (expected 'real' or 'integer')");
  }
  if (symmetry == "symmetric") {
    h.symmetric = true;
  } else if (symmetry == "skew-symmetric" || symmetry == "hermitian") {
    r.fail("symmetry '" + symmetry + "' is not supported (only 'general' and 'symmetric')");
  } else if (symmetry != "general") {
    r.fail("unknown symmetry '" + std::string(t[4]) + "' (expected 'general' or 'symmetric')");
  }

  if (!r.next_data_line()) r.fail(r.line_no(), "end of file before the size line");
  r.expect_tokens(h.coordinate ? 3 : 2,
                  h.coordinate ? "the size line 'rows cols entries'" : "the size line 'rows cols'");
  h.m = r.parse_int(r.tokens()[0], "row count");
  h.n = r.parse_int(r.tokens()[1], "column count");
  if (h.m < 0 || h.n < 0) {
    r.fail("negative size " + std::to_string(h.m) + " x " + std::to_string(h.n));
  }
  if (h.symmetric && h.m != h.n) {
    r.fail("a symmetric matrix must be square, the size line says " + std::to_string(h.m) + " x " +
           std::to_string(h.n));
  }
  std::int64_t positions = h.symmetric ? lower_count(h.n) : checked_mul(h.m, h.n);
  if (positions < 0)
    r.fail("matrix size " + std::to_string(h.m) + " x " + std::to_string(h.n) + " overflows int64");
  if (h.coordinate) {
    h.entries = r.parse_int(r.tokens()[2], "entry count");
    if (h.entries < 0) r.fail("negative entry count " + std::to_string(h.entries));
    if (h.entries > positions) {
      r.fail("entry count " + std::to_string(h.entries) + " exceeds the " +
             std::to_string(positions) + " positions of the " +
             (h.symmetric ? "lower triangle of the " : "") + std::to_string(h.m) + " x " +
             std::to_string(h.n) + " matrix");
    }
  } else {
    h.entries = positions;
  }
  return h;
}

/// The entries must end here: only comments and blank lines may follow.
void expect_end(Reader& r, const Header& h) {
  if (r.next_data_line()) {
    r.fail("too many entries: the size line announces " + std::to_string(h.entries) +
           ", found more: '" + r.line() + "'");
  }
}

[[noreturn]] void too_few(Reader& r, const Header& h, std::int64_t found) {
  r.fail("too few entries: end of file after " + std::to_string(found) + " of the " +
         std::to_string(h.entries) + " announced by the size line");
}

DenseHost read_array(Reader& r, const Header& h) {
  // The values first (a file shorter than its size line allocates only what it holds), then the
  // matrix.
  std::vector<double> values;
  for (std::int64_t k = 0; k < h.entries; ++k) {
    if (!r.next_data_line()) too_few(r, h, k);
    r.expect_tokens(1, "an array entry");
    values.push_back(r.parse_value(r.tokens()[0], h.integer));
  }
  expect_end(r, h);
  DenseHost a = allocate_dense(h.m, h.n, false, r.function(), r.where());
  std::int64_t i = 0, j = 0;  // next position: column by column (lower triangle if symmetric)
  for (const double v : values) {
    a(i, j) = v;
    if (h.symmetric) a(j, i) = v;
    if (++i == h.m) {
      ++j;
      i = h.symmetric ? j : 0;
    }
  }
  return a;
}

CooMatrix read_coo(Reader& r, const Header& h) {
  CooMatrix coo;
  coo.m = h.m;
  coo.n = h.n;
  coo.symmetric = h.symmetric;
  // No reservation of the announced count: a size line may announce far more than the file holds.
  std::vector<std::int64_t> lines;
  for (std::int64_t k = 0; k < h.entries; ++k) {
    if (!r.next_data_line()) too_few(r, h, k);
    r.expect_tokens(3, "a coordinate entry 'row col value'");
    std::int64_t i = r.parse_int(r.tokens()[0], "row index");
    std::int64_t j = r.parse_int(r.tokens()[1], "column index");
    if (i < 1 || i > h.m) {
      r.fail("row index " + std::to_string(i) + " out of range 1.." + std::to_string(h.m));
    }
    if (j < 1 || j > h.n) {
      r.fail("column index " + std::to_string(j) + " out of range 1.." + std::to_string(h.n));
    }
    if (h.symmetric && i < j) {
      r.fail("entry (" + std::to_string(i) + ", " + std::to_string(j) +
             ") lies in the upper triangle; a symmetric file stores the lower one (row >= col)");
    }
    double v = r.parse_value(r.tokens()[2], h.integer);
    coo.rows.push_back(i - 1);
    coo.cols.push_back(j - 1);
    coo.vals.push_back(v);
    lines.push_back(r.line_no());
  }
  expect_end(r, h);
  auto [second, first] = first_duplicate(coo.rows, coo.cols);
  if (second >= 0) {
    r.fail(lines[second], "duplicate entry (" + std::to_string(coo.rows[second] + 1) + ", " +
                              std::to_string(coo.cols[second] + 1) + "), first given at line " +
                              std::to_string(lines[first]) + " (duplicates are not summed)");
  }
  return coo;
}

// ---- writing
// -------------------------------------------------------------------------------------
/// Writes through core::OutputFile: the file appears complete at close(), or not at all.
class Writer {
 public:
  Writer(const std::string& path, const char* function) : out_(path, function) {}
  void line(const char* s) { std::fputs(s, out_.get()); }
  void value(double v) { std::fprintf(out_.get(), "%.17g\n", v); }
  void entry(std::int64_t i, std::int64_t j, double v) {
    std::fprintf(out_.get(), "%lld %lld %.17g\n", static_cast<long long>(i),
                 static_cast<long long>(j), v);
  }
  void sizes(std::int64_t m, std::int64_t n) {
    std::fprintf(out_.get(), "%lld %lld\n", static_cast<long long>(m), static_cast<long long>(n));
  }
  void sizes(std::int64_t m, std::int64_t n, std::int64_t nnz) {
    std::fprintf(out_.get(), "%lld %lld %lld\n", static_cast<long long>(m),
                 static_cast<long long>(n), static_cast<long long>(nnz));
  }
  void close() { out_.commit(); }

 private:
  core::OutputFile out_;
};

std::string at(std::int64_t i, std::int64_t j) {
  return "(" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

/// to_dense, with `fn` and `what` (the file, or the argument) in the errors.
DenseHost dense_of(const CooMatrix& coo, const char* fn, const std::string& what) {
  const std::size_t nnz = coo.vals.size();
  require_arg(coo.rows.size() == nnz && coo.cols.size() == nnz && coo.m >= 0 && coo.n >= 0 &&
                  (!coo.symmetric || coo.m == coo.n),
              fn, what + " is inconsistent (sizes or lengths)");
  for (std::size_t k = 0; k < nnz; ++k) {
    require_arg(coo.rows[k] >= 0 && coo.rows[k] < coo.m && coo.cols[k] >= 0 && coo.cols[k] < coo.n,
                fn, what + " entry " + std::to_string(k) + " at " +
                    at(coo.rows[k], coo.cols[k]) + " (0-based) is outside the matrix");
  }
  DenseHost a = allocate_dense(coo.m, coo.n, true, fn, what);  // absent entries are 0
  for (std::size_t k = 0; k < coo.nnz(); ++k) {
    a(coo.rows[k], coo.cols[k]) = coo.vals[k];
    if (coo.symmetric) a(coo.cols[k], coo.rows[k]) = coo.vals[k];
  }
  return a;
}


}  // namespace

Header read_header(const std::string& path) {
  Reader r(path, "mm::read_header");
  return parse_header(r);
}

DenseHost read_dense(const std::string& path) {
  Reader r(path, "mm::read_dense");
  Header h = parse_header(r);
  if (!h.coordinate) return read_array(r, h);
  return dense_of(read_coo(r, h), r.function(), r.where());
}

CooMatrix read_coordinate(const std::string& path, bool expand) {
  Reader r(path, "mm::read_coordinate");
  Header h = parse_header(r);
  if (!h.coordinate) {
    r.fail(1, "read_coordinate needs a 'coordinate' file, this one is 'array' (use read_dense)");
  }
  CooMatrix coo = read_coo(r, h);
  return expand ? expand_symmetric(coo) : coo;
}

void write_dense(const std::string& path, const ConstDenseHost& a, bool symmetric) {
  const char* fn = "mm::write_dense";
  const std::int64_t m = static_cast<std::int64_t>(a.extent(0));
  const std::int64_t n = static_cast<std::int64_t>(a.extent(1));
  require_arg(!symmetric || m == n, fn,
              "argument 'a' is " + std::to_string(m) + " x " + std::to_string(n) +
                  ", a symmetric matrix must be square");
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i) {
      require_arg(std::isfinite(a(i, j)), fn,
                  "argument 'a' has a non-finite value at " + at(i, j) + " (0-based)");
      require(!symmetric || a(i, j) == a(j, i), ErrorKind::not_symmetric, fn,
              "argument 'a' is declared symmetric but a" + at(i, j) + " != a" + at(j, i) +
                  " (0-based)");
    }
  }
  Writer w(path, fn);
  w.line(symmetric ? "%%MatrixMarket matrix array real symmetric\n"
                   : "%%MatrixMarket matrix array real general\n");
  w.line("% written by kess\n");
  w.sizes(m, n);
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = symmetric ? j : 0; i < m; ++i) w.value(a(i, j));
  }
  w.close();
}

void write_coordinate(const std::string& path, const CooMatrix& coo) {
  const char* fn = "mm::write_coordinate";
  const std::size_t nnz = coo.vals.size();
  require_arg(coo.rows.size() == nnz && coo.cols.size() == nnz, fn,
              "argument 'coo' has rows/cols/vals of lengths " + std::to_string(coo.rows.size()) +
                  "/" + std::to_string(coo.cols.size()) + "/" + std::to_string(nnz));
  require_arg(coo.m >= 0 && coo.n >= 0, fn,
              "argument 'coo' has a negative size " + std::to_string(coo.m) + " x " +
                  std::to_string(coo.n));
  require_arg(
      !coo.symmetric || coo.m == coo.n, fn,
      "argument 'coo' is symmetric but " + std::to_string(coo.m) + " x " + std::to_string(coo.n));
  for (std::size_t k = 0; k < nnz; ++k) {
    std::int64_t i = coo.rows[k], j = coo.cols[k];
    require_arg(i >= 0 && i < coo.m && j >= 0 && j < coo.n, fn,
                "argument 'coo' entry " + std::to_string(k) + " at " + at(i, j) +
                    " (0-based) is outside the " + std::to_string(coo.m) + " x " +
                    std::to_string(coo.n) + " matrix");
    require_arg(!coo.symmetric || i >= j, fn,
                "argument 'coo' is symmetric but entry " + std::to_string(k) + " at " + at(i, j) +
                    " (0-based) lies in the upper triangle");
    require_arg(std::isfinite(coo.vals[k]), fn,
                "argument 'coo' entry " + std::to_string(k) + " at " + at(i, j) +
                    " (0-based) is not finite");
  }
  auto [second, first] = first_duplicate(coo.rows, coo.cols);
  require_arg(second < 0, fn,
              "argument 'coo' entries " + std::to_string(first) + " and " + std::to_string(second) +
                  " are both at " +
                  at(second < 0 ? 0 : coo.rows[second], second < 0 ? 0 : coo.cols[second]) +
                  " (0-based)");
  Writer w(path, fn);
  w.line(coo.symmetric ? "%%MatrixMarket matrix coordinate real symmetric\n"
                       : "%%MatrixMarket matrix coordinate real general\n");
  w.line("% written by kess\n");
  w.sizes(coo.m, coo.n, static_cast<std::int64_t>(nnz));
  for (std::size_t k = 0; k < nnz; ++k) w.entry(coo.rows[k] + 1, coo.cols[k] + 1, coo.vals[k]);
  w.close();
}

CooMatrix expand_symmetric(const CooMatrix& coo) {
  if (!coo.symmetric) return coo;
  CooMatrix g;
  g.m = coo.m;
  g.n = coo.n;
  g.symmetric = false;
  std::size_t off = 0;
  for (std::size_t k = 0; k < coo.nnz(); ++k) off += coo.rows[k] != coo.cols[k];
  g.rows.reserve(coo.nnz() + off);
  g.cols.reserve(coo.nnz() + off);
  g.vals.reserve(coo.nnz() + off);
  for (std::size_t k = 0; k < coo.nnz(); ++k) {
    g.rows.push_back(coo.rows[k]);
    g.cols.push_back(coo.cols[k]);
    g.vals.push_back(coo.vals[k]);
    if (coo.rows[k] != coo.cols[k]) {
      g.rows.push_back(coo.cols[k]);
      g.cols.push_back(coo.rows[k]);
      g.vals.push_back(coo.vals[k]);
    }
  }
  return g;
}

DenseHost to_dense(const CooMatrix& coo) { return dense_of(coo, "mm::to_dense", "argument 'coo'"); }

}  // namespace kess::mm
