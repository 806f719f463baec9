// --describe, --print-plan and --algorithm: from the set-up to the worker's end.
#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include <mlh/peer_lost.hpp>

#include "cli/commands.hpp"
#include "plan/plan.hpp"
#include "plugins/plugin_calls.hpp"
#include "run/benchmark_report.hpp"
#include "run/launch.hpp"
#include "run/memory_kill.hpp"
#include "run/run_files.hpp"
#include "run/run_setup.hpp"
#include "run/telemetry.hpp"
#include "run/worker.hpp"

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

namespace {

Launch launch_of(const CliOptions& options) {
  try {
    return resolve_launch(options, [](const char* name) { return std::getenv(name); });
  } catch (const CliError& e) {
    throw HostError(e.what(), 2);
  }
}

// "rank 1 was killed by signal 9 (Killed)" / "rank 1 failed: <its error>"
std::string describe_rank_end(const WorkerSpec& spec, const WorkerOutcome& o) {
  const std::string who = "rank " + std::to_string(spec.rank);
  if (o.signal != 0) return who + " was killed by signal " + std::to_string(o.signal) + " (" + strsignal(o.signal) + ")";
  std::ifstream in(spec.output_dir() / "summary.json");
  const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (summary.is_object() && summary.value("error", json()).is_string())
    return who + " failed: " + summary["error"].get<std::string>();
  return who + " failed (exit status " + std::to_string(o.exit_code) + ")";
}

// The rank whose end ended the run: one killed by a signal the host did not send, else one
// that failed on its own rather than because a peer vanished under a collective, else the
// first that failed. -1 when none did.
int culprit(const std::vector<WorkerSpec>& specs, const GroupOutcome& group) {
  int best = -1, best_priority = 3;
  for (size_t i = 0; i < group.workers.size(); ++i) {
    const WorkerOutcome& o = group.workers[i];
    const bool stopped_by_host =
        std::find(group.stopped_by_host.begin(), group.stopped_by_host.end(), static_cast<int>(i)) != group.stopped_by_host.end();
    if (stopped_by_host || !o.failed()) continue;
    int priority = 2;
    if (o.signal != 0) {
      priority = 0;
    } else {
      std::ifstream in(specs[i].output_dir() / "summary.json");
      const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
      const std::string error = summary.is_object() ? summary.value("error", "") : "";
      if (error.find(mlh::kPeerLostText) == std::string::npos) priority = 1;
    }
    if (priority < best_priority) {
      best = static_cast<int>(i);
      best_priority = priority;
    }
  }
  return best;
}

// A rank other than 0 started by torchrun or SLURM: rank 0's host makes the run folder and
// writes its config; wait for that rather than race it.
void wait_for_run_folder(const fs::path& run_dir, const Launch& launch) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(launch.timeout_s);
  while (!fs::exists(run_dir / "config.json")) {
    if (std::chrono::steady_clock::now() > deadline)
      throw HostError("rank " + std::to_string(launch.first_rank) + ": rank 0 did not create the run folder '" +
                      run_dir.string() + "' within " + std::to_string(launch.timeout_s) +
                      " s (do all ranks see the same folder?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

namespace {

// MLH_NO_CALIBRATE=1 (anything but empty or 0): --no-calibrate for every run, e.g. in CI jobs.
bool no_calibrate_env() {
  const char* v = std::getenv("MLH_NO_CALIBRATE");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

int command_print_plan(const CliOptions& options) {
  const Launch launch = launch_of(options);
  RunSetup s = setup_run(options, Calibration::kCachedOnly, "a run calibrates first ('host --calibrate' does now)",
                         /*measure_batch=*/false);
  devices_for_ranks(launch, s.device, s.probe.ranking);
  plan_for_launch(s.plan, launch, s.device);
  std::cout << plan_to_text(s.plan);
  if (s.algorithm) std::cout << "\nConfig of " << s.algorithm->name << " (" << s.command << ")\n" << s.config.dump(2) << "\n";
  return 0;
}

int command_run(const CliOptions& options) {
  const Launch launch = launch_of(options);
  // The default folder's name holds the time, which differs between the hosts of one run.
  if (launch.distributed() && (launch.external() || launch.nnodes > 1) && options.run_dir.empty())
    throw HostError(std::string(launch.external() ? "a rank started by " + launch.source.substr(0, launch.source.find(' '))
                                                  : "a run across machines (--nnodes)") +
                        " needs --run-dir, a folder every rank sees: rank 0 writes the run there",
                    2);
  if (launch.distributed() && options.batch_size_auto)
    throw HostError("--batch-size auto does not run in a distributed launch: find the batch with one process "
                    "(host --algorithm NAME --batch-size auto), then give every rank --batch-size N",
                    2);
  RunSetup s = launch.distributed()
                   ? setup_run(options, Calibration::kCachedOnly, "distributed runs do not calibrate ('host --calibrate' first)")
                   : options.no_calibrate ? setup_run(options, Calibration::kCachedOnly, "--no-calibrate")
                   : no_calibrate_env()   ? setup_run(options, Calibration::kCachedOnly, "MLH_NO_CALIBRATE is set")
                                          : setup_run(options, Calibration::kIfMissing);
  const PluginManifest& algorithm = *s.algorithm;
  const Device* device = &s.device;
  const fs::path& run_dir = s.run_dir;
  const std::string& command = s.command;
  const json& config = s.config;
  json& plan = s.plan;
  const ProbeReport& probe = s.probe;
  spdlog::info("device: {} ({}), {}", device->id(), device->name, probe.ranking.devices[*probe.ranking.chosen].reason);
  const std::vector<Device> rank_devices = devices_for_ranks(launch, s.device, probe.ranking);
  plan_for_launch(plan, launch, s.device);

  const DiscoveredPlugin* device_plugin = s.discovery.find_usable("device", device->plugin);
  if (!device_plugin) throw HostError("device plugin '" + device->plugin + "' vanished after probing");
  // One worker per local rank, each with the environment its device needs before LibTorch
  // starts, and the rendezvous variables torchrun would set.
  std::vector<WorkerSpec> specs;
  for (int i = 0; i < launch.workers_here; ++i) {
    const Device& d = rank_devices[static_cast<size_t>(i)];
    json env = prepare_environment(device_plugin->manifest, d.index, plan);
    WorkerSpec spec;
    // A plugin that narrows what the worker sees (CUDA_VISIBLE_DEVICES) says which device
    // string the worker must then use.
    spec.torch_device = env.contains("MLH_TORCH_DEVICE") ? env["MLH_TORCH_DEVICE"].get<std::string>() : d.torch_device;
    for (const auto& [name, value] : env.items()) spec.environment[name] = value.get<std::string>();
    spec.rank = launch.first_rank + i;
    spec.world_size = launch.world_size;
    spec.local_rank = launch.first_local_rank + i;
    if (launch.distributed()) {
      spec.environment["RANK"] = std::to_string(spec.rank);
      spec.environment["WORLD_SIZE"] = std::to_string(launch.world_size);
      spec.environment["LOCAL_RANK"] = std::to_string(spec.local_rank);
      spec.environment["LOCAL_WORLD_SIZE"] = std::to_string(launch.local_processes);
      spec.environment["MASTER_ADDR"] = launch.master_addr;
      spec.environment["MASTER_PORT"] = std::to_string(launch.master_port);
      spec.environment["MLH_DIST_TIMEOUT_S"] = std::to_string(launch.timeout_s);
      plan["distributed"]["ranks"].push_back({{"rank", spec.rank}, {"device", d.id()}, {"torch_device", spec.torch_device}});
    }
    if (i == 0) {
      plan["environment"] = env;
      plan["worker_torch_device"] = spec.torch_device;
    }
    specs.push_back(std::move(spec));
  }

  const bool owns_run_dir = launch.first_rank == 0;  // rank 0's host; the only one unless another launcher started us
  if (owns_run_dir) {
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
  } else {
    wait_for_run_folder(run_dir, launch);
  }

  for (WorkerSpec& spec : specs) {
    spec.algorithm = algorithm;
    spec.command = command;
    spec.config_json = config.dump();
    spec.device_json = device_to_json(rank_devices[static_cast<size_t>(spec.local_rank - launch.first_local_rank)]).dump();
    spec.plan_json = plan.dump();
    spec.run_dir = run_dir;
    spec.resume = options.resume;
  }
  if (launch.distributed())
    spdlog::info("starting ranks {}-{} of {} ({}), meeting at {}:{}", launch.first_rank,
                 launch.first_rank + launch.workers_here - 1, launch.world_size, launch.source, launch.master_addr,
                 launch.master_port);
  // The kernel's OOM kills in this cgroup so far, to tell afterwards whether one ended the run.
  const fs::path memory_events = cgroup_memory_events();
  const std::optional<int64_t> oom_kills_before = oom_kill_count(memory_events);
  std::unique_ptr<TelemetrySampler> telemetry;
  const GroupOutcome group = supervise_workers(specs, [&](pid_t worker) {
    if (owns_run_dir)
      telemetry = std::make_unique<TelemetrySampler>(device_plugin->manifest, rank_devices[0].index, worker,
                                                     run_dir / "telemetry.jsonl", kTelemetryInterval);
  });
  telemetry.reset();

  if (launch.distributed() && !group.killed_on_request) {
    const int failed = culprit(specs, group);
    if (failed >= 0) {
      const WorkerSpec& spec = specs[static_cast<size_t>(failed)];
      std::string message = describe_rank_end(spec, group.workers[static_cast<size_t>(failed)]);
      if (!group.stopped_by_host.empty()) {
        std::string stopped;
        for (int j : group.stopped_by_host) stopped += (stopped.empty() ? "" : ", ") + std::to_string(specs[static_cast<size_t>(j)].rank);
        message += "; stopped the other ranks here (" + stopped + ")";
      }
      if (owns_run_dir) {
        json summary = {{"algorithm", algorithm.name}, {"command", command}, {"status", "failed"},
                        {"failed_rank", spec.rank}, {"error", message}};
        write_file_atomically(run_dir / "summary.json", summary.dump(2) + "\n");
      }
      throw HostError("distributed training failed: " + message + "; outputs kept in " + run_dir.string() + " (" +
                      (spec.output_dir() / "log.txt").string() + ")");
    }
  }
  const WorkerOutcome& outcome = group.workers[0];  // this machine's first rank speaks for the run
  if (group.killed_on_request) {
    // The user stopped the run twice: a cancellation, though the worker could not save.
    json summary = {{"algorithm", algorithm.name}, {"command", command}, {"status", "cancelled"},
                    {"error", "killed by a second stop request (Ctrl-C) before it finished stopping"}};
    write_file_atomically(run_dir / "summary.json", summary.dump(2) + "\n");
    spdlog::warn("run killed on a second stop request; outputs kept in {}", run_dir.string());
    return kWorkerCancelled;
  }
  if (outcome.signal != 0) {
    // The worker could not write its summary: record how it ended, keeping what it wrote.
    std::string error = std::string("worker killed by signal ") + std::to_string(outcome.signal) + " (" +
                        strsignal(outcome.signal) + ")";
    if (outcome.signal == SIGKILL)
      if (auto why = memory_kill_explanation(oom_kills_before, oom_kill_count(memory_events),
                                             run_dir / "telemetry.jsonl", plan,
                                             "host --algorithm " + algorithm.name + " --run-dir " + run_dir.string() +
                                                 " --resume"))
        error += "; " + *why;
    json summary = {{"algorithm", algorithm.name}, {"command", command}, {"status", "crashed"},
                    {"signal", outcome.signal}, {"error", error}};
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
  if (options.benchmark && owns_run_dir) {
    std::ifstream in(run_dir / "summary.json");
    const json summary = json::parse(in, nullptr, /*allow_exceptions=*/false);
    const json result = summary.is_object() ? summary.value("result", json()) : json();
    const std::string allocator =
        summary.is_object() && summary.value("worker", json()).is_object() ? summary["worker"].value("allocator", "") : "";
    try {
      std::cout << (options.json ? benchmark_json(result, plan, allocator).dump(2) + "\n"
                                 : benchmark_table(result, plan, allocator));
    } catch (const std::runtime_error& e) {
      throw HostError(e.what());
    }
  }
  return 0;
}

}  // namespace mlhost
