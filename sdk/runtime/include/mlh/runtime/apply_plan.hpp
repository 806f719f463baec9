// The host's execution plan (docs/plan.md) as the training runtime uses it, and applying its
// process-wide settings to LibTorch at the start of a run.
//
//   const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json);
//   mlh::rt::apply_plan(plan);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "mlh/runtime/precision.hpp"

namespace torch::nn {
class Module;
}

namespace mlh::rt {

// Missing or null plan fields take the defaults below ("not set").
struct RuntimePlan {
  std::string torch_device = "cpu";  // worker_torch_device when present, else torch_device
  c10::Device device{c10::DeviceType::CPU};
  Precision precision = Precision::kFp32;
  std::optional<int64_t> batch_size;
  bool gradient_checkpointing = false;
  std::optional<std::string> preset;
  std::optional<int> intra_op_threads;  // threads.intra_op
  std::optional<int> inter_op_threads;  // threads.inter_op
  std::optional<double> memory_fraction;  // (0, 1]; CUDA's caching allocator
  std::optional<int64_t> memory_limit_bytes;  // > 0; LibTorch's CPU tensor memory (memory_limit.hpp)
  int64_t empty_cache_steps = 0;          // 0: never
  bool pinned_memory = false;
  int64_t prefetch_factor = 2;
  int64_t dataloader_workers = 0;
  bool cudnn_benchmark = false;
  bool tf32_matmul = false;
  bool deterministic = false;
  bool channels_last = false;  // convolutional models in NHWC layout (to_channels_last below)
  bool cuda_graphs = false;    // capture the training step once and replay it (step_graph.hpp)
  std::optional<uint64_t> seed;
  std::optional<int64_t> max_steps;  // --max-steps: TrainingSession::step_limit and after_step end the loop there
  // --init-from PATH [--freeze NAME,...]: the model's first weights (TrainingSession::init_weights).
  struct InitFrom {
    std::string path;
    std::vector<std::string> freeze;  // parameter names, dotted prefixes or globs
  };
  std::optional<InitFrom> init_from;

  // Throws mlh::Error naming the field of a malformed value (see mlh::PlanReader).
  static RuntimePlan parse(const std::string& plan_json);
};

// Applies threads, backend switches, the CUDA memory fraction and the seed.
//  - The inter-op pool can be sized once per process, before any inter-op work: a later,
//    different request is ignored with a LibTorch warning instead of failing the run.
//  - deterministic turns on deterministic algorithms (and deterministic cuDNN), turns cuDNN
//    benchmarking off (it picks kernels by timing), and on CUDA sets CUBLAS_WORKSPACE_CONFIG
//    (when unset) as cuBLAS requires for reproducible results.
//  - tf32_matmul allows TF32 in cuBLAS matmuls and cuDNN convolutions.
//  - memory_fraction caps the CUDA caching allocator on the plan's device; on the CPU,
//    memory_limit_bytes caps LibTorch's CPU tensor memory (memory_limit.hpp).
// A CUDA device in a LibTorch built without CUDA is an mlh::Error. From then on every summary
// the plugin sends carries what the run applied of the plan (plan_effects.hpp).
void apply_plan(const RuntimePlan& plan);

// Converts the module's 4-D parameters and buffers to channels-last (NHWC) memory layout, for
// convolutional models when the plan's channels_last is on: cuDNN's fastest convolutions
// (tensor cores, fp16/bf16) and oneDNN's on the CPU use it. A one-channel weight gets NHWC
// strides too, so that the first convolution on grey images runs NHWC as well. Call after
// moving the model to its device and feed it channels-last inputs
// (x.contiguous(at::MemoryFormat::ChannelsLast)).
void to_channels_last(torch::nn::Module& module);

}  // namespace mlh::rt
