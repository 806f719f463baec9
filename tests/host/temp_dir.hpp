// A private temporary folder (mode 0700) removed at the end of a test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace mlhost::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mlhost-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A manifest as mlh_add_plugin writes it, with fields that tests override.
inline std::string manifest_text(const std::string& name, const std::string& library, const std::string& kind = "device",
                                 int abi_major = 1, const std::string& arch = "") {
  return std::string("{\"manifest_version\": 1, \"kind\": \"") + kind + "\", \"name\": \"" + name +
         "\", \"version\": \"0.1.0\", \"abi\": {\"major\": " + std::to_string(abi_major) +
         ", \"minor\": 0}, \"library\": \"" + library + "\", \"description\": \"test\", \"build\": {" +
         (arch.empty() ? "" : "\"arch\": \"" + arch + "\"") + "}}";
}

}  // namespace mlhost::testing
