// The hardware settings file: an INI file (Boost.Program_options' config-file parser) with
// keys at the top for every device and [cpu]/[cuda]/[mps]/... sections per device kind.
// Every key is documented in share/mlhost/hardware.ini.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlhost {

// A bad settings file; the message names the file, the line and the key.
class SettingsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Setting {
  std::string value;
  std::string origin;  // "<file>:<line>"
};

struct HardwareSettings {
  std::filesystem::path file;
  std::map<std::string, Setting> global;                             // key -> setting
  std::map<std::string, std::map<std::string, Setting>> per_device;  // kind -> key -> setting

  // The value for a device kind: its section's, else the global one, else nothing.
  // A value of "auto" counts as not set.
  std::optional<Setting> get(const std::string& key, const std::string& device_kind) const;
};

// The keys the file may hold.
const std::vector<std::string>& hardware_setting_keys();

// Reads and checks a settings file. Throws SettingsError.
HardwareSettings read_hardware_settings(const std::filesystem::path& file);

// The same from text already read (used by fuzzing); `file` names it in messages.
HardwareSettings parse_hardware_settings(const std::string& text, const std::filesystem::path& file);

}  // namespace mlhost
