// ppo's commands on a trained run: eval (the mean return of CartPole, Pendulum, MountainCarContinuous or an environment
// library, or the puzzles' solve rate
// beside two random baselines) and play (one level of a level file, move by move).
#include <mlh/format.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "evaluate.hpp"
#include "tasks.hpp"
#include "trained_model.hpp"

namespace ppo {

using nlohmann::json;

namespace {

// Episodes of the run's environment (CartPole, Pendulum, MountainCarContinuous, or an
// environment library's: the config's library.path and library.settings, as in training), on
// a fresh instance of it.
void eval_episodes(mlh::RunContext& ctx, const Config& cfg, Policy& p) {
  const Task task = make_task(cfg);
  if (task.observation_shape != p.net->spec().observation_shape)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "environment '" + cfg.env + "'" +
                                                   (cfg.env == "library" ? " ('" + cfg.library.path + "')" : "") +
                                                   " no longer gives the observation shape the model was trained on");
  const std::unique_ptr<Env> env = task.make_env();
  const EpisodeEval r = evaluate_episodes(*p.net, *env, cfg.eval_episodes, cfg.seed + 777, cfg.eval_deterministic,
                                          cfg.mask_invalid_moves && task.action_masks);
  const bool library = cfg.env == "library";
  const double solve_rate = static_cast<double>(r.solved) / static_cast<double>(cfg.eval_episodes);
  ctx.metric("eval/mean_return", r.mean_return, p.step);
  if (library) ctx.metric("eval/solve_rate", solve_rate, p.step);
  ctx.info(env->name() + ": mean return " + mlh::fixed(r.mean_return) + " +- " + mlh::fixed(r.std_return) +
           " (std) over " + std::to_string(cfg.eval_episodes) + " episodes" +
           (library ? ", " + std::to_string(r.solved) + " solved" : std::string()));
  json summary = {{"mean_return", r.mean_return},
                  {"std_return", r.std_return},
                  {"episodes", cfg.eval_episodes},
                  {"environment", env->name()},
                  {"checkpoint", p.path},
                  {"step", p.step}};
  if (library) summary["solve_rate"] = solve_rate;
  ctx.summary(summary.dump());
}

}  // namespace

void eval(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  Policy p = load_policy(ctx, cfg, plan);
  ctx.info("evaluating " + p.path + " (step " + std::to_string(p.step) + ")");
  if (cfg.env != "puzzle") return eval_episodes(ctx, cfg, p);
  const int obs_size = static_cast<int>(p.net->spec().observation_shape.at(1));
  const std::vector<Puzzle> puzzles = eval_puzzles(cfg, obs_size);
  const PuzzleEnvOptions options = puzzle_env_options(cfg, obs_size);
  const PuzzleEval trained = evaluate_puzzles(p.net.get(), puzzles, options, cfg.eval_deterministic,
                                              cfg.mask_invalid_moves, cfg.seed + 99);
  // Two baselines: a uniformly random policy over the four moves, and (with masking) the
  // stronger random walk over the valid moves, the one the trained policy's masking matches.
  const PuzzleEval random = evaluate_puzzles(nullptr, puzzles, options, false, false, cfg.seed + 98);
  const PuzzleEval random_valid = evaluate_puzzles(nullptr, puzzles, options, false, true, cfg.seed + 97);
  const std::string what = cfg.puzzle.eval_level_file.empty()
                               ? std::to_string(puzzles.size()) + " held-out generated puzzles (seed " +
                                     std::to_string(cfg.puzzle.eval_seed) + ")"
                               : "'" + cfg.puzzle.eval_level_file + "' (" + std::to_string(puzzles.size()) + " puzzles)";
  auto line = [&](const std::string& who, const PuzzleEval& r) {
    ctx.info(who + ": solve rate " + mlh::fixed(r.solve_rate, 3) + ", mean steps " + solved_mean_text(r.mean_steps) +
             ", mean steps/optimal " + solved_mean_text(r.mean_ratio, 3) + " (solved puzzles)");
  };
  ctx.info("evaluating on " + what);
  line("policy", trained);
  line("random policy (any move)", random);
  line("random policy (valid moves)", random_valid);
  ctx.metric("eval/solve_rate", trained.solve_rate, p.step);
  ctx.metric("eval/mean_steps", trained.mean_steps, p.step);
  ctx.metric("eval/mean_ratio_to_optimal", trained.mean_ratio, p.step);
  ctx.metric("eval/random_solve_rate", random.solve_rate, p.step);
  ctx.metric("eval/random_valid_solve_rate", random_valid.solve_rate, p.step);
  ctx.summary(json{{"solve_rate", trained.solve_rate},
                   {"mean_steps", trained.mean_steps},
                   {"mean_ratio_to_optimal", trained.mean_ratio},
                   {"random_solve_rate", random.solve_rate},
                   {"random_mean_steps", random.mean_steps},
                   {"random_mean_ratio_to_optimal", random.mean_ratio},
                   {"random_valid_solve_rate", random_valid.solve_rate},
                   {"random_valid_mean_steps", random_valid.mean_steps},
                   {"random_valid_mean_ratio_to_optimal", random_valid.mean_ratio},
                   {"puzzles", puzzles.size()},
                   {"checkpoint", p.path},
                   {"step", p.step}}
                  .dump());
}

void play(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  // Checked as it loads: each puzzle has a solution and its optimum (env/level_set.hpp).
  std::vector<Puzzle> puzzles = load_level_file(cfg.level_file, "level_file");
  if (cfg.play_index >= static_cast<int64_t>(puzzles.size()))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'play_index': level file '" + cfg.level_file + "' holds " +
                                                   std::to_string(puzzles.size()) + " puzzles, index " +
                                                   std::to_string(cfg.play_index) + " asked");
  const Puzzle puzzle = puzzles[static_cast<size_t>(cfg.play_index)];
  Policy p = load_policy(ctx, cfg, plan);
  if (cfg.env == "library")
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "play plays puzzles; this run trained on an environment library (use eval)");
  if (p.net->spec().observation_shape.size() != 3)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "play needs a model trained on puzzles (this run trained on " + cfg.env + ")");
  const int obs_size = static_cast<int>(p.net->spec().observation_shape[1]);
  if (puzzle.size > obs_size)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "level file '" + cfg.level_file + "': puzzle " +
                                                   std::to_string(cfg.play_index) + " is " + std::to_string(puzzle.size) +
                                                   "x" + std::to_string(puzzle.size) + ", the model plays up to " +
                                                   std::to_string(obs_size));
  const PlayResult r = play_puzzle(*p.net, puzzle, puzzle_env_options(cfg, obs_size), cfg.mask_invalid_moves,
                                   cfg.eval_deterministic, cfg.seed,
                                   [&](const std::string& line) { ctx.info(line); });
  ctx.summary(json{{"solved", r.solved},
                   {"steps", r.moves.size()},
                   {"optimal", puzzle.optimal},
                   {"moves", r.move_names},
                   {"level_file", cfg.level_file},
                   {"index", cfg.play_index}}
                  .dump());
}

}  // namespace ppo
