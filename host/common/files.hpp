// Files the host writes (run files, the calibration cache): complete or not at all.
#pragma once

#include <filesystem>
#include <string>

#include <mlh/atomic_file.hpp>

namespace mlhost {

// Writes `content` to `path` through a temporary file, fsync and rename, so a reader sees
// the old file or the new one, never half of one (mlh::AtomicFile). Throws mlh::Error (a
// std::runtime_error) naming the path.
inline void write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  mlh::AtomicFile file(path.string());
  file.write(content.data(), content.size());
  file.commit();
}

}  // namespace mlhost
