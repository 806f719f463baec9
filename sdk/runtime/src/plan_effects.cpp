// What this process did with the plan (see plan_effects.hpp).
#include "mlh/runtime/plan_effects.hpp"

#include <cstdlib>
#include <mutex>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "mlh/plugin.hpp"
#include "mlh/runtime/memory_limit.hpp"

namespace mlh::rt {
namespace {

using nlohmann::json;

std::mutex& effects_mutex() {
  static std::mutex m;
  return m;
}

// field -> key -> value; guarded by effects_mutex().
json& recorded() {
  static json effects = json::object();
  return effects;
}

// The summary filter installed by report_plan_effects_in_summaries().
std::string add_report(const std::string& summary_json) {
  json summary = json::parse(summary_json, nullptr, /*allow_exceptions=*/false);
  if (!summary.is_object()) return summary_json;  // the host reports a malformed summary itself
  summary["plan_applied"] = json::parse(plan_effects_report_json());
  return summary.dump();
}

}  // namespace

void count_plan_effect(const char* field, const char* key, int64_t n) {
  std::lock_guard<std::mutex> lock(effects_mutex());
  json& counter = recorded()[field][key];
  counter = (counter.is_number_integer() ? counter.get<int64_t>() : 0) + n;
}

void note_plan_effect(const char* field, const char* key, int64_t value) {
  std::lock_guard<std::mutex> lock(effects_mutex());
  recorded()[field][key] = value;
}

void note_plan_effect(const char* field, const char* key, double value) {
  std::lock_guard<std::mutex> lock(effects_mutex());
  recorded()[field][key] = value;
}

void note_plan_effect(const char* field, const char* key, const std::string& value) {
  std::lock_guard<std::mutex> lock(effects_mutex());
  recorded()[field][key] = value;
}

std::string plan_effects_report_json() {
  json report;
  {
    std::lock_guard<std::mutex> lock(effects_mutex());
    report = recorded();
  }
  // Process-wide settings as they are now: an algorithm may have changed them after
  // apply_plan (a config's own thread count, say), and the report says what really ran.
  report["threads"] = {{"intra_op", at::get_num_threads()},
                       {"inter_op", static_cast<int64_t>(at::get_num_interop_threads())}};
  const at::Context& context = at::globalContext();
  report["deterministic"] = context.deterministicAlgorithms();
  report["cudnn_benchmark"] = context.benchmarkCuDNN();
  report["tf32_matmul"] = context.allowTF32CuBLAS();
  if (const std::optional<int64_t> cap = cpu_memory_limit())
    report["memory_limit_bytes"]["cpu_tensor_cap"] = *cap;
  // The OpenMP runtime reads these when it starts, before any of our code runs: what the
  // host set in this worker's environment is what this process got.
  for (const auto& [field, variable] : {std::pair<const char*, const char*>{"omp_proc_bind", "OMP_PROC_BIND"},
                                        {"omp_wait_policy", "OMP_WAIT_POLICY"}}) {
    const char* value = std::getenv(variable);
    report[field] = value ? json(value) : json(nullptr);
  }
  return report.dump();
}

void reset_plan_effects() {
  std::lock_guard<std::mutex> lock(effects_mutex());
  recorded() = json::object();
}

void report_plan_effects_in_summaries() { mlh::detail::summary_filter() = &add_report; }

}  // namespace mlh::rt
