// ProtoNet's training episode through the step graph, with a recorder that runs on the CPU
// (fake_graph_recorder.hpp): the episodes copied into the graph's static tensors, Adam with
// its count and learning rate on the device (halved without a new capture), train as the
// eager step does; a step that cannot be captured turns the graph off and trains on. On a GPU:
// Gpu.ProtonetEpisodeGraphTrainsAsTheEagerStep.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include <ATen/Parallel.h>
#include <mlh/runtime/apply_plan.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "data_sets.hpp"
#include "episode_sampler.hpp"
#include "fake_graph_recorder.hpp"
#include "trainer.hpp"

namespace {

using nlohmann::json;

std::vector<protonet::Episode> episodes(int n) {
  const protonet::ImageSet set = protonet::synthetic_set(10, 20);
  const protonet::EpisodeSampler sampler(set);
  std::mt19937_64 rng(5);
  std::vector<protonet::Episode> out;
  for (int i = 0; i < n; ++i) out.push_back(protonet::assemble_episode(set, sampler.sample(5, 2, 3, rng)));
  return out;
}

TEST(ProtonetGraph, EpisodesThroughTheStepGraphTrainAsTheEagerStep) {
  // One thread: the two runs compare to 1e-4, and a conv bias under batch norm gets only
  // rounding noise as gradient, which Adam scales into full steps; the same reduction order
  // in both keeps that noise the same.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const protonet::Config cfg = protonet::parse_config({{"lr_halve_every", 6}});
  const mlh::rt::RuntimePlan plan;  // the CPU, fp32
  torch::manual_seed(3);
  protonet::Trainer eager(cfg, 1, plan);
  torch::manual_seed(3);
  protonet::Trainer graphed(cfg, 1, plan);
  graphed.use_graph_recorder(std::make_unique<FakeGraphRecorder>());
  eager.net->train();
  graphed.net->train();
  int64_t i = 0;
  for (const protonet::Episode& e : episodes(14)) {
    eager.set_lr(i);
    graphed.set_lr(i);
    const protonet::ProtoLoss a = eager.train_step(e), b = graphed.train_step(e);
    EXPECT_NEAR(b.loss.item<double>(), a.loss.item<double>(), 1e-4 * (1 + std::abs(a.loss.item<double>()))) << "episode " << i;
    EXPECT_DOUBLE_EQ(b.accuracy.item<double>(), a.accuracy.item<double>()) << "episode " << i;
    ++i;
  }
  // 3 warm-up steps, then one capture: the rate halved twice (episodes 6 and 12) in the replays.
  EXPECT_EQ(graphed.graph.captures(), 1);
  EXPECT_EQ(graphed.graph.replays(), 11);
  EXPECT_DOUBLE_EQ(graphed.lr(), cfg.lr / 4);
  const auto pa = eager.net->named_parameters(), pb = graphed.net->named_parameters();
  for (const auto& item : pa)
    EXPECT_TRUE(torch::allclose(pb[item.key()], item.value(), 1e-4, 1e-6))
        << item.key() << ": " << (pb[item.key()] - item.value()).abs().max().item<double>();
  const auto ba = eager.net->named_buffers(), bb = graphed.net->named_buffers();
  for (const auto& item : ba)
    EXPECT_TRUE(torch::allclose(bb[item.key()].to(at::kDouble), item.value().to(at::kDouble), 1e-4, 1e-6))
        << item.key() << " (batch norm's running statistics follow the replays)";
  at::set_num_threads(threads);
}

TEST(ProtonetGraph, MicroBatchedQueriesRunEagerlyAndSayWhy) {
  const protonet::Config cfg = protonet::parse_config({{"micro_batch", 5}});
  const mlh::rt::RuntimePlan plan;
  protonet::Trainer t(cfg, 1, plan);
  t.micro = mlh::rt::MicroBatchedStep(nullptr, nullptr, cfg.micro_batch);
  std::vector<std::string> log;
  t.log = [&](const std::string& line) { log.push_back(line); };
  t.use_graph_recorder(std::make_unique<FakeGraphRecorder>());
  t.net->train();
  const std::vector<protonet::Episode> es = episodes(2);
  for (const protonet::Episode& e : es) EXPECT_TRUE(std::isfinite(t.train_step(e).loss.item<double>()));
  EXPECT_FALSE(t.graph.on());
  EXPECT_NE(t.graph.why_off().find("micro-batches"), std::string::npos) << t.graph.why_off();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("CUDA graphs off"), std::string::npos) << log[0];
}

}  // namespace
