// A run's record as it stands before a command touches it, to put back exactly when the
// command is refused: a resumed run whose input the algorithm rejects (every checkpoint
// damaged, a data file gone bad) must leave every file of the run as it was, byte for byte.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace mlhost {

class RunRecordSnapshot {
 public:
  // Reads every file under `dir`: the records (up to kKeptBytes in all) by content, larger
  // files (checkpoints, weights) by size alone. Throws std::runtime_error when `dir` cannot
  // be read.
  static RunRecordSnapshot take(const std::filesystem::path& dir);

  // Puts `dir` back as it was: files and folders made since are removed, records rewritten
  // where they changed, larger files cut back to their size where they grew (a refused
  // command only appends to them). Returns the files it could not restore ("" when none).
  std::string restore() const;

  static constexpr uintmax_t kKeptBytes = 64u << 20;

 private:
  struct File {
    uintmax_t size = 0;
    std::optional<std::string> content;  // none: kept by size
  };
  std::filesystem::path dir_;
  std::map<std::filesystem::path, File> files_;  // relative to dir_
  std::map<std::filesystem::path, bool> folders_;
};

}  // namespace mlhost
