// Shared helpers of the trm_data tests: a temp folder per test, raw file writing, and
// assertions that a call throws mlh::Error (or, for bad data files, mlh::DataError) whose
// message contains given text.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mlh/plugin.hpp>
#include <string>

#include "data/dataset.hpp"
#include "temp_dir.hpp"

namespace trm_test {

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A .npy file by hand: magic, version, little-endian header length, header text, data.
inline std::string npy_bytes(int major, const std::string& header, const std::string& data) {
  std::string s("\x93NUMPY", 6);
  s += static_cast<char>(major);
  s += '\0';
  const size_t n = header.size();
  s += static_cast<char>(n & 0xff);
  s += static_cast<char>((n >> 8) & 0xff);
  if (major >= 2) {
    s += static_cast<char>((n >> 16) & 0xff);
    s += static_cast<char>((n >> 24) & 0xff);
  }
  return s + header + data;
}

// A small valid split of one set "all" with `groups` groups of `per_group` puzzles, puzzle p
// having 1 + p % 3 examples; token values encode (example, position) so tests can check which
// example a batch row came from: input[e][k] = 1 + (e + k) % (vocab - 1), label[e][k] = e % vocab.
struct SmallSplit {
  trm::DatasetMetadata meta;
  trm::DatasetSetData set;
};
SmallSplit small_split(int groups, int per_group, int seq_len = 4, int vocab = 50);

}  // namespace trm_test

// EXPECT that `stmt` throws mlh::Error whose message contains `text`.
#define EXPECT_MLH_ERROR(stmt, text)                                                       \
  do {                                                                                     \
    try {                                                                                  \
      stmt;                                                                                \
      ADD_FAILURE() << "expected mlh::Error containing '" << (text) << "'";               \
    } catch (const mlh::Error& e) {                                                        \
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();          \
    }                                                                                      \
  } while (0)

// EXPECT that `stmt` throws mlh::DataError (a bad data file: the host's exit 2) whose message
// contains `text`; another mlh::Error fails.
#define EXPECT_DATA_ERROR(stmt, text)                                                          \
  do {                                                                                         \
    try {                                                                                      \
      stmt;                                                                                    \
      ADD_FAILURE() << "expected mlh::DataError containing '" << (text) << "'";               \
    } catch (const mlh::DataError& e) {                                                        \
      EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);                                           \
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();              \
    } catch (const mlh::Error& e) {                                                            \
      ADD_FAILURE() << "expected mlh::DataError, got mlh::Error " << e.code() << ": " << e.what(); \
    }                                                                                          \
  } while (0)
