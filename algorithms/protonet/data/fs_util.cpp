#include "fs_util.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "image_set.hpp"

namespace fs = std::filesystem;

namespace protonet {
namespace {

std::vector<std::string> list(const std::string& dir, bool dirs) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) throw DataError("cannot list folder '" + dir + "': " + ec.message());
  std::vector<std::string> out;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw DataError("cannot list folder '" + dir + "': " + ec.message());
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code ec2;
    const bool match = dirs ? it->is_directory(ec2) : it->is_regular_file(ec2);
    if (match) out.push_back(name);
  }
  if (ec) throw DataError("cannot list folder '" + dir + "': " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> list_subdirs(const std::string& dir) { return list(dir, true); }
std::vector<std::string> list_files(const std::string& dir) { return list(dir, false); }

bool is_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}
bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace protonet
