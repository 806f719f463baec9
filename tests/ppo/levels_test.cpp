// Training on the user's levels, below the host: the task built from a level file or a folder,
// alone or mixed with generated puzzles, its metrics, and every bad level file an
// mlh::DataError naming the file, line and config field; the level files eval and play will
// read are checked before training, and train refuses a bad one before its first metric.
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "env/level_file.hpp"
#include "fake_host.hpp"
#include "tasks.hpp"
#include "temp_dir.hpp"
#include "test_levels.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json puzzle_config(const std::string& levels) {
  json c = {{"env", "puzzle"}, {"puzzle", {{"size", 4}, {"max_steps", 8}, {"max_moves", 4}}}};
  if (!levels.empty()) c["puzzle"]["train_levels"] = levels;
  return c;
}

// The message of the mlh::Error that `f` throws, which must be a data error's status.
template <class F>
std::string data_error(F f) {
  try {
    f();
  } catch (const mlh::DataError& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a DataError: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(PpoLevelsTask, YourLevelsAloneAreEveryEpisodesPuzzle) {
  TempDir dir;
  const std::string file = write_level_file(dir.path() / "levels.txt", kFourLevels);
  const ppo::Task task = ppo::make_task(ppo::parse_config(puzzle_config(file)));
  ASSERT_TRUE(task.levels);
  ASSERT_EQ(task.levels->set.puzzles.size(), 4u);
  std::vector<int> optima;
  for (const ppo::Puzzle& p : task.levels->set.puzzles) optima.push_back(p.optimal);
  EXPECT_EQ(optima, (std::vector<int>{1, 2, 2, 3}));
  const std::vector<ppo::Puzzle> mine = ppo::load_levels(file);
  auto env = task.make_env();
  std::vector<float> obs(static_cast<size_t>(env->observation_size()));
  std::mt19937_64 rng(1);
  for (int k = 0; k < 40; ++k) {
    env->reset(rng, obs.data());
    const ppo::Puzzle& p = static_cast<ppo::PuzzleEnv&>(*env).puzzle();
    bool found = false;
    for (const ppo::Puzzle& q : mine) found = found || (q.tiles == p.tiles && q.targets == p.targets);
    EXPECT_TRUE(found) << "episode " << k << " played a puzzle not in the file";
  }
  const auto metrics = task.metrics();
  EXPECT_TRUE(metrics.count("levels/solve_rate_100"));
  EXPECT_TRUE(metrics.count("levels/curriculum_level"));
  EXPECT_FALSE(metrics.count("curriculum/level")) << "no generated puzzles, so no generated curriculum";
  const std::string what = ppo::describe(*task.levels, ppo::parse_config(puzzle_config(file)));
  EXPECT_NE(what.find("4 puzzles from '" + file + "' (1 file; boards 4 cells a side, optimal 1-3 moves)"),
            std::string::npos)
      << what;
}

TEST(PpoLevelsTask, AShareMixesAFoldersLevelsWithGeneratedPuzzles) {
  TempDir dir;
  fs::create_directories(dir.path() / "levels");
  write_level_file(dir.path() / "levels" / "a.txt", kFourLevels);
  write_level_file(dir.path() / "levels" / "b.lvl", "size 3\nboard\nT..\n...\n..x\nend\n");
  json cfg = puzzle_config((dir.path() / "levels").string());
  cfg["puzzle"]["train_levels_share"] = 0.5;
  cfg["puzzle"]["curriculum"] = {{"enabled", false}};
  cfg["puzzle"]["min_moves"] = 1;
  const ppo::Config c = ppo::parse_config(cfg);
  const ppo::Task task = ppo::make_task(c);
  ASSERT_TRUE(task.levels);
  EXPECT_EQ(task.levels->set.files.size(), 2u);
  EXPECT_EQ(task.levels->set.puzzles.size(), 5u);
  std::set<std::pair<std::vector<int>, std::vector<int>>> mine;
  for (const ppo::Puzzle& p : task.levels->set.puzzles) mine.insert({p.tiles, p.targets});
  // Two environments, each with its own mix; 200 episodes each.
  int from_levels = 0, episodes = 0;
  for (int e = 0; e < 2; ++e) {
    auto env = task.make_env();
    std::vector<float> obs(static_cast<size_t>(env->observation_size()));
    std::mt19937_64 rng(e);
    for (int k = 0; k < 200; ++k, ++episodes) {
      env->reset(rng, obs.data());
      const ppo::Puzzle& p = static_cast<ppo::PuzzleEnv&>(*env).puzzle();
      from_levels += p.size == 3 || mine.count({p.tiles, p.targets});
    }
  }
  // Generated 4x4 puzzles can coincide with a level now and then, so a wide margin.
  EXPECT_GT(from_levels, episodes * 0.35);
  EXPECT_LT(from_levels, episodes * 0.75);
  EXPECT_NE(ppo::describe(*task.levels, c).find("50% of the episodes"), std::string::npos);
}

TEST(PpoLevelsTask, BadLevelFilesAreDataErrorsNamingFileLineAndField) {
  TempDir dir;
  const std::string bad_row = write_level_file(dir.path() / "bad.txt", "size 3\nboard\nT..\n..\n..x\nend\n");
  std::string e = data_error([&] { ppo::make_task(ppo::parse_config(puzzle_config(bad_row))); });
  EXPECT_NE(e.find("level file '" + bad_row + "', line 4: bad row length 2"), std::string::npos) << e;
  EXPECT_NE(e.find("'puzzle.train_levels'"), std::string::npos) << e;

  const std::string wrong = write_level_file(dir.path() / "wrong.txt", "size 4\noptimal 5\nboard\n..#T\n....\n.#..\nx...\nend\n");
  e = data_error([&] { ppo::make_task(ppo::parse_config(puzzle_config(wrong))); });
  EXPECT_NE(e.find("level file '" + wrong + "', line 2: optimal 5 is wrong"), std::string::npos) << e;

  const std::string missing = (dir.path() / "missing.txt").string();
  e = data_error([&] { ppo::make_task(ppo::parse_config(puzzle_config(missing))); });
  EXPECT_NE(e.find(missing), std::string::npos) << e;

  // Larger than puzzle.size, or longer than puzzle.max_steps.
  const std::string big = write_level_file(dir.path() / "big.txt", "size 5\nboard\nT....\n.....\n.....\n.....\n....x\nend\n");
  e = data_error([&] { ppo::make_task(ppo::parse_config(puzzle_config(big))); });
  EXPECT_NE(e.find("line 1: puzzle 1 (5x5) is larger than the 4x4 boards the network takes (puzzle.size 4"),
            std::string::npos)
      << e;
  json short_limit = puzzle_config(write_level_file(dir.path() / "levels.txt", kFourLevels));
  short_limit["puzzle"]["max_steps"] = 2;
  e = data_error([&] { ppo::make_task(ppo::parse_config(short_limit)); });
  EXPECT_NE(e.find("needs 3 moves, more than the step limit of 2 (puzzle.max_steps)"), std::string::npos) << e;
}

TEST(PpoLevelsTask, TheCommandsLevelFilesAreCheckedBeforeTraining) {
  TempDir dir;
  json cfg = puzzle_config("");
  // Not there yet: it may be written before eval runs, which checks it then (a warning).
  cfg["puzzle"]["eval_level_file"] = (dir.path() / "held-out.txt").string();
  const std::vector<std::string> warnings = ppo::check_command_level_files(ppo::parse_config(cfg));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("level file '" + (dir.path() / "held-out.txt").string() +
                             "' (config field 'puzzle.eval_level_file') does not exist yet"),
            std::string::npos)
      << warnings[0];
  // There but wrong: refused, as eval would refuse it.
  write_level_file(dir.path() / "held-out.txt", "size 4\nboard\nT..\nend\n");
  std::string e = data_error([&] { ppo::check_command_level_files(ppo::parse_config(cfg)); });
  EXPECT_NE(e.find("held-out.txt', line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("'puzzle.eval_level_file'"), std::string::npos) << e;
  cfg["puzzle"]["eval_level_file"] = write_level_file(dir.path() / "held-out.txt", kFourLevels);
  cfg["level_file"] = write_level_file(dir.path() / "play.txt", "size 3\nboard\nT..\n.x.\n...\nend\n");
  e = data_error([&] { ppo::check_command_level_files(ppo::parse_config(cfg)); });
  EXPECT_NE(e.find("level file '" + cfg["level_file"].get<std::string>() + "', line 1: puzzle 1 (3x3) has no solution"),
            std::string::npos)
      << e;
  cfg["level_file"] = cfg["puzzle"]["eval_level_file"];
  EXPECT_TRUE(ppo::check_command_level_files(ppo::parse_config(cfg)).empty());
}

// Through the train command in-process: a bad eval level file stops the run before its first
// metric and before anything is written in the run folder.
TEST(PpoLevelsTask, TrainRefusesABadEvalLevelFileBeforeItsFirstMetric) {
  TempDir dir;
  json cfg = puzzle_config("");
  cfg["puzzle"]["eval_level_file"] = write_level_file(dir.path() / "wrong.txt", "size 4\noptimal 5\nboard\n..#T\n....\n.#..\nx...\nend\n");
  cfg["network"] = {{"hidden_dim", 16}, {"num_heads", 2}, {"num_recursive_steps", 1}};
  cfg["num_envs"] = 2;
  cfg["num_steps"] = 8;
  cfg["num_minibatches"] = 1;
  cfg["total_timesteps"] = 16;
  FakeHost host;
  std::string error;
  const fs::path run = dir.path() / "run";
  const mlh_status status = run_in_process(
      host, ppo::run_command, {"train", cfg.dump(), run.string(), R"({"torch_device": "cpu", "precision": "fp32"})"},
      &error);
  EXPECT_EQ(status, MLH_ERR_INVALID_ARGUMENT) << error;
  EXPECT_NE(error.find("wrong.txt', line 2: optimal 5 is wrong"), std::string::npos) << error;
  EXPECT_TRUE(host.metrics.empty());
  EXPECT_TRUE(!fs::exists(run) || fs::is_empty(run)) << "nothing written";
}

}  // namespace
