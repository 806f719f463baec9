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

// How each key's value is checked. Which keys there are is the plan's table's to say
// (mlh::kPlanFields' settings) and the launcher's (kLauncherKeys); checks() holds the two
// lists to each other on first use.
const std::map<std::string, Check>& value_checks() {
  static const std::map<std::string, Check> c = {
      {"precision", one_of({"auto", "fp32", "fp16", "bf16"})},
      {"batch_size", integer_at_least(1, true)},
      {"gradient_checkpointing", one_of({"auto", "true", "false"})},
      {"preset",
       [](const std::string& v) -> std::string {
         static const std::regex name("^[a-z0-9][a-z0-9_-]{0,63}$");
         return std::regex_match(v, name) ? "" : "must be auto or a preset name ([a-z0-9_-])";
       }},
      {"memory_fraction", fraction()},
      {"memory_limit_gb",
       [](const std::string& v) -> std::string {
         if (v == "auto") return "";
         char* end = nullptr;
         const double x = std::strtod(v.c_str(), &end);
         return v.empty() || *end != '\0' || !std::isfinite(x) || x <= 0 ? "must be a number of GiB > 0 or auto" : "";
       }},
      {"empty_cache_steps", integer_at_least(0, true)},
      {"pinned_memory", one_of({"auto", "true", "false"})},
      {"prefetch_factor", integer_at_least(1, true)},
      {"dataloader_workers", integer_at_least(0, true)},
      {"intra_op_threads", integer_at_least(1, true)},
      {"inter_op_threads", integer_at_least(1, true)},
      {"omp_proc_bind", one_of({"auto", "false", "true", "close", "spread", "master"})},
      {"omp_wait_policy", one_of({"auto", "active", "passive"})},
      {"cudnn_benchmark", one_of({"auto", "true", "false"})},
      {"tf32_matmul", one_of({"auto", "true", "false"})},
      {"deterministic", one_of({"auto", "true", "false"})},
      {"channels_last", one_of({"auto", "true", "false"})},
      {"cuda_graphs", one_of({"auto", "true", "false"})},
      {"allocator", one_of({"auto", "glibc", "glibc-tuned", "jemalloc", "tcmalloc"})},
      // glibc ignores an mmap threshold above 32 MiB (half its largest heap).
      {"malloc_mmap_threshold",
       [](const std::string& v) -> std::string {
         const std::string problem = integer_at_least(0, true)(v);
         if (!problem.empty() || v == "auto") return problem;
         return std::stoll(v) <= (32LL << 20) ? "" : "must be at most 33554432 (32 MiB, glibc's limit) or auto";
       }},
      {"malloc_trim_threshold", integer_at_least(0, true)},
      {"malloc_top_pad", integer_at_least(0, true)},
      // Experiment tracking (host/run/tracking): the launcher's, not the plan's.
      {"track", one_of({"auto", "none", "mlflow"})},
      {"mlflow_experiment",
       [](const std::string& v) -> std::string {
         return v.empty() || v.size() > 500 ? "must be an MLflow experiment name (1 to 500 characters)" : "";
       }},
      {"jemalloc_conf",
       [](const std::string& v) -> std::string {
         static const std::regex conf("^(auto|[a-z_]+:[^,: ]+(,[a-z_]+:[^,: ]+)*)$");
         return std::regex_match(v, conf) ? "" : "must be jemalloc's MALLOC_CONF, option:value[,option:value...]";
       }},
  };
  return c;
}

// Keys of the launcher's own, not the plan's: experiment tracking (host/run/tracking).
constexpr const char* kLauncherKeys[] = {"track", "mlflow_experiment"};

const std::map<std::string, Check>& checks() {
  static const std::map<std::string, Check>& c = [] () -> const std::map<std::string, Check>& {
    std::vector<std::string> keys(std::begin(kLauncherKeys), std::end(kLauncherKeys));
    for (const mlh::PlanFieldInfo& f : mlh::kPlanFields)
      for (const char* key : f.settings)
        if (key) keys.push_back(key);
    if (keys.size() != value_checks().size())
      throw std::logic_error("hardware settings: " + std::to_string(keys.size()) + " keys in the plan's table and the "
                             "launcher's, " + std::to_string(value_checks().size()) + " value checks");
    for (const std::string& key : keys)
      if (!value_checks().count(key)) throw std::logic_error("hardware settings: no value check for key '" + key + "'");
    return value_checks();
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
