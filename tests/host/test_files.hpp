// Files the host's unit tests write: text, and plugin manifests as mlh_add_plugin writes them.
// Their folders are tests/common's TempDir.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <mlh/mlh_abi.h>

#include "temp_dir.hpp"

namespace mlhost::testing {

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A manifest as mlh_add_plugin writes it (this SDK's ABI minor), with fields that tests override.
inline std::string manifest_text(const std::string& name, const std::string& library, const std::string& kind = "device",
                                 int abi_major = 1, const std::string& arch = "") {
  return std::string("{\"manifest_version\": 1, \"kind\": \"") + kind + "\", \"name\": \"" + name +
         "\", \"version\": \"0.1.0\", \"abi\": {\"major\": " + std::to_string(abi_major) +
         ", \"minor\": " + std::to_string(MLH_ABI_VERSION_MINOR) + "}, \"library\": \"" + library + "\", \"description\": \"test\", \"build\": {" +
         (arch.empty() ? "" : "\"arch\": \"" + arch + "\"") + "}}";
}

}  // namespace mlhost::testing
