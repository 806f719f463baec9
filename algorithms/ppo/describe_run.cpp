// describe_run (ABI 1.1): the network a run of ctx's command, config and plan uses, and what
// it does with each plan field, without running it.
#include <algorithm>
#include <sstream>

#include <mlh/run_description.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "trained_model.hpp"

namespace ppo {
namespace {

using nlohmann::json;

std::string network_shape(const NetworkSpec& spec) {
  std::ostringstream shape;
  if (spec.kind == "mlp") {
    shape << "MLP ";
    for (size_t i = 0; i < spec.mlp_hidden.size(); ++i) shape << (i ? "-" : "") << spec.mlp_hidden[i];
    shape << " (actor and critic)";
  } else if (spec.kind == "python") {
    shape << "your module " << spec.module;
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
    if (spec.kind == "python")
      d.no_effect("gradient_checkpointing", "a Python module's forward is one call, not recomputed in parts");
    else
      d.uses_if(trains, "gradient_checkpointing",
                spec.kind == "resnet" ? "recomputes each residual block in the backward pass"
                                      : "recomputes each recursion step in the backward pass",
                not_training);
    d.uses("precision", "autocast for the " + spec.kind + " network's forward passes");
    d.uses("channels_last", "the network's convolution weights in NHWC (its inputs follow)");
    d.uses("cudnn_benchmark", "cuDNN picks the convolution algorithms by timing them");
  }
  d.uses_if(trains, "cuda_graphs",
            "each update minibatch (forward, loss, backward, clipping, Adam) replayed as one captured graph; fp16 "
            "and several ranks run eagerly",
            not_training);
  const std::string preset = plan.preset.value_or("");
  const bool trained_net = uses_trained_network(command);
  if (preset == "full" || preset == "reduced")
    d.uses_if(spec.kind == "resnet" && !trained_net, "preset",
              "sizes the residual tower (full " + tower_text(kFullTower) + ", reduced " + tower_text(kReducedTower) +
                  ")",
              "full and reduced size the residual tower; this " + spec.kind + " network takes its size from " +
                  (trained_net ? "the trained run" : "the config"));
  else if (!preset.empty())
    d.uses("preset", "the " + preset + " task's settings");
  d.uses("pinned_memory", "observations and the update's batch are page-locked and copied without blocking");
  const std::string rollouts = "ppo's data are rollouts of the policy being trained: nothing to load ahead";
  d.no_effect("dataloader_workers", rollouts);
  d.no_effect("prefetch_factor", rollouts);
  d.uses_if(command == "train", "empty_cache_steps", "releases the device's cached memory every N iterations",
            command + " does not release the cache");
  if (command == "train") {  // env steps, as calibrate counts them
    const int64_t iterations = std::min(cfg.num_iterations(), plan.max_steps.value_or(cfg.num_iterations()));
    d.work(static_cast<double>(iterations * cfg.batch_size()), "env_steps", "total_timesteps");
  }
  d.uses_if(command == "train", "max_steps", "trains that many iterations (a rollout and its update each)",
            not_training);
  d.uses_if(command == "train", "init_from", "the agent network's first weights", not_training);
  return d.json();
}

}  // namespace ppo
