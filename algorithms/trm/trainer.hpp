// One TRM training run's state and its step, as the reference's pretrain.py train_batch:
// the ACT carry persists across steps (halted rows take the next batch's rows), the summed
// loss is divided by the global batch, AdamW (or the reference's AdamATan2, cfg.optimizer)
// steps the dense weights and sign-SGD the puzzle-embedding rows of the batch, both on the
// warmup + cosine schedule; the EMA of the weights follows each step. Precision follows the
// plan (autocast; fp16 with a gradient scaler), gradient checkpointing of the recursion too.
// The step runs in micro-batches of rows that back off when memory runs out
// (oom_backoff.hpp): each micro-batch carries its own rows, and the carries are joined once
// the whole step succeeded.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/distributed.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <torch/optim/adamw.h>

#include "config.hpp"
#include "data/sampler.hpp"
#include "model/adam_atan2.hpp"
#include "model/ema.hpp"
#include "model/loss.hpp"
#include "model/sign_sgd.hpp"
#include "model/trm.hpp"

namespace trm {

// The reference's cosine_schedule_with_warmup_lr_lambda at `step` (1-based, as the
// reference counts after incrementing): linear warmup from 0, then a half cosine from
// base_lr down to base_lr * min_ratio at total_steps.
double scheduled_lr(int64_t step, double base_lr, int64_t warmup_steps, int64_t total_steps, double min_ratio);

// Host batch -> tensors in host memory (int32 copies).
BatchTensors host_tensors(const Batch& batch);
// Host tensors -> the device: page-locked and copied without blocking to a CUDA device when
// `pinned` (the plan's pinned_memory); no copy on the CPU.
BatchTensors to_device(const BatchTensors& host, c10::Device device, bool pinned);
// Host batch -> tensors on the device (int32), copied from pageable memory.
BatchTensors to_tensors(const Batch& batch, c10::Device device);

// A training batch ready for a step: its rows, and their tensors in host memory, page-locked
// already where the plan pins batches for a CUDA device. The plan's data workers make these
// (mlh::rt::OrderedPrefetcher), so that assembling and pinning overlap the steps.
struct StepBatch {
  Batch batch;
  BatchTensors host;
};
StepBatch prepare_batch(Batch batch, c10::Device device, bool pinned);

struct StepStats {
  double loss = 0;        // the step's loss / batch size
  double count = 0;       // rows that halted this step (with labels): the metrics below are over them
  double accuracy = 0;    // token accuracy
  double exact_accuracy = 0;
  double q_halt_accuracy = 0;
  double steps = 0;       // mean supervision steps at halting
  double lr = 0;
  bool skipped = false;   // fp16: inf/NaN gradients, step skipped by the scaler
};

class Trainer {
 public:
  // With `dist` (a distributed run): rank 0's initial weights are broadcast, and every step
  // averages the dense gradients over the ranks (each rank's batch is its share of the
  // global batch). Without: one process. `init_weights` (TrainingSession::init_weights, for
  // --init-from) gets the model first, before the EMA copies its weights.
  Trainer(const Config& cfg, const mlh::rt::RuntimePlan& plan, const ModelConfig& model_config,
          mlh::rt::Distributed* dist = nullptr, const std::function<void(torch::nn::Module&)>& init_weights = {});

  // One ACT step on `batch` (rows of halted sequences are replaced by its rows).
  StepStats step(const StepBatch& batch);
  StepStats step(const Batch& batch) { return step(prepare_batch(batch, plan_.device, plan_.pinned_memory)); }

  Trm& model() { return model_; }
  Ema* ema() { return ema_.get(); }
  int64_t global_step() const { return step_; }
  const ModelConfig& model_config() const { return model_config_; }

  // Model, optimizer and EMA; the caller adds its own values (sampler state, ...). After
  // loading, call restored() so that the step counter is taken from state.values.
  mlh::rt::TrainingState state();
  // The step's micro-batching; a run replaces it with one that logs through its context.
  mlh::rt::MicroBatchedStep& micro_batching() { return micro_; }
  void restored(const mlh::rt::TrainingState& state);

 private:
  Config cfg_;
  mlh::rt::RuntimePlan plan_;
  mlh::rt::Distributed single_process_;
  mlh::rt::Distributed& dist_;  // *dist, or single_process_
  ModelConfig model_config_;
  Trm model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // AdamW or AdamATan2 (cfg.optimizer)
  std::unique_ptr<SignSgd> sign_sgd_;
  std::unique_ptr<Ema> ema_;
  mlh::rt::GradScaler scaler_;
  std::optional<Carry> carry_;
  int64_t step_ = 0;
  mlh::rt::MicroBatchedStep micro_;
};

}  // namespace trm
