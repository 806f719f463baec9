#include "config_specs.hpp"

namespace trm {

SudokuBuildOptions sudoku_build_options(const Config& cfg) {
  SudokuBuildOptions o;
  o.train_puzzles = cfg.build.train;
  o.test_puzzles = cfg.build.test;
  o.min_givens = cfg.build.min_givens;
  o.max_givens = cfg.build.max_givens;
  o.augmentations = cfg.build.augmentations;
  o.seed = cfg.build.seed;
  return o;
}

MazeBuildOptions maze_build_options(const Config& cfg) {
  MazeBuildOptions o;
  o.train_mazes = cfg.build.train;
  o.test_mazes = cfg.build.test;
  o.size = cfg.build.maze_size;
  o.augmentations = cfg.build.augmentations;
  o.seed = cfg.build.seed;
  return o;
}

SamplingOptions sampling_options(const Config& cfg) {
  SamplingOptions o;
  o.temperature = cfg.generate.temperature;
  o.top_k = cfg.generate.top_k;
  o.top_p = cfg.generate.top_p;
  return o;
}

}  // namespace trm
