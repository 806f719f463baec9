// Reading the host's execution plan (docs/plan.md) inside a plugin, e.g. in a device
// plugin's prepare(). Every field is optional: missing or null means "not set". A value of
// the wrong kind is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) that names the field:
//   plan field 'threads.intra_op': expected a positive integer, got "4"
#ifndef MLH_PLAN_READER_HPP
#define MLH_PLAN_READER_HPP

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan_setting_check.hpp"
#include "plugin.hpp"

namespace mlh {

class PlanReader {
 public:
  using json = nlohmann::json;

  // Throws when `plan_json` is not a JSON object.
  explicit PlanReader(const std::string& plan_json) {
    plan_ = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
    if (plan_.is_discarded()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: not valid JSON: " + shown(json(plan_json)));
    if (!plan_.is_object()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: expected a JSON object, got " + shown(plan_));
  }

  const json& plan() const { return plan_; }

  // The value at a dotted path ("threads.intra_op"), or nullptr when it or a parent is
  // missing or null. A parent that is not an object is an error.
  const json* find(const std::string& path) const {
    const json* node = &plan_;
    std::string walked;
    size_t start = 0;
    for (;;) {
      const size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!node->is_object()) fail(walked, "an object", *node);
      auto it = node->find(key);
      if (it == node->end() || it->is_null()) return nullptr;
      node = &*it;
      walked += (walked.empty() ? "" : ".") + key;
      if (dot == std::string::npos) return node;
      start = dot + 1;
    }
  }

  // An integer (a JSON 4.0 is not one) in [minimum, INT32_MAX], so it fits an int.
  std::optional<int64_t> integer(const std::string& path, int64_t minimum, const std::string& expected) const {
    const json* v = find(path);
    if (!v) return std::nullopt;
    const bool fits = v->is_number_integer() && !(v->is_number_unsigned() && v->get<uint64_t>() > INT32_MAX) &&
                      v->get<int64_t>() >= minimum && v->get<int64_t>() <= INT32_MAX;
    if (!fits) fail(path, expected, *v);
    return v->get<int64_t>();
  }

  std::optional<int64_t> positive_integer(const std::string& path) const {
    return integer(path, 1, "a positive integer");
  }

  // A number for which `ok` holds.
  std::optional<double> number(const std::string& path, const std::function<bool(double)>& ok,
                               const std::string& expected) const {
    const json* v = find(path);
    if (!v) return std::nullopt;
    if (!v->is_number() || !ok(v->get<double>())) fail(path, expected, *v);
    return v->get<double>();
  }

  std::optional<bool> boolean(const std::string& path) const {
    const json* v = find(path);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(path, "true or false", *v);
    return v->get<bool>();
  }

  // The value at `path` of a setting of the plan's table (mlh/plan_fields.hpp), as text,
  // checked by what the table declares for `setting` (mlh/plan_setting_check.hpp): the same
  // check as the host's command line, settings file and calibration cache. A count, share or
  // size must be a JSON number, a switch true or false, the rest strings.
  std::optional<std::string> setting(const std::string& path, const PlanSetting& setting) const {
    const json* v = find(path);
    if (!v) return std::nullopt;
    std::string text;
    switch (setting.kind) {
      case SettingKind::kCount:
        if (!v->is_number_integer()) fail(path, "an integer", *v);
        text = v->dump();
        break;
      case SettingKind::kShare:
      case SettingKind::kGib:
        if (!v->is_number()) fail(path, "a number", *v);
        text = v->dump();
        break;
      case SettingKind::kSwitch:
        if (!v->is_boolean()) fail(path, "true or false", *v);
        text = v->dump();
        break;
      default:
        if (!v->is_string()) fail(path, "a string", *v);
        text = v->get<std::string>();
    }
    const std::string problem = plan_setting_problem(setting, text);
    if (!problem.empty())
      throw Error(MLH_ERR_INVALID_ARGUMENT, "plan field '" + path + "': " + shown(*v) + " " + problem);
    return text;
  }

  std::optional<std::string> one_of(const std::string& path, const std::vector<std::string>& allowed) const {
    const json* v = find(path);
    if (!v) return std::nullopt;
    if (v->is_string())
      for (const auto& a : allowed)
        if (v->get<std::string>() == a) return a;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(path, "one of " + list + " or null", *v);
  }

  [[noreturn]] static void fail(const std::string& path, const std::string& expected, const json& got) {
    throw Error(MLH_ERR_INVALID_ARGUMENT, "plan field '" + path + "': expected " + expected + ", got " + shown(got));
  }

 private:
  // Long values are cut so that the message stays readable in a log line.
  static std::string shown(const json& value) {
    std::string text = value.dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
  }

  json plan_;
};

}  // namespace mlh

#endif  // MLH_PLAN_READER_HPP
