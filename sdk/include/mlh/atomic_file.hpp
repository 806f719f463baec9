// A file that appears at its path complete or not at all: written to "<path>.tmp-<pid>" in
// the same folder, fsync'ed, renamed over the path, then the folder fsync'ed so that the
// rename survives a power loss. Destroyed without commit() (an exception), it removes the
// temporary; a killed process leaves the temporary behind, never a partial file. Failures
// are mlh::Error(MLH_ERR_IO) naming the path. Header-only and free of LibTorch: the host's
// run files and the runtime's checkpoints share it.
#ifndef MLH_ATOMIC_FILE_HPP
#define MLH_ATOMIC_FILE_HPP

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "plugin.hpp"

namespace mlh {

// Makes a rename or a new file in `dir` durable.
inline void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(MLH_ERR_IO, "cannot open folder '" + dir + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const std::string err = std::strerror(errno);
  ::close(fd);
  if (rc != 0) throw Error(MLH_ERR_IO, "cannot sync folder '" + dir + "': " + err);
}

class AtomicFile {
 public:
  static constexpr const char* kTempMarker = ".tmp-";

  explicit AtomicFile(std::string path)
      : path_(std::move(path)), temp_path_(path_ + kTempMarker + std::to_string(::getpid())) {
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create '" + temp_path_ + "'");
  }
  ~AtomicFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(temp_path_.c_str());
    }
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write failed");
      p += n;
      size -= static_cast<size_t>(n);
    }
  }

  // Rewrites earlier bytes (e.g. a header whose checksum is known only at the end).
  void write_at(uint64_t offset, const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write failed");
      p += n;
      offset += static_cast<uint64_t>(n);
      size -= static_cast<size_t>(n);
    }
  }

  void commit() {
    if (::fsync(fd_) != 0) fail("fsync failed");
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) {
      ::unlink(temp_path_.c_str());
      fail("close failed");
    }
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      const int saved = errno;
      ::unlink(temp_path_.c_str());
      errno = saved;
      fail("rename from '" + temp_path_ + "' failed");
    }
    const std::string dir = std::filesystem::path(path_).parent_path().string();
    fsync_dir(dir.empty() ? "." : dir);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(MLH_ERR_IO, "cannot write '" + path_ + "': " + what + ": " + std::strerror(errno));
  }

  std::string path_, temp_path_;
  int fd_ = -1;
};

}  // namespace mlh

#endif  // MLH_ATOMIC_FILE_HPP
