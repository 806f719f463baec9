#include "trainer.hpp"

#include <cmath>
#include <optional>

#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/throughput.hpp>
#include <torch/utils.h>

#include "data_sets.hpp"

namespace protonet {

Trainer::Trainer(const Config& c, int64_t channels, const mlh::rt::RuntimePlan& p, mlh::rt::Distributed* d)
    : dist(d),
      cfg(c),
      plan(p),
      net(make_encoder(c, channels)),
      optimizer(net->parameters(), torch::optim::AdamOptions(c.lr)),
      scaler(65536.0, 2.0, 0.5, 2000, p.precision == mlh::rt::Precision::kFp16),
      distance(parse_distance(c.distance)),
      channels_last(plan.channels_last),
      graph(mlh::rt::plan_step_graph(p.cuda_graphs, p.device, [this](const std::string& line) {
        if (log) log(line);
      })) {
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
  return loss_on_device(images, mlh::rt::to_device(targets, plan.device, plan.pinned_memory), e.way, k, train);
}

ProtoLoss Trainer::loss_on_device(const at::Tensor& images, const at::Tensor& targets, int way, int64_t support,
                                  bool train) {
  at::Tensor embeddings;
  {
    mlh::rt::AutocastScope autocast(plan.precision, plan.device);
    embeddings = net->forward(images, train && plan.gradient_checkpointing);
  }
  return proto_loss(embeddings.narrow(0, 0, support), embeddings.narrow(0, support, images.size(0) - support), targets,
                    way, distance, cfg.cosine_scale);
}

ProtoLoss Trainer::train_step(const Episode& e) {
  if (graph.on()) {
    const std::string why = why_not_captured(e);
    if (why.empty()) return graph_step(e);
    graph.turn_off(why);
  }
  return eager_step(e);
}

std::string Trainer::why_not_captured(const Episode& e) {
  if (scaler.enabled()) return "fp16's loss scaling checks the gradients for overflow on the host";
  if (dist && dist->world_size() > 1) return "the ranks average their gradients between backward and the step";
  const int64_t queries = e.query_targets.size(0);
  if (micro.micro_batch(queries) < queries) return "the episode's queries run in micro-batches";
  for (const auto& group : optimizer.param_groups())
    if (static_cast<const torch::optim::AdamOptions&>(group.options()).amsgrad()) return "Adam's AMSGrad";
  return "";
}

// The graph reads the episode from static tensors on the device and leaves its loss and
// accuracy in the capture's tensors; Adam reads the learning rate from a tensor loaded
// before each step, so its halving needs no new capture.
ProtoLoss Trainer::graph_step(const Episode& e) {
  if (!graph_images_.defined() || graph_images_.sizes() != e.images.sizes()) {
    graph_images_ = at::empty(e.images.sizes(), e.images.options().device(plan.device),
                              channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
    graph_targets_ = at::empty(e.query_targets.sizes(), e.query_targets.options().device(plan.device));
  }
  // Copies from the data workers' page-locked episodes run asynchronously, ahead of the graph.
  const bool async = mlh::rt::pins_batches(plan.device, plan.pinned_memory);
  graph_images_.copy_(e.images, async);
  graph_targets_.copy_(e.query_targets, async);
  if (!graph_adam_) graph_adam_.emplace(optimizer);
  const int64_t support = static_cast<int64_t>(e.way) * e.shot;
  const std::string key =
      std::to_string(e.way) + "-way " + std::to_string(e.shot) + "-shot " + std::to_string(e.query) + "-query";
  graph_adam_->load_lr();
  bool eager = false;
  ProtoLoss result;
  graph.step(
      key,
      [&] {
        // Gradients set to none: backward makes them anew, inside the capture from the
        // graph's own memory, which every replay then writes.
        for (at::Tensor& p : net->parameters()) p.mutable_grad() = at::Tensor();
        ProtoLoss r = loss_on_device(graph_images_, graph_targets_, e.way, support, true);
        r.loss.backward();
        graph_adam_->step();
        graph_out_.loss = r.loss.detach();
        graph_out_.accuracy = r.accuracy;
      },
      [&] {
        eager = true;
        result = eager_step(e);
      });
  if (eager) return result;
  graph_adam_->count_host_step();
  // Copies: the next replay overwrites the graph's own tensors.
  result.loss = graph_out_.loss.clone();
  result.accuracy = graph_out_.accuracy.clone();
  return result;
}

void Trainer::use_graph_recorder(std::unique_ptr<mlh::rt::GraphRecorder> recorder) {
  graph = mlh::rt::StepGraph(std::move(recorder), [this](const std::string& line) { if (log) log(line); });
  graph_adam_.reset();
}

ProtoLoss Trainer::eager_step(const Episode& e) {
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
               const at::Tensor share = r.accuracy * weight;
               total.accuracy = total.accuracy.defined() ? total.accuracy + share : share;
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

}  // namespace protonet
