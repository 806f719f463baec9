// SHA-256 (FIPS 180-4), for pinning plugin libraries by their content (allowlist.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace mlhost {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::array<uint8_t, 32> finish();  // the digest; the object must not be used afterwards

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes so far
};

// Lower-case hex of a digest.
std::string to_hex(const std::array<uint8_t, 32>& digest);
// Lower-case hex SHA-256 of a string.
std::string sha256_hex(const std::string& data);
// Lower-case hex SHA-256 of a file's content. Throws std::runtime_error naming the file
// when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace mlhost
