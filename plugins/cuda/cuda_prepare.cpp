#include "cuda_prepare.hpp"

#include <mlh/plan_reader.hpp>
#include <nlohmann/json.hpp>

namespace mlh::cuda {
namespace {

using nlohmann::json;

// PyTorch's caching allocator refuses max_split_size_mb at or below its large-block
// size, 20 MiB (kLargeBuffer).
constexpr int64_t kMinimumSplitSizeMb = 21;

}  // namespace

CudaPlan read_cuda_plan(const std::string& plan_json) {
  const PlanReader plan(plan_json);
  CudaPlan result;
  result.expandable_segments = plan.boolean("memory.expandable_segments");
  result.max_split_size_mb = plan.integer("memory.max_split_size_mb", kMinimumSplitSizeMb, "an integer above 20 (MiB)");
  result.garbage_collection_threshold = plan.number("memory.garbage_collection_threshold",
                                                    [](double t) { return t > 0.0 && t < 1.0; },
                                                    "a number between 0 and 1 (exclusive)");
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
  return env;
}

}  // namespace mlh::cuda
