// The environment a worker needs to train on one chosen GPU: that GPU made the only
// visible one, the device string to use then, and the CUDA allocator settings of the plan.
// All read by CUDA and LibTorch when they start, hence set before. (The CPU side's threads
// and allocator are the host's: it sets them from the plan for every device.)
#pragma once

#include <mlh/plugin.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mlh::cuda {

// The parts of the plan this plugin turns into environment variables; all optional.
struct CudaPlan {
  std::optional<bool> expandable_segments;             // memory.expandable_segments
  std::optional<int64_t> max_split_size_mb;            // memory.max_split_size_mb, > 20
  std::optional<double> garbage_collection_threshold;  // memory.garbage_collection_threshold, in (0, 1)
};

// Reads the plan. Missing or null fields are absent; the ranges are PyTorch's own checks
// of PYTORCH_CUDA_ALLOC_CONF, made here so that a bad plan fails before a worker starts.
// Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field for a value out of range or
// of the wrong type, or when the plan is not a JSON object.
CudaPlan read_cuda_plan(const std::string& plan_json);

// PYTORCH_CUDA_ALLOC_CONF's value, "expandable_segments:True,max_split_size_mb:512,
// garbage_collection_threshold:0.8" with only the fields the plan has; empty when none.
std::string allocator_config(const CudaPlan& plan);

// CUDA_VISIBLE_DEVICES=<uuid> (a UUID, unlike an index, names the same GPU however the
// worker's driver orders them), MLH_TORCH_DEVICE=cuda:0 (the chosen GPU is then the only
// one), and PYTORCH_CUDA_ALLOC_CONF when allocator_config() is not empty.
std::vector<EnvVar> cuda_environment(const std::string& uuid, const CudaPlan& plan);

}  // namespace mlh::cuda
