#include "plugins/plugin_calls.hpp"

#include <chrono>
#include <cstring>
#include <functional>

#include "cli/commands.hpp"
#include "plugins/isolated.hpp"
#include "plugins/plugin_loader.hpp"

namespace mlhost {

using nlohmann::json;

namespace {

// Loading an algorithm plugin loads LibTorch (about half a second); this is generous.
constexpr std::chrono::milliseconds kDescribeTimeout{60000};
constexpr std::chrono::milliseconds kPrepareTimeout{10000};

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

}  // namespace

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


}  // namespace mlhost
