// TRM's ARC fixture for the host tests: hand-made tasks in Kaggle's layout (3 training and 3
// evaluation tasks, each recolouring a 2x2 grid), built into a dataset by build-data
// (kind=arc), and a tiny model trained on it.
#pragma once

#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace trm_test {

using nlohmann::json;

inline HostResult host(const std::string& args) { return run_host(TRM_HOST_BIN, TRM_PLUGIN_DIR, args); }

// Writes <prefix>_{training,evaluation}_{challenges,solutions}.json.
inline void write_arc_fixture(const std::string& prefix) {
  // Each task recolours its grid (1 -> 2); small grids so that a tiny model trains fast.
  auto task = [](int seed) {
    json train = json::array(), test = json::array(), solutions = json::array();
    for (int i = 0; i < 3; ++i) {
      const int a = (seed + i) % 3 + 1, b = (seed + 2 * i) % 2;
      train.push_back({{"input", {{1, b}, {a, 1}}}, {"output", {{2, b}, {a == 1 ? 2 : a, 2}}}});
    }
    test.push_back({{"input", {{1, 1}, {seed % 2, 1}}}});
    solutions.push_back(json{{2, 2}, {seed % 2, 2}});
    return std::make_pair(json{{"train", train}, {"test", test}}, solutions);
  };
  for (const auto& [subset, first] : {std::make_pair(std::string("training"), 0), std::make_pair(std::string("evaluation"), 10)}) {
    json challenges = json::object(), solutions = json::object();
    for (int t = 0; t < 3; ++t) {
      const std::string id = subset.substr(0, 1) + std::to_string(first + t) + "abcdef0";
      auto [c, s] = task(first + t);
      challenges[id] = c;
      solutions[id] = s;
    }
    std::ofstream(prefix + "_" + subset + "_challenges.json") << challenges.dump();
    std::ofstream(prefix + "_" + subset + "_solutions.json") << solutions.dump();
  }
}

// The fixture's ARC dataset built into `data` (build.num_aug 3) from tasks written in `dir`.
inline void build_arc_data(const std::string& dir, const std::string& data) {
  const std::string prefix = dir + "/fx";
  write_arc_fixture(prefix);
  const HostResult b = host("--algorithm trm --command build-data --device cpu --run-dir " + dir + "/build" +
                            " --set build.kind=arc --set build.arc_prefix=" + prefix +
                            " --set build.num_aug=3 --set data.dir=" + data);
  ASSERT_EQ(b.rc, 0) << b.output;
  for (const char* f : {"identifiers.json", "test_puzzles.json", "train/dataset.json", "test/all__inputs.npy"})
    EXPECT_TRUE(std::filesystem::exists(data + "/" + f)) << f;
  EXPECT_EQ(read_json_file(data + "/test_puzzles.json").size(), 3u) << "the evaluation subset's tasks";
}

// The dataset as above, and a tiny model trained on it for 24 steps in `run` (evaluating at 12
// and 24).
inline void build_and_train_arc(const std::string& dir, const std::string& data, const std::string& run) {
  build_arc_data(dir, data);
  if (::testing::Test::HasFatalFailure()) return;
  const HostResult t = host("--algorithm trm --device cpu --no-calibrate --run-dir " + run + " --set data.dir=" + data +
                            " --set model.hidden=32 --set model.num_heads=2 --set model.h_cycles=1 --set model.l_cycles=1"
                            " --set model.halt_max_steps=2 --set model.puzzle_emb_ndim=32 --set optimizer=adam_atan2"
                            " --set batch_size=8 --set train_steps=24 --set lr=0.003 --set lr_warmup_steps=2"
                            " --set eval_every=12 --set checkpoint_every=12");
  ASSERT_EQ(t.rc, 0) << t.output;
  EXPECT_NE(t.output.find("ARC pass@1"), std::string::npos) << t.output;
}

}  // namespace trm_test
