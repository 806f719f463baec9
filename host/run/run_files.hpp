// Files of a run directory: created safely, written atomically, never silently replaced.
#pragma once

#include <filesystem>
#include <string>

namespace mlhost {

// Makes the run folder. A new run refuses a folder that already holds files (they would
// be overwritten); a resumed run needs the folder to exist. Throws std::runtime_error.
void prepare_run_dir(const std::filesystem::path& dir, bool resume);

// runs/<algorithm>-<YYYYmmdd-HHMMSS> under the current folder.
std::filesystem::path default_run_dir(const std::string& algorithm);

}  // namespace mlhost
