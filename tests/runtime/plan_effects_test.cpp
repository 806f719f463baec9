// The runtime's report of what it applied of the plan (mlh/runtime/plan_effects.hpp), and the
// ordered prefetcher that lets data workers draw from a sequential sampler
// (mlh/runtime/prefetcher.hpp).
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/grad_checkpoint.hpp>
#include <mlh/runtime/memory.hpp>
#include <mlh/runtime/plan_effects.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/prefetcher.hpp>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/conv.h>

#include "fake_host.hpp"

namespace {

using nlohmann::json;

json report() { return json::parse(mlh::rt::plan_effects_report_json()); }

TEST(PlanEffectsReport, RecordsWhatTheRuntimeApplied) {
  mlh::rt::reset_plan_effects();
  // Gradient checkpointing: a checkpointed call under grad mode counts, one without grad not.
  const at::Tensor x = at::ones({2, 3}).requires_grad_();
  mlh::rt::checkpoint([](const at::Tensor& t) { return t * 2; }, x).sum().backward();
  {
    at::NoGradGuard no_grad;
    mlh::rt::checkpoint([](const at::Tensor& t) { return t * 2; }, x);
  }
  // Autocast regions, by precision.
  { mlh::rt::AutocastScope bf16(mlh::rt::Precision::kBf16, at::kCPU); }
  { mlh::rt::AutocastScope fp32(mlh::rt::Precision::kFp32, at::kCPU); }
  // Channels-last: the convolution's 4-D weight (its bias is 1-D).
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 4, 3));
  mlh::rt::to_channels_last(*conv);
  // A prefetcher with two workers over five batches.
  {
    mlh::rt::Prefetcher<int> p([](int64_t i) -> std::optional<int> { return i < 5 ? std::optional<int>(int(i)) : std::nullopt; },
                               4, 2);
    while (p.next()) {
    }
  }
  // The CPU has no device cache: releasing it does nothing and counts nothing.
  mlh::rt::empty_device_cache(at::kCPU);

  const json r = report();
  EXPECT_EQ(r["gradient_checkpointing"]["checkpointed_calls"], 1) << r.dump(2);
  EXPECT_EQ(r["precision"]["bf16_autocast_regions"], 1) << r.dump(2);
  EXPECT_FALSE(r["precision"].contains("fp32_autocast_regions"));
  EXPECT_EQ(r["channels_last"]["tensors_converted"], 1) << r.dump(2);
  EXPECT_EQ(r["dataloader_workers"]["threads"], 2);
  EXPECT_EQ(r["dataloader_workers"]["batches_by_workers"], 5);
  EXPECT_EQ(r["prefetch_factor"]["batches_ahead"], 4);
  EXPECT_FALSE(r.contains("empty_cache_steps")) << r.dump(2);
  // The process-wide settings as LibTorch has them now.
  EXPECT_EQ(r["threads"]["intra_op"], at::get_num_threads());
  EXPECT_TRUE(r["deterministic"].is_boolean());

  mlh::rt::reset_plan_effects();
  EXPECT_FALSE(report().contains("gradient_checkpointing"));
}

// Once apply_plan ran, a summary the algorithm sends carries the report; one that is not a JSON
// object reaches the host as sent (the host reports a malformed summary itself).
TEST(PlanEffectsReport, SummariesCarryTheReportOnceThePlanIsApplied) {
  FakeHost host;
  InProcessRun run;
  run.plan_json = R"({"torch_device": "cpu", "threads": {"intra_op": 1}, "deterministic": true})";
  ASSERT_EQ(run_in_process(host,
                           [](mlh::RunContext& ctx) {
                             mlh::rt::apply_plan(mlh::rt::RuntimePlan::parse(ctx.plan_json()));
                             ctx.summary(R"({"loss": 0.5})");
                           },
                           run),
            MLH_OK);
  const json summary = json::parse(host.summary);
  EXPECT_EQ(summary["loss"], 0.5);
  EXPECT_EQ(summary["plan_applied"]["threads"]["intra_op"], 1) << summary.dump(2);
  EXPECT_EQ(summary["plan_applied"]["deterministic"], true);
  at::globalContext().setDeterministicAlgorithms(false, false);

  run_in_process(host, [](mlh::RunContext& ctx) { ctx.summary("not json"); }, run);
  EXPECT_EQ(host.summary, "not json");
}

// A sequential source: each draw depends on the one before (a generator), its state is the
// number of draws so far.
struct Sampler {
  std::mt19937_64 rng{42};
  int draws = 0;
  uint64_t next() {
    ++draws;
    return rng();
  }
};

TEST(OrderedPrefetcher, BatchesAndStatesAreThoseOfDrawingInOrder) {
  Sampler reference;
  std::vector<uint64_t> expected;
  for (int i = 0; i < 40; ++i) expected.push_back(reference.next() * 3);
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    Sampler sampler;
    mlh::rt::OrderedPrefetcher<uint64_t, uint64_t, int> batches(
        [&] { return sampler.next(); }, [&] { return sampler.draws; }, [](uint64_t v) { return v * 3; }, 4, workers);
    EXPECT_EQ(batches.state(), 0) << "before the first batch: the state at construction";
    for (int i = 0; i < 40; ++i) {
      EXPECT_EQ(batches.next(), expected[static_cast<size_t>(i)]) << i;
      // However far the workers ran ahead, the state is that after the batch just taken.
      EXPECT_EQ(batches.state(), i + 1);
    }
    EXPECT_GE(sampler.draws, 40);
  }
}

TEST(OrderedPrefetcher, ADrawThatFailsIsRethrownInItsTurnAndTheStreamGoesOn) {
  for (int workers : {0, 2}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    int draws = 0;
    mlh::rt::OrderedPrefetcher<int, int, int> batches(
        [&] {
          if (++draws == 3) throw std::runtime_error("bad record 3");
          return draws;
        },
        [&] { return draws; }, [](int v) { return v; }, 2, workers);
    EXPECT_EQ(batches.next(), 1);
    EXPECT_EQ(batches.next(), 2);
    EXPECT_THROW(batches.next(), std::runtime_error);
    EXPECT_EQ(batches.next(), 4);
  }
}

}  // namespace
