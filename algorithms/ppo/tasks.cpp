#include "tasks.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include <mlh/plugin.hpp>

#include "env/cartpole.hpp"
#include "env/gymnasium_env.hpp"
#include "env/mountain_car_continuous.hpp"
#include "env/pendulum.hpp"
#include "env/curriculum.hpp"
#include "env/level_file.hpp"
#include "env/env.hpp"
#include "env/puzzle_source.hpp"

namespace ppo {

using nlohmann::json;

namespace {

// A level file's problem as the run reports every bad data file: an mlh::DataError naming
// the file and line, and the config field that named the file.
mlh::DataError data_error(const LevelError& e, const std::string& field) {
  return mlh::DataError("level file '" + e.file() + "'" + (e.line() > 0 ? ", line " + std::to_string(e.line()) : "") +
                        ": " + e.problem() + " (config field '" + field + "')");
}

LevelSet load_checked(const std::string& path, const std::string& field, const LevelLimits& limits) {
  if (path.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "no level file given (config field '" + field + "')");
  try {
    return load_level_set(path, limits);
  } catch (const LevelError& e) {
    throw data_error(e, field);
  }
}

TrainingLevels load_training_levels(const Config& cfg) {
  LevelLimits l;
  l.max_size = cfg.puzzle.size;
  l.max_size_why = "the network takes (puzzle.size " + std::to_string(cfg.puzzle.size) +
                   ": set it to your largest board's side)";
  l.max_steps = cfg.puzzle.max_steps;
  l.max_steps_why = "(puzzle.max_steps)";
  TrainingLevels t;
  t.path = cfg.puzzle.train_levels;
  t.set = load_checked(t.path, "puzzle.train_levels", l);
  t.share = cfg.puzzle.train_levels_share;
  t.results = std::make_shared<SolveWindow>(100);
  return t;
}

// Refuses an observation shape the config's network cannot take: `what` says whose it is.
void check_network_takes(const Config& cfg, const std::vector<int64_t>& shape, const std::string& who) {
  const std::string kind = cfg.network.kind;
  const std::string what = who + " gives observations of shape " + shape_text(shape);
  if (kind == "python") return;  // the module's contract check (make_network) tries the shape itself
  if (shape.size() == 1 && kind != "auto" && kind != "mlp")
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'network.kind': " + what + ", a flat vector, which " +
                                                   kind + " cannot take: use mlp (or auto)");
  if (shape.size() == 3 && kind == "mlp")
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'network.kind': " + what +
                                                   ", {planes, height, width}, which mlp (for a flat vector) cannot "
                                                   "take: use recursive or resnet (or auto)");
  if (shape.size() != 1 && shape.size() != 3)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     what + ": PPO's networks take a flat vector (mlp) or {planes, height, width} (recursive, "
                            "resnet); flatten it in the environment");
}

// The task of an environment that one probe instance describes: its shape (every instance
// must have it), its actions and whether it masks them.
Task task_of(const Env& probe, EnvFactory make_env) {
  Task t;
  t.make_env = std::move(make_env);
  t.observation_shape = probe.observation_shape();
  t.num_actions = probe.num_actions();
  t.action_bounds = probe.action_bounds();
  return t;
}

// env=library: one instance tells the shape every instance must have and whether the
// library masks actions.
Task library_task(const Config& cfg) {
  std::shared_ptr<const EnvLibrary> library = EnvLibrary::open(cfg.library.path);
  const std::string settings = cfg.library.settings.dump();
  const LibraryEnv probe(library, settings);
  const std::vector<int64_t> shape = probe.observation_shape();
  check_network_takes(cfg, shape, library->who());
  Task t = task_of(probe, [library, settings, shape] { return std::make_unique<LibraryEnv>(library, settings, shape); });
  t.action_masks = probe.has_action_mask();
  return t;
}

// env=gymnasium: a probe worker tells the spaces; each environment of the vector gets a
// worker process of its own.
Task gymnasium_task(const Config& cfg) {
  const GymnasiumSpec& spec = cfg.gymnasium;
  const GymnasiumEnv probe(spec);
  check_network_takes(cfg, probe.observation_shape(), "gymnasium environment '" + spec.id + "'");
  return task_of(probe, [spec] { return std::make_unique<GymnasiumEnv>(spec); });
}

std::string percent(double share) { return std::to_string(static_cast<int>(std::lround(share * 100))) + "%"; }

}  // namespace

std::string describe(const TrainingLevels& levels, const Config& cfg) {
  const std::vector<Puzzle>& p = levels.set.puzzles;
  int min_size = p.front().size, min_optimal = p.front().optimal;
  for (const Puzzle& q : p) {
    min_size = std::min(min_size, q.size);
    min_optimal = std::min(min_optimal, q.optimal);
  }
  auto range = [](int lo, int hi) { return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi); };
  const size_t files = levels.set.files.size();
  std::string s = std::to_string(p.size()) + " puzzles from '" + levels.path + "' (" + std::to_string(files) +
                  (files == 1 ? " file" : " files") + "; boards " + range(min_size, levels.set.max_size) +
                  " cells a side, optimal " + range(min_optimal, levels.set.max_optimal) + " moves), ";
  const std::string order = cfg.puzzle.curriculum.enabled ? "shortest first (curriculum)" : "drawn uniformly";
  if (levels.share >= 1.0) return s + "every episode, " + order;
  return s + percent(levels.share) + " of the episodes, " + order + "; the rest generated " +
         std::to_string(cfg.puzzle.size) + "x" + std::to_string(cfg.puzzle.size) + " puzzles";
}

Task make_task(const Config& cfg) {
  Task t;
  if (cfg.env == "cartpole") {
    t.make_env = [] { return std::make_unique<CartPole>(); };
    t.observation_shape = {4};
    t.num_actions = 2;
    return t;
  }
  if (cfg.env == "pendulum") {
    t.make_env = [] { return std::make_unique<Pendulum>(); };
    t.observation_shape = {3};
    t.action_bounds = Pendulum().action_bounds();
    return t;
  }
  if (cfg.env == "mountain-car-continuous") {
    t.make_env = [] { return std::make_unique<MountainCarContinuous>(); };
    t.observation_shape = {2};
    t.action_bounds = MountainCarContinuous().action_bounds();
    return t;
  }
  if (cfg.env == "library") return library_task(cfg);
  if (cfg.env == "gymnasium") return gymnasium_task(cfg);
  const uint64_t seed = cfg.seed * 7919ULL + 101;
  const bool curriculum_on = cfg.puzzle.curriculum.enabled;
  CurriculumOptions co;
  co.start_level = 2;
  co.window = static_cast<int>(cfg.puzzle.curriculum.window);
  co.threshold = cfg.puzzle.curriculum.promote_at;
  co.seed = seed;

  // Generated puzzles, unless the user's levels are all the run plays.
  std::shared_ptr<PuzzleSource> generated;
  std::shared_ptr<Curriculum> curriculum;
  const bool levels_only = !cfg.puzzle.train_levels.empty() && cfg.puzzle.train_levels_share >= 1.0;
  if (!levels_only) {
    const GeneratorSpec g = generator_spec(cfg);
    try {
      if (curriculum_on) {
        CurriculumOptions o = co;
        o.start_level = std::min(2, g.max_moves);
        curriculum = std::make_shared<Curriculum>(g, o);
        generated = curriculum;
      } else {
        generated = std::make_shared<GeneratorSource>(g, seed);
      }
    } catch (const std::exception& e) {
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("config field 'puzzle': ") + e.what());
    }
  }

  // The user's levels: in order of optimal length (their own curriculum) or drawn uniformly,
  // each episode's outcome recorded for the levels' solve rate.
  std::shared_ptr<TrainingLevels> levels;
  std::shared_ptr<Curriculum> level_curriculum;
  std::shared_ptr<PuzzleSource> from_levels, pool;
  if (!cfg.puzzle.train_levels.empty()) {
    levels = std::make_shared<TrainingLevels>(load_training_levels(cfg));
    CurriculumOptions o = co;
    o.seed = seed + 1;
    if (curriculum_on) {
      level_curriculum = std::make_shared<Curriculum>(levels->set.puzzles, o);
      pool = level_curriculum;
    } else {
      pool = std::make_shared<PuzzleListSource>(levels->set.puzzles, /*shuffle=*/true, o.seed);
    }
    from_levels = std::make_shared<RecordingSource>(pool, levels->results);
  }

  const PuzzleEnvOptions options = puzzle_env_options(cfg, cfg.puzzle.size);
  // Every environment's mix, in the order they were made (the vector's slots).
  auto mixes = std::make_shared<std::vector<std::shared_ptr<MixedSource>>>();
  if (!from_levels) {
    t.make_env = [generated, options] { return std::make_unique<PuzzleEnv>(generated, options); };
  } else if (!generated) {
    t.make_env = [from_levels, options] { return std::make_unique<PuzzleEnv>(from_levels, options); };
  } else {
    // One mix per environment (level_sources.hpp says why), each with its own seed.
    const double share = cfg.puzzle.train_levels_share;
    t.make_env = [from_levels, generated, share, options, mixes, seed] {
      auto mix = std::make_shared<MixedSource>(from_levels, generated, share, seed + 1000 + mixes->size());
      mixes->push_back(mix);
      return std::make_unique<PuzzleEnv>(mix, options);
    };
  }
  // What the environments' sources hold, for the checkpoint: a resumed run plays the puzzles,
  // at the curriculum levels, that an uninterrupted one would.
  t.save_state = [generated, pool, levels, mixes] {
    json s = {{"generated", generated ? generated->state() : json()},
              {"levels", pool ? pool->state() : json()},
              {"levels_results", levels ? levels->results->state() : json()},
              {"mixes", json::array()}};
    for (const auto& mix : *mixes) s["mixes"].push_back(mix->state());
    return s;
  };
  t.load_state = [generated, pool, levels, mixes](const json& s) {
    if (generated) generated->load_state(s.at("generated"));
    if (pool) pool->load_state(s.at("levels"));
    if (levels) levels->results->load_state(s.at("levels_results"));
    const json& saved = s.at("mixes");
    if (saved.size() != mixes->size())
      throw std::invalid_argument("the checkpoint holds " + std::to_string(saved.size()) + " puzzle mixes, the run " +
                                  std::to_string(mixes->size()));
    for (size_t i = 0; i < mixes->size(); ++i) (*mixes)[i]->load_state(saved[i]);
  };
  t.observation_shape = {PuzzleEnv::kNumPlanes, options.obs_size, options.obs_size};
  t.num_actions = kNumMoves;
  t.action_masks = true;
  t.levels = levels;
  if (curriculum || levels) {
    t.metrics = [curriculum, levels, level_curriculum] {
      std::map<std::string, double> m;
      if (curriculum) {
        m["curriculum/level"] = curriculum->level();
        m["curriculum/window_solve_rate"] = curriculum->solve_rate();
      }
      if (levels) m["levels/solve_rate_100"] = levels->results->rate();
      if (level_curriculum) m["levels/curriculum_level"] = level_curriculum->level();
      return m;
    };
  }
  return t;
}

std::vector<Puzzle> load_level_file(const std::string& path, const std::string& field, int max_size) {
  LevelLimits l;
  l.max_size = max_size;
  l.max_size_why = "the network takes (puzzle.size " + std::to_string(max_size) + " in training)";
  return load_checked(path, field, l).puzzles;
}

std::vector<std::string> check_command_level_files(const Config& cfg) {
  std::vector<std::string> warnings;
  auto check = [&](const std::string& path, const std::string& field, int max_size) {
    if (path.empty()) return;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      warnings.push_back("level file '" + path + "' (config field '" + field +
                         "') does not exist yet: the command that reads it checks it then");
      return;
    }
    load_level_file(path, field, max_size);
  };
  check(cfg.puzzle.eval_level_file, "puzzle.eval_level_file", cfg.puzzle.size);
  check(cfg.level_file, "level_file", kMaxPuzzleSize);  // as play reads it
  return warnings;
}

std::vector<Puzzle> eval_puzzles(const Config& cfg, int obs_size) {
  if (!cfg.puzzle.eval_level_file.empty())
    return load_level_file(cfg.puzzle.eval_level_file, "puzzle.eval_level_file", obs_size);
  const GeneratorSpec g = generator_spec(cfg);
  std::mt19937_64 rng(cfg.puzzle.eval_seed);
  std::vector<Puzzle> out;
  for (int64_t i = 0; i < cfg.puzzle.eval_count; ++i) out.push_back(generate_puzzle(g, rng));
  return out;
}

}  // namespace ppo
