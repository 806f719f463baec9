// --describe and --algorithm: everything from finding the algorithm to the worker's end.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "config.hpp"
#include "isolated.hpp"
#include "plan.hpp"
#include "plugin_loader.hpp"
#include "run_files.hpp"
#include "settings.hpp"
#include "telemetry.hpp"
#include "worker.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Loading an algorithm plugin loads LibTorch (about half a second); this is generous.
constexpr std::chrono::milliseconds kDescribeTimeout{60000};
constexpr std::chrono::milliseconds kPrepareTimeout{10000};
constexpr std::chrono::milliseconds kTelemetryInterval{1000};

const DiscoveredPlugin& find_algorithm(const Discovery& discovery, const std::string& name) {
  if (const DiscoveredPlugin* p = discovery.find_usable("algorithm", name)) return *p;
  if (const DiscoveredPlugin* p = discovery.find_any("algorithm", name))
    throw HostError("algorithm plugin '" + name + "' cannot be loaded: " + *p->refused);
  std::string known;
  for (const auto& p : discovery.plugins)
    if (p.manifest.kind == "algorithm" && p.usable()) known += (known.empty() ? "" : ", ") + p.manifest.name;
  throw HostError("no algorithm plugin named '" + name + "' (found: " + (known.empty() ? "none" : known) +
                      "); see 'host --list-plugins'",
                  2);
}

json parse_plugin_json(const char* text, const char* field, const std::string& plugin) {
  json j = json::parse(text ? text : "{}", nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw PluginLoadError("algorithm plugin '" + plugin + "': describe's " + field + " is not a JSON object");
  return j;
}

// In a child: load the algorithm plugin and ask it to describe itself.
json describe_in_child(const PluginManifest& manifest) {
  LoadedPlugin plugin = load_plugin(manifest);
  const mlh_algorithm_plugin* table = plugin.algorithm_table();
  PluginInstance<mlh_algorithm_plugin> instance(table, manifest.name);
  const mlh_algorithm_description* d = nullptr;
  mlh_error err = make_error();
  const mlh_status status = table->describe(instance.get(), &d, &err);
  if (status != MLH_OK) throw PluginLoadError("describe failed: " + describe_error(status, err));
  if (!MLH_HAS_FIELD(d, mlh_algorithm_description, presets_json))
    throw PluginLoadError("describe returned a description smaller than ABI 1.0's");
  json commands = json::array();
  for (uint32_t i = 0; i < d->command_count && d->commands; ++i)
    if (d->commands[i]) commands.push_back(d->commands[i]);
  if (commands.empty()) throw PluginLoadError("describe listed no commands");
  return {{"name", manifest.name},
          {"version", manifest.version},
          {"summary", d->summary ? d->summary : ""},
          {"commands", commands},
          {"config_schema", parse_plugin_json(d->config_schema_json, "config_schema_json", manifest.name)},
          {"config_defaults", parse_plugin_json(d->config_defaults_json, "config_defaults_json", manifest.name)},
          {"presets", parse_plugin_json(d->presets_json, "presets_json", manifest.name)}};
}

// Runs `job` (which returns JSON) in a child; a failure becomes a HostError naming `what`.
json run_json_job_isolated(const std::string& what, std::function<json()> job, std::chrono::milliseconds timeout) {
  auto outcomes = run_isolated({[job] {
                                  try {
                                    return json{{"ok", job()}}.dump();
                                  } catch (const std::exception& e) {
                                    return json{{"error", e.what()}}.dump();
                                  }
                                }},
                               timeout);
  const IsolatedOutcome& o = outcomes.at(0);
  if (!o.ok()) throw HostError(what + ": plugin " + o.failure_reason());
  json answer = json::parse(o.payload, nullptr, false);
  if (answer.is_discarded()) throw HostError(what + ": unreadable answer from the plugin");
  if (answer.contains("error")) throw HostError(what + ": " + answer["error"].get<std::string>());
  return answer.at("ok");
}

json describe_algorithm(const PluginManifest& manifest) {
  return run_json_job_isolated("describing algorithm '" + manifest.name + "'",
                               [manifest] { return describe_in_child(manifest); }, kDescribeTimeout);
}

// In a child: ask the chosen device's plugin for the environment the plan needs.
json prepare_environment(const PluginManifest& manifest, int32_t device_index, const json& plan) {
  const std::string plan_json = plan.dump();
  return run_json_job_isolated(
      "preparing device plugin '" + manifest.name + "'",
      [manifest, device_index, plan_json] {
        LoadedPlugin plugin = load_plugin(manifest);
        const mlh_device_plugin* table = plugin.device_table();
        json env = json::object();
        if (!table->prepare) return env;  // nothing to set
        PluginInstance<mlh_device_plugin> instance(table, manifest.name);
        mlh_prepare_request request{sizeof(mlh_prepare_request), device_index, plan_json.c_str()};
        const mlh_env_var* vars = nullptr;
        uint32_t count = 0;
        mlh_error err = make_error();
        const mlh_status status = table->prepare(instance.get(), &request, &vars, &count, &err);
        if (status != MLH_OK) throw PluginLoadError("prepare failed: " + describe_error(status, err));
        if (count > 0 && !vars) throw PluginLoadError("prepare returned " + std::to_string(count) + " NULL variables");
        // Variables are vars[0].struct_size apart: a plugin of a later minor may append fields.
        const uint32_t stride = count > 0 ? vars[0].struct_size : 0;
        if (count > 0 && !MLH_HAS_FIELD(&vars[0], mlh_env_var, value))
          throw PluginLoadError("prepare returned variables smaller than ABI 1.0's");
        for (uint32_t i = 0; i < count; ++i) {
          const auto* v = reinterpret_cast<const mlh_env_var*>(reinterpret_cast<const char*>(vars) + size_t{i} * stride);
          if (!v->name || !*v->name || !v->value || std::strchr(v->name, '='))
            throw PluginLoadError("prepare returned a malformed variable at position " + std::to_string(i));
          env[v->name] = v->value;
        }
        return env;
      },
      kPrepareTimeout);
}

// What the user set: the resumed run's config (when resuming), then --config, then --set.
json user_config(const CliOptions& options, const json& schema, const fs::path& run_dir) {
  json config = json::object();
  try {
    if (options.resume) config = load_config_file(run_dir / "config.json");
    if (!options.config_file.empty()) config = merge_config(config, load_config_file(options.config_file));
    for (const auto& s : options.sets) apply_set(config, s, schema);
  } catch (const ConfigError& e) {
    throw HostError(e.what(), 2);
  }
  return config;
}

// The algorithm's config: its defaults, the plan's preset, what the user set; the plan's
// batch size fills "batch_size" when the algorithm has one. Validated against its schema.
json final_config(const json& description, const json& user, const json& plan) {
  json config = description.at("config_defaults");
  if (plan["preset"].is_string()) {
    json preset = description.at("presets").at(plan["preset"].get<std::string>());
    for (auto it = preset.begin(); it != preset.end();) {  // "$..." keys describe the preset, they are not config
      if (it.key().rfind('$', 0) == 0) it = preset.erase(it);
      else ++it;
    }
    config = merge_config(config, preset);
  }
  config = merge_config(config, user);
  const json& schema = description.at("config_schema");
  if (!plan["batch_size"].is_null() && schema.contains("properties") && schema["properties"].contains("batch_size"))
    config["batch_size"] = plan["batch_size"];
  try {
    validate_config(config, schema);
  } catch (const ConfigError& e) {
    throw HostError(e.what(), 2);
  }
  return config;
}

// Everything a run decides before it starts; --print-plan stops here.
struct RunSetup {
  Discovery discovery;
  std::optional<PluginManifest> algorithm;
  json description;  // null without an algorithm
  std::string command;
  fs::path run_dir;
  json config;  // null without an algorithm
  ProbeReport probe;
  Device device;
  json plan;
};

RunSetup setup_run(const CliOptions& options) {
  RunSetup s;
  s.discovery = discover_plugins(discovery_options(options));
  json user = json::object();
  if (!options.algorithm.empty()) {
    s.algorithm = find_algorithm(s.discovery, options.algorithm).manifest;
    s.description = describe_algorithm(*s.algorithm);
    const json& commands = s.description.at("commands");
    s.command = options.command.empty() ? commands.at(0).get<std::string>() : options.command;
    if (std::find(commands.begin(), commands.end(), s.command) == commands.end())
      throw HostError("--command '" + s.command + "': algorithm '" + s.algorithm->name + "' has " + commands.dump(), 2);
    s.run_dir = options.run_dir.empty() ? default_run_dir(s.algorithm->name) : options.run_dir;
    if (options.resume) {
      try {
        prepare_run_dir(s.run_dir, true);
      } catch (const std::exception& e) {
        throw HostError(e.what(), 2);
      }
    }
    user = user_config(options, s.description.at("config_schema"), s.run_dir);
  }

  const std::vector<PluginManifest> algorithms =
      s.algorithm ? std::vector<PluginManifest>{*s.algorithm} : usable_algorithms(s.discovery);
  s.probe = run_probe(options, s.discovery, algorithms);
  const Device* device = s.probe.ranking.chosen_device();
  if (!device) throw HostError("no device to run on: " + s.probe.ranking.error + " (see 'host --probe')");
  s.device = *device;

  std::optional<HardwareSettings> settings;
  std::vector<AutoRule> rules;
  try {
    fs::path settings_file = options.hardware_config;
    if (settings_file.empty())
      if (const char* env = std::getenv("MLH_HARDWARE_CONFIG")) settings_file = env;
    if (!settings_file.empty()) settings = read_hardware_settings(settings_file);
    rules = load_rules(default_share_dir() / "autoconfig.json", options.rules_file);
  } catch (const std::runtime_error& e) {  // SettingsError, RulesError
    throw HostError(e.what(), 2);
  }
  PlanInputs inputs;
  inputs.device = &s.device;
  inputs.rules = &rules;
  inputs.settings = settings ? &*settings : nullptr;
  inputs.precision = options.precision;
  inputs.batch_size = options.batch_size;
  inputs.description = s.algorithm ? &s.description : nullptr;
  inputs.user_config = &user;
  try {
    s.plan = make_plan(inputs);
  } catch (const PlanError& e) {
    throw HostError(e.what(), 2);
  }
  if (s.algorithm) s.config = final_config(s.description, user, s.plan);
  return s;
}

}  // namespace

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
  return 0;
}

}  // namespace mlhost
