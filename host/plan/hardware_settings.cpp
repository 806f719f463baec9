#include "plan/hardware_settings.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <regex>
#include <sstream>

#include <boost/program_options.hpp>
#include <mlh/plan_fields.hpp>
#include <mlh/plan_setting_check.hpp>

namespace mlhost {

namespace po = boost::program_options;

namespace {

using Check = std::function<std::string(const std::string&)>;  // "" when the value is fine

Check one_of(std::vector<std::string> words) {
  return [words](const std::string& v) -> std::string {
    if (std::find(words.begin(), words.end(), v) != words.end()) return "";
    std::string list;
    for (const auto& w : words) list += (list.empty() ? "" : ", ") + w;
    return "must be one of " + list;
  };
}

// The check of a plan setting's value: the plan's table's (mlh/plan_setting_check.hpp).
Check check_of(const mlh::PlanSetting& setting) {
  return [&setting](const std::string& v) { return mlh::plan_setting_problem(setting, v, /*or_auto=*/true); };
}

// Every key's check: the plan's settings, as its table declares them (mlh::kPlanFields), and
// the launcher's own keys, experiment tracking (host/run/tracking), which are not the plan's.
const std::map<std::string, Check>& checks() {
  static const std::map<std::string, Check> c = [] {
    std::map<std::string, Check> all = {
        {"track", one_of({"auto", "none", "mlflow"})},
        {"mlflow_experiment",
         [](const std::string& v) -> std::string {
           return v.empty() || v.size() > 500 ? "must be an MLflow experiment name (1 to 500 characters)" : "";
         }},
    };
    for (const mlh::PlanFieldInfo& f : mlh::kPlanFields)
      for (const mlh::PlanSetting& setting : f.settings)
        if (setting.key && !all.emplace(setting.key, check_of(setting)).second)
          throw std::logic_error(std::string("hardware settings: key '") + setting.key + "' declared twice");
    return all;
  }();
  return c;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The line (1-based) where `key` is set for the `nth` time (from 0) inside `section` (""
// for the top), for messages.
int line_of(const std::string& text, const std::string& section, const std::string& key, int nth) {
  std::istringstream in(text);
  std::string line, current;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string t = trim(line.substr(0, line.find('#')));
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
      current = trim(t.substr(1, t.size() - 2));
      continue;
    }
    const auto eq = t.find('=');
    if (current == section && eq != std::string::npos && trim(t.substr(0, eq)) == key && nth-- == 0) return n;
  }
  return 0;
}

}  // namespace

const std::vector<std::string>& hardware_setting_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& [name, unused] : checks()) k.push_back(name);
    return k;
  }();
  return keys;
}

std::optional<Setting> HardwareSettings::get(const std::string& key, const std::string& device_kind) const {
  auto pick = [&](const std::map<std::string, Setting>& m) -> std::optional<Setting> {
    auto it = m.find(key);
    if (it == m.end() || it->second.value == "auto") return std::nullopt;
    return it->second;
  };
  if (auto d = per_device.find(device_kind); d != per_device.end())
    if (auto s = pick(d->second)) return s;
  return pick(global);
}

HardwareSettings read_hardware_settings(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw SettingsError("hardware settings file '" + file.string() + "': cannot be read");
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse_hardware_settings(buf.str(), file);
}

HardwareSettings parse_hardware_settings(const std::string& text, const std::filesystem::path& file) {
  po::parsed_options parsed(nullptr);
  try {
    std::istringstream stream(text);
    po::options_description none;
    parsed = po::parse_config_file(stream, none, /*allow_unregistered=*/true);
  } catch (const po::error& e) {
    throw SettingsError("hardware settings file '" + file.string() + "': " + e.what());
  }

  HardwareSettings settings;
  settings.file = file;
  static const std::regex section_name("^[a-z][a-z0-9_]*$");
  std::map<std::string, int> seen;  // how often each full key came up so far
  for (const po::option& o : parsed.options) {
    const std::string full = o.string_key;
    const auto dot = full.rfind('.');
    const std::string section = dot == std::string::npos ? "" : full.substr(0, dot);
    const std::string key = dot == std::string::npos ? full : full.substr(dot + 1);
    const int line = line_of(text, section, key, seen[full]++);
    const std::string where = "hardware settings file '" + file.string() + "', line " + std::to_string(line);
    const std::string origin = file.string() + ":" + std::to_string(line);
    if (!section.empty() && !std::regex_match(section, section_name))
      throw SettingsError(where + ": section [" + section + "] is not a device kind (cpu, cuda, mps, ...)");
    auto check = checks().find(key);
    if (check == checks().end()) {
      std::string known;
      for (const auto& k : hardware_setting_keys()) known += (known.empty() ? "" : ", ") + k;
      throw SettingsError(where + ": unknown key '" + key + "' (known: " + known + ")");
    }
    const std::string value = o.value.empty() ? "" : trim(o.value.front());
    if (std::string why = check->second(value); !why.empty())
      throw SettingsError(where + ": key '" + key + "' = '" + value + "': " + why);
    auto& target = section.empty() ? settings.global : settings.per_device[section];
    if (target.count(key))
      throw SettingsError(where + ": key '" + key + "' is set twice (first at " + target[key].origin + ")");
    target[key] = Setting{value, origin};
  }
  return settings;
}

}  // namespace mlhost
