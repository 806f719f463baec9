#include "text_data.hpp"

#include <fstream>
#include <iterator>
#include <sstream>

#include <mlh/plugin.hpp>

namespace trm {

int64_t first_invalid_utf8(const uint8_t* data, size_t size) {
  size_t i = 0;
  while (i < size) {
    const uint8_t c = data[i];
    size_t n;
    uint32_t min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, min = 0x10000;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + n >= size) return static_cast<int64_t>(i);  // truncated sequence
    uint32_t cp = c & (0x3F >> n);
    for (size_t k = 1; k <= n; ++k) {
      if ((data[i + k] & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (data[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8.
    if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return static_cast<int64_t>(i);
    i += n + 1;
  }
  return -1;
}

TextCorpus::TextCorpus(const std::string& path, double eval_fraction, int64_t seq_len)
    : path_(path), seq_len_(seq_len) {
  if (path.empty())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'data.text_file' is empty: text mode needs a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw mlh::DataError("cannot open text file '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw mlh::DataError("cannot read text file '" + path + "'");
  const int64_t bad = first_invalid_utf8(bytes.data(), bytes.size());
  if (bad >= 0)
    throw mlh::DataError("text file '" + path + "' is not UTF-8: invalid byte sequence at offset " + std::to_string(bad));
  const auto total = static_cast<int64_t>(bytes.size());
  const auto eval_size = static_cast<int64_t>(static_cast<double>(total) * eval_fraction);
  const int64_t window = seq_len + 1;
  if (total - eval_size < window || eval_size < window)
    throw mlh::DataError("text file '" + path + "' is too short: " + std::to_string(total) + " bytes, the training and held-out (" +
                         std::to_string(eval_fraction) + ") parts each need one window of model.text_seq_len + 1 = " +
                         std::to_string(window) + " bytes");
  train_.assign(bytes.begin(), bytes.end() - eval_size);
  eval_.assign(bytes.end() - eval_size, bytes.end());
}

namespace {

void fill_row(Batch& b, int64_t row, const std::vector<uint8_t>& bytes, int64_t offset) {
  for (int64_t t = 0; t < b.seq_len; ++t) {
    b.inputs[static_cast<size_t>(row * b.seq_len + t)] = bytes[static_cast<size_t>(offset + t)];
    b.labels[static_cast<size_t>(row * b.seq_len + t)] = bytes[static_cast<size_t>(offset + t + 1)];
  }
}

Batch empty_batch(int64_t rows, int64_t seq_len) {
  Batch b;
  b.rows = rows;
  b.seq_len = seq_len;
  b.inputs.assign(static_cast<size_t>(rows * seq_len), 0);
  b.labels.assign(static_cast<size_t>(rows * seq_len), kIgnoreLabel);
  b.puzzle_identifiers.assign(static_cast<size_t>(rows), 0);
  b.valid = 0;
  return b;
}

}  // namespace

TextSampler::TextSampler(const TextCorpus& corpus, int64_t batch_size, uint64_t seed)
    : corpus_(corpus), batch_size_(batch_size), rng_(seed) {}

Batch TextSampler::next() {
  Batch b = empty_batch(batch_size_, corpus_.seq_len());
  const auto last_start = static_cast<int64_t>(corpus_.train().size()) - corpus_.seq_len() - 1;
  std::uniform_int_distribution<int64_t> offset(0, last_start);
  for (int64_t r = 0; r < batch_size_; ++r) fill_row(b, r, corpus_.train(), offset(rng_));
  b.valid = batch_size_;
  return b;
}

nlohmann::json TextSampler::state() const {
  std::ostringstream s;
  s << rng_;
  return {{"rng", s.str()}};
}

void TextSampler::load_state(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("rng") || !state["rng"].is_string())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "text sampler state: expected {\"rng\": \"...\"}");
  std::istringstream s(state["rng"].get<std::string>());
  std::mt19937_64 rng;
  s >> rng;
  if (s.fail()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "text sampler state: malformed generator state");
  rng_ = rng;
}

std::vector<Batch> text_eval_batches(const TextCorpus& corpus, int64_t batch_size, int64_t max_windows) {
  const int64_t s = corpus.seq_len();
  int64_t windows = (static_cast<int64_t>(corpus.eval().size()) - 1) / s;
  if (max_windows > 0 && windows > max_windows) windows = max_windows;
  std::vector<Batch> batches;
  for (int64_t first = 0; first < windows; first += batch_size) {
    Batch b = empty_batch(batch_size, s);
    const int64_t rows = std::min(batch_size, windows - first);
    for (int64_t r = 0; r < rows; ++r) fill_row(b, r, corpus.eval(), (first + r) * s);
    b.valid = rows;
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace trm
