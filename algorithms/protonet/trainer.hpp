// ProtoNet's trainer: the Conv-4 encoder on the plan's device, Adam with its learning rate
// halved every lr_halve_every episodes, the gradient scaler (fp16), and one episode's
// training step. Data-parallel with a Distributed: rank 0's initial weights everywhere, the
// ranks' gradients averaged before each step. What a checkpoint holds of it: state().
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/distributed.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <torch/optim/adam.h>

#include "config.hpp"
#include "data/image_set.hpp"
#include "episode_sampler.hpp"
#include "model.hpp"
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

  // One episode, its queries in micro-batches that back off when memory runs out
  // (oom_backoff.hpp): each micro-batch embeds the support set again with its share of the
  // queries, and the loss (a mean over queries) is weighted by that share, so the gradients
  // add up to the episode's. Batch norm sees each micro-batch's images: after a back-off its
  // statistics are those of the smaller micro-batches.
  ProtoLoss train_step(const Episode& e);

  // The checkpoint's modules: "model" and "optimizer" (names every checkpoint since the
  // first has used).
  mlh::rt::TrainingState state();

  mlh::rt::Distributed* dist;  // null: one process
  const Config& cfg;
  const mlh::rt::RuntimePlan& plan;
  Conv4 net;
  torch::optim::Adam optimizer;
  mlh::rt::GradScaler scaler;
  Distance distance;
  bool channels_last;
  mlh::rt::MicroBatchedStep micro;  // the run's, logging through its context (train())
};

struct EpisodeStats {
  double loss = 0, accuracy = 0;  // means over the episodes
  std::vector<double> accuracies;  // each episode's
};

// Runs `episodes` of `set` in eval mode without gradients, assembled ahead by the plan's data
// workers; `on_episode` hears the count done after each.
EpisodeStats evaluate(Trainer& l, const ImageSet& set, const std::vector<EpisodeIndices>& episodes,
                      const std::function<void(int64_t)>& on_episode = nullptr);

// The run folder's trained weights into `l`: the best checkpoint, or the newest with
// cfg.checkpoint "latest". None: mlh::Error(MLH_ERR_IO) naming the folder.
mlh::rt::LoadedCheckpoint load_trained(const mlh::RunContext& ctx, const Config& cfg, Trainer& l);

}  // namespace protonet
