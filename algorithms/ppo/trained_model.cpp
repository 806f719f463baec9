#include "trained_model.hpp"

#include <filesystem>
#include <fstream>

#include <mlh/atomic_file.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "env/puzzle_env.hpp"
#include "tasks.hpp"
#include "trainer.hpp"

namespace ppo {

using nlohmann::json;
namespace fs = std::filesystem;

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

Policy load_policy(const mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  Policy p;
  const std::string trained = mlh::rt::trained_run_dir(ctx);
  const NetworkSpec spec = read_network_json(trained);
  p.net = make_network(spec);
  p.net->to(plan.device);
  p.updater = std::make_unique<PpoUpdater>(p.net, cfg.lr, update_options(cfg), plan.device);
  mlh::rt::TrainingState s;
  s.add("model", *p.net).add("optimizer", p.updater->optimizer());
  const mlh::rt::LoadedCheckpoint loaded = mlh::rt::load_trained(ctx, s, plan.device, cfg.checkpoint, mlh::rt::Goal::Maximize);
  p.updater->parameters().rebind();
  p.net->eval();
  p.step = loaded.step;
  p.path = loaded.path;
  return p;
}

NetworkSpec network_of_run(const mlh::RunContext& ctx, const std::string& command, const Config& cfg,
                           const mlh::rt::RuntimePlan& plan) {
  if (uses_trained_network(command) && fs::exists(network_json_path(ctx.run_dir())))
    return read_network_json(ctx.run_dir());
  if (cfg.env == "puzzle") {
    const int obs = puzzle_env_options(cfg, cfg.puzzle.size).obs_size;
    return network_spec(cfg, plan, {PuzzleEnv::kNumPlanes, obs, obs}, kNumMoves, 0);
  }
  const Task task = make_task(cfg);  // a library is loaded: its shape and actions size the network
  return network_spec(cfg, plan, task.observation_shape, task.num_actions, task.action_bounds.size());
}

bool uses_trained_network(const std::string& command) {
  return command == "eval" || command == "play" || command == "forward" || command == "export";
}

std::map<std::string, std::string> weights_metadata(const NetworkSpec& spec) {
  return {{"network", to_json(spec).dump()}};
}

void export_weights(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  const Policy p = load_policy(ctx, cfg, plan);
  mlh::rt::LoadedCheckpoint from;
  from.step = p.step;
  from.path = p.path;
  mlh::rt::export_trained(ctx, *p.net, weights_metadata(p.net->spec()), from);
}

}  // namespace ppo
