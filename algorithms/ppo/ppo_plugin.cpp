// The PPO algorithm plugin (Schulman et al. 2017, "Proximal Policy Optimization
// Algorithms"; CleanRL's ppo.py): its description for the host and the dispatch to its
// commands (commands.hpp).
#include <mlh/plugin.hpp>

#include "commands.hpp"
#include "config.hpp"

namespace {

class Ppo : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "PPO: CartPole-v1, Pendulum-v1, MountainCarContinuous-v0, tiler-slider puzzles and your own environments (mlp, recursive attention or residual tower)";
    d.commands = ppo::command_table().names();
    d.config_schema_json = ppo::config_schema_json();
    d.config_defaults_json = ppo::config_defaults_json();
    d.presets_json = ppo::presets_json();
    return d;
  }

  void run(mlh::RunContext& ctx) override { ppo::run_command(ctx); }
  std::string describe_run(const mlh::RunContext& ctx) override { return ppo::describe_run(ctx); }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(Ppo)
