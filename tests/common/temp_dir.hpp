// The test suite's one temporary-folder helper: a fresh private folder (mkdtemp, mode 0700)
// under the system's temp folder, removed with everything in it when the object goes. Tests
// that change modes (read-only folders, 0777 plugin folders) need no clean-up of their own:
// every folder below is made writable again first.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "remove_tree.hpp"

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "mlhost-test-") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot make a temporary folder " + pattern + ": " + std::strerror(errno));
    // The real path: a test compares paths the host prints, which resolves links (a /tmp that
    // is a link on some machines).
    path_ = std::filesystem::canonical(pattern);
  }
  ~TempDir() { remove_tree(path_.string()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};
