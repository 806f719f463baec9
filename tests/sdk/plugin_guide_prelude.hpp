// What the plugin guide's C++ snippets (docs/plugin-guide.md) leave to the reader: the SDK's
// headers (the guide introduces them one snippet at a time), LibTorch's modules, and the
// reader's own model, data and trainer, declared here. InstalledSdk compiles each snippet of
// the installed guide as a file of its own after this header, in a namespace of its own (its
// #include lines first), against the installed package: a snippet that names an SDK function
// wrongly, or one the SDK no longer has, fails to compile.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <mlh/command_table.hpp>
#include <mlh/config_fields.hpp>
#include <mlh/config_table.hpp>
#include <mlh/format.hpp>
#include <mlh/plan_reader.hpp>
#include <mlh/plugin.hpp>
#include <mlh/run_description.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/batch_finder.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/memory_limit.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <mlh/runtime/training_session.hpp>
#include <mlh/uniform_index.hpp>
#include <nlohmann/json.hpp>
#include <torch/nn.h>
#include <torch/optim.h>

using json = nlohmann::json;

// The reader's own: the config schema and defaults, the data, the loss, the model's size.
extern const char* kSchema;
extern const char* kDefaults;
std::pair<at::Tensor, at::Tensor> batch_at(int64_t step, int64_t size, uint64_t seed, const mlh::rt::Distributed& dist);
at::Tensor loss_of(const at::Tensor& x, const at::Tensor& y);
int64_t parameter_count_for(const std::string& config_json);
void train(mlh::RunContext& ctx);

// The reader's parsed config and a trainer that runs one step at a batch size.
struct Config {
  int64_t batch_size = 64;
  int64_t micro_batch = 0;
};
struct Trainer {
  Trainer(const Config& cfg, const mlh::rt::RuntimePlan& plan, int64_t batch);
  mlh::rt::MicroBatchedStep micro;
  void step();
};
