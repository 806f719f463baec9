// A checkpoint written before the training session existed resumes through it:
// fixtures/toyreg-step-71-before-session.ckpt is toyreg's checkpoint of a run stopped at step
// 71 by the code of commit 283c715, where toyreg set up its CheckpointManager, Distributed
// and MemoryMonitor by hand. Its layout (a module "model", an SGD "optimizer", the random
// streams as tensors, values {"step", "scaler", "micro_batch"}) is what toyreg's train still
// writes and reads, so a run folder from then continues now.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/training_session.hpp>
#include <nlohmann/json.hpp>

#include "fake_host.hpp"
#include "temp_dir.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

namespace fs = std::filesystem;

TEST(TrainingSessionOldCheckpoint, AToyregRunStoppedBeforeTheSessionResumes) {
  TempDir dir;
  fs::create_directories(dir.str() + "/checkpoints");
  fs::copy_file(std::string(MLH_RUNTIME_FIXTURE_DIR) + "/toyreg-step-71-before-session.ckpt",
                dir.str() + "/checkpoints/step-000000071.ckpt");
  FakeHost host;
  const mlh_host_callbacks callbacks = host.callbacks();
  mlh_run_context c{};
  c.struct_size = sizeof(c);
  c.command = "train";
  c.run_dir = dir.path().c_str();
  c.resume = 1;
  c.world_size = 1;
  c.host = &callbacks;
  mlh::RunContext ctx(c);
  mlh::rt::TrainingSession session(ctx, mlh::rt::RuntimePlan());

  // toyreg's state, as its Trainer builds it.
  torch::nn::Linear model(torch::nn::LinearOptions(1, 1));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.1));
  mlh::rt::GradScaler scaler;
  mlh::rt::MicroBatchedStep micro;
  mlh::rt::TrainingState state;
  state.add("model", *model).add("optimizer", optimizer);
  int64_t step = 0;
  const auto loaded = session.resume(state, [&](const mlh::rt::LoadedCheckpoint& checkpoint) {
    step = checkpoint.values.at("step");
    scaler.load_state(checkpoint.values.at("scaler"));
    micro.load_state(checkpoint.values.at("micro_batch"));
    mlh::rt::restore_rng_state(mlh::rt::RngState::from_tensors(state.tensors));
    return "from step " + std::to_string(step);
  });

  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 71);
  EXPECT_EQ(step, 71);
  ASSERT_TRUE(loaded->metric.has_value()) << "toyreg files its loss as the metric";
  EXPECT_GT(*loaded->metric, 0.0);
  EXPECT_EQ(loaded->values, (nlohmann::json{{"step", 71},
                                            {"scaler", scaler.state()},
                                            {"micro_batch", {{"backoffs", 0}, {"micro_batch", 0}}}}));
  EXPECT_EQ(state.tensors.count("rng.cpu"), 1u);
  EXPECT_EQ(state.tensors.count("rng.host"), 1u);
  // The weights the stopped run had reached at step 71, fitting y = 3x - 2.
  EXPECT_NEAR(model->weight.item<double>(), 2.97552, 1e-5);
  EXPECT_NEAR(model->bias.item<double>(), -2.00167, 1e-5);
  bool logged = false;
  for (const std::string& line : host.logs) logged = logged || line == "resumed from step 71 (" + loaded->path + ")";
  EXPECT_TRUE(logged);
}

}  // namespace
