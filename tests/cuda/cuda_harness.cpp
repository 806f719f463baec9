#include "cuda_harness.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlh::cuda_test {
namespace {

mlh_error make_error() {
  mlh_error error{};
  error.struct_size = sizeof(error);
  return error;
}

std::string text(const char* s) { return s ? s : ""; }

DeviceInfo copy_record(const mlh_device_record& r) {
  DeviceInfo d;
  d.device_class = r.device_class;
  d.index = r.index;
  d.available = r.available != 0;
  d.kind = text(r.kind);
  d.name = text(r.name);
  d.vendor = text(r.vendor);
  d.torch_device = text(r.torch_device);
  d.unavailable_reason = text(r.unavailable_reason);
  d.uuid = text(r.uuid);
  d.pci_bus_id = text(r.pci_bus_id);
  d.driver_version = text(r.driver_version);
  d.runtime_version = text(r.runtime_version);
  d.memory_total_bytes = r.memory_total_bytes;
  d.memory_free_bytes = r.memory_free_bytes;
  d.memory_unified = r.memory_unified != 0;
  d.compute_units = r.compute_units;
  d.logical_units = r.logical_units;
  d.capability_major = r.capability_major;
  d.capability_minor = r.capability_minor;
  d.precisions = r.precisions;
  d.fast_precisions = r.fast_precisions;
  d.limitations = r.limitations;
  d.recommended_threads = r.recommended_threads;
  d.score_hint = r.score_hint;
  d.features = text(r.features);
  d.details_json = text(r.details_json);
  return d;
}

struct Loaded {
  mlh_negotiate_response response{};
  const mlh_device_plugin* table = nullptr;
};

const Loaded& loaded() {
  static const Loaded plugin = [] {
    Loaded l;
    void* handle = ::dlopen(MLH_CUDA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error(std::string("cannot load the plugin: ") + ::dlerror());
    auto negotiate = reinterpret_cast<mlh_negotiate_fn>(::dlsym(handle, MLH_ENTRY_SYMBOL));
    if (!negotiate) throw std::runtime_error("the plugin does not export " MLH_ENTRY_SYMBOL);
    mlh_abi_version version{sizeof(mlh_abi_version), MLH_ABI_VERSION_MAJOR, MLH_ABI_VERSION_MINOR};
    mlh_negotiate_request request{sizeof(request), &version, 1, MLH_PLUGIN_KIND_DEVICE, "mlhost-test", "0.1.0"};
    l.response.struct_size = sizeof(l.response);
    mlh_error error = make_error();
    if (negotiate(&request, &l.response, &error) != MLH_OK)
      throw std::runtime_error(std::string("negotiation failed: ") + error.message);
    l.table = static_cast<const mlh_device_plugin*>(l.response.table);
    return l;
  }();
  return plugin;
}

std::optional<std::string> current(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  return value ? std::optional<std::string>(value) : std::nullopt;
}

}  // namespace

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string>& value)
    : name_(std::move(name)), previous_(current(name_)) {
  if (value)
    ::setenv(name_.c_str(), value->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (previous_)
    ::setenv(name_.c_str(), previous_->c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

std::string fixture_path(const std::string& name) { return std::string(MLH_CUDA_FIXTURE_DIR) + "/" + name + ".json"; }

json read_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name));
  if (!in) throw std::runtime_error("no fixture " + fixture_path(name));
  return json::parse(in);
}

FakeMachine::FakeMachine(const std::string& name, const std::optional<std::string>& visible_devices)
    : FakeMachine(fixture_path(name), read_fixture(name), visible_devices, false) {}

FakeMachine FakeMachine::from_json(const json& machine, const std::optional<std::string>& visible_devices) {
  char path[] = "/tmp/mlh-cuda-machine-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  std::ofstream(path) << machine.dump(2);
  return FakeMachine(path, machine, visible_devices, true);
}

FakeMachine::FakeMachine(std::string path, json fixture, const std::optional<std::string>& visible_devices,
                         bool temporary)
    : path_(std::move(path)),
      fixture_(std::move(fixture)),
      temporary_(temporary),
      driver_("MLH_CUDA_DRIVER_LIBRARY", std::string(MLH_FAKE_NVIDIA_PATH)),
      nvml_("MLH_NVML_LIBRARY", fixture_.value("nvml", json::object()).value("missing", false)
                                    ? std::string("/nonexistent/libnvidia-ml.so.1")
                                    : std::string(MLH_FAKE_NVIDIA_PATH)),
      gpus_("MLH_FAKE_GPUS", path_),
      visible_("CUDA_VISIBLE_DEVICES", visible_devices) {}

FakeMachine::~FakeMachine() {
  if (temporary_) ::unlink(path_.c_str());
}

PluginInstance::PluginInstance() {
  mlh_error error = make_error();
  EXPECT_EQ(plugin_table().create(&instance_, &error), MLH_OK) << error.message;
}

PluginInstance::~PluginInstance() {
  if (instance_) plugin_table().destroy(instance_);
}

std::vector<DeviceInfo> PluginInstance::probe() {
  const mlh_device_record* records = nullptr;
  uint32_t count = 0;
  mlh_error error = make_error();
  std::vector<DeviceInfo> out;
  if (plugin_table().probe(instance_, &records, &count, &error) != MLH_OK) {
    ADD_FAILURE() << "probe failed: " << error.message;
    return out;
  }
  if (count == 0) return out;
  EXPECT_GE(records[0].struct_size, sizeof(mlh_device_record));
  const char* at = reinterpret_cast<const char*>(records);
  for (uint32_t i = 0; i < count; ++i)
    out.push_back(copy_record(*reinterpret_cast<const mlh_device_record*>(at + i * records[0].struct_size)));
  return out;
}

Outcome PluginInstance::prepare(int32_t device_index, const std::string& plan_json, std::vector<EnvVar>* env) {
  mlh_prepare_request request{sizeof(mlh_prepare_request), device_index, plan_json.c_str()};
  const mlh_env_var* vars = nullptr;
  uint32_t count = 0;
  mlh_error error = make_error();
  Outcome o{plugin_table().prepare(instance_, &request, &vars, &count, &error), ""};
  if (o.status != MLH_OK) {
    o.message = error.message;
    return o;
  }
  const char* at = reinterpret_cast<const char*>(vars);
  for (uint32_t i = 0; env && i < count; ++i) {
    const auto* v = reinterpret_cast<const mlh_env_var*>(at + i * vars[0].struct_size);
    env->push_back({v->name, v->value});
  }
  return o;
}

Outcome PluginInstance::telemetry(int32_t device_index, mlh_telemetry_sample* sample) {
  *sample = mlh_telemetry_sample{};
  sample->struct_size = sizeof(*sample);
  mlh_error error = make_error();
  Outcome o{plugin_table().telemetry(instance_, device_index, ::getpid(), sample, &error), ""};
  if (o.status != MLH_OK) o.message = error.message;
  return o;
}

const mlh_negotiate_response& negotiated() { return loaded().response; }
const mlh_device_plugin& plugin_table() { return *loaded().table; }

std::map<std::string, std::string> as_map(const std::vector<EnvVar>& env) {
  std::map<std::string, std::string> m;
  for (const EnvVar& v : env) m[v.name] = v.value;
  return m;
}

}  // namespace mlh::cuda_test
