#include "puzzle_text.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mlh/plugin.hpp>

#include "token_names.hpp"

namespace trm {
namespace {

bool one_character_names(const std::vector<std::string>& names) {
  return std::all_of(names.begin(), names.end(), [](const std::string& n) { return code_points(n) == 1; });
}

// The text split into UTF-8 characters (a lead byte with its continuation bytes).
std::vector<std::string> characters(const std::string& text) {
  std::vector<std::string> out;
  for (unsigned char c : text) {
    if ((c & 0xC0) == 0x80 && !out.empty()) out.back() += static_cast<char>(c);
    else out.emplace_back(1, static_cast<char>(c));
  }
  return out;
}

bool is_space(const std::string& ch) { return ch == " " || ch == "\t" || ch == "\n" || ch == "\r"; }

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (const std::string& ch : characters(text)) {
    if (is_space(ch)) {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else {
      word += ch;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

// The names for an error message, quoted; a long vocabulary is cut short.
std::string listed(const std::vector<std::string>& names) {
  constexpr size_t kShown = 24;
  std::string out;
  for (size_t i = 0; i < std::min(names.size(), kShown); ++i) out += (i ? " \"" : "\"") + names[i] + "\"";
  if (names.size() > kShown) out += " ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

std::string grid_words(int64_t seq_len) {
  const GridShape g = grid_shape(seq_len);
  return g.rows > 1 ? "a " + std::to_string(g.rows) + "x" + std::to_string(g.cols) + " grid" : "one row";
}

}  // namespace

GridShape grid_shape(int64_t seq_len) {
  auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(seq_len))));
  if (side > 1 && side * side == seq_len) return {side, side};
  return {1, seq_len};
}

std::vector<std::string> puzzle_lines(const std::vector<int32_t>& tokens, const std::vector<std::string>& names) {
  const bool one_char = one_character_names(names);
  const bool space_is_a_name = std::find(names.begin(), names.end(), " ") != names.end();
  size_t width = 1;
  for (const std::string& n : names) width = std::max(width, code_points(n));
  const GridShape g = grid_shape(static_cast<int64_t>(tokens.size()));
  std::vector<std::string> lines;
  for (int64_t r = 0; r < g.rows; ++r) {
    std::string line;
    for (int64_t c = 0; c < g.cols; ++c) {
      const int32_t t = tokens[static_cast<size_t>(r * g.cols + c)];
      const std::string name =
          t >= 0 && static_cast<size_t>(t) < names.size() ? names[static_cast<size_t>(t)] : "?" + std::to_string(t);
      if (c > 0 && !(one_char && space_is_a_name)) line += ' ';
      if (!one_char) line += std::string(width - std::min(width, code_points(name)), ' ');
      line += name;
    }
    lines.push_back(line);
  }
  return lines;
}

std::vector<int32_t> parse_puzzle(const std::string& text, const std::vector<std::string>& names, int64_t seq_len,
                                  const std::string& field) {
  std::map<std::string, int32_t> ids;
  for (size_t i = 0; i < names.size(); ++i) ids.emplace(names[i], static_cast<int32_t>(i));
  const bool one_char = one_character_names(names);
  std::vector<std::string> cells;
  if (one_char) {
    for (const std::string& ch : characters(text))
      if (ids.count(ch) || !is_space(ch)) cells.push_back(ch);  // a space counts only where it is a name
  } else {
    cells = words(text);
  }
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto found = ids.find(cells[i]);
    if (found == ids.end())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       "config field '" + field + "': unknown token '" + cells[i] + "' at cell " + std::to_string(i + 1) +
                           "; this dataset's tokens are " + listed(names) +
                           (one_char ? " (a character per cell)" : " (separated by spaces)"));
    tokens.push_back(found->second);
  }
  if (static_cast<int64_t>(tokens.size()) != seq_len)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field '" + field + "': " + std::to_string(tokens.size()) +
                                                   " cells given, this model's puzzles have " + std::to_string(seq_len) +
                                                   " (" + grid_words(seq_len) + ")");
  return tokens;
}

}  // namespace trm
