// The one place TRM's config becomes the option structs of the code below it (the dataset
// builders, text sampling): each config-derived value is set here from the parsed config,
// whose defaults are the table's (config.cpp). Those structs carry no defaults of their own,
// so nothing built another way falls back on a second, drifting default. Free of LibTorch:
// trm_data's tests build their options through it too.
#pragma once

#include "config.hpp"
#include "data/build_data.hpp"
#include "sampling.hpp"

namespace trm {

// build.train, build.test, build.min_givens, build.max_givens, build.augmentations, build.seed.
SudokuBuildOptions sudoku_build_options(const Config& cfg);
// build.train, build.test, build.maze_size, build.augmentations, build.seed.
MazeBuildOptions maze_build_options(const Config& cfg);
// generate.temperature, generate.top_k, generate.top_p.
SamplingOptions sampling_options(const Config& cfg);

}  // namespace trm
