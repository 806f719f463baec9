// The step graph's bookkeeping (warm-up, one capture, replays, a new key, a refused capture)
// with a recorder that runs on the CPU, and GraphSafeAdam against LibTorch's Adam. Capturing
// on a GPU: tests/gpu (Gpu.ProtonetEpisodeGraphTrainsAsTheEagerStep).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <mlh/runtime/graph_safe_adam.hpp>
#include <mlh/runtime/step_graph.hpp>
#include <torch/torch.h>

#include "fake_graph_recorder.hpp"

namespace {

struct Counts {
  int body = 0, eager = 0, captures = 0;
  std::vector<std::string> log;
};

mlh::rt::StepGraph graph_with(Counts& c, std::unique_ptr<FakeGraphRecorder> recorder, int warmup = 3) {
  recorder->captures = &c.captures;
  return mlh::rt::StepGraph(std::move(recorder), [&c](const std::string& line) { c.log.push_back(line); }, warmup);
}

bool step(mlh::rt::StepGraph& g, Counts& c, const std::string& key) {
  return g.step(key, [&] { ++c.body; }, [&] { ++c.eager; });
}

TEST(StepGraph, WarmsUpEagerlyThenCapturesOnceAndReplays) {
  Counts c;
  auto g = graph_with(c, std::make_unique<FakeGraphRecorder>());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(step(g, c, "5-way")) << "warm-up step " << i;
  EXPECT_EQ(c.body, 3);
  EXPECT_EQ(c.captures, 0);
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(step(g, c, "5-way")) << "step " << 3 + i;
  EXPECT_EQ(c.captures, 1) << "captured once";
  EXPECT_EQ(c.body, 10) << "every step ran the body once: capture records, replays run";
  EXPECT_EQ(c.eager, 0);
  EXPECT_EQ(g.captures(), 1);
  EXPECT_EQ(g.replays(), 7);
  ASSERT_EQ(c.log.size(), 1u);
  EXPECT_NE(c.log[0].find("captured (5-way)"), std::string::npos) << c.log[0];
}

TEST(StepGraph, ANewKeyWarmsUpAndCapturesAgain) {
  Counts c;
  auto g = graph_with(c, std::make_unique<FakeGraphRecorder>(), 2);
  for (int i = 0; i < 4; ++i) step(g, c, "lr 0.001");
  EXPECT_EQ(g.replays(), 2);
  EXPECT_FALSE(step(g, c, "lr 0.0005")) << "a new learning rate: the old graph would bake in the old one";
  EXPECT_FALSE(step(g, c, "lr 0.0005"));
  EXPECT_TRUE(step(g, c, "lr 0.0005"));
  EXPECT_EQ(c.captures, 2);
  EXPECT_EQ(g.replays(), 3);
  EXPECT_EQ(c.body, 7);
}

TEST(StepGraph, ARefusedCaptureRunsTheStepEagerlyAndTurnsTheGraphOffSayingWhy) {
  Counts c;
  auto recorder = std::make_unique<FakeGraphRecorder>();
  recorder->refuse = "operation not permitted when stream is capturing\n(a stack trace)";
  auto g = graph_with(c, std::move(recorder), 1);
  EXPECT_FALSE(step(g, c, "k"));  // warm-up
  EXPECT_FALSE(step(g, c, "k"));  // the capture fails: eager
  EXPECT_EQ(c.eager, 1) << "the step that failed to capture still runs";
  EXPECT_FALSE(g.on());
  EXPECT_NE(g.why_off().find("operation not permitted when stream is capturing"), std::string::npos) << g.why_off();
  EXPECT_EQ(g.why_off().find("stack trace"), std::string::npos) << "first line only: " << g.why_off();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(step(g, c, "k"));
  EXPECT_EQ(c.eager, 4) << "off for the rest of the run";
  EXPECT_EQ(c.body, 1);
  ASSERT_EQ(c.log.size(), 1u) << "said once";
  EXPECT_NE(c.log[0].find("CUDA graphs off: capturing the step failed"), std::string::npos) << c.log[0];
}

TEST(StepGraph, NoCudaGraphsOffACudaDevice) {
  std::string why;
  EXPECT_EQ(mlh::rt::cuda_graph_recorder(c10::Device(c10::kCPU), &why), nullptr);
  EXPECT_NE(why.find("need a CUDA device"), std::string::npos) << why;
  Counts c;
  mlh::rt::StepGraph g(nullptr, nullptr);
  EXPECT_FALSE(step(g, c, "k"));
  EXPECT_EQ(c.eager, 1);
  EXPECT_EQ(c.body, 0);
}

// Two copies of a small model from the same weights, the same gradients each step: LibTorch's
// Adam on one, GraphSafeAdam on the other (from step 5 on: it takes the count from the state).
TEST(GraphSafeAdam, StepsAsLibTorchsAdamAndKeepsItsCheckpointState) {
  torch::manual_seed(7);
  torch::nn::Linear reference(6, 3), graphed(6, 3);
  {
    torch::NoGradGuard no_grad;
    graphed->weight.copy_(reference->weight);
    graphed->bias.copy_(reference->bias);
  }
  const auto options = torch::optim::AdamOptions(0.01).weight_decay(0.001).betas({0.8, 0.99});
  torch::optim::Adam reference_adam(reference->parameters(), options), graphed_adam(graphed->parameters(), options);
  std::optional<mlh::rt::GraphSafeAdam> graph_safe;
  const at::Tensor x = torch::randn({16, 6}), y = torch::randn({16, 3});
  for (int step = 1; step <= 30; ++step) {
    for (auto* m : {&reference, &graphed}) (*m)->zero_grad();
    torch::mse_loss(reference->forward(x), y).backward();
    torch::mse_loss(graphed->forward(x), y).backward();
    if (step == 15)  // a schedule's new rate: load_lr() carries it to the device
      for (auto* adam : {&reference_adam, &graphed_adam})
        static_cast<torch::optim::AdamOptions&>(adam->param_groups()[0].options()).lr(0.004);
    reference_adam.step();
    if (step <= 5) {
      graphed_adam.step();
    } else {
      if (!graph_safe) graph_safe.emplace(graphed_adam);
      graph_safe->load_lr();
      graph_safe->step();
      graph_safe->count_host_step();
    }
  }
  EXPECT_TRUE(torch::allclose(graphed->weight, reference->weight, 1e-5, 1e-7))
      << (graphed->weight - reference->weight).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(graphed->bias, reference->bias, 1e-5, 1e-7));
  EXPECT_FALSE(torch::allclose(reference->weight, torch::zeros_like(reference->weight)));
  // The state a checkpoint saves: the step counts went on with the steps.
  std::ostringstream saved_graphed;
  torch::save(graphed_adam, saved_graphed);
  torch::optim::Adam restored(graphed->parameters(), options);
  std::istringstream in(saved_graphed.str());
  torch::load(restored, in);
  for (const auto& [key, state] : restored.state())
    EXPECT_EQ(static_cast<torch::optim::AdamParamState&>(*state).step(), 30) << "the host count followed the steps";
}

TEST(GraphSafeAdam, RefusesAmsgrad) {
  torch::nn::Linear m(2, 2);
  torch::optim::Adam adam(m->parameters(), torch::optim::AdamOptions(0.01).amsgrad(true));
  EXPECT_THROW(mlh::rt::GraphSafeAdam{adam}, std::exception);
}

}  // namespace
