#include "cpu_prepare.hpp"

#include <nlohmann/json.hpp>

namespace mlh::cpu {
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

int thread_count(const json& threads, const char* key, int fallback) {
  auto it = threads.find(key);
  if (it == threads.end() || it->is_null()) return fallback;
  // A JSON 4.0 is a float to nlohmann, so only true integers pass; the bound keeps
  // the count an int.
  bool positive_int = (it->is_number_unsigned() && it->get<uint64_t>() >= 1 && it->get<uint64_t>() <= INT32_MAX) ||
                      (it->is_number_integer() && it->get<int64_t>() >= 1 && it->get<int64_t>() <= INT32_MAX);
  if (!positive_int) bad_field(std::string("threads.") + key, "a positive integer", *it);
  return it->get<int>();
}

std::string one_of(const json& plan, const char* key, const std::vector<std::string>& allowed) {
  auto it = plan.find(key);
  if (it == plan.end() || it->is_null()) return "";
  if (it->is_string())
    for (const auto& a : allowed)
      if (it->get<std::string>() == a) return a;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  bad_field(key, "one of " + list + " or null", *it);
}

}  // namespace

ThreadPlan read_thread_plan(const std::string& plan_json, int recommended_intra_op) {
  json plan = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: not valid JSON: " + shown(plan_json));
  if (!plan.is_object()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: expected a JSON object, got " + shown(plan));
  ThreadPlan result{std::max(1, recommended_intra_op), 1, "", ""};
  result.omp_proc_bind = one_of(plan, "omp_proc_bind", {"false", "true", "close", "spread", "master"});
  result.omp_wait_policy = one_of(plan, "omp_wait_policy", {"active", "passive"});
  auto threads = plan.find("threads");
  if (threads == plan.end() || threads->is_null()) return result;
  if (!threads->is_object()) bad_field("threads", "an object", *threads);
  result.intra_op = thread_count(*threads, "intra_op", result.intra_op);
  result.inter_op = thread_count(*threads, "inter_op", result.inter_op);
  return result;
}

std::vector<EnvVar> thread_environment(const ThreadPlan& plan) {
  std::string intra = std::to_string(plan.intra_op), inter = std::to_string(plan.inter_op);
  std::vector<EnvVar> env = {{"OMP_NUM_THREADS", intra},
                             {"MKL_NUM_THREADS", intra},
                             {"OPENBLAS_NUM_THREADS", intra},
                             {"MLH_INTEROP_THREADS", inter}};
  if (!plan.omp_proc_bind.empty()) env.push_back({"OMP_PROC_BIND", plan.omp_proc_bind});
  if (!plan.omp_wait_policy.empty()) env.push_back({"OMP_WAIT_POLICY", plan.omp_wait_policy});
  return env;
}

}  // namespace mlh::cpu
