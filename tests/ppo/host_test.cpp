// The plugin through the real host: describe, a short CartPole train writing checkpoints,
// metrics and the exported model in the run folder, eval from it; a short puzzle train, eval
// and play of a level file; training on the user's levels, and bad level files and networks
// refused before anything trains (exit 2, no run folder left).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"
#include "run_snapshot.hpp"
#include "test_levels.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

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
  const Result r = host("--describe ppo --json");
  ASSERT_EQ(r.rc, 0) << r.output;
  const json d = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(d["commands"], json({"train", "eval", "play", "forward", "export", "benchmark", "calibrate"}));
  EXPECT_EQ(d["config_defaults"]["num_envs"], 4);
  EXPECT_TRUE(d["presets"].contains("puzzle4"));
}

// PPO's batch is num_envs x num_steps: a batch size on the command line is refused before
// anything runs, naming the option and why.
TEST_F(PpoHost, BatchSizeOnTheCommandLineIsRefused) {
  const std::string run = dir_ + "/run";
  const Result r = host("--algorithm ppo --device cpu --batch-size 64 --run-dir " + run);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("--batch-size 64: ppo's batch is num_envs x num_steps transitions (4 x 128 = 512 here)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(run)) << "nothing is written";
}

// A network the task cannot take is refused while planning (the algorithm's describe_run
// builds it), before a run folder exists, naming the field.
TEST_F(PpoHost, ANetworkTheTaskCannotTakeIsRefusedBeforeAnythingRuns) {
  const std::string run = dir_ + "/run";
  const Result r = host("--algorithm ppo --device cpu --set network.kind=resnet --run-dir " + run);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find("kind"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run)) << "nothing is written";
}

// The CartPole MLP runs in fp32 without checkpointing or convolutions: the plan says so, and
// a bf16 asked for on the command line is a warning naming it, not a silent no-op. The plan's
// model is the network the worker trains.
TEST_F(PpoHost, TheCartPoleMlpMarksWhatItDoesNotUse) {
  write_text_file(dir_ + "/hw.ini", "gradient_checkpointing = true\n");
  const Result plan = host("--print-plan --algorithm ppo --device cpu --precision bf16 --hardware-config " + dir_ + "/hw.ini");
  ASSERT_EQ(plan.rc, 0) << plan.output;
  EXPECT_NE(plan.output.find("bf16 (no effect: the MLP stays fp32: casts would cost more than they save)"), std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("precision = \"bf16\" (command line --precision) has no effect on this run"), std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("gradient_checkpointing = true (settings file " + dir_ + "/hw.ini:1) has no effect"),
            std::string::npos)
      << plan.output;
  EXPECT_NE(plan.output.find("MLP 64-64 (actor and critic), 9,155 parameters"), std::string::npos) << plan.output;
}

// full and reduced size the residual tower: 30 x 192 against 20 x 128 blocks and channels.
TEST_F(PpoHost, PresetsSizeTheResidualTower) {
  const std::string resnet = " --algorithm ppo --device cpu --set env=puzzle --set network.kind=resnet --set preset=";
  const Result full = host("--print-plan" + resnet + "full");
  ASSERT_EQ(full.rc, 0) << full.output;
  EXPECT_NE(full.output.find("residual tower: 30 blocks x 192 channels"), std::string::npos) << full.output;
  const Result reduced = host("--print-plan" + resnet + "reduced");
  ASSERT_EQ(reduced.rc, 0) << reduced.output;
  EXPECT_NE(reduced.output.find("residual tower: 20 blocks x 128 channels"), std::string::npos) << reduced.output;
  // The recursive network takes its size from the config: the preset does nothing to it.
  const Result recursive = host("--print-plan --algorithm ppo --device cpu --set env=puzzle --set preset=full");
  ASSERT_EQ(recursive.rc, 0) << recursive.output;
  EXPECT_NE(recursive.output.find("full (no effect: full and reduced size the residual tower"), std::string::npos)
      << recursive.output;
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

  const auto trained = training_files(run);
  const Result eval = host("--algorithm ppo --command eval --resume" + common + " --set eval_episodes=5");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  const json e = read_json(run + "/commands/eval-1/summary.json");
  EXPECT_GT(e["result"]["mean_return"].get<double>(), 9.0) << e.dump();
  EXPECT_EQ(changed_files(trained, training_files(run)), "");
}

// --max-steps counts PPO's iterations (a rollout of num_envs x num_steps and its update):
// the run ends there as at its end, with the last checkpoint and the weights.
TEST_F(PpoHost, MaxStepsEndsAfterThatManyIterations) {
  const std::string run = dir_ + "/short";
  const Result train = host("--algorithm ppo --device cpu --run-dir " + run + " --max-steps 3");
  ASSERT_EQ(train.rc, 0) << train.output;
  const json s = read_json(run + "/summary.json");
  EXPECT_EQ(s["status"], "completed") << s.dump();
  EXPECT_EQ(s["result"]["iterations"], 3) << s.dump();
  EXPECT_EQ(s["result"]["global_step"], 3 * 4 * 128) << "3 iterations of 4 envs x 128 steps: " << s.dump();
  EXPECT_EQ(s["result"]["max_steps"], 3) << s.dump();
  EXPECT_TRUE(fs::exists(run + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(run + "/checkpoints/step-000001536.ckpt")) << "filed by environment step";
}

TEST_F(PpoHost, TrainEvalAndPlayPuzzle) {
  const std::string run = dir_ + "/puzzle";
  const std::string common = " --device cpu --run-dir " + run +
                             " --set preset=puzzle4 --set network.hidden_dim=16 --set network.num_heads=2"
                             " --set network.num_recursive_steps=1 --set puzzle.eval_count=20";
  const Result train = host("--algorithm ppo" + common + " --set total_timesteps=2048 --set num_envs=8 --set num_steps=32");
  ASSERT_EQ(train.rc, 0) << train.output;
  EXPECT_TRUE(read_json(run + "/summary.json")["last_metrics"].contains("curriculum/level"));
  const auto trained = training_files(run);
  const Result eval = host("--algorithm ppo --command eval --resume" + common);
  ASSERT_EQ(eval.rc, 0) << eval.output;
  const json e = read_json(run + "/commands/eval-1/summary.json");
  EXPECT_TRUE(e["result"].contains("solve_rate")) << e.dump();
  EXPECT_TRUE(e["result"].contains("random_solve_rate") && e["result"].contains("random_valid_solve_rate")) << e.dump();

  const std::string levels = dir_ + "/level.txt";
  std::ofstream(levels) << "size 4\nboard\n..#T\n....\n.#..\nx...\nend\n";  // solvable: play checks it
  const Result play = host("--algorithm ppo --command play --resume" + common + " --set level_file=" + levels);
  ASSERT_EQ(play.rc, 0) << play.output;
  EXPECT_NE(play.output.find("move 1: "), std::string::npos) << play.output;
  const Result bad = host("--algorithm ppo --command play --resume" + common + " --set level_file=" + dir_ + "/none.txt");
  EXPECT_EQ(bad.rc, 2) << bad.output;
  EXPECT_NE(bad.output.find("none.txt"), std::string::npos) << bad.output;
  // Only the refused command's own folder is gone: the message says which.
  EXPECT_NE(bad.output.find("this command's folder " + run + "/commands/play-2 is gone again"), std::string::npos)
      << bad.output;
  EXPECT_TRUE(fs::exists(run + "/commands/play-1/summary.json"));
  EXPECT_FALSE(fs::exists(run + "/commands/play-2"));
  EXPECT_EQ(changed_files(trained, training_files(run)), "");
}

// A small recursive net on 4x4 puzzles, quick to train a few iterations of.
const std::string kSmallPuzzleRun = " --device cpu --set preset=puzzle4 --set network.hidden_dim=16 --set network.num_heads=2"
                                    " --set network.num_recursive_steps=1 --set num_envs=8 --set num_steps=32";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(PpoHost, TrainsOnALevelFileAndReportsOnIt) {
  const std::string levels = write_level_file(dir_ + "/my-levels.txt", kFourLevels);
  const std::string run = dir_ + "/levels";
  const Result train =
      host("--algorithm ppo --run-dir " + run + kSmallPuzzleRun + " --set total_timesteps=1024 --set puzzle.train_levels=" + levels);
  ASSERT_EQ(train.rc, 0) << train.output;
  const json s = read_json(run + "/summary.json");
  ASSERT_EQ(s["status"], "completed") << s.dump();
  const json& l = s["result"]["train_levels"];
  EXPECT_EQ(l["path"], levels) << s.dump();
  EXPECT_EQ(l["puzzles"], 4);
  EXPECT_EQ(l["files"], 1);
  EXPECT_EQ(l["share"], 1.0);
  for (const char* rate : {"solve_rate", "random_valid_solve_rate", "training_solve_rate_100"}) {
    ASSERT_TRUE(l[rate].is_number()) << rate << ": " << l.dump();
    EXPECT_GE(l[rate].get<double>(), 0.0) << rate;
    EXPECT_LE(l[rate].get<double>(), 1.0) << rate;
  }
  // 1,024 steps of episodes at most 20 steps long (puzzle4's limit), every one on the levels.
  EXPECT_GE(l["training_episodes"].get<int64_t>(), 1024 / 20) << l.dump();
  EXPECT_TRUE(s["last_metrics"].contains("levels/solve_rate_100")) << s.dump();
  const std::string log = read_text(run + "/log.txt");
  EXPECT_NE(log.find("training on your levels: 4 puzzles from '" + levels + "'"), std::string::npos) << log;
  EXPECT_NE(log.find("on the training levels '" + levels + "' (4 puzzles"), std::string::npos) << log;
}

// Files given relative at training are recorded absolute (config.json), from the folder the
// command was given in: the run resumes and evaluates from any other folder.
TEST_F(PpoHost, RelativeLevelFilesHoldWhenTheRunResumesAndEvaluatesFromAnotherFolder) {
  const std::string work = dir_ + "/work", elsewhere = dir_ + "/elsewhere";
  fs::create_directories(elsewhere);
  fs::create_directories(work + "/levels");
  write_level_file(work + "/levels/mine.txt", kFourLevels);
  const Result train = run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR,
                                "--algorithm ppo --run-dir run" + kSmallPuzzleRun +
                                    " --set total_timesteps=1024 --max-steps 1 --set puzzle.train_levels=levels/mine.txt"
                                    " --set puzzle.eval_level_file=levels/mine.txt",
                                "", work);
  ASSERT_EQ(train.rc, 0) << train.output;
  const json config = read_json(work + "/run/config.json");
  EXPECT_EQ(config["puzzle"]["train_levels"], work + "/levels/mine.txt") << config.dump(2);
  EXPECT_EQ(config["puzzle"]["eval_level_file"], work + "/levels/mine.txt") << config.dump(2);

  const Result resumed = run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR, "--algorithm ppo --resume --run-dir ../work/run", "",
                                  elsewhere);
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  EXPECT_EQ(read_json(work + "/run/summary.json")["status"], "completed");
  const Result eval = run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR,
                               "--algorithm ppo --resume --run-dir ../work/run --command eval", "", elsewhere);
  EXPECT_EQ(eval.rc, 0) << eval.output;
}

// Refused before anything trains: exit 2, the output names the file (and line), and the run
// folder the host made is gone again.
void expect_refused_before_training(const Result& r, const std::string& run, const std::string& what) {
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run)) << "the run folder is removed";
}

TEST_F(PpoHost, AMalformedLevelFileExits2NamingFileAndLineAndLeavesNoRunFolder) {
  const std::string bad = write_level_file(dir_ + "/bad.txt", "size 4\nboard\n..#T\n...\n.#..\nx...\nend\n");
  const std::string run = dir_ + "/bad-run";
  expect_refused_before_training(host("--algorithm ppo --run-dir " + run + kSmallPuzzleRun + " --set puzzle.train_levels=" + bad),
                                 run, "level file '" + bad + "', line 4: bad row length 3, expected 4");

  // Without --run-dir: the default folder goes again, and so does the runs/ folder made for it.
  const std::string fresh = dir_ + "/fresh";
  fs::create_directories(fresh);
  const Result r = run_host(PPO_HOST_BIN, PPO_PLUGIN_DIR,
                            "--algorithm ppo" + kSmallPuzzleRun + " --set puzzle.train_levels=" + bad, "", fresh);
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_FALSE(fs::exists(fresh + "/runs")) << r.output;
}

TEST_F(PpoHost, AWrongOptimalIsRefusedNamingFileAndLine) {
  const std::string wrong =
      write_level_file(dir_ + "/wrong.txt", std::string(kFourLevels) + "\nsize 4\noptimal 3\nboard\n..#T\n....\n.#..\nx...\nend\n");
  const std::string run = dir_ + "/wrong-run";
  expect_refused_before_training(host("--algorithm ppo --run-dir " + run + kSmallPuzzleRun + " --set puzzle.train_levels=" + wrong),
                                 run, "level file '" + wrong + "', line 36: optimal 3 is wrong");
}

// eval's level file, named in the training command, is checked before training starts.
TEST_F(PpoHost, ABadEvalLevelFileIsRefusedBeforeTraining) {
  const std::string held_out = write_level_file(dir_ + "/held-out.txt", "size 4\nboard\nT...\n....\n....\n....\nend\n");
  const std::string run = dir_ + "/bad-eval-file";
  expect_refused_before_training(
      host("--algorithm ppo --run-dir " + run + kSmallPuzzleRun + " --set puzzle.eval_level_file=" + held_out), run,
      "level file '" + held_out + "', line 2: tile/target count mismatch");
}

// mlp is CartPole's network: on puzzles the refusal names the networks that fit and why.
TEST_F(PpoHost, MlpOnPuzzlesIsRefusedNamingTheNetworksThatFit) {
  const std::string run = dir_ + "/mlp";
  expect_refused_before_training(host("--algorithm ppo --device cpu --set env=puzzle --set network.kind=mlp --run-dir " + run),
                                 run, "use recursive (the default for puzzles) or resnet");
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
  EXPECT_GT(read_json(run + "/commands/eval-1/summary.json")["result"]["mean_return"].get<double>(), 9.0);

  const std::string puzzle = dir_ + "/puzzle2";
  const Result p = host("--algorithm ppo --device cpu --nproc-per-node 2 --run-dir " + puzzle +
                        " --set preset=puzzle4 --set network.hidden_dim=16 --set network.num_heads=2"
                        " --set network.num_recursive_steps=1 --set total_timesteps=1024 --set num_envs=8"
                        " --set num_steps=32");
  ASSERT_EQ(p.rc, 0) << p.output;
  EXPECT_EQ(read_json(puzzle + "/summary.json")["result"]["ranks_agree"], true);
}

}  // namespace
