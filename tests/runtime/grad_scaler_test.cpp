#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <torch/optim/sgd.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/grad_scaler.hpp>

namespace {

using mlh::rt::GradScaler;

// One parameter [1, 2] under plain SGD (lr 0.5), its gradient set by hand as if backward had
// produced it from a scaled loss.
struct Fixture {
  at::Tensor param = at::tensor({1.0f, 2.0f}).requires_grad_();
  torch::optim::SGD sgd{{param}, torch::optim::SGDOptions(0.5)};

  void set_grad(std::vector<float> values) { param.mutable_grad() = at::tensor(values); }
};

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(GradScaler, ScalesTheLoss) {
  GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.scale(at::tensor(0.5f)).item<float>(), 32768.0f);
}

TEST(GradScaler, CleanStepUnscalesAndSteps) {
  Fixture f;
  GradScaler scaler(8.0);
  f.set_grad({8.0f, 16.0f});  // true gradient [1, 2]
  EXPECT_TRUE(scaler.step(f.sgd));
  EXPECT_TRUE(at::allclose(f.param, at::tensor({0.5f, 1.0f})));
  EXPECT_TRUE(at::allclose(f.param.grad(), at::tensor({1.0f, 2.0f})));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 8.0);
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(GradScaler, MatchesPlainTrainingThroughBackward) {
  const at::Tensor x = at::tensor({3.0f, -1.0f});
  Fixture plain, scaled;
  (plain.param * x).sum().backward();
  plain.sgd.step();

  GradScaler scaler(1024.0);
  scaler.scale((scaled.param * x).sum()).backward();
  EXPECT_TRUE(at::allclose(scaled.param.grad(), x * 1024));
  EXPECT_TRUE(scaler.step(scaled.sgd));
  scaler.update();
  EXPECT_TRUE(at::allclose(scaled.param, plain.param));
}

TEST(GradScaler, InfSkipsTheStepAndBacksOff) {
  Fixture f;
  GradScaler scaler;
  f.set_grad({kInf, 1.0f});
  EXPECT_FALSE(scaler.step(f.sgd));
  EXPECT_TRUE(at::equal(f.param, at::tensor({1.0f, 2.0f})));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(GradScaler, NanIsHandledLikeInf) {
  Fixture f;
  GradScaler scaler;
  f.set_grad({1.0f, std::nanf("")});
  EXPECT_FALSE(scaler.step(f.sgd));
  EXPECT_TRUE(at::equal(f.param, at::tensor({1.0f, 2.0f})));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32768.0);
}

TEST(GradScaler, GrowsAfterGrowthIntervalCleanSteps) {
  Fixture f;
  GradScaler scaler(4.0, 2.0, 0.5, /*growth_interval=*/3);
  auto iteration = [&](float g) {
    f.set_grad({g, g});
    scaler.step(f.sgd);
    scaler.update();
  };
  iteration(1.0f);
  iteration(1.0f);
  EXPECT_EQ(scaler.get_scale(), 4.0);
  EXPECT_EQ(scaler.growth_tracker(), 2);
  iteration(1.0f);
  EXPECT_EQ(scaler.get_scale(), 8.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);

  // An overflow resets the count of clean steps.
  iteration(1.0f);
  iteration(kInf);
  EXPECT_EQ(scaler.get_scale(), 4.0);
  iteration(1.0f);
  iteration(1.0f);
  EXPECT_EQ(scaler.get_scale(), 4.0);
  iteration(1.0f);
  EXPECT_EQ(scaler.get_scale(), 8.0);
}

TEST(GradScaler, UnscaleBeforeStepUnscalesOnce) {
  Fixture f;
  GradScaler scaler(4.0);
  f.set_grad({4.0f, 8.0f});
  scaler.unscale_(f.sgd);
  EXPECT_TRUE(at::allclose(f.param.grad(), at::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(scaler.step(f.sgd));
  EXPECT_TRUE(at::allclose(f.param, at::tensor({0.5f, 1.0f})));
}

TEST(GradScaler, MisuseIsAnErrorLikePyTorchs) {
  Fixture f;
  GradScaler scaler;
  f.set_grad({1.0f, 1.0f});
  scaler.unscale_(f.sgd);
  try {
    scaler.unscale_(f.sgd);
    FAIL() << "no error";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unscale_() has already been called on this optimizer since the last update()"),
              std::string::npos)
        << e.what();
  }
  scaler.step(f.sgd);
  EXPECT_THROW(scaler.step(f.sgd), mlh::Error);
  EXPECT_THROW(scaler.unscale_(f.sgd), mlh::Error);
  scaler.update();
  EXPECT_THROW(scaler.update(), mlh::Error);  // no step since the last update
  f.set_grad({1.0f, 1.0f});
  EXPECT_NO_THROW(scaler.unscale_(f.sgd));  // update() started a new iteration
}

TEST(GradScaler, StateRoundTrips) {
  Fixture f;
  GradScaler scaler(16.0, 3.0, 0.25, 5);
  f.set_grad({1.0f, 1.0f});
  scaler.step(f.sgd);
  scaler.update();
  const nlohmann::json state = scaler.state();
  EXPECT_EQ(state.at("scale"), 16.0);
  EXPECT_EQ(state.at("growth_tracker"), 1);

  GradScaler loaded;
  loaded.load_state(state);
  EXPECT_EQ(loaded.state(), state);
  EXPECT_EQ(loaded.get_scale(), 16.0);

  nlohmann::json bad = state;
  bad["growth_interval"] = "5";
  try {
    loaded.load_state(bad);
    FAIL() << "no error";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("growth_interval"), std::string::npos) << e.what();
  }
}

TEST(GradScaler, DisabledIsAPassThrough) {
  Fixture f;
  GradScaler scaler(65536.0, 2.0, 0.5, 2000, /*enabled=*/false);
  const at::Tensor loss = at::tensor(2.0f);
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  f.set_grad({2.0f, 2.0f});
  scaler.unscale_(f.sgd);
  EXPECT_TRUE(scaler.step(f.sgd));
  EXPECT_TRUE(at::allclose(f.param, at::tensor({0.0f, 1.0f})));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
}

}  // namespace
