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
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    ::chmod(path_.c_str(), 0700);
    for (auto it = fs::recursive_directory_iterator(path_, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};
