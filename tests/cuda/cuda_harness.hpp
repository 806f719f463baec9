// The CUDA tests' harness: the built plugin loaded through the C ABI as the host loads it,
// environment variables set for one scope, and the fixtures that configure the stand-in
// driver library (fake_driver.cpp).
#pragma once

#include <mlh/mlh.h>

#include <map>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mlh::cuda_test {

using nlohmann::json;

// Sets (or, given nullopt, unsets) an environment variable until the end of the scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

std::string fixture_path(const std::string& name);  // "a100" -> .../fixtures/a100.json
json read_fixture(const std::string& name);

// Points the plugin at the fake driver and the fixture `name` (or a file) until the end of
// the scope: MLH_CUDA_DRIVER_LIBRARY, MLH_NVML_LIBRARY (a file that does not exist when
// the fixture says nvml.missing) and MLH_FAKE_GPUS. CUDA_VISIBLE_DEVICES is unset unless
// given.
class FakeMachine {
 public:
  explicit FakeMachine(const std::string& name, const std::optional<std::string>& visible_devices = std::nullopt);
  // A machine written to a temporary file, for one-off cases.
  static FakeMachine from_json(const json& machine, const std::optional<std::string>& visible_devices = std::nullopt);
  ~FakeMachine();
  const json& fixture() const { return fixture_; }

 private:
  FakeMachine(std::string path, json fixture, const std::optional<std::string>& visible_devices, bool temporary);
  std::string path_;
  json fixture_;
  bool temporary_;
  ScopedEnv driver_, nvml_, gpus_, visible_;
};

// What an ABI call returned.
struct Outcome {
  mlh_status status = MLH_OK;
  std::string message;
};

// One plugin instance of the built library (loaded once, never unloaded), created and
// destroyed through its function table.
class PluginInstance {
 public:
  PluginInstance();
  ~PluginInstance();
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  // The records, copied (they live only until the next probe); fails the test on an error.
  std::vector<DeviceInfo> probe();
  Outcome prepare(int32_t device_index, const std::string& plan_json, std::vector<EnvVar>* env);
  Outcome telemetry(int32_t device_index, mlh_telemetry_sample* sample);

 private:
  mlh_plugin_instance* instance_ = nullptr;
};

// The plugin's negotiated identity and table.
const mlh_negotiate_response& negotiated();
const mlh_device_plugin& plugin_table();

std::map<std::string, std::string> as_map(const std::vector<EnvVar>& env);

}  // namespace mlh::cuda_test
