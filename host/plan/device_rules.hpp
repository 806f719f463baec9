// The device rules: automatic run settings by device, data-driven (share/mlhost/autoconfig.json, which
// a user file can extend or replace) giving a reference batch size, gradient
// checkpointing and a model preset for a device kind or class and memory size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/device.hpp"

namespace mlhost {

class DeviceRulesError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DeviceRule {
  std::string device_kind;   // matches Device::kind, or empty
  std::string device_class;  // matches device_class_name(), or empty
  std::optional<double> min_memory_gb, max_memory_gb;  // [min, max) of the nominal size
  std::optional<int64_t> batch_size;
  std::optional<bool> gradient_checkpointing;
  std::optional<std::string> preset;
  std::string origin;  // "autoconfig.json rule 3"

  bool matches(const Device& d) const;
  std::string describe() const;  // "cuda, 16-24 GB"
};

// The device's memory in whole GiB, as sold: rounded up, since drivers report less than the
// nominal size ("40 GB" A100 reporting 39.4 GiB = 40; a V100's 15.8 GiB = 16).
int64_t nominal_memory_gib(int64_t bytes);

// Reads a rules file: {"rules": [...]} plus, for a user file, "mode": "extend" | "replace".
// Throws DeviceRulesError naming the file and the field.
std::vector<DeviceRule> read_device_rules(const std::filesystem::path& file, std::string* mode = nullptr);

// The shipped rules, with a user file (if any) tried first or instead.
std::vector<DeviceRule> load_device_rules(const std::filesystem::path& shipped, const std::filesystem::path& user_file);

// The first rule that matches, or nothing.
const DeviceRule* match_device_rule(const std::vector<DeviceRule>& rules, const Device& device);

}  // namespace mlhost
