#include "commands.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <mlh/format.hpp>
#include <mlh/atomic_file.hpp>
#include <mlh/run_description.hpp>
#include <mlh/runtime/command_setup.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/throughput.hpp>
#include <mlh/runtime/training_session.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "env/cartpole.hpp"
#include "env/level_file.hpp"
#include "env/puzzle_env.hpp"
#include "env/puzzle_source.hpp"
#include "env/solver.hpp"
#include "evaluate.hpp"
#include "tasks.hpp"
#include "trainer.hpp"

namespace ppo {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string fmt(double v, int digits = 2) { return mlh::fixed(v, digits); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string network_json_path(const std::string& run_dir) { return run_dir + "/network.json"; }

void write_network_json(const std::string& run_dir, const NetworkSpec& spec) {
  fs::create_directories(run_dir);
  const std::string text = to_json(spec).dump(2) + "\n";
  mlh::AtomicFile f(network_json_path(run_dir));
  f.write(text.data(), text.size());
  f.commit();
}

NetworkSpec read_network_json(const std::string& run_dir) {
  const std::string path = network_json_path(run_dir);
  std::ifstream in(path);
  if (!in) throw mlh::Error(MLH_ERR_IO, "no trained model in the run folder: '" + path + "' is missing");
  try {
    return network_spec_from_json(json::parse(in));
  } catch (const json::exception& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "'" + path + "': " + e.what());
  }
}

// The network of a trained run, with the checkpoint (best or latest) loaded.
struct Policy {
  std::shared_ptr<ActorCritic> net;
  std::unique_ptr<PpoUpdater> updater;  // the checkpoint holds the optimizer too
  int64_t step = 0;
  std::string path;
};

Policy load_policy(const mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  Policy p;
  const std::string trained = mlh::rt::trained_run_dir(ctx);
  const NetworkSpec spec = read_network_json(trained);
  p.net = make_network(spec);
  p.net->to(plan.device);
  p.updater = std::make_unique<PpoUpdater>(p.net, cfg.lr, UpdateOptions{}, plan.device);
  mlh::rt::TrainingState s;
  s.add("model", *p.net).add("optimizer", p.updater->optimizer());
  const mlh::rt::LoadedCheckpoint loaded = mlh::rt::load_trained(ctx, s, plan.device, cfg.checkpoint, mlh::rt::Goal::Maximize);
  p.updater->parameters().rebind();
  p.net->eval();
  p.step = loaded.step;
  p.path = loaded.path;
  return p;
}

void train(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  const Task task = make_task(cfg);
  // Distributed: each rank steps its own environments (seeded apart) and all average the
  // update's gradient, so the batch per update is num_envs x num_steps x ranks. The best
  // checkpoint is the one with the highest average return.
  mlh::rt::TrainingSession session(ctx, plan,
                                   {cfg.keep_checkpoints, mlh::rt::Goal::Maximize, cfg.checkpoint_every, "iteration"});
  mlh::rt::Distributed& dist = session.dist();
  Config rank_cfg = cfg;
  rank_cfg.seed = dist.seed_for_rank(cfg.seed);
  Trainer t(rank_cfg, plan, task);
  session.init_weights(t.net());  // --init-from (every rank reads the same file)
  dist.broadcast({t.updater().parameters().flat()});
  t.updater().parameters().mark_changed();
  t.updater().share_with(dist);
  mlh::rt::TrainingState saved = t.state();
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint&) {
    t.restore(saved, /*own_streams=*/dist.is_main());
    return "at iteration " + std::to_string(t.iteration()) + ", step " + std::to_string(t.global_step());
  });
  if (dist.is_main()) write_network_json(ctx.run_dir(), t.net().spec());
  const int64_t iterations = session.step_limit(cfg.num_iterations());  // fewer under --max-steps
  const int64_t total_steps = iterations * cfg.batch_size();  // this rank's; the run's is x ranks
  ctx.info("ppo on " + cfg.env + ": network " + t.net().spec().kind + " (" + std::to_string(t.net().parameter_count()) +
           " parameters), " + std::to_string(iterations) + " iterations of " + std::to_string(cfg.num_envs) + " envs x " +
           std::to_string(cfg.num_steps) + " steps (batch " + std::to_string(cfg.batch_size()) + ", " +
           std::to_string(cfg.num_minibatches) + " minibatches, " + std::to_string(cfg.update_epochs) +
           " epochs); torch threads " + std::to_string(at::get_num_threads()) + ", precision " +
           (t.net().spec().kind == "mlp" ? std::string("fp32 (mlp)") : mlh::rt::to_string(plan.precision)) +
           (t.updater().fast() ? "; update: plain C++ mlp step" : "; update: LibTorch autograd"));
  const auto start = Clock::now();
  const int64_t start_step = t.global_step();
  int64_t reached_475 = -1;
  double last_avg = std::nan("");
  // Checkpoints are filed by environment step (the loop counts iterations), as they always
  // were: in a run folder from before, the newest file stays the newest.
  auto save = [&] {
    const double avg = t.average_return();
    session.save(t.state(), t.global_step(), std::isnan(avg) ? std::optional<double>() : avg);
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
      ctx.info("average return over the last 100 episodes reached " + fmt(last_avg) + " at step " + std::to_string(step));
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
                         std::to_string(step) + ": avg return (last 100) " + fmt(last_avg);
      if (cfg.env == "puzzle") {
        line += ", solve rate (last 100) " + fmt(solve_rate, 3);
        if (task.metrics)
          for (const auto& [name, value] : task.metrics()) line += ", " + name + " " + fmt(value, 3);
      }
      line += ", " + fmt(static_cast<double>(step - start_step) / seconds_since(start), 0) + " steps/s";
      ctx.info(line);
    }
    session.after_step(t.iteration(), save, /*save_now=*/t.iteration() == iterations);
  }
  const double wall = seconds_since(start);
  session.export_weights(t.net(), {{"network", to_json(t.net().spec()).dump()}});
  const double sps = static_cast<double>(t.global_step() - start_step) / wall;
  ctx.info("done: " + std::to_string(t.global_step()) + " steps in " + fmt(wall) + " s (" + fmt(sps, 0) +
           " steps/s), " + std::to_string(t.episodes_finished()) + " episodes, avg return (last 100) " + fmt(last_avg));
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
  }
  session.finish(t.net(), summary);
}

void eval(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  Policy p = load_policy(ctx, cfg, plan);
  ctx.info("evaluating " + p.path + " (step " + std::to_string(p.step) + ")");
  if (p.net->spec().observation_shape.size() == 1) {
    const CartPoleEval r = evaluate_cartpole(*p.net, cfg.eval_episodes, cfg.seed + 777, cfg.eval_deterministic);
    ctx.metric("eval/mean_return", r.mean_return, p.step);
    ctx.info("cartpole: mean return " + fmt(r.mean_return) + " +- " + fmt(r.std_return) + " (std) over " +
             std::to_string(cfg.eval_episodes) + " episodes");
    ctx.summary(json{{"mean_return", r.mean_return},
                     {"std_return", r.std_return},
                     {"episodes", cfg.eval_episodes},
                     {"checkpoint", p.path},
                     {"step", p.step}}
                    .dump());
    return;
  }
  const std::vector<Puzzle> puzzles = eval_puzzles(cfg);
  const int obs_size = static_cast<int>(p.net->spec().observation_shape.at(1));
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
    ctx.info(who + ": solve rate " + fmt(r.solve_rate, 3) + ", mean steps " + fmt(r.mean_steps) +
             ", mean steps/optimal " + fmt(r.mean_ratio, 3) + " (solved puzzles)");
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
  std::vector<Puzzle> puzzles = load_level_file(cfg.level_file);
  if (cfg.play_index >= static_cast<int64_t>(puzzles.size()))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'play_index': level file '" + cfg.level_file + "' holds " +
                                                   std::to_string(puzzles.size()) + " puzzles, index " +
                                                   std::to_string(cfg.play_index) + " asked");
  Puzzle puzzle = puzzles[static_cast<size_t>(cfg.play_index)];
  Policy p = load_policy(ctx, cfg, plan);
  if (p.net->spec().observation_shape.size() != 3)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "play needs a model trained on puzzles (this run trained on cartpole)");
  const int obs_size = static_cast<int>(p.net->spec().observation_shape[1]);
  if (puzzle.size > obs_size)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "level file '" + cfg.level_file + "': puzzle " +
                                                   std::to_string(cfg.play_index) + " is " + std::to_string(puzzle.size) +
                                                   "x" + std::to_string(puzzle.size) + ", the model plays up to " +
                                                   std::to_string(obs_size));
  if (puzzle.optimal < 0) {
    const SolveResult r = solve(puzzle, SolveOptions{2'000'000, false});
    if (r.solved()) puzzle.optimal = r.moves;
    else if (r.status == SolveResult::Status::kUnsolvable)
      ctx.warn("level file '" + cfg.level_file + "': puzzle " + std::to_string(cfg.play_index) +
               " has no solution (breadth-first search)");
  }
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

void benchmark(mlh::RunContext& ctx, const Config& user_cfg, const mlh::rt::RuntimePlan& plan) {
  std::vector<mlh::rt::BenchmarkResult> results;
  mlh::rt::BenchmarkOptions o;
  o.device = plan.device;
  o.min_seconds = 1.0;
  o.min_iterations = 5;
  const int plan_threads = at::get_num_threads();
  auto report = [&](const mlh::rt::BenchmarkResult& r) {
    results.push_back(r);
    ctx.info(r.name + ": " + fmt(r.throughput, 0) + " " + r.unit + "/s (median " + fmt(r.median_ms, 3) + " ms)");
  };
  // CartPole with the default hyperparameters.
  {
    Config cfg = parse_config(json::object());
    cfg.total_timesteps = int64_t{1} << 40;  // the LR schedule stays positive
    Trainer t(cfg, plan, make_task(cfg));
    o.items_per_iteration = static_cast<double>(cfg.batch_size());
    o.unit = "env_steps";
    report(mlh::rt::run_benchmark("cartpole_collect", [&] { t.collect(); }, o));
    for (int threads : {plan_threads, 1}) {
      at::set_num_threads(threads);
      report(mlh::rt::run_benchmark("cartpole_iteration_" + std::to_string(threads) + "thread" + (threads > 1 ? "s" : ""),
                                    [&] { t.iterate(); }, o));
      if (plan_threads == 1) break;
    }
    at::set_num_threads(plan_threads);
  }
  // Puzzles (the config's puzzle settings and network; recursive by default).
  {
    Config cfg = user_cfg;
    cfg.env = "puzzle";
    if (cfg.network.kind == "mlp") cfg.network.kind = "recursive";
    cfg.total_timesteps = int64_t{1} << 40;
    Trainer t(cfg, plan, make_task(cfg));
    o.items_per_iteration = static_cast<double>(cfg.batch_size());
    o.warmup_iterations = 1;
    o.min_iterations = 2;
    o.min_seconds = 0.2;
    report(mlh::rt::run_benchmark("puzzle" + std::to_string(cfg.puzzle.size) + "_" + cfg.network_kind() + "_collect",
                                  [&] { t.collect(); }, o));
    report(mlh::rt::run_benchmark("puzzle" + std::to_string(cfg.puzzle.size) + "_" + cfg.network_kind() + "_iteration",
                                  [&] { t.iterate(); }, o));
  }
  // Forward passes of each network, batch 1 and 64.
  {
    Config cfg = user_cfg;
    const std::vector<int64_t> board{PuzzleEnv::kNumPlanes, cfg.puzzle.size, cfg.puzzle.size};
    for (const std::string kind : {"mlp", "recursive", "resnet"}) {
      cfg.network.kind = kind;
      const NetworkSpec spec = network_spec(cfg, plan, kind == "mlp" ? std::vector<int64_t>{4} : board,
                                            kind == "mlp" ? 2 : kNumMoves);
      std::shared_ptr<ActorCritic> net = make_network(spec);
      net->to(plan.device);
      net->eval();
      o.items_per_iteration = 1;
      o.unit = "forward_passes";
      o.warmup_iterations = 3;
      o.min_iterations = 5;
      o.min_seconds = 0.5;
      for (int64_t batch : {1, 64}) {
        std::vector<int64_t> shape{batch};
        shape.insert(shape.end(), spec.observation_shape.begin(), spec.observation_shape.end());
        const at::Tensor x = at::rand(shape).to(plan.device);
        report(mlh::rt::run_benchmark(kind + "_forward_batch" + std::to_string(batch), [&] {
          at::InferenceMode guard;
          std::optional<mlh::rt::AutocastScope> autocast;
          if (kind != "mlp" && plan.precision != mlh::rt::Precision::kFp32) autocast.emplace(plan.precision, plan.device);
          (void)net->forward(x);
        }, o));
        if (kind == "mlp") {
          std::vector<float> obs(static_cast<size_t>(batch * 4), 0.1f), logits(static_cast<size_t>(batch * 2)),
              values(static_cast<size_t>(batch));
          report(mlh::rt::run_benchmark("mlp_infer_cpp_batch" + std::to_string(batch),
                                        [&] { net->infer(obs.data(), batch, logits.data(), values.data()); }, o));
        }
      }
    }
  }
  ctx.summary(mlh::rt::benchmarks_summary(results).dump());
}

// calibrate: whole training iterations (collect a rollout, then the PPO update) of the
// config's task and network, with the plan's settings (mlh/runtime/calibration.hpp). No
// reduced-precision check: the host keeps PPO in fp32.
void calibrate(mlh::RunContext& ctx, const Config& user_cfg, const mlh::rt::RuntimePlan& plan) {
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  Config cfg = user_cfg;
  cfg.total_timesteps = int64_t{1} << 40;  // the LR schedule stays positive
  Trainer t(cfg, plan, make_task(cfg));
  const json measured = mlh::rt::time_calibration_step(cfg.env + "_iteration", [&] { t.iterate(); },
                                                       static_cast<double>(cfg.batch_size()), "env_steps",
                                                       plan.device, request);
  ctx.summary(json{{"calibration", measured}}.dump());
}

// The network a run of `command` uses: a trained run's (eval, play) when its network.json is
// there, else the one the config and plan give.
NetworkSpec network_of_run(const mlh::RunContext& ctx, const std::string& command, const Config& cfg,
                           const mlh::rt::RuntimePlan& plan) {
  if ((command == "eval" || command == "play") && fs::exists(network_json_path(ctx.run_dir())))
    return read_network_json(ctx.run_dir());
  if (cfg.env == "cartpole") return network_spec(cfg, plan, {4}, 2);
  const int obs = puzzle_env_options(cfg, cfg.puzzle.size).obs_size;
  return network_spec(cfg, plan, {PuzzleEnv::kNumPlanes, obs, obs}, kNumMoves);
}

std::string network_shape(const NetworkSpec& spec) {
  std::ostringstream shape;
  if (spec.kind == "mlp") {
    shape << "MLP ";
    for (size_t i = 0; i < spec.mlp_hidden.size(); ++i) shape << (i ? "-" : "") << spec.mlp_hidden[i];
    shape << " (actor and critic)";
  } else if (spec.kind == "recursive") {
    shape << "recursive attention: hidden " << spec.hidden_dim << ", " << spec.num_heads << " heads, "
          << spec.num_recursive_steps << " steps";
  } else {
    shape << "residual tower: " << spec.blocks << " blocks x " << spec.channels << " channels";
  }
  return shape.str();
}

}  // namespace

std::string describe_run(const mlh::RunContext& ctx) {
  const Config cfg = parse_config(json::parse(ctx.config_json()));
  const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
  const std::string command = ctx.command().empty() ? command_table().default_name() : ctx.command();
  const NetworkSpec spec = network_of_run(ctx, command, cfg, plan);
  const bool mlp = spec.kind == "mlp", trains = command == "train" || command == "calibrate";
  const std::string not_training = command + " does not train";

  mlh::RunDescription d;
  d.model(make_network(spec)->parameter_count(), network_shape(spec));
  d.no_effect("batch_size", "ppo's batch is num_envs x num_steps transitions (" + std::to_string(cfg.num_envs) + " x " +
                                std::to_string(cfg.num_steps) + " = " + std::to_string(cfg.batch_size()) + " here)");
  if (mlp) {
    const std::string small = "the CartPole MLP is too small for it";
    d.no_effect("gradient_checkpointing", small);
    d.no_effect("precision", "the MLP stays fp32: casts would cost more than they save");
    d.no_effect("channels_last", "the MLP has no convolutions");
    d.no_effect("cudnn_benchmark", "the MLP has no convolutions");
  } else {
    d.uses_if(trains, "gradient_checkpointing",
              spec.kind == "resnet" ? "recomputes each residual block in the backward pass"
                                    : "recomputes each recursion step in the backward pass",
              not_training);
    d.uses("precision", "autocast for the " + spec.kind + " network's forward passes");
    d.uses("channels_last", "the network's convolution weights in NHWC (its inputs follow)");
    d.uses("cudnn_benchmark", "cuDNN picks the convolution algorithms by timing them");
  }
  const std::string preset = plan.preset.value_or("");
  if (preset == "full" || preset == "reduced")
    d.uses_if(spec.kind == "resnet" && command != "eval" && command != "play", "preset",
              "sizes the residual tower (full 30 x 192, reduced 20 x 128)",
              "full and reduced size the residual tower; this " + spec.kind + " network takes its size from " +
                  (command == "eval" || command == "play" ? "the trained run" : "the config"));
  else if (!preset.empty())
    d.uses("preset", "the " + preset + " task's settings");
  d.uses("pinned_memory", "observations and the update's batch are page-locked and copied without blocking");
  const std::string rollouts = "ppo's data are rollouts of the policy being trained: nothing to load ahead";
  d.no_effect("dataloader_workers", rollouts);
  d.no_effect("prefetch_factor", rollouts);
  d.uses_if(command == "train", "empty_cache_steps", "releases the device's cached memory every N iterations",
            command + " does not release the cache");
  d.uses_if(command == "train", "max_steps", "trains that many iterations (a rollout and its update each)",
            not_training);
  d.uses_if(command == "train", "init_from", "the agent network's first weights", not_training);
  return d.json();
}

const Commands& command_table() {
  static const Commands table{
      {"train", train}, {"eval", eval}, {"play", play}, {"benchmark", benchmark}, {"calibrate", calibrate}};
  return table;
}

void run_command(mlh::RunContext& ctx) {
  const Commands::Body& command = command_table().find(ctx.command());
  const Config cfg = parse_config(json::parse(ctx.config_json()));
  command(ctx, cfg, mlh::rt::prepare_command(ctx, cfg.seed));
}

}  // namespace ppo
