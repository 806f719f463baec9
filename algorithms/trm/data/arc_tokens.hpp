// ARC grids as the model's token sequences, as the TRM reference encodes them
// (build_arc_dataset.py np_grid_to_seq_translational_augment) and its evaluator crops them
// back (evaluators/arc.py _crop): a 30x30 canvas, PAD 0, EOS 1, colours 0..9 as 2..11.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "arc_grid.hpp"

namespace trm::arc {

constexpr int64_t kArcSeqLen = kMaxGridSize * kMaxGridSize;
constexpr int32_t kArcPad = 0, kArcEos = 1, kArcColourOffset = 2;
constexpr int64_t kArcVocabSize = 12;

// One grid placed at (pad_r, pad_c) in the canvas, an EOS row under it and an EOS column right
// of it where the canvas has room: 900 tokens, row-major, into `out` (uint8 for the dataset
// files, int32 for a batch). The caller checks that the grid fits.
template <typename Token>
void encode_tokens(const Grid& g, int pad_r, int pad_c, Token* out) {
  std::fill(out, out + kArcSeqLen, Token{kArcPad});
  for (int r = 0; r < g.rows; ++r)
    for (int c = 0; c < g.cols; ++c)
      out[(pad_r + r) * kMaxGridSize + pad_c + c] = static_cast<Token>(g.at(r, c) + kArcColourOffset);
  const int eos_row = pad_r + g.rows, eos_col = pad_c + g.cols;
  if (eos_row < kMaxGridSize)
    for (int c = pad_c; c < eos_col; ++c) out[eos_row * kMaxGridSize + c] = Token{kArcEos};
  if (eos_col < kMaxGridSize)
    for (int r = pad_r; r < eos_row; ++r) out[r * kMaxGridSize + eos_col] = Token{kArcEos};
}

// The same as a new vector; a grid that does not fit is an error.
std::vector<int32_t> to_tokens(const Grid&, int pad_r = 0, int pad_c = 0);

// The largest top-left rectangle that holds only colour tokens, as colours (the first found
// at equal area). A sequence starting with PAD or EOS gives a 0x0 grid.
Grid crop_tokens(const int32_t* tokens);

}  // namespace trm::arc
