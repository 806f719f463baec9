// The rules between the TRM model's sizes, each written once: the run's config
// (config.cpp, naming its model.* fields) and the model's own check
// (model_config.cpp's validate, for model.json records and tests) both ask
// these. Header-only and LibTorch-free, since the config library links no model
// code. Each returns "" when the sizes hold, else why not.
#pragma once

#include <cstdint>
#include <string>

namespace trm {

// Attention's heads split hidden evenly into heads of even width (rotary
// embeddings rotate pairs).
inline std::string heads_problem(int64_t hidden, int64_t num_heads) {
  if (num_heads < 1 || hidden % num_heads != 0)
    return std::to_string(num_heads) + " heads do not divide hidden " + std::to_string(hidden);
  if ((hidden / num_heads) % 2 != 0)
    return std::to_string(num_heads) + " heads give an odd head width " + std::to_string(hidden / num_heads) +
           " (rotary embeddings need it even)";
  return "";
}

// A prefix of puzzle_emb_len positions (0: as many as needed) holds
// puzzle_emb_ndim values.
inline std::string prefix_problem(int64_t puzzle_emb_len, int64_t hidden, int64_t puzzle_emb_ndim) {
  // The embedding vector is padded (never cut) to the prefix, as the
  // reference's F.pad.
  if (puzzle_emb_len != 0 && puzzle_emb_len * hidden < puzzle_emb_ndim)
    return std::to_string(puzzle_emb_len) + " positions of hidden " + std::to_string(hidden) +
           " cannot hold puzzle_emb_ndim " + std::to_string(puzzle_emb_ndim);
  return "";
}

}  // namespace trm
