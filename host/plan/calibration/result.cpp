#include "plan/calibration/result.hpp"

#include <mlh/plan_setting_check.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace mlhost {

using nlohmann::json;

namespace {

std::string fixed(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f", value);
  return buf;
}

// One decimal: "77.2", "-1.8".
std::string one_decimal(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", value);
  return buf;
}

// Reads a calibration result field by field; every problem names where and what.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail("", "an object");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    throw CalibrationError(where_ + (key.empty() ? "" : "." + key) + ": expected " + expected);
  }
  // `key`'s value refused by the plan's table, which says what it must be.
  [[noreturn]] void refuse(const std::string& key, const std::string& value, const std::string& problem) const {
    throw CalibrationError(where_ + "." + key + ": '" + value + "' " + problem);
  }
  const json& at(const std::string& key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, "a value (it is missing)");
    return *it;
  }
  std::string text(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "a string");
    return v.get<std::string>();
  }
  int64_t integer(const std::string& key, int64_t min) const {
    const json& v = at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min) fail(key, "an integer >= " + std::to_string(min));
    return v.get<int64_t>();
  }
  double number(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) fail(key, "a number >= 0");
    return v.get<double>();
  }
  bool boolean(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "true or false");
    return v.get<bool>();
  }
  std::string where(const std::string& key) const { return where_ + "." + key; }

 private:
  const json& j_;
  std::string where_;
};

}  // namespace

CalibrationKey CalibrationKey::from_json(const json& j, const std::string& where) {
  const Reader r(j, where);
  CalibrationKey k;
  k.algorithm = r.text("algorithm");
  k.algorithm_version = r.text("algorithm_version");
  k.torch_version = r.text("torch_version");
  k.device = r.text("device");
  k.device_name = r.text("device_name");
  k.cores = r.integer("cores", 0);
  k.memory_gib = r.integer("memory_gib", 0);
  k.host_version = r.text("host_version");
  // Absent in entries written before calibrations were kept per workload: they match no run
  // that has one, and are measured again.
  if (j.contains("workload")) k.workload = r.text("workload");
  return k;
}

namespace {

CalibrationSettings settings_from_json(const json& j, const std::string& where) {
  const Reader r(j, where);
  CalibrationSettings s;
  // Each value checked by the plan's table, as the command line's and the settings file's are.
  auto checked = [&r](const char* field, const char* setting, const std::string& value) {
    const std::string problem = mlh::plan_setting_problem(setting, value);
    if (!problem.empty()) r.refuse(field, value, problem);
    return value;
  };
  s.allocator = checked("allocator", "allocator", r.text("allocator"));
  s.threads = static_cast<int>(std::stoll(checked("threads", "intra_op_threads", std::to_string(r.integer("threads", INT64_MIN)))));
  s.precision = checked("precision", "precision", r.text("precision"));
  return s;
}

}  // namespace

json CalibrationKey::to_json() const {
  json j = {{"algorithm", algorithm}, {"algorithm_version", algorithm_version}, {"torch_version", torch_version},
            {"device", device},       {"device_name", device_name},             {"cores", cores},
            {"memory_gib", memory_gib}, {"host_version", host_version}};
  if (!workload.empty()) j["workload"] = workload;
  return j;
}

json CalibrationSettings::to_json() const {
  return {{"allocator", allocator}, {"threads", threads}, {"precision", precision}};
}

std::string CalibrationSettings::describe() const {
  return allocator + ", " + std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + precision;
}

bool CalibrationResult::varies(const std::string& field) const {
  return std::find(varied.begin(), varied.end(), field) != varied.end();
}

std::optional<double> CalibrationResult::throughput_of(const CalibrationSettings& settings) const {
  std::optional<double> best;
  for (const auto& m : measurements)
    if (m.settings == settings) best = best ? std::max(*best, m.throughput) : m.throughput;
  return best;
}

const CalibrationMeasurement* CalibrationResult::glibc_reference() const {
  for (const auto& m : measurements)
    if (m.settings.allocator == "glibc" && m.settings.threads == chosen.threads && m.settings.precision == "fp32")
      return &m;
  return measurements.empty() ? nullptr : &measurements.front();
}

json CalibrationResult::to_json() const {
  json m = json::array();
  for (const auto& x : measurements) m.push_back({{"settings", x.settings.to_json()}, {"throughput", x.throughput}});
  return {{"key", key.to_json()},       {"benchmark", benchmark},       {"unit", unit},
          {"measurements", m},          {"chosen", chosen.to_json()},   {"varied", varied},
          {"precision_check", precision_check},
          {"complete", complete},       {"seconds", seconds},           {"measured_at", measured_at}};
}

CalibrationResult CalibrationResult::from_json(const json& j, const std::string& where) {
  const Reader r(j, where);
  CalibrationResult c;
  c.key = CalibrationKey::from_json(r.at("key"), r.where("key"));
  c.benchmark = r.text("benchmark");
  c.unit = r.text("unit");
  const json& m = r.at("measurements");
  if (!m.is_array() || m.empty()) r.fail("measurements", "a non-empty array");
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string at = r.where("measurements[" + std::to_string(i) + "]");
    const Reader one(m[i], at);
    CalibrationMeasurement x;
    x.settings = settings_from_json(one.at("settings"), at + ".settings");
    x.throughput = one.number("throughput");
    c.measurements.push_back(x);
  }
  c.chosen = settings_from_json(r.at("chosen"), r.where("chosen"));
  const json& varied = r.at("varied");
  if (!varied.is_array()) r.fail("varied", "an array of allocator, threads, precision");
  for (const json& v : varied) {
    if (!v.is_string() || (v != "allocator" && v != "threads" && v != "precision"))
      r.fail("varied", "an array of allocator, threads, precision");
    c.varied.push_back(v.get<std::string>());
  }
  if (!c.throughput_of(c.chosen)) r.fail("chosen", "settings that were measured");
  c.precision_check = r.at("precision_check");
  if (!c.precision_check.is_null() && !c.precision_check.is_object()) r.fail("precision_check", "an object or null");
  // Only a precision the calibration chose needs its quality check. Where it did not vary the
  // precision (a GPU: the plan's rule picks bf16 there), chosen.precision is the plan's, which
  // the plan does not take from the cache; rejecting it made every GPU run calibrate again.
  if (c.varies("precision") && c.chosen.precision != "fp32" &&
      !(c.precision_check.is_object() && c.precision_check.value("passed", false) == true &&
        c.precision_check.value("precision", "") == c.chosen.precision))
    r.fail("chosen.precision", "fp32 unless a passed precision_check of that precision");
  c.complete = r.boolean("complete");
  c.seconds = r.number("seconds");
  c.measured_at = r.text("measured_at");
  return c;
}

CalibrationSettings pick_fastest(const std::vector<CalibrationMeasurement>& measurements,
                                 const CalibrationSettings& incumbent, double margin) {
  CalibrationSettings best = incumbent;
  std::optional<double> best_rate;
  for (const auto& m : measurements)
    if (m.settings == incumbent) best_rate = best_rate ? std::max(*best_rate, m.throughput) : m.throughput;
  if (!best_rate) return incumbent;
  const double bar = *best_rate * (1.0 + margin);
  double fastest = bar;
  for (const auto& m : measurements)
    if (m.throughput >= fastest && !(m.settings == incumbent)) {
      fastest = m.throughput;
      best = m.settings;
    }
  return best;
}

std::string precision_check_text(const json& check) {
  const std::string verdict =
      check.value("precision", "") + " quality check " + (check.value("passed", false) ? "passed" : "failed");
  if (check.contains("reason")) return verdict + " (" + check.value("reason", "") + ")";  // it could not run
  if (check.contains("held_out")) {
    auto percent = [&](const char* key) { return one_decimal(100 * check.value(key, NAN)) + "%"; };
    auto points = [](double v) { return (v >= 0 ? "+" : "") + one_decimal(100 * v); };
    std::string text = verdict + ": held-out accuracy " + percent("reduced_accuracy") + " vs fp32 " +
                       percent("fp32_accuracy") + " (difference " + points(check.value("difference", NAN)) + " points";
    const json& interval = check.value("interval", json());
    if (interval.is_array() && interval.size() == 2)
      text += ", 95% interval " + points(interval[0].get<double>()) + " to " + points(interval[1].get<double>());
    return text + ", " + std::to_string(check.value("held_out", 0)) + " episodes after " +
           std::to_string(check.value("steps", 0)) + " training steps)";
  }
  std::string text = verdict + " (loss " + fixed(check.value("reduced_loss", NAN)) + " vs fp32 " +
                     fixed(check.value("fp32_loss", NAN));
  if (check.contains("reduced_accuracy"))
    text += ", accuracy " + fixed(check.value("reduced_accuracy", NAN)) + " vs " + fixed(check.value("fp32_accuracy", NAN));
  return text + ")";
}

std::string calibrated_source(const CalibrationResult& r, const std::string& field) {
  const double chosen = r.throughput_of(r.chosen).value_or(0);
  const std::string unit = " " + r.unit + "/s";
  std::string text = "calibrated: ";
  if (field == "allocator") {
    const CalibrationMeasurement* ref = r.glibc_reference();
    text += r.chosen.allocator + " " + fixed(chosen);
    if (ref && ref->settings.allocator != r.chosen.allocator) text += " vs " + fixed(ref->throughput) + unit + " with glibc defaults";
    else text += unit;
  } else if (field == "threads") {
    auto threads = [](int n) { return std::to_string(n) + (n == 1 ? " thread " : " threads "); };
    text += threads(r.chosen.threads) + fixed(chosen) + unit;
    std::string others;
    for (const auto& m : r.measurements)
      if (m.settings.allocator == r.chosen.allocator && m.settings.precision == "fp32" && m.settings.threads != r.chosen.threads)
        others += (others.empty() ? "" : ", ") + threads(m.settings.threads) + fixed(m.throughput);
    if (!others.empty()) text += " (" + others + ")";
  } else {
    text += r.chosen.precision + " " + fixed(chosen) + unit;
    CalibrationSettings reduced = r.chosen;
    reduced.precision = "bf16";
    if (!r.precision_check.is_object() && r.chosen.precision == "fp32" && r.throughput_of(reduced))
      text += " vs bf16 " + fixed(*r.throughput_of(reduced)) + "; the algorithm runs no bf16 quality check, so fp32";
    if (r.precision_check.is_object()) {
      const std::string p = r.precision_check.value("precision", "");
      CalibrationSettings other = r.chosen;
      other.precision = r.chosen.precision == "fp32" ? p : "fp32";
      if (auto t = r.throughput_of(other)) text += " vs " + other.precision + " " + fixed(*t);
      text += "; " + precision_check_text(r.precision_check);
    }
  }
  if (!r.complete) text += "; partial, the time bound stopped it";
  return text;
}

std::vector<int> thread_candidates(int cores) {
  std::vector<int> out;
  for (int t = 1; t < cores; t *= 2) out.push_back(t);
  out.push_back(std::max(1, cores));
  return out;
}

}  // namespace mlhost
