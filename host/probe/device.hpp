// The host's device record: a plugin's record validated, and convertible to and from the JSON
// that crosses the probe child's pipe and `host --probe --json`.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <mlh/mlh_device.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

namespace mlhost {

class MalformedRecord : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The fields a device plugin reports are the SDK's DeviceInfo (mlh/plugin.hpp), declared there
// once; the host adds the plugin that reported it. On intake (devices_from_records,
// device_from_json) every field is checked: `features` is the plugin's comma-separated list
// without empty items, `details_json` a JSON object's text or empty.
struct Device : mlh::DeviceInfo {
  std::string plugin;  // the device plugin that reported it

  // "cpu:0", "cuda:1": how --device and reports name it.
  std::string id() const { return kind + ":" + std::to_string(index); }
  // A discrete or unified-memory GPU (else a CPU or another device that runs like one).
  bool is_gpu() const {
    return device_class == MLH_DEVICE_CLASS_DISCRETE_GPU || device_class == MLH_DEVICE_CLASS_UNIFIED_GPU;
  }
  std::vector<std::string> feature_list() const;
  nlohmann::json details() const;  // an empty object when the plugin gave none
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
