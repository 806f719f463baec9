#include "run/run_setup.hpp"

#include <algorithm>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "plan/autoconfig.hpp"
#include "plan/batch_size_for_run.hpp"
#include "plan/calibration_for_run.hpp"
#include "plan/config.hpp"
#include "plan/effects.hpp"
#include "plan/plan.hpp"
#include "plan/settings.hpp"
#include "plan/settings_file.hpp"
#include "plugins/plugin_calls.hpp"
#include "run/run_files.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

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

namespace {

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

// What each plan value does on this run: the device's rules and the algorithm's own account
// of this config and plan (describe_run); a value without effect is marked, and a warning
// when the user set it.
void mark_effects(RunSetup& s) {
  json run_description;
  if (s.algorithm)
    run_description = describe_run(*s.algorithm, s.command, s.config, device_to_json(s.device), s.plan, s.run_dir.string());
  EffectInputs in;
  in.device = &s.device;
  if (s.algorithm) {
    in.algorithm = s.algorithm->name;
    in.algorithm_torch = s.algorithm->torch_version;
  }
  in.run_description = run_description.is_object() ? &run_description : nullptr;
  try {
    mark_plan_effects(s.plan, in);
  } catch (const PlanError& e) {
    throw HostError(e.what(), 2);
  }
  for (const json& warning : s.plan.value("warnings", json::array())) spdlog::warn("{}", warning.get<std::string>());
}

}  // namespace

RunSetup setup_run(const CliOptions& options, Calibration calibration, const std::string& why_cached_only,
                   bool measure_batch) {
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
  const SettingsFileChoice settings_file =
      choose_settings_file(options.hardware_config, std::getenv("MLH_HARDWARE_CONFIG"), options.no_hardware_config,
                           SettingsSearch::from_environment());
  try {
    if (settings_file.file) settings = read_hardware_settings(*settings_file.file);
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
  inputs.allocator = options.allocator;
  inputs.allocator_search_path = std::getenv("MLH_ALLOCATOR_PATH");
  inputs.description = s.algorithm ? &s.description : nullptr;
  if (s.algorithm) inputs.algorithm_torch = s.algorithm->torch_version;
  inputs.settings_file_status = settings_file.status;
  inputs.user_config = &user;
  auto plan = [&] {
    try {
      s.plan = make_plan(inputs);
    } catch (const PlanError& e) {
      throw HostError(e.what(), 2);
    }
    if (s.algorithm) s.config = final_config(s.description, user, s.plan);
  };
  plan();  // without calibration: what a calibration starts from
  if (s.algorithm) {
    std::string status;
    RunCalibrationInputs in{options, s.description, *s.algorithm, s.device, s.discovery, s.plan, s.config, inputs};
    s.calibration = calibration_for_run(in, calibration, why_cached_only, status);
    inputs.calibration = s.calibration ? &*s.calibration : nullptr;
    inputs.calibration_status = status;
    plan();
    // The batch is sought with the calibrated settings (they change what fits and how fast).
    if (options.batch_size_auto) {
      std::string batch_status;
      s.batch_search = batch_size_for_run(in, measure_batch, batch_status);
      if (s.batch_search.is_object()) inputs.batch_search = &s.batch_search;
      inputs.batch_search_status = batch_status;
      plan();
    }
  }
  mark_effects(s);
  return s;
}

}  // namespace mlhost
