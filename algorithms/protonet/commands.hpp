// ProtoNet's commands, run by the plugin (protonet_plugin.cpp) and by the tests:
//   train      episodic training with Adam, validation after each epoch, early stopping,
//              checkpoints (best by validation loss), resume, model.safetensors at the end
//   eval       M test episodes from the best (or latest) checkpoint: mean accuracy, 95% CI
//   classify   a support folder (one subfolder per class) and query images: predicted
//              class and distance-based probabilities per image
//   forward    the trained encoder's embeddings of given images (forward.inputs), written to
//              outputs.safetensors for comparison with the same network elsewhere
//   benchmark  training episodes/s at 5-way 5-shot 15-query and 60-way 5-shot 5-query
//              (28x28), each also as convolution GFLOP/s against a 1024x1024 fp32 matmul
//              measured in the same run, and embedding throughput (images/s); with
//              benchmark.compare_encoders, Conv-4 against ResNet-12 (benchmark_encoders.hpp)
//   calibrate  one training episode's speed at the config's shape with the plan's settings,
//              for the host's calibration (mlh/runtime/calibration.hpp), and the bf16/fp16
//              quality check on the run's data when the host asks for it
//
// The plan's batch_size is not used: ProtoNet's batch is the episode, whose size is the
// config's way/shot/query. The plan's preset picks a schedule (presets_json), its
// gradient_checkpointing checkpoints the encoder block by block (Conv-4) or stage by stage
// (ResNet-12; model.encoder, encoder.hpp), its precision runs the forward pass
// under autocast, its dataloader_workers/prefetch_factor assemble episodes ahead.
//
// Where each lives: train in train.cpp, eval and classify in eval.cpp, forward in forward.cpp, benchmark and
// calibrate in benchmark.cpp; the model's step in trainer.cpp, the data in data_sets.cpp.
#pragma once

#include <string>

#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>

#include "config.hpp"
#include "data_sets.hpp"

namespace mlh::rt {
struct RuntimePlan;
}

namespace protonet {

using Commands = mlh::CommandTable<mlh::RunContext&, const Config&, const mlh::rt::RuntimePlan&, const DataSources&>;

// The commands in the order the plugin lists them (the first, train, is the default).
const Commands& command_table();

// Runs ctx.command() with the plan applied and the random streams seeded per rank. The
// plugin passes load_dataset, its decoder and dataset_class_names; tests an in-memory loader.
void run_command(mlh::RunContext& ctx, const DatasetLoader& load, const ImageDecoder& decode = nullptr,
                 const ClassLister& list_classes = nullptr);

void train(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data);
void eval(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data);
void classify(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data);
void forward(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data);
void benchmark(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data);
void calibrate(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data);

}  // namespace protonet
