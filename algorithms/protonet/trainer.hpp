// ProtoNet's trainer: the config's encoder (Conv-4 or ResNet-12) on the plan's device, Adam with its learning rate
// halved every lr_halve_every episodes, the gradient scaler (fp16), and one episode's
// training step. Data-parallel with a Distributed: rank 0's initial weights everywhere, the
// ranks' gradients averaged before each step. What a checkpoint holds of it: state().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/distributed.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/graph_safe_adam.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <mlh/runtime/step_graph.hpp>
#include <torch/optim/adam.h>

#include "config.hpp"
#include "data/image_set.hpp"
#include "episode_sampler.hpp"
#include "encoder.hpp"
#include "proto_loss.hpp"

namespace protonet {

struct Trainer {
  Trainer(const Config& c, int64_t channels, const mlh::rt::RuntimePlan& p, mlh::rt::Distributed* d = nullptr);

  // The learning rate for `episode` (halved every cfg.lr_halve_every episodes).
  void set_lr(int64_t episode);
  double lr();

  // The episode's loss over its support and the queries [query_begin, query_begin + queries)
  // (every query by default).
  ProtoLoss forward(const Episode& e, bool train, int64_t query_begin = 0, int64_t queries = -1);

  // One training episode: as a replayed CUDA graph where the plan's cuda_graphs is on and
  // the step can be captured (graph_step), else eagerly (eager_step).
  ProtoLoss train_step(const Episode& e);

  // One episode, its queries in micro-batches that back off when memory runs out
  // (oom_backoff.hpp): each micro-batch embeds the support set again with its share of the
  // queries, and the loss (a mean over queries) is weighted by that share, so the gradients
  // add up to the episode's. Batch norm sees each micro-batch's images: after a back-off its
  // statistics are those of the smaller micro-batches.
  ProtoLoss eager_step(const Episode& e);

  // Replaces the graph's recorder (tests: a recorder that runs on the CPU); null: eager.
  void use_graph_recorder(std::unique_ptr<mlh::rt::GraphRecorder> recorder);

  // The checkpoint's modules: "model" and "optimizer" (names every checkpoint since the
  // first has used).
  mlh::rt::TrainingState state();

  mlh::rt::Distributed* dist;  // null: one process
  const Config& cfg;
  const mlh::rt::RuntimePlan& plan;
  Encoder net;  // the config's model.encoder (make_encoder)
  torch::optim::Adam optimizer;
  mlh::rt::GradScaler scaler;
  Distance distance;
  bool channels_last;
  mlh::rt::MicroBatchedStep micro;  // the run's, logging through its context (train())
  mlh::rt::StepGraph graph;          // the training episode's CUDA graph (step_graph.hpp)
  std::function<void(const std::string&)> log;  // the graph's captures and why it is off (train())

 private:
  // The loss of images and query targets already on the device, in the model's layout.
  ProtoLoss loss_on_device(const at::Tensor& images, const at::Tensor& targets, int way, int64_t support, bool train);
  // Why this episode cannot run as a graph ("" where it can).
  std::string why_not_captured(const Episode& e);
  ProtoLoss graph_step(const Episode& e);

  // What the graph reads and writes: the episode's images and targets, copied in before each
  // step, and its loss and accuracy, read after it.
  at::Tensor graph_images_, graph_targets_;
  ProtoLoss graph_out_;
  std::optional<mlh::rt::GraphSafeAdam> graph_adam_;
};

}  // namespace protonet
