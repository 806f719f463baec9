#include "trainer.hpp"

#include <cmath>
#include <optional>

#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/prefetcher.hpp>
#include <mlh/runtime/throughput.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <torch/utils.h>

#include "data_sets.hpp"

namespace protonet {

Trainer::Trainer(const Config& c, int64_t channels, const mlh::rt::RuntimePlan& p, mlh::rt::Distributed* d)
    : dist(d),
      cfg(c),
      plan(p),
      net(channels, c.width),
      optimizer(net->parameters(), torch::optim::AdamOptions(c.lr)),
      scaler(65536.0, 2.0, 0.5, 2000, p.precision == mlh::rt::Precision::kFp16),
      distance(parse_distance(c.distance)),
      channels_last(plan.channels_last) {
  net->to(plan.device);
  // cuDNN's fastest convolutions (tensor cores) want NHWC; on the CPU it rarely helps.
  if (channels_last) mlh::rt::to_channels_last(*net);
  if (dist) dist->broadcast_module(*net);  // every rank starts from rank 0's weights
}

void Trainer::set_lr(int64_t episode) {
  const double lr = cfg.lr * std::pow(0.5, static_cast<double>(episode / cfg.lr_halve_every));
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

double Trainer::lr() { return static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options()).lr(); }

ProtoLoss Trainer::forward(const Episode& e, bool train, int64_t query_begin, int64_t queries) {
  const int64_t k = static_cast<int64_t>(e.way) * e.shot;
  const int64_t all_queries = e.images.size(0) - k;
  if (queries < 0) queries = all_queries;
  at::Tensor images = e.images, targets = e.query_targets;
  if (queries < all_queries) {
    images = at::cat({e.images.narrow(0, 0, k), e.images.narrow(0, k + query_begin, queries)});
    targets = e.query_targets.narrow(0, query_begin, queries);
  }
  images = mlh::rt::to_device(images, plan.device, plan.pinned_memory);
  if (channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor embeddings;
  {
    mlh::rt::AutocastScope autocast(plan.precision, plan.device);
    embeddings = net->forward(images, train && plan.gradient_checkpointing);
  }
  return proto_loss(embeddings.narrow(0, 0, k), embeddings.narrow(0, k, queries),
                    mlh::rt::to_device(targets, plan.device, plan.pinned_memory), e.way, distance, cfg.cosine_scale);
}

ProtoLoss Trainer::train_step(const Episode& e) {
  const int64_t queries = e.query_targets.size(0);
  ProtoLoss total;
  micro.run(queries,
            {[&] {
               optimizer.zero_grad();
               total = ProtoLoss();
             },
             [&](int64_t begin, int64_t count, double weight) {
               ProtoLoss r = forward(e, true, begin, count);
               if (count == queries) {  // the whole episode at once: no copies
                 scaler.scale(r.loss).backward();
                 total = r;
                 return;
               }
               scaler.scale(r.loss * weight).backward();
               const at::Tensor part = r.loss.detach() * weight;
               total.loss = total.loss.defined() ? total.loss + part : part;
               total.accuracy += r.accuracy * weight;
             },
             [&] {
               // Data-parallel: each rank's episode is its share; the step uses the mean gradient.
               if (dist) dist->average_gradients(net->parameters());
               scaler.step(optimizer);
               scaler.update();
             }},
            plan.device, {net.get()});
  return total;
}

mlh::rt::TrainingState Trainer::state() {
  mlh::rt::TrainingState s;
  s.add("model", *net).add("optimizer", optimizer);
  return s;
}

EpisodeStats evaluate(Trainer& l, const ImageSet& set, const std::vector<EpisodeIndices>& episodes,
                      const std::function<void(int64_t)>& on_episode) {
  torch::NoGradGuard no_grad;
  const bool was_training = l.net->is_training();
  l.net->eval();
  const int64_t n = static_cast<int64_t>(episodes.size());
  mlh::rt::Prefetcher<Episode> batches(
      [&](int64_t i) -> std::optional<Episode> {
        if (i >= n) return std::nullopt;
        return ready_for(l.plan, assemble_episode(set, episodes[static_cast<size_t>(i)]));
      },
      mlh::rt::prefetch_depth(l.plan.prefetch_factor, l.plan.dataloader_workers),
      static_cast<int>(l.plan.dataloader_workers));
  EpisodeStats s;
  int64_t i = 0;
  while (auto e = batches.next()) {
    const ProtoLoss r = l.forward(*e, false);
    s.loss += r.loss.item<double>();
    s.accuracies.push_back(r.accuracy);
    s.accuracy += r.accuracy;
    if (on_episode) on_episode(++i);
  }
  if (n > 0) {
    s.loss /= static_cast<double>(n);
    s.accuracy /= static_cast<double>(n);
  }
  l.net->train(was_training);
  return s;
}

mlh::rt::LoadedCheckpoint load_trained(const mlh::RunContext& ctx, const Config& cfg, Trainer& l) {
  mlh::rt::TrainingState s = l.state();
  // A run without validation (data.trainval) has no best checkpoint: its latest is the result.
  return mlh::rt::load_trained(ctx, s, l.plan.device, cfg.validate ? cfg.checkpoint : "latest", mlh::rt::Goal::Minimize);
}

}  // namespace protonet
