// CRC-32C (Castagnoli), as TensorBoard's record framing and mlhost's checkpoints use it.
// Header-only and free of LibTorch so that the host and the runtime share one copy.
#ifndef MLH_CRC32C_HPP
#define MLH_CRC32C_HPP

#include <array>
#include <cstddef>
#include <cstdint>

namespace mlh {

// CRC-32C of `size` bytes, continuing from `crc` (0 for a fresh checksum).
inline uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected polynomial
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

// TensorBoard's masked form, so that a CRC of data holding CRCs stays well distributed.
inline uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

}  // namespace mlh

#endif  // MLH_CRC32C_HPP
