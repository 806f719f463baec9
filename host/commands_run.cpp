// --describe, --print-plan and --algorithm: from the set-up to the worker's end.
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "benchmark_report.hpp"
#include "commands.hpp"
#include "plan.hpp"
#include "plugin_calls.hpp"
#include "run_files.hpp"
#include "run_setup.hpp"
#include "telemetry.hpp"
#include "worker.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

// How often the device plugin samples the worker during a run (telemetry.jsonl).
constexpr std::chrono::milliseconds kTelemetryInterval{1000};

int command_describe(const CliOptions& options) {
  const Discovery discovery = discover_plugins(discovery_options(options));
  std::cout << describe_algorithm(find_algorithm(discovery, options.describe).manifest).dump(2) << "\n";
  return 0;
}

int command_print_plan(const CliOptions& options) {
  const RunSetup s = setup_run(options);
  std::cout << plan_to_text(s.plan);
  if (s.algorithm) std::cout << "\nConfig of " << s.algorithm->name << " (" << s.command << ")\n" << s.config.dump(2) << "\n";
  return 0;
}

int command_run(const CliOptions& options) {
  RunSetup s = setup_run(options);
  const PluginManifest& algorithm = *s.algorithm;
  const Device* device = &s.device;
  const fs::path& run_dir = s.run_dir;
  const std::string& command = s.command;
  const json& config = s.config;
  json& plan = s.plan;
  const ProbeReport& probe = s.probe;
  spdlog::info("device: {} ({}), {}", device->id(), device->name, probe.ranking.devices[*probe.ranking.chosen].reason);

  const DiscoveredPlugin* device_plugin = s.discovery.find_usable("device", device->plugin);
  if (!device_plugin) throw HostError("device plugin '" + device->plugin + "' vanished after probing");
  json env = prepare_environment(device_plugin->manifest, device->index, plan);
  // A plugin that narrows what the worker sees (CUDA_VISIBLE_DEVICES) says which device
  // string the worker must then use.
  std::string torch_device = device->torch_device;
  if (env.contains("MLH_TORCH_DEVICE")) torch_device = env["MLH_TORCH_DEVICE"].get<std::string>();
  plan["environment"] = env;
  plan["worker_torch_device"] = torch_device;

  if (!options.resume) {
    try {
      prepare_run_dir(run_dir, false);
    } catch (const std::exception& e) {
      throw HostError(e.what(), 2);
    }
  }
  write_file_atomically(run_dir / "config.json", config.dump(2) + "\n");
  write_file_atomically(run_dir / "plan.json", plan.dump(2) + "\n");
  write_file_atomically(run_dir / "probe.json", probe_report_to_json(probe).dump(2) + "\n");
  spdlog::info("run folder {}\n{}", run_dir.string(), plan_to_text(plan));

  // The environment must be in place before the worker loads LibTorch.
  for (const auto& [name, value] : env.items()) ::setenv(name.c_str(), value.get<std::string>().c_str(), 1);

  WorkerSpec spec;
  spec.algorithm = algorithm;
  spec.command = command;
  spec.config_json = config.dump();
  spec.device_json = device_to_json(*device).dump();
  spec.torch_device = torch_device;
  spec.plan_json = plan.dump();
  spec.run_dir = run_dir;
  spec.resume = options.resume;
  std::unique_ptr<TelemetrySampler> telemetry;
  const WorkerOutcome outcome = supervise_worker(spec, [&](pid_t worker) {
    telemetry = std::make_unique<TelemetrySampler>(device_plugin->manifest, device->index, worker,
                                                   run_dir / "telemetry.jsonl", kTelemetryInterval);
  });
  telemetry.reset();

  if (outcome.killed_on_request) {
    // The user stopped the run twice: a cancellation, though the worker could not save.
    json summary = {{"algorithm", algorithm.name}, {"command", command}, {"status", "cancelled"},
                    {"error", "killed by a second stop request (Ctrl-C) before it finished stopping"}};
    write_file_atomically(run_dir / "summary.json", summary.dump(2) + "\n");
    spdlog::warn("run killed on a second stop request; outputs kept in {}", run_dir.string());
    return kWorkerCancelled;
  }
  if (outcome.signal != 0) {
    // The worker could not write its summary: record how it ended, keeping what it wrote.
    json summary = {{"algorithm", algorithm.name}, {"command", command}, {"status", "crashed"},
                    {"signal", outcome.signal}, {"error", std::string("worker killed by signal ") +
                                                              std::to_string(outcome.signal) + " (" +
                                                              strsignal(outcome.signal) + ")"}};
    write_file_atomically(run_dir / "summary.json", summary.dump(2) + "\n");
    throw HostError("training " + summary["error"].get<std::string>() + "; outputs kept in " +
                    run_dir.string() + " (log.txt)");
  }
  if (outcome.exit_code == kWorkerCancelled) {
    spdlog::warn("run stopped on request; outputs in {}", run_dir.string());
    return kWorkerCancelled;
  }
  if (outcome.exit_code != kWorkerCompleted)
    throw HostError("training failed (worker exit status " + std::to_string(outcome.exit_code) + "); see " +
                    (run_dir / "summary.json").string());
  spdlog::info("run completed; outputs in {}", run_dir.string());
  if (options.benchmark) {
    std::ifstream in(run_dir / "summary.json");
    const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
    const json result = summary.is_object() ? summary.value("result", json()) : json();
    try {
      std::cout << (options.json ? benchmark_json(result, plan).dump(2) + "\n" : benchmark_table(result, plan));
    } catch (const std::runtime_error& e) {
      throw HostError(e.what());
    }
  }
  return 0;
}

}  // namespace mlhost
