#include "plugins/plugin_calls.hpp"

#include <chrono>
#include <cstring>
#include <functional>

#include <spdlog/spdlog.h>

#include "common/errors.hpp"
#include "plugins/isolated.hpp"
#include "plugins/plugin_loader.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

// Loading an algorithm plugin loads LibTorch (about half a second); this is generous.
constexpr std::chrono::milliseconds kDescribeTimeout{60000};
constexpr std::chrono::milliseconds kPrepareTimeout{10000};

json parse_plugin_json(const char* text, const char* what, const std::string& plugin) {
  json j = json::parse(text ? text : "{}", nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw PluginLoadError("algorithm plugin '" + plugin + "': " + what + " is not a JSON object");
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
          {"abi", std::to_string(plugin.abi_major()) + "." + std::to_string(plugin.abi_minor())},
          {"summary", d->summary ? d->summary : ""},
          {"commands", commands},
          {"config_schema", parse_plugin_json(d->config_schema_json, "describe's config_schema_json", manifest.name)},
          {"config_defaults", parse_plugin_json(d->config_defaults_json, "describe's config_defaults_json", manifest.name)},
          {"presets", parse_plugin_json(d->presets_json, "describe's presets_json", manifest.name)}};
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

}  // namespace

AlgorithmInfo describe_algorithm(const PluginManifest& manifest) {
  const std::string what = "describing algorithm '" + manifest.name + "'";
  const json description =
      run_json_job_isolated(what, [manifest] { return describe_in_child(manifest); }, kDescribeTimeout);
  try {
    return AlgorithmInfo::from_description(manifest, description);
  } catch (const std::runtime_error& e) {
    throw HostError(what + ": " + e.what());
  }
}

namespace {
extern "C" {
// describe_run's context: messages it logs go to the host's log; nothing else is expected.
void describe_run_log(void*, int32_t level, const char* message) {
  if (!message) return;
  if (level >= MLH_LOG_WARN) spdlog::warn("{}", message);
  else spdlog::debug("{}", message);
}
void describe_run_metric(void*, const char*, double, int64_t) {}
void describe_run_progress(void*, int64_t, int64_t, const char*) {}
int32_t describe_run_should_stop(void*) { return 0; }
void describe_run_summary(void*, const char*) {}
}
}  // namespace

json describe_run(const PluginManifest& manifest, const std::string& command, const json& config, const json& device,
                  const json& plan, const std::string& run_dir) {
  const std::string config_json = config.dump(), device_json = device.dump(), plan_json = plan.dump();
  const std::string torch_device = plan.value("torch_device", std::string("cpu"));
  const std::string what = "describing a run of algorithm '" + manifest.name + "'";
  const json reply = run_json_job_isolated(
      what,
      [=]() -> json {
        LoadedPlugin plugin = load_plugin(manifest);
        const mlh_algorithm_plugin* table = plugin.algorithm_table();
        if (plugin.abi_minor() < 1 || !MLH_HAS_FIELD(table, mlh_algorithm_plugin, describe_run) || !table->describe_run)
          return nullptr;
        PluginInstance<mlh_algorithm_plugin> instance(table, manifest.name);
        mlh_host_callbacks callbacks{sizeof(mlh_host_callbacks), nullptr,           describe_run_log,
                                     describe_run_metric,        describe_run_progress, describe_run_should_stop,
                                     describe_run_summary};
        mlh_run_context ctx{};
        ctx.struct_size = sizeof ctx;
        ctx.command = command.c_str();
        ctx.config_json = config_json.c_str();
        ctx.device_json = device_json.c_str();
        ctx.torch_device = torch_device.c_str();
        ctx.plan_json = plan_json.c_str();
        ctx.run_dir = run_dir.c_str();
        ctx.world_size = 1;
        ctx.host = &callbacks;
        const char* answer = nullptr;
        mlh_error err = make_error();
        const mlh_status status = table->describe_run(instance.get(), &ctx, &answer, &err);
        // A config or plan the algorithm refuses is the user's to fix, as when the worker
        // would have refused it: said before anything runs.
        if (status == MLH_ERR_INVALID_ARGUMENT) return {{"invalid", describe_error(status, err)}};
        if (status != MLH_OK) throw PluginLoadError("describe_run failed: " + describe_error(status, err));
        return {{"answer", parse_plugin_json(answer, "describe_run's answer", manifest.name)}};
      },
      kDescribeTimeout);
  if (reply.is_object() && reply.contains("invalid")) throw HostError(reply["invalid"].get<std::string>(), 2);
  return reply.is_object() ? reply.value("answer", json()) : json();
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


}  // namespace mlhost
