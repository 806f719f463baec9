// Whether a value is one a plan setting accepts, from what the plan's table declares for it
// (mlh/plan_fields.hpp: each setting's kind, bounds and choices). The one check every entry
// point of a setting uses: the command line's overrides (--precision, --threads,
// --allocator), the hardware settings file, the calibration cache and the worker's plan
// reader, so a choice or bound is written once, in the table.
//
// Header-only and free of LibTorch, like the table.
#ifndef MLH_PLAN_SETTING_CHECK_HPP
#define MLH_PLAN_SETTING_CHECK_HPP

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "plan_fields.hpp"

namespace mlh {

// The setting a hardware settings key names ("precision", "intra_op_threads", "allocator"),
// or nullptr.
inline const PlanSetting* find_plan_setting(const std::string& key) {
  for (const PlanFieldInfo& field : kPlanFields)
    for (const PlanSetting& setting : field.settings)
      if (setting.key && key == setting.key) return &setting;
  return nullptr;
}

// The table's setting `key`; a key that is not one is a programming error.
inline const PlanSetting& plan_setting(const std::string& key) {
  const PlanSetting* setting = find_plan_setting(key);
  if (!setting) throw std::logic_error("'" + key + "' is not a setting of the plan's table (mlh/plan_fields.hpp)");
  return *setting;
}

// The values of a kChoice setting, in the table's order.
inline std::vector<std::string> plan_setting_choices(const PlanSetting& setting) {
  std::vector<std::string> choices;
  std::string current;
  for (const char* c = setting.choices; *c; ++c) {
    if (*c == '|') {
      choices.push_back(current);
      current.clear();
    } else {
      current += *c;
    }
  }
  if (!current.empty()) choices.push_back(current);
  return choices;
}

namespace detail {

inline std::string join_choices(const std::vector<std::string>& words) {
  std::string list;
  for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
  return list;
}

// A whole decimal number within long long's range, or nothing.
inline bool whole_number(const std::string& text, long long* value) {
  if (text.empty() || text.size() > 19) return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (!(text[i] >= '0' && text[i] <= '9') && !(i == 0 && text[i] == '-' && text.size() > 1)) return false;
  errno = 0;
  *value = std::strtoll(text.c_str(), nullptr, 10);
  return errno == 0;
}

inline bool finite_number(const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return *end == '\0' && std::isfinite(*value);
}

inline bool lower_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (!first && (c == '_' || c == '-'));
}

// jemalloc's MALLOC_CONF: option:value[,option:value...], options of [a-z_], values without
// ',', ':' or spaces.
inline bool allocator_conf(const std::string& text) {
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string pair = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = pair.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == pair.size()) return false;
    for (size_t i = 0; i < colon; ++i)
      if (!((pair[i] >= 'a' && pair[i] <= 'z') || pair[i] == '_')) return false;
    for (size_t i = colon + 1; i < pair.size(); ++i)
      if (pair[i] == ':' || pair[i] == ' ') return false;
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

}  // namespace detail

// "" where `setting` accepts `value`; else what the value must be, for the entry point's
// message ("must be one of fp32, fp16, bf16"). `or_auto`: the entry point also takes "auto"
// (the command line, the settings file), which the message then offers.
inline std::string plan_setting_problem(const PlanSetting& setting, const std::string& value, bool or_auto = false) {
  if (or_auto && value == "auto") return "";
  const std::string auto_too = or_auto ? " or auto" : "";
  switch (setting.kind) {
    case SettingKind::kSwitch:
      return value == "true" || value == "false" ? "" : std::string("must be one of ") + (or_auto ? "auto, " : "") + "true, false";
    case SettingKind::kChoice: {
      std::vector<std::string> choices = plan_setting_choices(setting);
      for (const std::string& c : choices)
        if (value == c) return "";
      if (or_auto) choices.insert(choices.begin(), "auto");
      return "must be one of " + detail::join_choices(choices);
    }
    case SettingKind::kCount: {
      long long n = 0;
      if (!detail::whole_number(value, &n) || n < setting.min)
        return "must be an integer >= " + std::to_string(setting.min) + auto_too;
      if (setting.max && n > setting.max)
        return "must be at most " + std::to_string(setting.max) +
               (*setting.max_note ? " (" + std::string(setting.max_note) + ")" : std::string()) + auto_too;
      return "";
    }
    case SettingKind::kShare: {
      double x = 0;
      return detail::finite_number(value, &x) && x > 0 && x <= 1 ? "" : "must be a number in (0, 1]" + auto_too;
    }
    case SettingKind::kGib: {
      double x = 0;
      return detail::finite_number(value, &x) && x > 0 ? "" : "must be a number of GiB > 0" + auto_too;
    }
    case SettingKind::kName: {
      bool ok = !value.empty() && value.size() <= 64;
      for (size_t i = 0; ok && i < value.size(); ++i) ok = detail::lower_name_char(value[i], i == 0);
      return ok ? "" : "must be a preset name ([a-z0-9_-], up to 64 characters)" + auto_too;
    }
    case SettingKind::kAllocatorConf:
      return detail::allocator_conf(value) ? "" : "must be jemalloc's MALLOC_CONF, option:value[,option:value...]" + auto_too;
  }
  return "is not checked by the plan's table";
}

// The same by the setting's key.
inline std::string plan_setting_problem(const std::string& key, const std::string& value, bool or_auto = false) {
  return plan_setting_problem(plan_setting(key), value, or_auto);
}

}  // namespace mlh

#endif  // MLH_PLAN_SETTING_CHECK_HPP
