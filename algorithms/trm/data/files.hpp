// Small file helpers the dataset writers and the ARC scorer share: a whole text file written
// atomically (a temporary renamed into place), and a folder made with its parents.
#pragma once

#include <filesystem>
#include <mlh/atomic_file.hpp>
#include <mlh/plugin.hpp>
#include <string>
#include <system_error>

namespace trm {

inline void write_text_file(const std::string& path, const std::string& text) {
  mlh::AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

// Errors: mlh::Error(MLH_ERR_IO) naming the folder.
inline void make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw mlh::Error(MLH_ERR_IO, "cannot create folder '" + dir + "': " + ec.message());
}

}  // namespace trm
