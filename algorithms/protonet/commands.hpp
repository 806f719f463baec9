// ProtoNet's commands, run by the plugin (protonet_plugin.cpp) and by the tests:
//   train      episodic training with Adam, validation after each epoch, early stopping,
//              checkpoints (best by validation loss), resume, model.safetensors at the end
//   eval       M test episodes from the best (or latest) checkpoint: mean accuracy, 95% CI
//   classify   a support folder (one subfolder per class) and query images: predicted
//              class and distance-based probabilities per image
//   benchmark  training episodes/s at 5-way 5-shot 15-query and 60-way 5-shot 5-query
//              (28x28), each also as convolution GFLOP/s against a 1024x1024 fp32 matmul
//              measured in the same run, and embedding throughput (images/s)
//   calibrate  one training episode's speed at the config's shape with the plan's settings,
//              for the host's calibration (mlh/runtime/calibration.hpp)
//
// The plan's batch_size is not used: ProtoNet's batch is the episode, whose size is the
// config's way/shot/query. The plan's preset picks a schedule (presets_json), its
// gradient_checkpointing checkpoints the Conv-4 blocks, its precision runs the forward pass
// under autocast, its dataloader_workers/prefetch_factor assemble episodes ahead.
#pragma once

#include <functional>
#include <string>

#include <mlh/plugin.hpp>

#include "data/image_set.hpp"

namespace protonet {

// Loads a dataset; the plugin passes load_dataset, tests an in-memory fixture.
using DatasetLoader = std::function<ImageSet(const DatasetSpec&)>;

// Decodes image files as `spec` says (height, width, channels, invert) into one ImageSet in
// file order (classify's queries); the plugin passes the data library's decoder.
using ImageDecoder = std::function<ImageSet(const std::vector<std::string>& files, const DatasetSpec& spec)>;

void run_command(mlh::RunContext& ctx, const DatasetLoader& load, const ImageDecoder& decode = nullptr);

}  // namespace protonet
