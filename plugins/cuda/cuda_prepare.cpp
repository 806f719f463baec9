#include "cuda_prepare.hpp"

#include <nlohmann/json.hpp>

namespace mlh::cuda {
namespace {

using nlohmann::json;

// PyTorch's caching allocator refuses max_split_size_mb at or below its large-block
// size, 20 MiB (kLargeBuffer).
constexpr int64_t kMinimumSplitSizeMb = 21;

// Long values are cut so that the message stays readable in a log line.
std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

[[noreturn]] void bad_field(const std::string& field, const std::string& expected, const json& got) {
  throw Error(MLH_ERR_INVALID_ARGUMENT, "plan field '" + field + "': expected " + expected + ", got " + shown(got));
}

// The member `key` of `object`, or nullptr when it is missing or null.
const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// A JSON integer (not 4.0, which nlohmann keeps as a float) in [minimum, INT32_MAX].
std::optional<int64_t> integer_at_least(const json& value, int64_t minimum) {
  if (!value.is_number_integer()) return std::nullopt;
  if (value.is_number_unsigned() && value.get<uint64_t>() > INT32_MAX) return std::nullopt;  // before it wraps
  const int64_t v = value.get<int64_t>();
  if (v < minimum || v > INT32_MAX) return std::nullopt;
  return v;
}

void read_memory(const json& memory, CudaPlan& plan) {
  if (!memory.is_object()) bad_field("memory", "an object", memory);
  if (const json* v = member(memory, "expandable_segments")) {
    if (!v->is_boolean()) bad_field("memory.expandable_segments", "true or false", *v);
    plan.expandable_segments = v->get<bool>();
  }
  if (const json* v = member(memory, "max_split_size_mb")) {
    plan.max_split_size_mb = integer_at_least(*v, kMinimumSplitSizeMb);
    if (!plan.max_split_size_mb) bad_field("memory.max_split_size_mb", "an integer above 20 (MiB)", *v);
  }
  if (const json* v = member(memory, "garbage_collection_threshold")) {
    if (!v->is_number() || !(v->get<double>() > 0.0 && v->get<double>() < 1.0))
      bad_field("memory.garbage_collection_threshold", "a number between 0 and 1 (exclusive)", *v);
    plan.garbage_collection_threshold = v->get<double>();
  }
}

}  // namespace

CudaPlan read_cuda_plan(const std::string& plan_json) {
  json plan = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: not valid JSON: " + shown(plan_json));
  if (!plan.is_object()) throw Error(MLH_ERR_INVALID_ARGUMENT, "plan: expected a JSON object, got " + shown(plan));
  CudaPlan result;
  if (const json* memory = member(plan, "memory")) read_memory(*memory, result);
  if (const json* threads = member(plan, "threads")) {
    if (!threads->is_object()) bad_field("threads", "an object", *threads);
    if (const json* v = member(*threads, "intra_op")) {
      result.intra_op_threads = integer_at_least(*v, 1);
      if (!result.intra_op_threads) bad_field("threads.intra_op", "a positive integer", *v);
    }
  }
  return result;
}

std::string allocator_config(const CudaPlan& plan) {
  std::string config;
  auto add = [&](const char* key, const std::string& value) {
    config += (config.empty() ? "" : ",") + std::string(key) + ":" + value;
  };
  // PyTorch spells the booleans True/False.
  if (plan.expandable_segments) add("expandable_segments", *plan.expandable_segments ? "True" : "False");
  if (plan.max_split_size_mb) add("max_split_size_mb", std::to_string(*plan.max_split_size_mb));
  // json's dump gives the shortest text that reads back the same double ("0.8").
  if (plan.garbage_collection_threshold)
    add("garbage_collection_threshold", json(*plan.garbage_collection_threshold).dump());
  return config;
}

std::vector<EnvVar> cuda_environment(const std::string& uuid, const CudaPlan& plan) {
  std::vector<EnvVar> env = {{"CUDA_VISIBLE_DEVICES", uuid}, {"MLH_TORCH_DEVICE", "cuda:0"}};
  if (std::string config = allocator_config(plan); !config.empty()) env.push_back({"PYTORCH_CUDA_ALLOC_CONF", config});
  if (plan.intra_op_threads) env.push_back({"OMP_NUM_THREADS", std::to_string(*plan.intra_op_threads)});
  return env;
}

}  // namespace mlh::cuda
