// Files of a run directory: created safely, written atomically, never silently replaced.
#pragma once

#include <filesystem>
#include <string>

namespace mlhost {

// Writes `content` to `path` through a temporary file, fsync and rename, so a reader sees
// the old file or the new one, never half of one (mlh::AtomicFile). Throws mlh::Error (a
// std::runtime_error) naming the path.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

// Makes the run folder. A new run refuses a folder that already holds files (they would
// be overwritten); a resumed run needs the folder to exist. Throws std::runtime_error.
void prepare_run_dir(const std::filesystem::path& dir, bool resume);

// runs/<algorithm>-<YYYYmmdd-HHMMSS> under the current folder.
std::filesystem::path default_run_dir(const std::string& algorithm);

}  // namespace mlhost
