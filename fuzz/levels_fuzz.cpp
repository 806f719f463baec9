// Puzzle level files: parse_levels; what parses must format and parse back to the same text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "env/level_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<ppo::Puzzle> puzzles;
  try {
    puzzles = ppo::parse_levels(text, "fuzz.levels");
  } catch (const ppo::LevelError&) {
    return 0;
  }
  std::string once;
  try {
    once = ppo::format_levels(puzzles);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "parse_levels accepted a puzzle that format_levels rejects: %s\n", e.what());
    std::abort();
  }
  const std::string twice = ppo::format_levels(ppo::parse_levels(once, "fuzz.levels (formatted)"));
  if (once != twice) {
    std::fprintf(stderr, "format/parse round trip differs:\n%s\n---\n%s\n", once.c_str(), twice.c_str());
    std::abort();
  }
  return 0;
}
