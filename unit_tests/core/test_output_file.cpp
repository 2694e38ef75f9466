// kess::core::OutputFile: the file appears complete under its name at commit(), or not at all; a
// writer that gives up leaves an existing file as it was and no temporary file behind.
#include <kess/core/base/error.hpp>
#include <kess/core/io/output_file.hpp>

#include "test_backend.hpp"

#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace output_file_test {

std::string temp_path(const std::string& tag) {
  return ::testing::TempDir() + "kess_output_file_" + TestExecSpace::name() + "_" +
         std::to_string(::getpid()) + "_" + tag + ".txt";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

/// Names in the temp folder that start with `prefix` (temporary files left behind).
int files_starting_with(const std::string& prefix) {
  int count = 0;
  DIR* d = ::opendir(::testing::TempDir().c_str());
  if (!d) return -1;
  while (const dirent* e = ::readdir(d))
    if (std::string(e->d_name).rfind(prefix, 0) == 0) ++count;
  ::closedir(d);
  return count;
}

TEST(OutputFile, AppearsOnlyWhenCommitted) {
  const std::string path = temp_path("commit");
  std::remove(path.c_str());
  {
    kess::core::OutputFile f(path, "test");
    std::fputs("hello\n", f.get());
    EXPECT_FALSE(exists(path)) << "visible before commit";
    f.commit();
  }
  EXPECT_EQ(read_all(path), "hello\n");
  std::remove(path.c_str());
}

TEST(OutputFile, AbandonedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  const std::string path = temp_path("abandon");
  { std::ofstream(path) << "old\n"; }
  try {
    kess::core::OutputFile f(path, "test");
    std::fputs("new, half written", f.get());
    throw std::runtime_error("the writer fails");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read_all(path), "old\n");
  const std::string base = path.substr(::testing::TempDir().size());
  EXPECT_EQ(files_starting_with(base), 1) << "a temporary file was left behind";
  std::remove(path.c_str());
}

TEST(OutputFile, UncreatableFileIsAnIoErrorNamingIt) {
  const std::string path = ::testing::TempDir() + "kess_no_such_dir_/x/out.txt";
  try {
    kess::core::OutputFile f(path, "test");
    ADD_FAILURE() << "no exception";
  } catch (const kess::Error& e) {
    EXPECT_EQ(e.kind(), kess::ErrorKind::io);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace output_file_test
