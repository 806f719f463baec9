#include <gtest/gtest.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/precision.hpp>

namespace {

using namespace mlh::rt;

const c10::Device kCpu(c10::DeviceType::CPU);

at::Tensor matmul() { return at::mm(at::randn({4, 4}), at::randn({4, 4})); }

TEST(Precision, ParsesThePlanValues) {
  EXPECT_EQ(parse_precision("fp32"), Precision::kFp32);
  EXPECT_EQ(parse_precision("fp16"), Precision::kFp16);
  EXPECT_EQ(parse_precision("bf16"), Precision::kBf16);
  EXPECT_EQ(to_string(Precision::kBf16), "bf16");
  EXPECT_EQ(scalar_type(Precision::kFp16), at::kHalf);
  EXPECT_THROW(parse_precision("auto"), mlh::Error);
}

TEST(Precision, CpuBf16AutocastRunsMatmulInBf16) {
  EXPECT_EQ(matmul().scalar_type(), at::kFloat);
  {
    AutocastScope autocast(Precision::kBf16, kCpu);
    EXPECT_EQ(matmul().scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(matmul().scalar_type(), at::kFloat);
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
}

TEST(Precision, Fp32IsANoOp) {
  AutocastScope autocast(Precision::kFp32, kCpu);
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(matmul().scalar_type(), at::kFloat);
}

TEST(Precision, NestingRestoresTheOuterScope) {
  {
    AutocastScope outer(Precision::kBf16, kCpu);
    {
      AutocastScope inner(Precision::kFp32, kCpu);
      EXPECT_EQ(matmul().scalar_type(), at::kBFloat16);  // fp32 leaves the outer scope on
      AutocastScope again(Precision::kBf16, kCpu);
      EXPECT_EQ(matmul().scalar_type(), at::kBFloat16);
    }
    EXPECT_TRUE(compat::autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(compat::autocast_dtype(c10::DeviceType::CPU), at::kBFloat16);
    EXPECT_EQ(matmul().scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(matmul().scalar_type(), at::kFloat);
}

TEST(Precision, CpuFp16IsAnError) {
  EXPECT_THROW(AutocastScope(Precision::kFp16, kCpu), mlh::Error);
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
  EXPECT_THROW(AutocastScope(Precision::kFp16, c10::Device(c10::DeviceType::MPS)), mlh::Error);
}

// bf16 autocast on MPS exists from LibTorch 2.6: entered there (no Apple GPU is needed to set
// the state), a clear error before.
TEST(Precision, MpsBf16AutocastWhereLibTorchHasIt) {
  const c10::Device mps(c10::DeviceType::MPS);
#if MLH_TORCH_HAS_MPS_BF16_AUTOCAST
  {
    AutocastScope scope(Precision::kBf16, mps);
    EXPECT_TRUE(compat::autocast_enabled(c10::DeviceType::MPS));
    EXPECT_EQ(compat::autocast_dtype(c10::DeviceType::MPS), at::kBFloat16);
  }
  EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::MPS));
#else
  try {
    AutocastScope scope(Precision::kBf16, mps);
    FAIL() << "no error";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16 on mps needs LibTorch 2.6 or later"), std::string::npos) << e.what();
  }
#endif
}

// The held-out check judges a reduced precision by the paired accuracy differences on the
// same held-out episodes: equal or better passes, worse within the episodes' noise passes,
// worse beyond it fails, and so does a loss that is not finite or too few episodes.
TEST(HeldOutPrecisionCheck, RefusesOnlyWhatIsWorseBeyondTheInterval) {
  const std::vector<double> fp32 = {0.70, 0.80, 0.60, 0.75, 0.65, 0.72, 0.68, 0.77};
  auto shifted = [&](const std::vector<double>& by) {
    std::vector<double> out = fp32;
    for (size_t i = 0; i < out.size(); ++i) out[i] += by[i % by.size()];
    return out;
  };
  // Better on average: passes, with the figures it decided by.
  nlohmann::json check = held_out_precision_check(Precision::kBf16, fp32, shifted({0.02, 0.0}), 1.0, 0.98, 60);
  EXPECT_TRUE(check["passed"]) << check.dump();
  EXPECT_EQ(check["precision"], "bf16");
  EXPECT_EQ(check["held_out"], 8);
  EXPECT_EQ(check["steps"], 60);
  EXPECT_NEAR(check["difference"].get<double>(), 0.01, 1e-12);
  EXPECT_NEAR(check["reduced_accuracy"].get<double>() - check["fp32_accuracy"].get<double>(), 0.01, 1e-12);
  EXPECT_LT(check["interval"][0].get<double>(), 0.01);
  EXPECT_GT(check["interval"][1].get<double>(), 0.01);

  // Worse by one point on average, but the episodes vary by more: not shown worse, passes.
  check = held_out_precision_check(Precision::kBf16, fp32, shifted({-0.06, 0.04}), 1.0, 1.0, 60);
  EXPECT_NEAR(check["difference"].get<double>(), -0.01, 1e-12);
  EXPECT_GT(check["interval"][1].get<double>(), 0) << check.dump();
  EXPECT_TRUE(check["passed"]) << check.dump();

  // Worse on every episode: the whole interval below zero, refused.
  check = held_out_precision_check(Precision::kBf16, fp32, shifted({-0.05, -0.03}), 1.0, 1.1, 60);
  EXPECT_LT(check["interval"][1].get<double>(), 0) << check.dump();
  EXPECT_FALSE(check["passed"]) << check.dump();

  // A loss that diverged, or a single episode, proves nothing.
  EXPECT_FALSE(held_out_precision_check(Precision::kBf16, fp32, fp32, 1.0, NAN, 60)["passed"]);
  check = held_out_precision_check(Precision::kBf16, {0.5}, {0.6}, 1.0, 1.0, 60);
  EXPECT_FALSE(check["passed"]);
  EXPECT_TRUE(check["interval"].is_null());
}

}  // namespace
