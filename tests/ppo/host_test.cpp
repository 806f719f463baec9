// The plugin through the real host: describe, a short CartPole train writing checkpoints,
// metrics and the exported model in the run folder, eval from it; a short puzzle train, eval
// and play of a level file.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using Result = HostResult;

Result host(const std::string& args) { return run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR, args); }

json read_json(const std::string& path) { return read_json_file(path); }

class PpoHost : public HostTempDirTest {
 protected:
  PpoHost() : HostTempDirTest("ppo-host-") {}
};

TEST_F(PpoHost, Describe) {
  const Result r = host("--describe ppo");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json d = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(d["commands"], json({"train", "eval", "play", "benchmark", "calibrate"}));
  EXPECT_EQ(d["config_defaults"]["num_envs"], 4);
  EXPECT_TRUE(d["presets"].contains("puzzle4"));
}

TEST_F(PpoHost, TrainAndEvalCartPole) {
  const std::string run = dir_ + "/cartpole";
  const std::string common = " --device cpu --run-dir " + run;
  const Result train = host("--algorithm ppo" + common + " --set total_timesteps=8192 --set checkpoint_every=4");
  ASSERT_EQ(train.rc, 0) << train.output;
  const json s = read_json(run + "/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s["result"]["global_step"], 8192);
  EXPECT_TRUE(s["last_metrics"].contains("charts/avg_return_100"));
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(run + "/network.json"));
  EXPECT_TRUE(fs::exists(run + "/metrics.jsonl"));
  EXPECT_FALSE(fs::is_empty(run + "/checkpoints"));

  const Result eval = host("--algorithm ppo --command eval --resume" + common + " --set eval_episodes=5");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  const json e = read_json(run + "/summary.json");
  EXPECT_GT(e["result"]["mean_return"].get<double>(), 9.0) << e.dump();
}

TEST_F(PpoHost, TrainEvalAndPlayPuzzle) {
  const std::string run = dir_ + "/puzzle";
  const std::string common = " --device cpu --run-dir " + run +
                             " --set preset=puzzle4 --set network.hidden_dim=16 --set network.num_heads=2"
                             " --set network.num_recursive_steps=1 --set puzzle.eval_count=20";
  const Result train = host("--algorithm ppo" + common + " --set total_timesteps=2048 --set num_envs=8 --set num_steps=32");
  ASSERT_EQ(train.rc, 0) << train.output;
  EXPECT_TRUE(read_json(run + "/summary.json")["last_metrics"].contains("curriculum/level"));
  const Result eval = host("--algorithm ppo --command eval --resume" + common);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  const json e = read_json(run + "/summary.json");
  EXPECT_TRUE(e["result"].contains("solve_rate")) << e.dump();
  EXPECT_TRUE(e["result"].contains("random_solve_rate") && e["result"].contains("random_valid_solve_rate")) << e.dump();

  const std::string levels = dir_ + "/level.txt";
  std::ofstream(levels) << "size 4\nboard\n#..T\n....\n.#x.\n....\nend\n";
  const Result play = host("--algorithm ppo --command play --resume" + common + " --set level_file=" + levels);
  ASSERT_EQ(play.rc, 0) << play.output;
  EXPECT_NE(play.output.find("move 1: "), std::string::npos) << play.output;
  const Result bad = host("--algorithm ppo --command play --resume" + common + " --set level_file=" + dir_ + "/none.txt");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.output.find("none.txt"), std::string::npos) << bad.output;
}

// Two CPU ranks (Gloo): CartPole on the plain-C++ update and the puzzle on the autograd
// update both keep the ranks' networks identical; rank 0 writes the run's files.
TEST_F(PpoHost, TwoRanksTrainCartPoleAndThePuzzleInLockstep) {
  const std::string run = dir_ + "/cartpole2";
  const Result train = host("--algorithm ppo --device cpu --nproc-per-node 2 --run-dir " + run +
                            " --set total_timesteps=8192 --set checkpoint_every=4");
  ASSERT_EQ(train.rc, 0) << train.output;
  const json s = read_json(run + "/summary.json"), s1 = read_json(run + "/ranks/1/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s1["status"], "completed") << s1.dump();
  EXPECT_EQ(s["result"]["world_size"], 2);
  EXPECT_EQ(s["result"]["ranks_agree"], true) << s.dump();
  EXPECT_EQ(s1["result"]["ranks_agree"], true) << s1.dump();
  EXPECT_EQ(s["result"]["global_step"], 8192);  // each rank's; the run stepped 2 x 8192
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(run + "/ranks/1/model.safetensors"));
  EXPECT_FALSE(fs::is_empty(run + "/checkpoints"));
  const Result eval = host("--algorithm ppo --command eval --resume --device cpu --run-dir " + run +
                           " --set eval_episodes=5");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  EXPECT_GT(read_json(run + "/summary.json")["result"]["mean_return"].get<double>(), 9.0);

  const std::string puzzle = dir_ + "/puzzle2";
  const Result p = host("--algorithm ppo --device cpu --nproc-per-node 2 --run-dir " + puzzle +
                        " --set preset=puzzle4 --set network.hidden_dim=16 --set network.num_heads=2"
                        " --set network.num_recursive_steps=1 --set total_timesteps=1024 --set num_envs=8"
                        " --set num_steps=32");
  ASSERT_EQ(p.rc, 0) << p.output;
  EXPECT_EQ(read_json(puzzle + "/summary.json")["result"]["ranks_agree"], true);
}

}  // namespace
