// Level files the PPO tests write: four small puzzles whose optima the solver gives as 1, 2, 2
// and 3 moves (the second claims its optimum, rightly), and a file writer.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

inline const char* const kFourLevels =
    "# optimal 1: right\n"
    "size 4\n"
    "board\n"
    "T..x\n"
    "....\n"
    ".#..\n"
    "....\n"
    "end\n"
    "\n"
    "size 4\n"
    "optimal 2\n"
    "board\n"
    "..#T\n"
    "....\n"
    ".#..\n"
    "x...\n"
    "end\n"
    "\n"
    "size 4\n"
    "board\n"
    "T...\n"
    "....\n"
    "....\n"
    "...x\n"
    "end\n"
    "\n"
    "size 4\n"
    "board\n"
    "..x.\n"
    "....\n"
    "T...\n"
    "...#\n"
    "end\n";

inline std::string write_level_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}
