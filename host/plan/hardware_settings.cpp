#include "plan/hardware_settings.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <regex>
#include <sstream>

#include <boost/program_options.hpp>
#include <mlh/plan_fields.hpp>

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

Check integer_at_least(long min, bool allow_auto) {
  return [=](const std::string& v) -> std::string {
    if (allow_auto && v == "auto") return "";
    static const std::regex digits("^-?[0-9]{1,12}$");
    if (!std::regex_match(v, digits) || std::stol(v) < min)
      return std::string("must be an integer >= ") + std::to_string(min) + (allow_auto ? " or auto" : "");
    return "";
  };
}

Check fraction() {
  return [](const std::string& v) -> std::string {
    if (v == "auto") return "";
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x) || x <= 0 || x > 1)
      return "must be a number in (0, 1] or auto";
    return "";
  };
}

// The check of a plan setting's value, from what the plan's table says it accepts.
Check check_of(const mlh::PlanSetting& setting) {
  switch (setting.kind) {
    case mlh::SettingKind::kSwitch:
      return one_of({"auto", "true", "false"});
    case mlh::SettingKind::kChoice: {
      std::vector<std::string> words{"auto"};
      std::istringstream choices(setting.choices);
      for (std::string w; std::getline(choices, w, '|');) words.push_back(w);
      return one_of(words);
    }
    case mlh::SettingKind::kCount: {
      const Check at_least = integer_at_least(static_cast<long>(setting.min), true);
      if (!setting.max) return at_least;
      const long long max = setting.max;
      const std::string note = setting.max_note;
      return [at_least, max, note](const std::string& v) -> std::string {
        const std::string problem = at_least(v);
        if (!problem.empty() || v == "auto") return problem;
        return std::stoll(v) <= max ? ""
                                    : "must be at most " + std::to_string(max) + (note.empty() ? "" : " (" + note + ")") +
                                          " or auto";
      };
    }
    case mlh::SettingKind::kShare:
      return fraction();
    case mlh::SettingKind::kGib:
      return [](const std::string& v) -> std::string {
        if (v == "auto") return "";
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        return v.empty() || *end != '\0' || !std::isfinite(x) || x <= 0 ? "must be a number of GiB > 0 or auto" : "";
      };
    case mlh::SettingKind::kName:
      return [](const std::string& v) -> std::string {
        static const std::regex name("^[a-z0-9][a-z0-9_-]{0,63}$");
        return std::regex_match(v, name) ? "" : "must be auto or a preset name ([a-z0-9_-])";
      };
    case mlh::SettingKind::kAllocatorConf:
      return [](const std::string& v) -> std::string {
        static const std::regex conf("^(auto|[a-z_]+:[^,: ]+(,[a-z_]+:[^,: ]+)*)$");
        return std::regex_match(v, conf) ? "" : "must be jemalloc's MALLOC_CONF, option:value[,option:value...]";
      };
  }
  return nullptr;
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
