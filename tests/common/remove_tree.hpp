// Removes a folder and everything in it, like `rm -rf`, making each folder writable first
// (tests make read-only folders). It uses POSIX calls, not std::filesystem::remove_all: PyTorch
// 2.11's libtorch.so exports its own copies of the std::filesystem functions, and in a test
// program linking it remove_all crashed calling through a null pointer (the first GPU machine,
// torch 2.11.0+cu130: every GPU test that made files crashed in TearDown).
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

inline void remove_tree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlink(path.c_str());
    return;
  }
  ::chmod(path.c_str(), 0700);
  if (DIR* dir = ::opendir(path.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") remove_tree(path + "/" + name);
    }
    ::closedir(dir);
  }
  ::rmdir(path.c_str());
}
