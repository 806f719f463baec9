// A fresh folder under the system's temp folder, removed with the object: one per test.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "mlh-test-") {
    path_ = (std::filesystem::temp_directory_path() /
             (prefix + std::to_string(::getpid()) + "-" + std::to_string(counter_++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};
