#include "token_names.hpp"

#include <set>

#include "arc_tokens.hpp"
#include "build_data.hpp"
#include "maze.hpp"

namespace trm {

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

namespace {

std::vector<std::string> with_digits(std::vector<std::string> names, int first, int last) {
  for (int d = first; d <= last; ++d) names.push_back(std::to_string(d));
  return names;
}

}  // namespace

std::string token_names_problem(const std::vector<std::string>& names, int64_t vocab_size) {
  if (static_cast<int64_t>(names.size()) != vocab_size)
    return "has " + std::to_string(names.size()) + " names, vocab_size is " + std::to_string(vocab_size) +
           " (one name per token id)";
  bool long_names = false;
  for (const std::string& n : names) long_names = long_names || code_points(n) > 1;
  std::set<std::string> seen;
  for (size_t id = 0; id < names.size(); ++id) {
    const std::string& n = names[id];
    const std::string which = "the name of token " + std::to_string(id);
    if (n.empty()) return which + " is empty";
    for (unsigned char c : n) {
      if (c < 0x20 || c == 0x7F) return which + " holds a control character";
      // Names longer than one character are read back split at whitespace.
      if (c == ' ' && long_names)
        return which + " holds a space, which only a list of one-character names may have";
    }
    if (!seen.insert(n).second) return which + ", \"" + n + "\", names another token too";
  }
  return "";
}

std::vector<std::string> sudoku_token_names() { return with_digits({"_", "."}, 1, 9); }

std::vector<std::string> maze_token_names() {
  std::vector<std::string> names = {"_"};
  for (const char* c = kMazeCharset; *c; ++c) names.emplace_back(1, *c);
  return names;
}

std::vector<std::string> arc_token_names() { return with_digits({".", "#"}, 0, 9); }

TokenNaming token_naming(const std::vector<std::string>& given, int64_t vocab_size, int64_t seq_len) {
  if (!given.empty()) return {given, "dataset.json's token_names"};
  if (vocab_size == kSudokuVocabSize && seq_len == kSudokuSeqLen)
    return {sudoku_token_names(), "Sudoku's (the reference's Sudoku layout: 11 tokens over 81 cells)"};
  if (vocab_size == kMazeVocabSize && seq_len == 900)
    return {maze_token_names(), "the maze's (the reference's 30x30 maze layout: 6 tokens over 900 cells)"};
  if (vocab_size == arc::kArcVocabSize && seq_len == arc::kArcSeqLen)
    return {arc_token_names(), "ARC's (the reference's ARC layout: 12 tokens over 900 cells)"};
  TokenNaming ids;
  for (int64_t id = 0; id < vocab_size; ++id) ids.names.push_back(std::to_string(id));
  ids.source = "the token ids (dataset.json has no token_names)";
  return ids;
}

}  // namespace trm
