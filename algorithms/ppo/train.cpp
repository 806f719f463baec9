// ppo's train command: CleanRL's loop (collect a rollout, then the PPO update) on a
// TrainingSession, with CartPole's and the puzzles' metrics.
#include <chrono>
#include <cmath>

#include <ATen/Parallel.h>
#include <mlh/format.hpp>
#include <mlh/runtime/training_session.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "evaluate.hpp"
#include "tasks.hpp"
#include "trained_model.hpp"
#include "trainer.hpp"

namespace ppo {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The trained policy on the levels it trained on, one episode each (its most probable move),
// beside the random walk over the valid moves: the summary's "train_levels".
json report_on_levels(mlh::RunContext& ctx, const Config& cfg, ActorCritic& net, const TrainingLevels& levels) {
  const PuzzleEnvOptions options = puzzle_env_options(cfg, cfg.puzzle.size);
  net.eval();  // the resnet's batch norm: running statistics, as eval and play use them
  const PuzzleEval trained = evaluate_puzzles(&net, levels.set.puzzles, options, true, cfg.mask_invalid_moves, cfg.seed + 99);
  const PuzzleEval random_valid = evaluate_puzzles(nullptr, levels.set.puzzles, options, false, true, cfg.seed + 97);
  ctx.info("on the training levels '" + levels.path + "' (" + std::to_string(levels.set.puzzles.size()) +
           " puzzles, one episode each): solve rate " + mlh::fixed(trained.solve_rate, 3) + ", mean steps/optimal " +
           solved_mean_text(trained.mean_ratio, 3) + " (solved puzzles); random policy (valid moves): solve rate " +
           mlh::fixed(random_valid.solve_rate, 3) + "; during training " + std::to_string(levels.results->episodes()) +
           " episodes on them, solve rate (last 100) " + mlh::fixed(levels.results->rate(), 3));
  auto number = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  return json{{"path", levels.path},
              {"files", levels.set.files.size()},
              {"puzzles", levels.set.puzzles.size()},
              {"share", levels.share},
              {"solve_rate", trained.solve_rate},
              {"mean_steps", number(trained.mean_steps)},
              {"mean_ratio_to_optimal", number(trained.mean_ratio)},
              {"random_valid_solve_rate", random_valid.solve_rate},
              {"training_episodes", levels.results->episodes()},
              {"training_solve_rate_100", levels.results->rate()}};
}

}  // namespace

void train(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  // Every level file the run will read is read and checked before anything trains: a bad
  // one is an mlh::DataError before the first metric, so the host removes the run folder
  // (eval's and play's files that do not exist yet: a warning).
  const Task task = make_task(cfg);
  for (const std::string& w : check_command_level_files(cfg)) ctx.warn(w);
  // Distributed: each rank steps its own environments (seeded apart) and all average the
  // update's gradient, so the batch per update is num_envs x num_steps x ranks. The best
  // checkpoint is the one with the highest average return.
  mlh::rt::TrainingSession session(ctx, plan,
                                   {cfg.keep_checkpoints, mlh::rt::Goal::Maximize, cfg.checkpoint_every, "iteration"});
  mlh::rt::Distributed& dist = session.dist();
  // Each rank's observations would give its copy of the network statistics of their own.
  if (cfg.normalize_observations && dist.world_size() > 1)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'normalize_observations': the ranks of a distributed run "
                                               "would each normalize by statistics of their own; train on one process "
                                               "(or normalize in the environment)");
  Config rank_cfg = cfg;
  rank_cfg.seed = dist.seed_for_rank(cfg.seed);
  Trainer t(rank_cfg, plan, task);
  session.init_weights(t.net());  // --init-from (every rank reads the same file)
  dist.broadcast({t.updater().parameters().flat()});
  t.updater().parameters().mark_changed();
  t.updater().share_with(dist);
  t.updater().graph_log([&ctx](const std::string& line) { ctx.info(line); });
  mlh::rt::TrainingState saved = t.state();
  // The step at which the average return first reached 475 (CartPole's bar; -1: not yet) is
  // the run's, so it is checkpointed with it: a resumed run reports the uninterrupted one's.
  int64_t reached_475 = -1;
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint&) {
    t.restore(saved, /*own_streams=*/dist.is_main());
    reached_475 = saved.values.value("reached_avg_475", int64_t{-1});
    return "at iteration " + std::to_string(t.iteration()) + ", step " + std::to_string(t.global_step());
  });
  if (dist.is_main()) write_network_json(ctx.run_dir(), t.net().spec());
  const int64_t iterations = session.step_limit(cfg.num_iterations());  // fewer under --max-steps
  const int64_t total_steps = iterations * cfg.batch_size();  // this rank's; the run's is x ranks
  const std::string on =
      cfg.env == "library"     ? "environment library '" + cfg.library.path + "' (" + t.envs().env(0).name() + ")"
      : cfg.env == "gymnasium" ? "gymnasium environment '" + t.envs().env(0).name() + "' (" +
                                     std::to_string(cfg.num_envs) + " Python workers)"
                               : cfg.env;
  ctx.info("ppo on " + on + ": network " + t.net().spec().kind + " (" + std::to_string(t.net().parameter_count()) +
           " parameters), " + std::to_string(iterations) + " iterations of " + std::to_string(cfg.num_envs) + " envs x " +
           std::to_string(cfg.num_steps) + " steps (batch " + std::to_string(cfg.batch_size()) + ", " +
           std::to_string(cfg.num_minibatches) + " minibatches, " + std::to_string(cfg.update_epochs) +
           " epochs); torch threads " + std::to_string(at::get_num_threads()) + ", precision " +
           (t.net().spec().kind == "mlp" ? std::string("fp32 (mlp)") : mlh::rt::to_string(plan.precision)) +
           (t.updater().fast() ? "; update: plain C++ mlp step" : "; update: LibTorch autograd"));
  if (task.levels) ctx.info("training on your levels: " + describe(*task.levels, cfg));
  const auto start = Clock::now();
  const int64_t start_step = t.global_step();
  double last_avg = std::nan("");
  // Checkpoints are filed by environment step (the loop counts iterations), as they always
  // were: in a run folder from before, the newest file stays the newest.
  auto save = [&] {
    const double avg = t.average_return();
    mlh::rt::TrainingState state = t.state();
    state.values["reached_avg_475"] = reached_475;
    session.save(state, t.global_step(), std::isnan(avg) ? std::optional<double>() : avg);
  };
  auto last_log = Clock::now();
  while (t.iteration() < iterations) {
    const auto it_start = Clock::now();
    const IterationStats s = t.iterate();
    const double it_seconds = seconds_since(it_start);
    const int64_t step = t.global_step();
    double ret_sum = 0;
    int64_t solved = 0;
    for (const auto& e : s.episodes) {
      ret_sum += e.episode_return;
      solved += e.solved;
    }
    last_avg = t.average_return();
    if (!s.episodes.empty()) ctx.metric("charts/episodic_return", ret_sum / static_cast<double>(s.episodes.size()), step);
    if (!std::isnan(last_avg)) ctx.metric("charts/avg_return_100", last_avg, step);
    if (cfg.env == "cartpole" && reached_475 < 0 && t.recent_returns().size() >= 100 && last_avg >= 475.0) {
      reached_475 = step;
      ctx.info("average return over the last 100 episodes reached " + mlh::fixed(last_avg) + " at step " + std::to_string(step));
    }
    double solve_rate = 0;
    if (cfg.env == "puzzle" && !t.recent_solved().empty()) {
      for (uint8_t v : t.recent_solved()) solve_rate += v;
      solve_rate /= static_cast<double>(t.recent_solved().size());
      ctx.metric("charts/solve_rate_100", solve_rate, step);
    }
    if (task.metrics)
      for (const auto& [name, value] : task.metrics()) ctx.metric(name, value, step);
    ctx.metric("charts/learning_rate", t.updater().lr(), step);
    ctx.metric("losses/value_loss", s.update.v_loss, step);
    ctx.metric("losses/policy_loss", s.update.pg_loss, step);
    ctx.metric("losses/entropy", s.update.entropy, step);
    ctx.metric("losses/old_approx_kl", s.update.old_approx_kl, step);
    ctx.metric("losses/approx_kl", s.update.approx_kl, step);
    ctx.metric("losses/clipfrac", s.update.clipfrac, step);
    ctx.metric("losses/explained_variance", s.explained_variance, step);
    ctx.metric("losses/grad_norm", s.update.grad_norm, step);
    ctx.metric("perf/env_steps_per_s", static_cast<double>(cfg.batch_size() * dist.world_size()) / it_seconds, step);
    ctx.progress(step, total_steps, "steps");
    if (seconds_since(last_log) >= 5.0 || t.iteration() == iterations) {
      last_log = Clock::now();
      std::string line = "iteration " + std::to_string(t.iteration()) + "/" + std::to_string(iterations) + ", step " +
                         std::to_string(step) + ": avg return (last 100) " + mlh::fixed(last_avg);
      if (cfg.env == "puzzle") {
        line += ", solve rate (last 100) " + mlh::fixed(solve_rate, 3);
        if (task.metrics)
          for (const auto& [name, value] : task.metrics()) line += ", " + name + " " + mlh::fixed(value, 3);
      }
      line += ", " + mlh::fixed(static_cast<double>(step - start_step) / seconds_since(start), 0) + " steps/s";
      ctx.info(line);
    }
    session.after_step(t.iteration(), save, /*save_now=*/t.iteration() == iterations);
  }
  const double wall = seconds_since(start);
  session.export_weights(t.net(), weights_metadata(t.net().spec()));
  const double sps = static_cast<double>(t.global_step() - start_step) / wall;
  ctx.info("done: " + std::to_string(t.global_step()) + " steps in " + mlh::fixed(wall) + " s (" + mlh::fixed(sps, 0) +
           " steps/s), " + std::to_string(t.episodes_finished()) + " episodes, avg return (last 100) " + mlh::fixed(last_avg));
  json summary = {{"iterations", t.iteration()},
                  {"global_step", t.global_step()},
                  {"episodes", t.episodes_finished()},
                  {"avg_return_100", std::isnan(last_avg) ? json(nullptr) : json(last_avg)},
                  {"wall_seconds", wall},
                  {"env_steps_per_s", sps},
                  {"intra_op_threads", at::get_num_threads()},
                  {"network", to_json(t.net().spec())},
                  {"parameters", t.net().parameter_count()}};
  if (cfg.env == "cartpole") summary["steps_to_avg_475"] = reached_475 < 0 ? json(nullptr) : json(reached_475);
  if (cfg.env == "puzzle") {
    double rate = 0;
    for (uint8_t v : t.recent_solved()) rate += v;
    summary["solve_rate_100"] = t.recent_solved().empty() ? 0.0 : rate / static_cast<double>(t.recent_solved().size());
    if (task.metrics)
      for (const auto& [name, value] : task.metrics()) summary[name] = value;
    if (task.levels) summary["train_levels"] = report_on_levels(ctx, cfg, t.net(), *task.levels);
  }
  const mlh::rt::StepGraph& graph = t.updater().graph();
  summary["cuda_graph"] = {{"captures", graph.captures()}, {"replays", graph.replays()}, {"off", graph.why_off()}};
  session.finish(t.net(), summary);
}

}  // namespace ppo
