// Small filesystem helpers shared by the loaders: sorted listings that report failures as
// DataError naming the folder.
#pragma once

#include <string>
#include <vector>

namespace protonet {

// Names (not paths) of the subfolders / regular files of `dir`, sorted bytewise; hidden
// entries (starting with '.') are skipped. Throws DataError if `dir` cannot be listed.
std::vector<std::string> list_subdirs(const std::string& dir);
std::vector<std::string> list_files(const std::string& dir);

bool is_dir(const std::string& path);
bool is_file(const std::string& path);

}  // namespace protonet
