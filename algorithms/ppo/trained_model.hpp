// A PPO run's network on disk and back: <run>/network.json records the network a run
// trained, so that eval, play and describe_run rebuild it on any device; load_policy()
// rebuilds a trained run's network with its checkpoint (best or latest) loaded; the export
// command (export_weights, commands.hpp) writes that checkpoint's weights.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>

#include "config.hpp"
#include "networks/networks.hpp"
#include "ppo_update.hpp"

namespace ppo {

std::string network_json_path(const std::string& run_dir);
void write_network_json(const std::string& run_dir, const NetworkSpec& spec);
// Throws mlh::Error naming the file: MLH_ERR_IO when it is missing (nothing trained there).
NetworkSpec read_network_json(const std::string& run_dir);

// The network of a trained run, with the checkpoint (best or latest) loaded.
struct Policy {
  std::shared_ptr<ActorCritic> net;
  std::unique_ptr<PpoUpdater> updater;  // the checkpoint holds the optimizer too
  int64_t step = 0;
  std::string path;
};

Policy load_policy(const mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan);

// model.safetensors' metadata: the network, as mlhost.load_run() rebuilds it.
std::map<std::string, std::string> weights_metadata(const NetworkSpec& spec);

// Whether `command` runs a trained run's network (eval, play, forward, export) rather than
// training one.
bool uses_trained_network(const std::string& command);

// The network a run of `command` uses: a trained run's (eval, play) when its network.json is
// there, else the one the config and plan give.
NetworkSpec network_of_run(const mlh::RunContext& ctx, const std::string& command, const Config& cfg,
                           const mlh::rt::RuntimePlan& plan);

}  // namespace ppo
