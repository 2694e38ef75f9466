// kess::core::OutputFile — a file that appears under its name only once it is complete: written to
// a temporary file in the same folder and renamed over the name by commit(), removed when the
// writer fails or gives up. A failed run leaves no half-written output.
#pragma once

#include <cstdio>
#include <string>

namespace kess::core {

class OutputFile {
 public:
  /// Creates the temporary file beside `path`; kess::Error(io) naming `function` and `path` when
  /// it cannot.
  OutputFile(const std::string& path, const char* function);
  /// Removes the temporary file unless commit() succeeded.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* get() const noexcept { return file_; }
  const std::string& path() const noexcept { return path_; }
  /// Flushes, closes and renames the temporary file to `path`; kess::Error(io) when a write, the
  /// close or the rename failed (the temporary file is removed then).
  void commit();

 private:
  std::string path_, temp_;
  const char* function_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace kess::core
