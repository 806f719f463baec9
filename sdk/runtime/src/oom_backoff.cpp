// Out-of-memory back-off for a training step (see oom_backoff.hpp).
#include <mlh/runtime/oom_backoff.hpp>

#include <algorithm>
#include <new>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/nn/module.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/memory.hpp>
#include <mlh/runtime/seed.hpp>

namespace mlh::rt {
namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Copies of the modules' buffers, to put back after an attempt that ran out of memory (its
// forward passes may have updated batch-norm statistics).
std::vector<at::Tensor> snapshot_buffers(const std::vector<torch::nn::Module*>& modules) {
  std::vector<at::Tensor> copies;
  at::NoGradGuard no_grad;
  for (torch::nn::Module* m : modules)
    for (const at::Tensor& b : m->buffers()) copies.push_back(b.defined() ? b.clone() : at::Tensor());
  return copies;
}

void restore_buffers(const std::vector<torch::nn::Module*>& modules, const std::vector<at::Tensor>& copies) {
  at::NoGradGuard no_grad;
  size_t i = 0;
  for (torch::nn::Module* m : modules)
    for (at::Tensor& b : m->buffers()) {
      if (b.defined() && copies[i].defined()) b.copy_(copies[i]);
      ++i;
    }
}

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e)) return true;
  const std::string what = first_line(e.what());
  return what.find("out of memory") != std::string::npos || what.find("not enough memory") != std::string::npos;
}

MicroBatchedStep::MicroBatchedStep(Log warn, Metric metric, int64_t micro_batch)
    : warn_(std::move(warn)), metric_(std::move(metric)), micro_(micro_batch) {
  if (micro_batch < 0) throw std::invalid_argument("MicroBatchedStep: micro_batch < 0");
}

MicroBatchedStep::MicroBatchedStep(const mlh::RunContext& ctx, int64_t micro_batch)
    : MicroBatchedStep([&ctx](const std::string& m) { ctx.warn(m); },
                       [&ctx, step = int64_t{0}](const std::string& name, double value) mutable {
                         ctx.metric(name, value, step++);
                       },
                       micro_batch) {}

int64_t MicroBatchedStep::micro_batch(int64_t rows) const { return micro_ > 0 ? std::min(micro_, rows) : rows; }

void MicroBatchedStep::run(int64_t rows, const Callbacks& callbacks, c10::Device device,
                           const std::vector<torch::nn::Module*>& modules) {
  if (rows < 1) throw std::invalid_argument("MicroBatchedStep: a step needs at least one row");
  // What an undone attempt may have changed besides the gradients.
  const RngState rng = capture_rng_state();
  const std::vector<at::Tensor> buffers = snapshot_buffers(modules);
  for (;;) {
    const int64_t micro = micro_batch(rows);
    try {
      callbacks.zero_grad();
      for (int64_t begin = 0; begin < rows; begin += micro) {
        const int64_t count = std::min(micro, rows - begin);
        callbacks.accumulate(begin, count, static_cast<double>(count) / static_cast<double>(rows));
      }
      callbacks.step();
      return;
    } catch (const std::exception& e) {
      if (!backoff_ || !is_out_of_memory(e)) throw;
      const std::string why = first_line(e.what());
      callbacks.zero_grad();
      empty_device_cache(device);
      if (micro <= 1)
        throw mlh::Error(MLH_ERR_OUT_OF_MEMORY, "out of memory on " + device.str() +
                                                    " even with micro-batches of 1 row (the batch: " +
                                                    std::to_string(rows) + " rows): " + why);
      micro_ = std::max<int64_t>(1, micro / 2);
      ++backoffs_;
      if (warn_)
        warn_("out of memory with micro-batches of " + std::to_string(micro) + " rows (the batch: " +
              std::to_string(rows) + "): the step runs again with " + std::to_string(micro_) +
              "-row micro-batches, gradients accumulated over " + std::to_string((rows + micro_ - 1) / micro_) +
              " (the same batch for the optimizer). " + why);
      if (metric_) metric_("train/oom_backoffs", static_cast<double>(backoffs_));
      restore_rng_state(rng);
      restore_buffers(modules, buffers);
    }
  }
}

nlohmann::json MicroBatchedStep::state() const { return {{"micro_batch", micro_}, {"backoffs", backoffs_}}; }

void MicroBatchedStep::load_state(const nlohmann::json& state) {
  if (!state.is_object() || !state.value("micro_batch", nlohmann::json()).is_number_integer() ||
      state["micro_batch"].get<int64_t>() < 0 || !state.value("backoffs", nlohmann::json()).is_number_integer())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "checkpoint: the micro-batch state is not {\"micro_batch\": n >= 0, \"backoffs\": k}: " + state.dump());
  micro_ = state["micro_batch"].get<int64_t>();
  backoffs_ = state["backoffs"].get<int64_t>();
}

}  // namespace mlh::rt
