// ppo's benchmark command: CartPole and puzzle iterations, CartPole's update by each path, the
// networks' forward passes (calibrate.cpp times the run's own iterations).
#include <optional>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <mlh/format.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/precision.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "env/puzzle_env.hpp"
#include "tasks.hpp"
#include "trainer.hpp"

namespace ppo {

using nlohmann::json;

void benchmark(mlh::RunContext& ctx, const Config& user_cfg, const mlh::rt::RuntimePlan& plan) {
  std::vector<mlh::rt::BenchmarkResult> results;
  mlh::rt::BenchmarkOptions o;
  o.device = plan.device;
  o.min_seconds = 1.0;
  o.min_iterations = 5;
  const int plan_threads = at::get_num_threads();
  auto report = [&](const mlh::rt::BenchmarkResult& r) {
    results.push_back(r);
    ctx.info(r.name + ": " + mlh::fixed(r.throughput, 0) + " " + r.unit + "/s (median " + mlh::fixed(r.median_ms, 3) + " ms)");
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
    // The update alone, by each path, on the same rollout: what the mlp's plain-C++ step
    // (mlp_fast.hpp) gains over autograd. Where it does not apply (not the CPU, autocast)
    // both run autograd and the ratio is 1.
    Trainer autograd(cfg, plan, make_task(cfg), /*fast_update=*/false);
    t.collect();
    autograd.collect();
    const mlh::rt::BenchmarkResult fast = mlh::rt::run_benchmark("cartpole_update_fast", [&] { t.update(); }, o);
    const mlh::rt::BenchmarkResult slow =
        mlh::rt::run_benchmark("cartpole_update_autograd", [&] { autograd.update(); }, o);
    report(fast);
    report(slow);
    ctx.info("the mlp's plain-C++ update " + std::string(t.updater().fast() ? "runs" : "does not apply here and ran") +
             " at " + mlh::fixed(fast.throughput / slow.throughput, 2) + "x autograd's speed");
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
                                            kind == "mlp" ? 2 : kNumMoves, /*action_dim=*/0);
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

}  // namespace ppo
