// A bounded mutation fuzzer for the Matrix Market readers: valid files of every kind (array and
// coordinate, general and symmetric, real and integer) are mutated (bytes flipped, replaced by
// digits, NUL, signs, exponents or huge numbers, lines cut, doubled or dropped, the file truncated)
// and read by read_header, read_dense and read_coordinate. Each read must either succeed or throw
// kess::Error; any other exception is a defect, and under -fsanitize=address,undefined (the CI's
// sanitizer job) so is any memory error. Deterministic: the same mutations on every run.
#include <kess/core/base/error.hpp>
#include <kess/core/io/generators.hpp>
#include <kess/core/io/matrix_market.hpp>

#include "test_backend.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace mm_fuzz {

std::string temp_path() {
  return ::testing::TempDir() + "kess_mm_fuzz_" + TestExecSpace::name() + "_" +
         std::to_string(::getpid()) + ".mtx";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The corpus: files written by kess's own writers plus hand-written ones.
std::vector<std::string> corpus() {
  std::vector<std::string> files;
  const std::string path = temp_path();
  const auto a = kess::gen::random_general(4, 3, 1);
  kess::mm::write_dense(path, a);
  files.push_back(slurp(path));
  const auto s = kess::gen::random_symmetric(4, 2);
  kess::mm::write_dense(path, s, true);
  files.push_back(slurp(path));
  kess::mm::CooMatrix c;
  c.m = 5;
  c.n = 4;
  c.rows = {0, 4, 2};
  c.cols = {0, 3, 1};
  c.vals = {1.5, -2.25e-3, 7};
  kess::mm::write_coordinate(path, c);
  files.push_back(slurp(path));
  c.m = c.n = 4;
  c.symmetric = true;
  c.rows = {0, 3, 2};
  c.cols = {0, 1, 2};
  kess::mm::write_coordinate(path, c);
  files.push_back(slurp(path));
  files.push_back("%%MatrixMarket matrix array integer general\n2 2\n1\n-2\n3\n4\n");
  files.push_back("%%MatrixMarket matrix coordinate integer symmetric\n% c\n\n3 3 2\n1 1 4\n3 2 -1\n");
  std::remove(path.c_str());
  return files;
}

/// xorshift64*: a small deterministic generator.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
  std::size_t below(std::size_t n) { return n ? next() % n : 0; }
};

std::string mutate(std::string t, Rng& r) {
  static const char* const pieces[] = {"0",  "9", "-", "+", "e", "E308", "e-400", ".", " ", "\n",
                                       "%",  "nan", "inf", "99999999999999999999", "2147483648",
                                       "4294967296", "-1", "1e999", "0x10", "\t", "\r"};
  const int edits = 1 + static_cast<int>(r.below(4));
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = r.below(t.size() + 1);
    switch (r.below(7)) {
      case 0:  // flip a byte
        if (!t.empty()) t[r.below(t.size())] ^= static_cast<char>(1u << r.below(8));
        break;
      case 1:  // a NUL byte
        t.insert(at, 1, '\0');
        break;
      case 2:  // insert a piece
        t.insert(at, pieces[r.below(sizeof pieces / sizeof *pieces)]);
        break;
      case 3:  // replace a byte by a piece
        if (at < t.size()) t.replace(at, 1, pieces[r.below(sizeof pieces / sizeof *pieces)]);
        break;
      case 4:  // truncate
        t.resize(at);
        break;
      case 5: {  // double a line
        const std::size_t b = t.rfind('\n', at == 0 ? 0 : at - 1);
        const std::size_t from = b == std::string::npos ? 0 : b + 1;
        const std::size_t to = t.find('\n', from);
        if (to != std::string::npos) t.insert(from, t.substr(from, to - from + 1));
        break;
      }
      default: {  // drop a line
        const std::size_t from = t.find('\n', at);
        if (from != std::string::npos) {
          const std::size_t to = t.find('\n', from + 1);
          t.erase(from, to == std::string::npos ? std::string::npos : to - from);
        }
      }
    }
  }
  return t;
}

TEST(MatrixMarketFuzz, MutatedFilesAreReadOrRefusedWithKessErrors) {
  const std::vector<std::string> files = corpus();
  const std::string path = temp_path();
  Rng r{0x6b657373u};
  int read = 0, refused = 0;
  for (int k = 0; k < 3000; ++k) {
    const std::string text = mutate(files[k % files.size()], r);
    {
      std::ofstream out(path, std::ios::binary);
      out << text;
    }
    bool small = true;  // read_dense only where the dense matrix is small (a mutated size line
                        // may announce gigabytes, which the dedicated tests cover)
    for (int reader = 0; reader < 3; ++reader) {
      try {
        if (reader == 0) {
          const auto h = kess::mm::read_header(path);
          small = h.m <= 4096 && h.n <= 4096;
        }
        if (reader == 1 && small) kess::mm::read_dense(path);
        if (reader == 2) kess::mm::read_coordinate(path);
        ++read;
      } catch (const kess::Error& e) {
        ++refused;
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "mutation " << k << ", reader " << reader << ": not a kess::Error: "
                      << e.what() << "\n--- file ---\n" << text;
      }
    }
  }
  std::remove(path.c_str());
  // Both outcomes occur: the mutations neither all break the files nor leave them all valid.
  EXPECT_GT(read, 100);
  EXPECT_GT(refused, 1000);
}

}  // namespace mm_fuzz
