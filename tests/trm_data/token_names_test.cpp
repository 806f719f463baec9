// Token names (dataset.json's "token_names"): what makes a valid list, the builders' names,
// the reference's layouts for datasets without names; and a puzzle as text: printed in the
// names, read back (solve.puzzle), and every wrong puzzle refused naming the field.
#include <gtest/gtest.h>

#include "data/puzzle_text.hpp"
#include "data/token_names.hpp"
#include "fixtures.hpp"

namespace {

using namespace trm;

const std::vector<std::string> kFourColours = {"_", ".", "R", "G", "B", "Y"};

TEST(TokenNames, ValidListsAndEachProblemNamed) {
  EXPECT_EQ(token_names_problem(kFourColours, 6), "");
  EXPECT_EQ(token_names_problem({"pad", "wall", "open"}, 3), "");
  EXPECT_EQ(token_names_problem({"_", " ", "#"}, 3), "") << "a space is a name when every name is one character";
  EXPECT_EQ(token_names_problem({"é", "ü"}, 2), "") << "one character, two bytes";
  EXPECT_NE(token_names_problem(kFourColours, 7).find("has 6 names, vocab_size is 7"), std::string::npos);
  EXPECT_NE(token_names_problem({"a", ""}, 2).find("token 1 is empty"), std::string::npos);
  EXPECT_NE(token_names_problem({"a", "b", "a"}, 3).find("\"a\", names another token too"), std::string::npos);
  EXPECT_NE(token_names_problem({"a", "b\n"}, 2).find("control character"), std::string::npos);
  EXPECT_NE(token_names_problem({"wall", " "}, 2).find("holds a space"), std::string::npos);
  EXPECT_NE(token_names_problem({"big wall", "x"}, 2).find("token 0 holds a space"), std::string::npos);
}

TEST(TokenNames, BuildersAndReferenceLayouts) {
  const std::vector<std::string> sudoku = sudoku_token_names();
  ASSERT_EQ(sudoku.size(), 11u);
  EXPECT_EQ(sudoku[1], ".");
  EXPECT_EQ(sudoku[2], "1");
  EXPECT_EQ(sudoku[10], "9");
  EXPECT_EQ(maze_token_names(), (std::vector<std::string>{"_", "#", " ", "S", "G", "o"}));
  const std::vector<std::string> arc = arc_token_names();
  ASSERT_EQ(arc.size(), 12u);
  EXPECT_EQ(arc[2], "0");
  EXPECT_EQ(arc[11], "9");
  for (const auto& names : {sudoku, maze_token_names(), arc})
    EXPECT_EQ(token_names_problem(names, static_cast<int64_t>(names.size())), "");

  // A dataset's own names win, whatever its shape.
  EXPECT_EQ(token_naming(kFourColours, 6, 16).names, kFourColours);
  EXPECT_EQ(token_naming(kFourColours, 6, 900).source, "dataset.json's token_names");
  // Without names, the reference's three layouts are named as their builders encode them...
  EXPECT_EQ(token_naming({}, 11, 81).names, sudoku);
  EXPECT_EQ(token_naming({}, 6, 900).names, maze_token_names());
  EXPECT_EQ(token_naming({}, 12, 900).names, arc);
  // ...and anything else by its ids: a user's 4x4 set of six tokens is not drawn as a maze.
  const TokenNaming ids = token_naming({}, 6, 16);
  EXPECT_EQ(ids.names, (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  EXPECT_NE(ids.source.find("no token_names"), std::string::npos);
}

TEST(PuzzleText, GridShapes) {
  EXPECT_EQ(grid_shape(16).rows, 4);
  EXPECT_EQ(grid_shape(16).cols, 4);
  EXPECT_EQ(grid_shape(900).rows, 30);
  EXPECT_EQ(grid_shape(12).rows, 1);
  EXPECT_EQ(grid_shape(12).cols, 12);
  EXPECT_EQ(grid_shape(1).cols, 1);
}

TEST(PuzzleText, PrintedInTheNamesAndReadBack) {
  // One-character names: a space between cells; what is printed reads back.
  const std::vector<int32_t> tokens = {2, 1, 1, 1, 1, 3, 1, 1, 1, 1, 4, 1, 5, 5, 5, 5};
  const std::vector<std::string> lines = puzzle_lines(tokens, kFourColours);
  EXPECT_EQ(lines, (std::vector<std::string>{"R . . .", ". G . .", ". . B .", "Y Y Y Y"}));
  std::string pasted;
  for (const auto& l : lines) pasted += l + "\n";
  EXPECT_EQ(parse_puzzle(pasted, kFourColours, 16, "solve.puzzle"), tokens);
  EXPECT_EQ(parse_puzzle("R...\n.G..\n..B.\nYYYY", kFourColours, 16, "solve.puzzle"), tokens);

  // A space that is a name (the maze's open cell) is a cell: no separators, line breaks skipped.
  const std::vector<int32_t> maze = {1, 1, 1, 1, 1, 3, 2, 2, 1, 5, 4, 1, 1, 1, 1, 1};
  const std::vector<std::string> maze_view = puzzle_lines(maze, maze_token_names());
  EXPECT_EQ(maze_view[1], "#S  ");
  EXPECT_EQ(maze_view[2], "#oG#");
  EXPECT_EQ(parse_puzzle("####\n#S  \n#oG#\n####", maze_token_names(), 16, "solve.puzzle"), maze);

  // Longer names: right-aligned to the widest, read back split at whitespace.
  const std::vector<std::string> words = {"pad", "wall", "x"};
  EXPECT_EQ(puzzle_lines({1, 2, 0, 1}, words), (std::vector<std::string>{"wall    x", " pad wall"}));
  EXPECT_EQ(parse_puzzle("wall x\n  pad   wall", words, 4, "solve.puzzle"), (std::vector<int32_t>{1, 2, 0, 1}));
  // A token the names do not cover (never from a model) still prints.
  EXPECT_EQ(puzzle_lines({7}, kFourColours)[0], "?7");
}

TEST(PuzzleText, WrongPuzzlesNameTheFieldAndValue) {
  // Sudoku as it always was: 81 characters, '.' for a blank.
  const std::string sudoku = "53..7....6..195....98....6.8...6...34..8.3..17...2...6.6....28....419..5....8..79";
  const std::vector<int32_t> t = parse_puzzle(sudoku, sudoku_token_names(), 81, "solve.puzzle");
  EXPECT_EQ(t[0], 6);  // '5' is token 6
  EXPECT_EQ(t[2], 1);  // '.' the blank

  EXPECT_MLH_ERROR(parse_puzzle("R...", kFourColours, 16, "solve.puzzle"),
                   "config field 'solve.puzzle': 4 cells given, this model's puzzles have 16 (a 4x4 grid)");
  EXPECT_MLH_ERROR(parse_puzzle(std::string(17, 'R'), kFourColours, 16, "solve.puzzle"), "17 cells given");
  EXPECT_MLH_ERROR(parse_puzzle("R..x", kFourColours, 16, "solve.puzzle"),
                   "config field 'solve.puzzle': unknown token 'x' at cell 4");
  EXPECT_MLH_ERROR(parse_puzzle("R..x", kFourColours, 16, "solve.puzzle"), "\"_\" \".\" \"R\" \"G\" \"B\" \"Y\"");
  EXPECT_MLH_ERROR(parse_puzzle("12x", sudoku_token_names(), 81, "solve.puzzle"), "unknown token 'x' at cell 3");
  EXPECT_MLH_ERROR(parse_puzzle("wall door", {"pad", "wall"}, 2, "solve.puzzle"), "unknown token 'door' at cell 2");
  EXPECT_MLH_ERROR(parse_puzzle("", kFourColours, 12, "solve.puzzle"), "0 cells given, this model's puzzles have 12 (one row)");
}

}  // namespace
