#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/nn/module.h>

#include <mlh/plan_setting_check.hpp>
#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/compat.hpp>

namespace {

using mlh::rt::apply_plan;
using mlh::rt::RuntimePlan;

// Process-wide switches are put back so that the other tests in the binary see defaults.
class ApplyPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& c = at::globalContext();
    threads_ = at::get_num_threads();
    deterministic_ = c.deterministicAlgorithms();
    deterministic_cudnn_ = c.deterministicCuDNN();
    benchmark_ = c.benchmarkCuDNN();
    tf32_cublas_ = c.allowTF32CuBLAS();
    tf32_cudnn_ = c.allowTF32CuDNN();
  }
  void TearDown() override {
    auto& c = at::globalContext();
    at::set_num_threads(threads_);
    c.setDeterministicAlgorithms(deterministic_, false);
    c.setDeterministicCuDNN(deterministic_cudnn_);
    c.setBenchmarkCuDNN(benchmark_);
    c.setAllowTF32CuBLAS(tf32_cublas_);
    c.setAllowTF32CuDNN(tf32_cudnn_);
  }

 private:
  int threads_;
  bool deterministic_, deterministic_cudnn_, benchmark_, tf32_cublas_, tf32_cudnn_;
};

std::string error_of(const std::string& plan_json) {
  try {
    RuntimePlan::parse(plan_json);
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "no error";
}

TEST_F(ApplyPlan, ParsesEveryField) {
  const RuntimePlan p = RuntimePlan::parse(R"({
    "torch_device": "cpu", "precision": "bf16", "batch_size": 256, "gradient_checkpointing": true,
    "preset": "reduced", "threads": {"intra_op": 2, "inter_op": 1}, "memory_fraction": null,
    "empty_cache_steps": 10, "pinned_memory": false, "prefetch_factor": 3, "dataloader_workers": 4,
    "cudnn_benchmark": true, "tf32_matmul": true, "deterministic": false, "channels_last": true,
    "seed": 18446744073709551615})");
  EXPECT_EQ(p.device, c10::Device(c10::DeviceType::CPU));
  EXPECT_EQ(p.precision, mlh::rt::Precision::kBf16);
  EXPECT_EQ(p.batch_size, 256);
  EXPECT_TRUE(p.gradient_checkpointing);
  EXPECT_EQ(p.preset, "reduced");
  EXPECT_EQ(p.intra_op_threads, 2);
  EXPECT_EQ(p.inter_op_threads, 1);
  EXPECT_FALSE(p.memory_fraction);
  EXPECT_EQ(p.empty_cache_steps, 10);
  EXPECT_EQ(p.prefetch_factor, 3);
  EXPECT_EQ(p.dataloader_workers, 4);
  EXPECT_TRUE(p.cudnn_benchmark);
  EXPECT_TRUE(p.tf32_matmul);
  EXPECT_FALSE(p.deterministic);
  EXPECT_TRUE(p.channels_last);
  EXPECT_EQ(p.seed, UINT64_MAX);
  EXPECT_FALSE(RuntimePlan::parse(R"({"torch_device": "cpu"})").channels_last) << "off unless the plan says";
}

TEST_F(ApplyPlan, WorkerDeviceWinsAndMissingFieldsTakeDefaults) {
  const RuntimePlan p = RuntimePlan::parse(R"({"torch_device": "cuda:1", "worker_torch_device": "cuda:0"})");
  EXPECT_EQ(p.device, c10::Device("cuda:0"));
  EXPECT_EQ(p.precision, mlh::rt::Precision::kFp32);
  EXPECT_FALSE(p.batch_size);
  EXPECT_FALSE(p.seed);
  EXPECT_EQ(p.prefetch_factor, 2);
}

TEST_F(ApplyPlan, BadFieldsAreErrorsNamingTheField) {
  EXPECT_NE(error_of(R"({"threads": {"intra_op": "4"}})").find("'threads.intra_op'"), std::string::npos);
  EXPECT_NE(error_of(R"({"memory_fraction": 1.5})").find("'memory_fraction'"), std::string::npos);
  EXPECT_NE(error_of(R"({"torch_device": "gpu!"})").find("'torch_device'"), std::string::npos);
  EXPECT_NE(error_of(R"({"precision": "fp8"})").find("'precision'"), std::string::npos);
  EXPECT_NE(error_of(R"({"max_steps": 0})").find("'max_steps'"), std::string::npos);
  EXPECT_NE(error_of(R"({"seed": -1})").find("'seed'"), std::string::npos);
  EXPECT_NE(error_of(R"({"deterministic": "yes"})").find("'deterministic'"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("expected a JSON object"), std::string::npos);
}

TEST_F(ApplyPlan, SetsIntraOpThreads) {
  apply_plan(RuntimePlan::parse(R"({"threads": {"intra_op": 1}})"));
  EXPECT_EQ(at::get_num_threads(), 1);
  apply_plan(RuntimePlan::parse(R"({"threads": {"intra_op": 2}})"));
  EXPECT_EQ(at::get_num_threads(), 2);
}

TEST_F(ApplyPlan, InterOpThreadsAreSetOnceAndALaterRequestDoesNotFail) {
  auto request = [](int threads) {
    apply_plan(RuntimePlan::parse(R"({"threads": {"inter_op": )" + std::to_string(threads) + "}}"));
  };
  // Sets the pool's size unless an earlier test in this process already did.
  request(at::get_num_interop_threads() + 1);
  const int first = at::get_num_interop_threads();
  EXPECT_NO_THROW(request(first + 1));
  EXPECT_EQ(at::get_num_interop_threads(), first);
}

TEST_F(ApplyPlan, BackendSwitchesReachTheGlobalContext) {
  apply_plan(RuntimePlan::parse(R"({"cudnn_benchmark": true, "tf32_matmul": true, "deterministic": false})"));
  auto& c = at::globalContext();
  EXPECT_TRUE(c.benchmarkCuDNN());
  EXPECT_TRUE(c.allowTF32CuBLAS());
  EXPECT_TRUE(c.allowTF32CuDNN());
  EXPECT_FALSE(c.deterministicAlgorithms());

  // Deterministic mode wins over benchmarking, which picks kernels by timing.
  apply_plan(RuntimePlan::parse(R"({"cudnn_benchmark": true, "tf32_matmul": false, "deterministic": true})"));
  EXPECT_FALSE(c.benchmarkCuDNN());
  EXPECT_FALSE(c.allowTF32CuBLAS());
  EXPECT_FALSE(c.allowTF32CuDNN());
  EXPECT_TRUE(c.deterministicAlgorithms());
  EXPECT_TRUE(c.deterministicCuDNN());
}

TEST_F(ApplyPlan, SeedsTheGenerators) {
  apply_plan(RuntimePlan::parse(R"({"seed": 7})"));
  const at::Tensor a = at::randn({8});
  at::manual_seed(7);
  EXPECT_TRUE(at::equal(a, at::randn({8})));
}

// What parsing and applying `plan` says: its mlh::Error's message, or "accepted".
std::string refusal(const std::string& plan) {
  try {
    apply_plan(RuntimePlan::parse(plan));
  } catch (const mlh::Error& e) {
    return e.what();
  }
  return "accepted";
}

#if !MLH_TORCH_HAS_CUDA
TEST_F(ApplyPlan, ACudaDeviceNeedsALibTorchWithCuda) {
  EXPECT_NE(refusal(R"({"torch_device": "cuda:0"})").find("torch_device"), std::string::npos);
}
#endif

// The worker's plan reader takes precision and threads by the plan's table, as the host's
// command line, settings file and calibration cache do (tests/host/plan_setting_check_test.cpp).
TEST_F(ApplyPlan, PrecisionAndThreadsAreCheckedByThePlanTable) {
  for (const std::string& precision : mlh::plan_setting_choices(mlh::plan_setting("precision")))
    EXPECT_EQ(mlh::rt::to_string(RuntimePlan::parse(R"({"precision": ")" + precision + R"("})").precision), precision);
  EXPECT_EQ(refusal(R"({"precision": "fp8"})"),
            "plan field 'precision': \"fp8\" " + mlh::plan_setting_problem("precision", "fp8"));
  EXPECT_EQ(refusal(R"({"threads": {"intra_op": 4097}})"),
            "plan field 'threads.intra_op': 4097 " + mlh::plan_setting_problem("intra_op_threads", "4097"));
  EXPECT_EQ(refusal(R"({"threads": {"inter_op": 0}})"),
            "plan field 'threads.inter_op': 0 " + mlh::plan_setting_problem("inter_op_threads", "0"));
  EXPECT_EQ(*RuntimePlan::parse(R"({"threads": {"intra_op": 4096}})").intra_op_threads, 4096);
}

// A backend this LibTorch was not built with (no XPU in any build the tests run) is refused
// before anything runs, naming it.
TEST_F(ApplyPlan, ADeviceOfABackendThisLibTorchLacksIsRefusedNamingIt) {
  const std::string said = refusal(R"({"torch_device": "xpu:0"})");
  EXPECT_NE(said.find("xpu:0 needs a LibTorch built with XPU"), std::string::npos) << said;
}

struct Conv : torch::nn::Module {
  Conv() {
    weight = register_parameter("weight", at::randn({8, 3, 3, 3}));
    bias = register_parameter("bias", at::randn({8}));
  }
  at::Tensor weight, bias;
};

TEST_F(ApplyPlan, ChannelsLastConvertsFourDimensionalParameters) {
  Conv conv;
  const at::Tensor before = conv.weight.clone();
  mlh::rt::to_channels_last(conv);
  EXPECT_TRUE(conv.weight.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(conv.weight.is_contiguous());
  EXPECT_TRUE(at::equal(conv.weight, before));
  EXPECT_TRUE(conv.weight.requires_grad());
}

// A one-channel weight (a first convolution on grey images) is contiguous in both layouts: it
// still gets NHWC strides, which is what makes oneDNN run that convolution, and what follows
// it, in NHWC.
TEST_F(ApplyPlan, ChannelsLastGivesAOneChannelWeightNhwcStrides) {
  Conv conv;
  conv.weight.set_data(at::randn({8, 1, 3, 3}));
  const at::Tensor before = conv.weight.clone();
  mlh::rt::to_channels_last(conv);
  EXPECT_EQ(conv.weight.suggest_memory_format(), at::MemoryFormat::ChannelsLast) << conv.weight.strides();
  EXPECT_EQ(conv.weight.stride(1), 1);
  EXPECT_TRUE(at::equal(conv.weight, before));
}

}  // namespace
