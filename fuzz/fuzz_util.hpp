// Helpers shared by the fuzz targets: a private temporary folder per process, for parsers
// that only take a path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace mlhfuzz {

// A folder under $TMPDIR (or /tmp) made once per process and removed at exit.
inline const std::string& temp_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mlh-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    static std::string keep = tmpl;
    std::atexit([] { std::system(("rm -rf '" + keep + "'").c_str()); });
    return tmpl;
  }();
  return dir;
}

// Writes `size` bytes to `path` (replacing it).
inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace mlhfuzz
