#include "run/run_record.hpp"

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/files.hpp"

namespace mlhost {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_whole(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return bytes.str();
}

}  // namespace

RunRecordSnapshot RunRecordSnapshot::take(const fs::path& dir) {
  RunRecordSnapshot s;
  s.dir_ = dir;
  std::error_code ec;
  uintmax_t kept = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(dir);
    if (it->is_directory(ec)) {
      s.folders_[relative] = true;
    } else if (it->is_regular_file(ec)) {
      File f;
      f.size = it->file_size(ec);
      if (kept + f.size <= kKeptBytes) {
        f.content = read_whole(it->path());
        if (f.content) kept += f.content->size();
      }
      s.files_[relative] = std::move(f);
    }
  }
  if (ec) throw std::runtime_error("cannot read the run folder '" + dir.string() + "': " + ec.message());
  return s;
}

std::string RunRecordSnapshot::restore() const {
  std::string failed;
  auto note = [&failed](const fs::path& file, const std::string& why) {
    failed += (failed.empty() ? "" : ", ") + file.string() + " (" + why + ")";
  };
  std::error_code ec;
  // What the command made: collected first, removed after, deepest first.
  std::vector<fs::path> made;
  for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path relative = it->path().lexically_relative(dir_);
    if (it->is_directory(ec) ? !folders_.count(relative) : !files_.count(relative)) {
      made.push_back(it->path());
      if (it->is_directory(ec)) it.disable_recursion_pending();
    }
  }
  for (auto m = made.rbegin(); m != made.rend(); ++m) {
    std::error_code removed;
    fs::remove_all(*m, removed);
    if (removed) note(*m, removed.message());
  }
  for (const auto& [relative, file] : files_) {
    const fs::path path = dir_ / relative;
    std::error_code size_ec;
    const uintmax_t now = fs::file_size(path, size_ec);
    if (file.content) {
      if (size_ec || now != file.size || read_whole(path) != file.content) {
        try {
          write_file_atomically(path, *file.content);
        } catch (const std::exception& e) {
          note(path, e.what());
        }
      }
    } else if (size_ec) {
      note(path, "gone: " + size_ec.message());
    } else if (now > file.size) {
      std::error_code cut;
      fs::resize_file(path, file.size, cut);
      if (cut) note(path, cut.message());
    }
  }
  return failed;
}

}  // namespace mlhost
