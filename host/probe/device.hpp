// The host's own copy of a device record: validated, owning its strings, and convertible
// to and from the JSON that crosses the probe child's pipe and `host --probe --json`.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <mlh/mlh_device.h>
#include <nlohmann/json.hpp>

namespace mlhost {

class MalformedRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Device {
  std::string plugin;  // the device plugin that reported it
  int32_t device_class = MLH_DEVICE_CLASS_OTHER;
  int32_t index = 0;
  bool available = false;
  std::string kind, name, vendor, torch_device;
  std::string unavailable_reason, uuid, pci_bus_id, driver_version, runtime_version;
  int64_t memory_total_bytes = MLH_UNKNOWN;
  int64_t memory_free_bytes = MLH_UNKNOWN;
  bool memory_unified = false;
  int32_t compute_units = MLH_UNKNOWN;
  int32_t logical_units = MLH_UNKNOWN;
  int32_t capability_major = MLH_UNKNOWN;
  int32_t capability_minor = MLH_UNKNOWN;
  uint32_t precisions = 0;
  uint32_t fast_precisions = 0;
  uint32_t limitations = 0;
  int32_t recommended_threads = MLH_UNKNOWN;
  int32_t score_hint = 0;
  std::vector<std::string> features;
  nlohmann::json details = nlohmann::json::object();

  // "cpu:0", "cuda:1": how --device and reports name it.
  std::string id() const { return kind + ":" + std::to_string(index); }
  // A discrete or unified-memory GPU (else a CPU or another device that runs like one).
  bool is_gpu() const {
    return device_class == MLH_DEVICE_CLASS_DISCRETE_GPU || device_class == MLH_DEVICE_CLASS_UNIFIED_GPU;
  }
};

// Copies `count` records a plugin returned, checking every field a host relies on.
// Throws MalformedRecord naming the record and field.
std::vector<Device> devices_from_records(const std::string& plugin, const mlh_device_record* records,
                                         uint32_t count);

nlohmann::json device_to_json(const Device& d);
Device device_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

const char* device_class_name(int32_t device_class);  // "discrete gpu", "cpu", ...
std::vector<std::string> precision_names(uint32_t mask);
std::vector<std::string> limitation_names(uint32_t mask);

}  // namespace mlhost
