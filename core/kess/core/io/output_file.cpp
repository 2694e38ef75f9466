#include <kess/core/io/output_file.hpp>

#include <kess/core/base/error.hpp>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace kess::core {

OutputFile::OutputFile(const std::string& path, const char* function)
    : path_(path), function_(function) {
  require_arg(!path.empty(), function, "the output file name is empty");
  temp_ = path + ".kess-partial." + std::to_string(static_cast<long>(::getpid()));
  file_ = std::fopen(temp_.c_str(), "w");
  if (!file_) {
    const int err = errno;
    throw Error(ErrorKind::io, function,
                "'" + path + "': cannot create the file (" + std::strerror(err) + ")");
  }
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (file_) std::fclose(file_);
  std::remove(temp_.c_str());
}

void OutputFile::commit() {
  bool bad = std::ferror(file_) != 0;
  bad = std::fflush(file_) != 0 || bad;
  int err = errno;
  bad = std::fclose(file_) != 0 || bad;
  file_ = nullptr;
  if (bad) {
    if (err == 0) err = errno;
    std::remove(temp_.c_str());
    committed_ = true;
    throw Error(ErrorKind::io, function_,
                "'" + path_ + "': write error (" + std::strerror(err) + "); nothing was written");
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    err = errno;
    std::remove(temp_.c_str());
    committed_ = true;
    throw Error(ErrorKind::io, function_,
                "'" + path_ + "': cannot create the file (" + std::strerror(err) + ")");
  }
  committed_ = true;
}

}  // namespace kess::core
