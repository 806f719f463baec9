// Checkpoints and safetensors written by one LibTorch build load in the other: the fixtures in
// tests/runtime/fixtures were written by Debian's 1.13 and by PyPI's 2.x
// (write_cross_version_fixtures.cpp), and this test runs in both builds.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/safetensors.hpp>

#include "cross_version_fixture.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

namespace fs = std::filesystem;
using namespace mlh::test;

const fs::path kFixtures = MLH_RUNTIME_FIXTURE_DIR;

// The state the fixture was written from, rebuilt by this build.
struct Expected {
  CompatNet net;
  FixtureOptimizers optimizers{net};
  Expected() {
    set_fixture_weights(net);
    optimizers.steps(net, kFixtureSteps);
  }
};

void expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(at::allclose(actual.to(at::kDouble), expected.to(at::kDouble), 1e-6, 1e-7))
      << what << ": " << actual << " vs " << expected;
}

// The optimizer's state for `param` equals the expected optimizer's for `expected_param`.
template <typename State>
void expect_same_state(torch::optim::Optimizer& actual, const at::Tensor& param, torch::optim::Optimizer& expected,
                       const at::Tensor& expected_param, const std::string& what) {
  const auto found = actual.state().find(mlh::rt::compat::optimizer_state_key(param));
  ASSERT_TRUE(found != actual.state().end() && found->second) << what << ": no state after loading";
  const auto& got = static_cast<const State&>(*found->second);
  const auto& want = static_cast<const State&>(*expected.state().at(mlh::rt::compat::optimizer_state_key(expected_param)));
  EXPECT_EQ(got.step(), want.step()) << what;
  expect_close(got.exp_avg(), want.exp_avg(), what + " exp_avg");
  expect_close(got.exp_avg_sq(), want.exp_avg_sq(), what + " exp_avg_sq");
}

class CrossVersion : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    run_ = fs::temp_directory_path() / ("mlh-cross-version-" + std::string(GetParam()) + "-" +
                                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::remove_all(run_);
  }
  void TearDown() override { fs::remove_all(run_); }
  fs::path fixture(const std::string& kind, const std::string& ext) const {
    return kFixtures / (kind + "-torch-" + GetParam() + ext);
  }
  fs::path run_;
};

TEST_P(CrossVersion, CheckpointLoadsAndResumesAsTheStateItWasWrittenFrom) {
  const fs::path file = fixture("training-state", ".ckpt");
  ASSERT_TRUE(fs::exists(file)) << file << " is missing: see write_cross_version_fixtures.cpp";
  fs::create_directories(run_ / "checkpoints");
  fs::copy_file(file, run_ / "checkpoints" / "step-000000007.ckpt");

  CompatNet net;  // randomly initialised: everything must come from the file
  FixtureOptimizers optimizers(net);
  mlh::rt::TrainingState state;
  state.add("net", *net).add("adam", optimizers.adam).add("adamw", optimizers.adamw);
  const auto loaded = mlh::rt::CheckpointManager(run_.string()).load_latest(state, at::kCPU);
  ASSERT_TRUE(loaded.has_value()) << "the LibTorch " << GetParam() << " checkpoint did not load";
  EXPECT_EQ(loaded->step, kFixtureStep);
  EXPECT_EQ(state.values, fixture_values());
  const auto tensors = fixture_tensors();
  ASSERT_EQ(state.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(state.tensors.count(name)) << name;
    EXPECT_TRUE(at::equal(state.tensors.at(name), t)) << name;
  }

  Expected expected;
  for (const auto& p : expected.net->named_parameters()) expect_close(net->named_parameters()[p.key()], p.value(), p.key());
  for (const auto& b : expected.net->named_buffers())
    EXPECT_TRUE(at::equal(net->named_buffers()[b.key()], b.value())) << b.key();

  for (const char* name : {"weight", "bias"}) {
    expect_same_state<torch::optim::AdamParamState>(optimizers.adam, net->fc->named_parameters()[name],
                                                    expected.optimizers.adam,
                                                    expected.net->fc->named_parameters()[name], "adam fc." + std::string(name));
    expect_same_state<torch::optim::AdamWParamState>(optimizers.adamw, net->head->named_parameters()[name],
                                                     expected.optimizers.adamw,
                                                     expected.net->head->named_parameters()[name], "adamw head." + std::string(name));
  }
  // The optimizers' moments and step counts came back: one more step moves both alike.
  optimizers.steps(net, 1);
  expected.optimizers.steps(expected.net, 1);
  for (const auto& p : expected.net->named_parameters())
    expect_close(net->named_parameters()[p.key()], p.value(), "after one more step: " + p.key());
}

TEST_P(CrossVersion, SafetensorsHoldTheWeights) {
  const fs::path file = fixture("weights", ".safetensors");
  ASSERT_TRUE(fs::exists(file)) << file << " is missing: see write_cross_version_fixtures.cpp";
  std::map<std::string, std::string> metadata;
  const auto weights = mlh::rt::load_safetensors(file.string(), &metadata);
  EXPECT_EQ(metadata["written_by"], std::string("LibTorch ") + GetParam());
  Expected expected;
  size_t count = 0;
  for (const auto& p : expected.net->named_parameters()) {
    ASSERT_TRUE(weights.count(p.key())) << p.key();
    expect_close(weights.at(p.key()), p.value(), p.key());
    ++count;
  }
  for (const auto& b : expected.net->named_buffers()) {
    ASSERT_TRUE(weights.count(b.key())) << b.key();
    EXPECT_TRUE(at::equal(weights.at(b.key()), b.value())) << b.key();
    ++count;
  }
  EXPECT_EQ(weights.size(), count);
}

// Every LibTorch build the project supports wrote one of each.
INSTANTIATE_TEST_SUITE_P(WrittenBy, CrossVersion, ::testing::Values("1.13", "2.15"),
                         [](const auto& info) {
                           std::string name = "Torch";  // Torch1_13
                           for (const char* c = info.param; *c; ++c) name += *c == '.' ? '_' : *c;
                           return name;
                         });

}  // namespace
