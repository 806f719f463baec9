// The training files of a run folder, to check that a command on the run (eval, classify,
// play, solve, ...) leaves them byte for byte as they were: it writes into commands/ only.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

// Every file under `run_dir` but its commands/ folder, by relative path, with its bytes.
inline std::map<std::string, std::string> training_files(const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  for (auto it = fs::recursive_directory_iterator(run_dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), run_dir).string();
    if (rel == "commands") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file()) continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files[rel] = bytes.str();
  }
  return files;
}

// The files added, removed or changed between two snapshots ("" when none).
inline std::string changed_files(const std::map<std::string, std::string>& before,
                                 const std::map<std::string, std::string>& after) {
  std::string out;
  for (const auto& [name, bytes] : before) {
    const auto it = after.find(name);
    if (it == after.end()) out += " removed:" + name;
    else if (it->second != bytes) out += " changed:" + name;
  }
  for (const auto& [name, bytes] : after)
    if (!before.count(name)) out += " added:" + name;
  return out;
}
