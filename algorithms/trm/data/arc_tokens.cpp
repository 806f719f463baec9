#include "arc_tokens.hpp"

#include <mlh/plugin.hpp>
#include <string>

namespace trm::arc {

std::vector<int32_t> to_tokens(const Grid& g, int pad_r, int pad_c) {
  if (pad_r < 0 || pad_c < 0 || pad_r + g.rows > kMaxGridSize || pad_c + g.cols > kMaxGridSize)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "a " + std::to_string(g.rows) + "x" + std::to_string(g.cols) +
                                                   " grid at (" + std::to_string(pad_r) + ", " + std::to_string(pad_c) +
                                                   ") does not fit the 30x30 canvas");
  std::vector<int32_t> t(static_cast<size_t>(kArcSeqLen));
  encode_tokens(g, pad_r, pad_c, t.data());
  return t;
}

Grid crop_tokens(const int32_t* tokens) {
  // As the reference: row by row, the run of colour tokens from the left can only shrink; the
  // rectangle of the largest area (the first one found at equal area) wins.
  auto is_colour = [](int32_t t) { return t >= kArcColourOffset && t < kArcColourOffset + 10; };
  int max_area = 0, best_rows = 0, best_cols = 0, num_cols = kMaxGridSize;
  for (int rows = 1; rows <= kMaxGridSize; ++rows) {
    for (int c = 1; c <= num_cols; ++c)
      if (!is_colour(tokens[(rows - 1) * kMaxGridSize + (c - 1)])) {
        num_cols = c - 1;
        break;
      }
    if (rows * num_cols > max_area) {
      max_area = rows * num_cols;
      best_rows = rows;
      best_cols = num_cols;
    }
  }
  Grid g;
  g.rows = best_rows;
  g.cols = best_cols;
  g.cells.reserve(static_cast<size_t>(best_rows * best_cols));
  for (int r = 0; r < best_rows; ++r)
    for (int c = 0; c < best_cols; ++c)
      g.cells.push_back(static_cast<uint8_t>(tokens[r * kMaxGridSize + c] - kArcColourOffset));
  return g;
}

}  // namespace trm::arc
