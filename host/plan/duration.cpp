#include "plan/duration.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "plan/device_choice.hpp"
#include "plan/plan_text.hpp"

namespace mlhost {

using nlohmann::json;

std::optional<json> expected_duration(const json& run_description, const json& calibration) {
  const json work = run_description.is_object() ? run_description.value("work", json()) : json();
  if (!work.is_object()) return std::nullopt;
  const double amount = work.value("amount", 0.0);
  const std::string unit = work.value("unit", "");
  if (!(amount > 0) || unit.empty()) return std::nullopt;
  const double cap = work.value("max_seconds", 0.0);
  json expected{{"work", amount}, {"unit", unit}, {"shorten", work.value("shorten", "")}};
  if (cap > 0) expected["max_seconds"] = cap;
  // The figure of the settings the calibration chose, which the plan runs with; without one
  // (no calibration measured now or cached, or one in another unit) the work alone is said.
  double throughput = 0;
  if (calibration.is_object() && calibration.contains("chosen") && calibration.value("unit", "") == unit)
    for (const json& m : calibration.value("measurements", json::array()))
      if (m.value("settings", json()) == calibration["chosen"])
        throughput = std::max(throughput, m.value("throughput", 0.0));
  if (!(throughput > 0)) return expected;
  expected["seconds"] = cap > 0 ? std::min(amount / throughput, cap) : amount / throughput;
  expected["throughput"] = throughput;
  expected["capped"] = cap > 0 && amount / throughput > cap;
  return expected;
}

std::string duration_text(double seconds) {
  const long s = std::lround(seconds);
  if (s < 90) return "about " + std::to_string(std::max(s, 1L)) + " s";
  const long minutes = std::lround(seconds / 60);
  if (minutes < 90) return "about " + std::to_string(minutes) + " min";
  return "about " + std::to_string(minutes / 60) + " h " + std::to_string(minutes % 60) + " min";
}

std::string expected_duration_text(const json& e) {
  const std::string unit = e.value("unit", "");
  const std::string work = with_thousands(std::llround(e.value("work", 0.0))) + " " + unit;
  std::string text;
  if (e.contains("seconds")) {
    text = duration_text(e.value("seconds", 0.0)) + ": " + work + " at " + speed_text(e.value("throughput", 0.0)) + " " +
           unit + "/s (the calibration's figure)";
    if (e.value("capped", false)) text += ", then its time limit ends it";
  } else {
    text = "not known before it trains (no calibration has measured this device's speed): " + work;
    if (e.contains("max_seconds")) text += ", or its time limit, " + duration_text(e.value("max_seconds", 0.0));
    text += "; the progress line gives an ETA once it trains";
  }
  const std::string shorten = e.value("shorten", "");
  text += "; " + (shorten.empty() ? std::string() : shorten + " or ") + "--max-steps shortens it";
  return text;
}

}  // namespace mlhost
