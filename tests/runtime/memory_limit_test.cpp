// The CPU tensor-memory cap of memory_limit.hpp: it counts what LibTorch's CPU allocator hands
// out, refuses what would pass the limit with LibTorch's out-of-memory error, and gives the
// bytes back when tensors die. The cap is process-wide: each test lifts it when done.
#include <gtest/gtest.h>

#include <string>

#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/memory.hpp>
#include <mlh/runtime/memory_limit.hpp>
#include <mlh/runtime/oom_backoff.hpp>

namespace {

constexpr int64_t kMiB = 1 << 20;

struct LiftCapAfterwards {
  ~LiftCapAfterwards() { mlh::rt::set_cpu_memory_limit(std::nullopt); }
};

TEST(CpuMemoryLimit, CountsLiveTensorsAndGivesTheirBytesBack) {
  LiftCapAfterwards lift;
  mlh::rt::set_cpu_memory_limit(std::nullopt);  // installed, counting, refusing nothing
  const int64_t base = mlh::rt::cpu_memory_in_use();
  {
    const at::Tensor t = at::empty({8 * kMiB / 4}, at::kFloat);
    EXPECT_GE(mlh::rt::cpu_memory_in_use() - base, 8 * kMiB);
  }
  EXPECT_EQ(mlh::rt::cpu_memory_in_use(), base);
}

TEST(CpuMemoryLimit, RefusesPastTheLimitWithAnOutOfMemoryErrorNamingTheLimit) {
  LiftCapAfterwards lift;
  mlh::rt::set_cpu_memory_limit(std::nullopt);
  mlh::rt::set_cpu_memory_limit(mlh::rt::cpu_memory_in_use() + 16 * kMiB);
  const at::Tensor fits = at::zeros({12 * kMiB / 4}, at::kFloat);
  try {
    const at::Tensor too_much = at::zeros({8 * kMiB / 4}, at::kFloat);
    FAIL() << "8 MiB more passed a 16 MiB limit with 12 MiB in use";
  } catch (const std::exception& e) {
    EXPECT_TRUE(mlh::rt::is_out_of_memory(e)) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU tensor memory limit"), std::string::npos) << e.what();
  }
  // The refused allocation left nothing counted: what remains fits again.
  const at::Tensor small = at::zeros({2 * kMiB / 4}, at::kFloat);
  EXPECT_EQ(small.sum().item<float>(), 0.0f);
  EXPECT_EQ(fits.sum().item<float>(), 0.0f);
}

TEST(CpuMemoryLimit, PeakIsTheMostHeldSinceTheReset) {
  LiftCapAfterwards lift;
  mlh::rt::set_cpu_memory_limit(std::nullopt);
  { const at::Tensor big = at::ones({32 * kMiB / 4}, at::kFloat); }
  mlh::rt::reset_peak_memory(at::kCPU);
  const int64_t base = mlh::rt::cpu_memory_in_use();
  { const at::Tensor t = at::ones({4 * kMiB / 4}, at::kFloat); }
  const int64_t peak = mlh::rt::tensor_memory_peak(at::kCPU).value();
  EXPECT_GE(peak - base, 4 * kMiB);
  EXPECT_LT(peak - base, 32 * kMiB) << "the reset forgot the earlier 32 MiB";
}

TEST(CpuMemoryLimit, ThePlanSetsItOnTheCpuOnly) {
  LiftCapAfterwards lift;
  mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(R"({"device": "cpu", "memory_limit_bytes": 123456789})");
  EXPECT_EQ(plan.memory_limit_bytes, 123456789);
  mlh::rt::apply_plan(plan);
  EXPECT_EQ(mlh::rt::cpu_memory_limit(), 123456789);
}

TEST(CpuMemoryLimit, ABadLimitInThePlanNamesTheField) {
  for (const char* bad : {R"({"device": "cpu", "memory_limit_bytes": 0})", R"({"device": "cpu", "memory_limit_bytes": "1G"})",
                          R"({"device": "cpu", "memory_limit_bytes": 1.5})"}) {
    try {
      mlh::rt::RuntimePlan::parse(bad);
      FAIL() << bad << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("memory_limit_bytes"), std::string::npos) << e.what();
    }
  }
}

TEST(DeviceMemoryTotal, TheCpuHasTheHostsMemory) {
  const std::optional<int64_t> total = mlh::rt::device_memory_total(at::kCPU);
  ASSERT_TRUE(total.has_value());
  EXPECT_GT(*total, 256 * kMiB);
}

}  // namespace
