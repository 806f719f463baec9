#include "mps_prepare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace mlh::mps {
namespace {

using nlohmann::json;

// Long values are cut so that the message stays readable in a log line.
std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

[[noreturn]] void bad_field(const std::string& field, const std::string& expected, const json& got) {
  throw Error(MLH_ERR_INVALID_ARGUMENT, "plan field '" + field + "': expected " + expected + ", got " + shown(got));
}

// "0.750" -> "0.75", "1.000" -> "1": the shortest text of the rounded value.
std::string ratio_text(double fraction) {
  // In thousandths, at least 1: PyTorch reads a ratio of 0 as "no limit".
  long thousandths = std::max(1L, std::lround(fraction * 1000.0));
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%.3f", static_cast<double>(thousandths) / 1000.0);
  std::string text = buffer;
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

std::optional<std::string> memory_fraction(const json& plan) {
  auto it = plan.find("memory_fraction");
  if (it == plan.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !(it->get<double>() > 0.0 && it->get<double>() <= 1.0))
    bad_field("memory_fraction", "a number in (0, 1]", *it);
  return ratio_text(it->get<double>());
}

std::optional<std::string> intra_op_threads(const json& plan) {
  auto threads = plan.find("threads");
  if (threads == plan.end() || threads->is_null()) return std::nullopt;
  if (!threads->is_object()) bad_field("threads", "an object", *threads);
  auto it = threads->find("intra_op");
  if (it == threads->end() || it->is_null()) return std::nullopt;
  // A JSON 4.0 is a float to nlohmann, so only true integers pass; the bound keeps the
  // count an int for the OpenMP runtime.
  bool positive_int = (it->is_number_unsigned() && it->get<uint64_t>() >= 1 && it->get<uint64_t>() <= INT32_MAX) ||
                      (it->is_number_integer() && it->get<int64_t>() >= 1 && it->get<int64_t>() <= INT32_MAX);
  if (!positive_int) bad_field("threads.intra_op", "a positive integer", *it);
  return std::to_string(it->get<int64_t>());
}

}  // namespace

std::vector<EnvVar> mps_environment(const std::string& plan_json) {
  json plan = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: not valid JSON: " + shown(json(plan_json)));
  if (!plan.is_object()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: expected a JSON object, got " + shown(plan));

  std::vector<EnvVar> env{{"PYTORCH_ENABLE_MPS_FALLBACK", "1"}};
  if (std::optional<std::string> ratio = memory_fraction(plan)) {
    env.push_back({"PYTORCH_MPS_HIGH_WATERMARK_RATIO", *ratio});
    env.push_back({"PYTORCH_MPS_LOW_WATERMARK_RATIO", *ratio});
  }
  if (std::optional<std::string> threads = intra_op_threads(plan)) env.push_back({"OMP_NUM_THREADS", *threads});
  return env;
}

}  // namespace mlh::mps
