#include <gtest/gtest.h>

#include <mlh/plugin.hpp>
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
    EXPECT_NE(std::string(e.what()).find("MPS: bf16 only, with LibTorch 2.6 or later"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
