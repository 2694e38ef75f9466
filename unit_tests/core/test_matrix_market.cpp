// Matrix Market I/O: bit-exact round trips and one test per malformed-input case.
#include <kess/core/base/error.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/io/matrix_market.hpp>

#include "test_check.hpp"
#include "test_backend.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using kess::mm::CooMatrix;
using kess::mm::DenseHost;

/// A per-test, per-process file name under the GoogleTest temp dir.
std::string temp_path(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "kess_mm_" + TestExecSpace::name() + "_" +
         std::to_string(::getpid()) + "_" + info->name() + "_" + tag + ".mtx";
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

using kess_test::bits;

/// Random doubles over the whole exponent range, with signed zeros and subnormals mixed in.
double nasty_value(std::uint64_t seed, std::int64_t i, std::int64_t j) {
  double u = kess::gen::random_general_entry(seed, i, j);
  std::uint64_t h =
      kess::gen::hash3(seed, 17, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j));
  switch (h % 16) {
    case 0:
      return 0.0;
    case 1:
      return -0.0;
    case 2:
      return std::numeric_limits<double>::denorm_min() * static_cast<double>(h % 1000 + 1);
    case 3:
      return u * std::numeric_limits<double>::max();
    default:
      return std::ldexp(u, static_cast<int>(h % 2000) - 1000);
  }
}

void expect_same_bits(const DenseHost& a, const DenseHost& b) {
  ASSERT_EQ(a.extent(0), b.extent(0));
  ASSERT_EQ(a.extent(1), b.extent(1));
  for (std::size_t j = 0; j < a.extent(1); ++j) {
    for (std::size_t i = 0; i < a.extent(0); ++i) {
      ASSERT_EQ(bits(a(i, j)), bits(b(i, j)))
          << "at (" << i << ", " << j << "): " << a(i, j) << " vs " << b(i, j);
    }
  }
}

/// Calls f, which must throw kess::Error of kind io naming `path` and "line <line>".
void expect_io_error(const std::function<void()>& f, const std::string& path, long line,
                     const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected an io error at line " << line;
  } catch (const kess::Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.kind(), kess::ErrorKind::io) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
    if (line >= 0) {
      std::string at = "line " + std::to_string(line) + ":";
      EXPECT_NE(what.find(at), std::string::npos) << "expected '" << at << "' in: " << what;
    }
    EXPECT_NE(what.find(fragment), std::string::npos)
        << "expected '" << fragment << "' in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---- round trips
// ---------------------------------------------------------------------------------
TEST(MatrixMarket, DenseGeneralRoundTripIsBitExact) {
  const std::int64_t m = 23, n = 17;
  DenseHost a("a", m, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) a(i, j) = nasty_value(1, i, j);
  std::string path = temp_path("a");
  kess::mm::write_dense(path, a);
  auto h = kess::mm::read_header(path);
  EXPECT_FALSE(h.coordinate);
  EXPECT_FALSE(h.symmetric);
  EXPECT_EQ(h.m, m);
  EXPECT_EQ(h.n, n);
  EXPECT_EQ(h.entries, m * n);
  expect_same_bits(kess::mm::read_dense(path), a);
  std::remove(path.c_str());
}

TEST(MatrixMarket, DenseSymmetricRoundTripStoresLowerTriangle) {
  const std::int64_t n = 31;
  DenseHost a("a", n, n);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = j; i < n; ++i) a(i, j) = a(j, i) = nasty_value(2, i, j);
  std::string path = temp_path("a");
  kess::mm::write_dense(path, a, /*symmetric=*/true);
  auto h = kess::mm::read_header(path);
  EXPECT_TRUE(h.symmetric);
  EXPECT_EQ(h.entries, n * (n + 1) / 2);
  expect_same_bits(kess::mm::read_dense(path), a);

  // The stored order is the lower triangle column by column: (0,0), (1,0), ..., (n-1,0), (1,1), ...
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> data;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '%') data.push_back(line);
  ASSERT_EQ(static_cast<std::int64_t>(data.size()), 1 + n * (n + 1) / 2);
  EXPECT_EQ(bits(std::stod(data[2])), bits(a(1, 0)));
  EXPECT_EQ(bits(std::stod(data[1 + n])), bits(a(1, 1)));
  std::remove(path.c_str());
}

TEST(MatrixMarket, RandomSymmetricDenseRoundTrip) {
  DenseHost a = kess::gen::random_symmetric(40, 7);
  std::string p1 = temp_path("sym"), p2 = temp_path("gen");
  kess::mm::write_dense(p1, a, true);
  kess::mm::write_dense(p2, a, false);
  expect_same_bits(kess::mm::read_dense(p1), a);
  expect_same_bits(kess::mm::read_dense(p2), a);
  std::remove(p1.c_str());
  std::remove(p2.c_str());
}

CooMatrix random_coo(std::int64_t m, std::int64_t n, bool symmetric, std::uint64_t seed) {
  CooMatrix c;
  c.m = m;
  c.n = n;
  c.symmetric = symmetric;
  // Pick positions by hash, in a scrambled order (columns descending) to check order is kept.
  for (std::int64_t j = n - 1; j >= 0; --j) {
    for (std::int64_t i = symmetric ? j : 0; i < m; ++i) {
      if (kess::gen::hash3(seed, 5, i, j) % 5 != 0) continue;
      c.rows.push_back(i);
      c.cols.push_back(j);
      c.vals.push_back(nasty_value(seed, i, j));
    }
  }
  return c;
}

TEST(MatrixMarket, CoordinateGeneralRoundTripKeepsOrderAndBits) {
  CooMatrix c = random_coo(41, 29, false, 3);
  ASSERT_GT(c.nnz(), 100u);
  std::string path = temp_path("c");
  kess::mm::write_coordinate(path, c);
  CooMatrix r = kess::mm::read_coordinate(path);
  EXPECT_EQ(r.m, c.m);
  EXPECT_EQ(r.n, c.n);
  EXPECT_FALSE(r.symmetric);
  EXPECT_EQ(r.rows, c.rows);
  EXPECT_EQ(r.cols, c.cols);
  ASSERT_EQ(r.vals.size(), c.vals.size());
  for (std::size_t k = 0; k < c.nnz(); ++k) EXPECT_EQ(bits(r.vals[k]), bits(c.vals[k])) << k;
  // Densified: the entries where given, +0 elsewhere.
  DenseHost d = kess::mm::read_dense(path);
  expect_same_bits(d, kess::mm::to_dense(c));
  std::remove(path.c_str());
}

TEST(MatrixMarket, CoordinateSymmetricRoundTripAndExpansion) {
  CooMatrix c = random_coo(37, 37, true, 4);
  std::size_t diag = 0;
  for (std::size_t k = 0; k < c.nnz(); ++k) diag += c.rows[k] == c.cols[k];
  ASSERT_GT(diag, 0u);
  std::string path = temp_path("c");
  kess::mm::write_coordinate(path, c);
  EXPECT_EQ(kess::mm::read_header(path).entries, static_cast<std::int64_t>(c.nnz()));

  CooMatrix r = kess::mm::read_coordinate(path);
  EXPECT_TRUE(r.symmetric);
  EXPECT_EQ(r.rows, c.rows);
  EXPECT_EQ(r.cols, c.cols);
  for (std::size_t k = 0; k < c.nnz(); ++k) EXPECT_EQ(bits(r.vals[k]), bits(c.vals[k])) << k;

  CooMatrix e = kess::mm::read_coordinate(path, /*expand_symmetric=*/true);
  EXPECT_FALSE(e.symmetric);
  EXPECT_EQ(e.nnz(), 2 * c.nnz() - diag);

  DenseHost d = kess::mm::read_dense(path);
  for (std::size_t k = 0; k < c.nnz(); ++k) {
    EXPECT_EQ(bits(d(c.rows[k], c.cols[k])), bits(c.vals[k]));
    EXPECT_EQ(bits(d(c.cols[k], c.rows[k])), bits(c.vals[k]));
  }
  expect_same_bits(d, kess::mm::to_dense(e));
  std::remove(path.c_str());
}

TEST(MatrixMarket, AcceptsIntegerFieldCommentsBlankLinesCrlfAndCase) {
  std::string path = temp_path("c");
  write_text(path,
             "%%MatrixMarket MATRIX Coordinate Integer Symmetric\r\n"
             "% a comment\r\n"
             "\r\n"
             "  3 3 3\r\n"
             "% between entries\n"
             "1 1 -4\n"
             "\n"
             "3\t1   7\n"
             "3 2 2\n"
             "% trailing comment\n\n");
  DenseHost a = kess::mm::read_dense(path);
  const double want[3][3] = {{-4, 0, 7}, {0, 0, 2}, {7, 2, 0}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(a(i, j), want[i][j]) << i << "," << j;
  EXPECT_TRUE(kess::mm::read_header(path).integer);

  write_text(path, "%%MatrixMarket matrix array real general\n2 2\n1\n2.5e0\n-3\n+4E-1\n");
  a = kess::mm::read_dense(path);
  EXPECT_EQ(a(0, 0), 1.0);
  EXPECT_EQ(a(1, 0), 2.5);
  EXPECT_EQ(a(0, 1), -3.0);
  EXPECT_EQ(a(1, 1), 0.4);
  std::remove(path.c_str());
}

TEST(MatrixMarket, EmptyMatrices) {
  std::string path = temp_path("c");
  CooMatrix c;
  c.m = 4;
  c.n = 2;
  kess::mm::write_coordinate(path, c);
  EXPECT_EQ(kess::mm::read_coordinate(path).nnz(), 0u);
  DenseHost d = kess::mm::read_dense(path);
  ASSERT_EQ(d.extent(0), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(d(i, 1), 0.0);
  kess::mm::write_dense(path, DenseHost("z", 0, 0));
  EXPECT_EQ(kess::mm::read_dense(path).size(), 0u);
  std::remove(path.c_str());
}

// ---- malformed input
// -----------------------------------------------------------------------------
struct BadCase {
  std::string name;
  std::string text;
  long line;             // line the message must name
  std::string fragment;  // text the message must contain
};

const std::string kCoo = "%%MatrixMarket matrix coordinate real general\n";
const std::string kSym = "%%MatrixMarket matrix coordinate real symmetric\n";
const std::string kArr = "%%MatrixMarket matrix array real general\n";

std::vector<BadCase> bad_cases() {
  auto c = [](const char* b) { return kCoo + b; };
  auto s = [](const char* b) { return kSym + b; };
  auto a = [](const char* b) { return kArr + b; };
  return {
      {"empty file", "", 1, "missing the '%%MatrixMarket' banner"},
      {"no banner", "3 3 1\n1 1 1\n", 1, "missing or bad banner"},
      {"comment, not banner", "% hello\n3 3 1\n1 1 1\n", 1, "missing or bad banner"},
      {"misspelt banner", "%%MatrixMarkett matrix array real general\n1 1\n1\n", 1, "bad banner"},
      {"short banner", "%%MatrixMarket matrix array real\n1 1\n1\n", 1, "5 words"},
      {"long banner", "%%MatrixMarket matrix array real general x\n1 1\n1\n", 1, "5 words"},
      {"unknown object", "%%MatrixMarket tensor array real general\n1 1\n1\n", 1,
       "unknown object 'tensor'"},
      {"vector object", "%%MatrixMarket vector array real general\n1 1\n1\n", 1, "'vector'"},
      {"unknown format", "%%MatrixMarket matrix dense real general\n1 1\n1\n", 1,
       "unknown format 'dense'"},
      {"complex field", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1,
       "field 'complex' is not supported"},
      {"pattern field", "%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1\n", 1,
       "field 'pattern' is not supported"},
      {"unknown field", "%%MatrixMarket matrix array float general\n1 1\n1\n", 1,
       "unknown field 'float'"},
      {"skew symmetry", "%%MatrixMarket matrix array real skew-symmetric\n1 1\n1\n", 1,
       "'skew-symmetric' is not supported"},
      {"hermitian", "%%MatrixMarket matrix array real hermitian\n1 1\n1\n", 1,
       "'hermitian' is not supported"},
      {"unknown symmetry", "%%MatrixMarket matrix array real diagonal\n1 1\n1\n", 1,
       "unknown symmetry 'diagonal'"},
      {"no size line", c("% only comments\n\n"), 3, "end of file before the size line"},
      {"size line too short", c("% c\n3 3\n"), 3, "size line"},
      {"size line too long", a("3 3 9\n"), 2, "size line"},
      {"size not a number", c("3 x 1\n1 1 1\n"), 2, "column count 'x' is not an integer"},
      {"size is real", c("3.0 3 1\n1 1 1\n"), 2, "row count '3.0' is not an integer"},
      {"negative size", c("-3 3 1\n1 1 1\n"), 2, "negative size"},
      {"negative nnz", c("3 3 -1\n"), 2, "negative entry count"},
      {"nnz too large", c("2 2 5\n"), 2, "exceeds the 4 positions"},
      {"symmetric nnz too large", s("2 2 4\n"), 2, "exceeds the 3 positions"},
      {"non-square symmetric", s("3 4 1\n1 1 1\n"), 2, "must be square"},
      {"non-square symmetric array",
       "%%MatrixMarket matrix array real symmetric\n2 3\n1\n2\n3\n4\n5\n6\n", 2, "must be square"},
      {"too few coordinate", c("3 3 3\n1 1 1\n% c\n2 2 2\n"), 5, "too few entries"},
      {"too few array", a("2 2\n1\n2\n\n3\n"), 6, "too few entries: end of file after 3 of the 4"},
      {"too many coordinate", c("3 3 1\n1 1 1\n% c\n2 2 2\n"), 5, "too many entries"},
      {"too many array", a("1 2\n1\n2\n3\n"), 5, "too many entries"},
      {"row index zero", c("3 3 2\n1 1 1\n0 1 1\n"), 4, "row index 0 out of range 1..3"},
      {"row index too big", c("3 3 2\n1 1 1\n4 1 1\n"), 4, "row index 4 out of range 1..3"},
      {"col index too big", c("3 2 2\n1 1 1\n1 3 1\n"), 4, "column index 3 out of range 1..2"},
      {"negative col", c("3 2 1\n1 -1 1\n"), 3, "column index -1 out of range"},
      {"upper triangle in symmetric", s("3 3 2\n2 1 1\n1 2 1\n"), 4, "upper triangle"},
      {"duplicate", c("3 3 4\n1 1 1\n2 1 5\n3 3 1\n2 1 5\n"), 6,
       "duplicate entry (2, 1), first given at line 4"},
      {"two duplicates: first pair in file order", c("3 3 5\n3 3 1\n1 1 1\n1 1 2\n3 3 2\n2 2 0\n"),
       5, "duplicate entry (1, 1), first given at line 4"},
      {"duplicate diagonal symmetric", s("2 2 2\n2 2 1\n2 2 1\n"), 4, "duplicate entry (2, 2)"},
      {"nan value", c("2 2 2\n1 1 1\n2 2 nan\n"), 4, "not finite"},
      {"NaN array", a("1 2\n1\nNaN\n"), 4, "not finite"},
      {"inf value", c("2 2 1\n1 1 -inf\n"), 3, "not finite"},
      {"overflowing value", a("1 1\n1e999\n"), 3, "not finite"},
      {"non-numeric value", c("2 2 1\n1 1 abc\n"), 3, "value 'abc' is not a real number"},
      {"trailing junk value", a("1 1\n1.5x\n"), 3, "value '1.5x' is not a real number"},
      {"real index", c("2 2 1\n1.5 1 1\n"), 3, "row index '1.5' is not an integer"},
      {"integer field given real", "%%MatrixMarket matrix array integer general\n1 1\n1.5\n", 3,
       "value '1.5' is not an integer"},
      {"coordinate entry too short", c("2 2 1\n1 1\n"), 3, "must have 3 fields, found 2"},
      {"coordinate entry too long", c("2 2 1\n1 1 1 1\n"), 3, "must have 3 fields, found 4"},
      {"two values on an array line", a("2 1\n1 2\n"), 3, "must have 1 field, found 2"},
      {"huge index", c("2 2 1\n99999999999999999999 1 1\n"), 3, "out of the int64 range"},
      // nothing is allocated for the announced size before the entries are there
      {"huge array, one value", a("100000000 100000000\n1\n"), 3,
       "too few entries: end of file after 1 of the 10000000000000000"},
      {"huge coordinate count, one entry", c("100000000 100000000 4000000000000\n1 1 1\n"), 3,
       "too few entries: end of file after 1 of the 4000000000000"},
  };
}

TEST(MatrixMarket, MalformedInputIsAnIoErrorNamingFileAndLine) {
  int i = 0;
  for (const BadCase& b : bad_cases()) {
    SCOPED_TRACE(b.name);
    std::string path = temp_path(std::to_string(i++));
    write_text(path, b.text);
    expect_io_error([&] { kess::mm::read_dense(path); }, path, b.line, b.fragment);
    // The same files through read_coordinate: coordinate files fail in the same way; array files
    // fail too (in the header, or for being arrays).
    if (b.text.find(" array ") == std::string::npos) {
      expect_io_error([&] { kess::mm::read_coordinate(path); }, path, b.line, b.fragment);
    } else {
      expect_io_error([&] { kess::mm::read_coordinate(path); }, path, -1, "");
    }
    std::remove(path.c_str());
  }
}

TEST(MatrixMarket, ReadCoordinateRefusesArrayFiles) {
  std::string path = temp_path("a");
  write_text(path, kArr + "1 1\n1\n");
  expect_io_error([&] { kess::mm::read_coordinate(path); }, path, 1, "use read_dense");
  std::remove(path.c_str());
}

TEST(MatrixMarket, UnreadableAndUnwritableFiles) {
  std::string missing = temp_path("does_not_exist");
  std::remove(missing.c_str());
  expect_io_error([&] { kess::mm::read_dense(missing); }, missing, -1, "cannot open");
  expect_io_error([&] { kess::mm::read_coordinate(missing); }, missing, -1, "cannot open");
  std::string bad_dir = ::testing::TempDir() + "kess_no_such_dir_/x/a.mtx";
  expect_io_error([&] { kess::mm::write_dense(bad_dir, DenseHost("a", 1, 1)); }, bad_dir, -1,
                  "cannot create");
  CooMatrix c;
  expect_io_error([&] { kess::mm::write_coordinate(bad_dir, c); }, bad_dir, -1, "cannot create");
}

// ---- writer argument checks
// ----------------------------------------------------------------------
template <class F>
void expect_kind(F&& f, kess::ErrorKind kind, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(MatrixMarket, WritersRefuseBadData) {
  std::string path = temp_path("w");
  DenseHost a("a", 3, 3);
  a(2, 0) = 1.0;
  expect_kind([&] { kess::mm::write_dense(path, a, true); }, kess::ErrorKind::not_symmetric,
              "declared symmetric");
  expect_kind([&] { kess::mm::write_dense(path, DenseHost("r", 2, 3), true); },
              kess::ErrorKind::invalid_argument, "must be square");
  a(2, 0) = std::numeric_limits<double>::quiet_NaN();
  expect_kind([&] { kess::mm::write_dense(path, a); }, kess::ErrorKind::invalid_argument,
              "non-finite");

  CooMatrix c;
  c.m = c.n = 3;
  c.rows = {0, 2};
  c.cols = {0, 1};
  c.vals = {1.0, 2.0};
  c.symmetric = true;
  EXPECT_NO_THROW(kess::mm::write_coordinate(path, c));
  c.rows[1] = 0;  // (0, 1): upper triangle
  expect_kind([&] { kess::mm::write_coordinate(path, c); }, kess::ErrorKind::invalid_argument,
              "upper triangle");
  c.symmetric = false;
  c.rows[1] = 3;
  expect_kind([&] { kess::mm::write_coordinate(path, c); }, kess::ErrorKind::invalid_argument,
              "outside");
  c.rows[1] = 0;
  c.cols[1] = 0;
  expect_kind([&] { kess::mm::write_coordinate(path, c); }, kess::ErrorKind::invalid_argument,
              "both at (0, 0)");
  c.cols[1] = 1;
  c.vals[1] = std::numeric_limits<double>::infinity();
  expect_kind([&] { kess::mm::write_coordinate(path, c); }, kess::ErrorKind::invalid_argument,
              "not finite");
  c.vals.pop_back();
  expect_kind([&] { kess::mm::write_coordinate(path, c); }, kess::ErrorKind::invalid_argument,
              "lengths");
  std::remove(path.c_str());
}

// A NUL byte inside a number ends no number early: "1\\0999" is not 1.
TEST(MatrixMarket, NulByteInsideANumberIsAnError) {
  const std::string path = temp_path("nul");
  write_text(path, kArr + "1 1\n1" + std::string(1, '\0') + "999\n");
  expect_io_error([&] { kess::mm::read_dense(path); }, path, 3, "'1\\x00999' is not a real number");
  write_text(path, kCoo + "2 2 1\n1" + std::string(1, '\0') + "2 1 1\n");
  expect_io_error([&] { kess::mm::read_coordinate(path); }, path, 3, "is not an integer");
  std::remove(path.c_str());
}

// The dense matrix of a coordinate file whose byte count does not fit (2^31 x 2^31 x 8 bytes
// wraps 64 bits) or cannot be allocated is an out_of_memory error naming the file and the size,
// never a short allocation written past.
TEST(MatrixMarket, DenseMatricesTooLargeForMemory) {
  const std::string path = temp_path("huge");
  write_text(path, kCoo + "2147483648 2147483648 1\n1000 1000 1\n");
  expect_kind([&] { kess::mm::read_dense(path); }, kess::ErrorKind::out_of_memory,
              "2147483648 x 2147483648 dense matrix needs more bytes than the address space");
  write_text(path, kCoo + "1000000000 1000000000 1\n1000 1000 1\n");
  expect_kind([&] { kess::mm::read_dense(path); }, kess::ErrorKind::out_of_memory,
              "cannot allocate the 1000000000 x 1000000000 dense matrix (8000000000000000000 bytes)");
  // the coordinate form itself is small
  EXPECT_EQ(kess::mm::read_coordinate(path).nnz(), 1u);
  std::remove(path.c_str());
}

}  // namespace
