// TRM's text mode data: a UTF-8 text file as bytes (vocabulary 256), next-byte prediction.
// The file's head trains, its tail (eval_fraction) is held out. Training batches are random
// windows; evaluation walks the tail in consecutive windows. Free of LibTorch.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/sampler.hpp"

namespace trm {

constexpr int64_t kTextVocab = 256;

class TextCorpus {
 public:
  // Reads and checks the file: it must exist, be valid UTF-8 (the error names the byte
  // offset) and hold at least one window of seq_len + 1 bytes in each part. A file that is
  // not is an mlh::DataError naming it.
  TextCorpus(const std::string& path, double eval_fraction, int64_t seq_len);

  const std::string& path() const { return path_; }
  int64_t seq_len() const { return seq_len_; }
  const std::vector<uint8_t>& train() const { return train_; }
  const std::vector<uint8_t>& eval() const { return eval_; }

 private:
  std::string path_;
  int64_t seq_len_;
  std::vector<uint8_t> train_, eval_;
};

// Windows starting at uniformly random offsets of the training part: inputs are bytes
// [o, o + seq_len), labels the bytes one further.
class TextSampler {
 public:
  TextSampler(const TextCorpus& corpus, int64_t batch_size, uint64_t seed);
  Batch next();
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);  // throws mlh::Error on a malformed state

 private:
  const TextCorpus& corpus_;
  int64_t batch_size_;
  std::mt19937_64 rng_;
};

// The held-out part in consecutive windows, up to max_windows (0: all).
std::vector<Batch> text_eval_batches(const TextCorpus& corpus, int64_t batch_size, int64_t max_windows);

// Offset of the first byte that is not valid UTF-8, or -1.
int64_t first_invalid_utf8(const uint8_t* data, size_t size);

}  // namespace trm
