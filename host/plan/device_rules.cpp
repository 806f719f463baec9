#include "plan/device_rules.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace mlhost {

using nlohmann::json;

int64_t nominal_memory_gib(int64_t bytes) {
  if (bytes < 0) return -1;
  // Rounded up: drivers report less than the nominal size (reserved memory), never more.
  return static_cast<int64_t>(std::ceil(static_cast<double>(bytes) / (1024.0 * 1024 * 1024) - 1e-9));
}

bool DeviceRule::matches(const Device& d) const {
  if (!device_kind.empty() && device_kind != d.kind) return false;
  if (!device_class.empty() && device_class != device_class_name(d.device_class)) return false;
  if (min_memory_gb || max_memory_gb) {
    const int64_t gb = nominal_memory_gib(d.memory_total_bytes);
    if (gb < 0) return false;  // unknown memory never matches a memory range
    if (min_memory_gb && gb < *min_memory_gb) return false;
    if (max_memory_gb && gb >= *max_memory_gb) return false;
  }
  return true;
}

std::string DeviceRule::describe() const {
  std::ostringstream o;
  o << (device_kind.empty() ? device_class : device_kind);
  auto num = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  if (min_memory_gb && max_memory_gb)
    o << ", " << num(*min_memory_gb) << "-" << num(*max_memory_gb) << " GB";
  else if (min_memory_gb)
    o << ", >= " << num(*min_memory_gb) << " GB";
  else if (max_memory_gb)
    o << ", < " << num(*max_memory_gb) << " GB";
  else
    o << ", any memory";
  return o.str();
}

std::vector<DeviceRule> read_device_rules(const std::filesystem::path& file, std::string* mode) {
  const std::string name = file.filename().string();
  auto fail = [&](const std::string& what) -> DeviceRulesError {
    return DeviceRulesError("rules file '" + file.string() + "': " + what);
  };
  std::ifstream in(file);
  if (!in) throw fail("cannot be read");
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) throw fail("must be a JSON object");
  if (mode) {
    *mode = doc.value("mode", std::string("extend"));
    if (*mode != "extend" && *mode != "replace")
      throw fail("field 'mode' must be \"extend\" or \"replace\", got \"" + *mode + "\"");
  }
  if (!doc.contains("rules") || !doc["rules"].is_array()) throw fail("field 'rules' must be an array");

  std::vector<DeviceRule> rules;
  static const std::vector<std::string> known = {"device", "class", "min_memory_gb", "max_memory_gb", "batch_size",
                                                 "gradient_checkpointing", "preset", "comment"};
  for (size_t i = 0; i < doc["rules"].size(); ++i) {
    const json& r = doc["rules"][i];
    const std::string at = "rules[" + std::to_string(i) + "]";
    if (!r.is_object()) throw fail(at + " must be an object");
    for (const auto& [key, unused] : r.items())
      if (std::find(known.begin(), known.end(), key) == known.end())
        throw fail(at + ": unknown field '" + key + "'");
    DeviceRule rule;
    rule.origin = name + " rule " + std::to_string(i + 1);
    auto str = [&](const char* k, std::string& out) {
      if (!r.contains(k)) return;
      if (!r[k].is_string() || r[k].get<std::string>().empty()) throw fail(at + "." + k + " must be a non-empty string");
      out = r[k].get<std::string>();
    };
    str("device", rule.device_kind);
    str("class", rule.device_class);
    if (rule.device_kind.empty() && rule.device_class.empty()) throw fail(at + " needs 'device' or 'class'");
    auto gb = [&](const char* k, std::optional<double>& out) {
      if (!r.contains(k)) return;
      if (!r[k].is_number() || r[k].get<double>() < 0) throw fail(at + "." + k + " must be a number >= 0");
      out = r[k].get<double>();
    };
    gb("min_memory_gb", rule.min_memory_gb);
    gb("max_memory_gb", rule.max_memory_gb);
    if (r.contains("batch_size")) {
      if (!r["batch_size"].is_number_integer() || r["batch_size"].get<int64_t>() < 1)
        throw fail(at + ".batch_size must be an integer >= 1");
      rule.batch_size = r["batch_size"].get<int64_t>();
    }
    if (r.contains("gradient_checkpointing")) {
      if (!r["gradient_checkpointing"].is_boolean()) throw fail(at + ".gradient_checkpointing must be true or false");
      rule.gradient_checkpointing = r["gradient_checkpointing"].get<bool>();
    }
    if (r.contains("preset")) {
      std::string p;
      str("preset", p);
      rule.preset = p;
    }
    rules.push_back(rule);
  }
  return rules;
}

std::vector<DeviceRule> load_device_rules(const std::filesystem::path& shipped, const std::filesystem::path& user_file) {
  std::vector<DeviceRule> rules;
  std::string mode = "extend";
  if (!user_file.empty()) rules = read_device_rules(user_file, &mode);
  if (mode == "extend") {
    std::vector<DeviceRule> base = read_device_rules(shipped);
    rules.insert(rules.end(), base.begin(), base.end());
  }
  return rules;
}

const DeviceRule* match_device_rule(const std::vector<DeviceRule>& rules, const Device& device) {
  for (const auto& r : rules)
    if (r.matches(device)) return &r;
  return nullptr;
}

}  // namespace mlhost
