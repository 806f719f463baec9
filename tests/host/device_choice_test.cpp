// Device choice by measurement (plan/device_choice.hpp) through plan_run: a GPU the class rule
// ranks first against a CPU, each timed by a fake calibrate command, and the cache between runs.
#include "plan/device_choice.hpp"

#include <gtest/gtest.h>

#include "plan/calibration/cache.hpp"
#include "plan/plan_text.hpp"
#include "planning.hpp"
#include "test_devices.hpp"
#include "test_files.hpp"

namespace mlhost {
namespace {

using nlohmann::json;
using Calibrate = MeasurementPolicy::Calibrate;
using testing::cuda_gpu;
using testing::epyc_cpu;

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// An H100 and the CPU, ranked by class (the GPU first), for an algorithm with a calibrate command.
PlanRequest gpu_and_cpu(const std::filesystem::path& cache, Calibrate calibrate, const std::string& device = "") {
  Device gpu = cuda_gpu("NVIDIA H100", 80ll << 30, 9, 0);
  gpu.available = true;
  Device cpu = epyc_cpu();
  cpu.available = true;
  PlanRequest r = testing::request_for(gpu);
  r.ranking = rank_devices({gpu, cpu}, DeviceRequest::parse(device), false);
  r.device = *r.ranking.chosen_device();
  r.algorithm = testing::algorithm_info(json::parse(R"({"commands": ["train", "calibrate"]})"), "ppo");
  r.measurement.calibrate = calibrate;
  r.measurement.why_cached_only = "--no-calibrate";
  r.measurement.cache_file = cache;
  return r;
}

// plan_run for gpu_and_cpu() where the calibrate command times each device at `rates`.
PlannedRun planned_with(const std::map<std::string, double>& rates, const std::filesystem::path& cache,
                        Calibrate calibrate, testing::FakePlanServices& services) {
  services.device_rates = rates;
  return plan_run(gpu_and_cpu(cache, calibrate), services);
}

TEST(DeviceChoice, TheFasterDeviceWinsOverTheClassRuleAndLaterRunsUseTheCache) {
  TempDir t;
  testing::FakePlanServices services;
  const PlannedRun run =
      planned_with({{"cuda:0", 8702}, {"cpu:0", 71234}}, t / "calibration.json", Calibrate::kIfMissing, services);
  EXPECT_EQ(run.device.id(), "cpu:0");
  EXPECT_EQ(run.plan["device"], "cpu:0") << "the plan is made for the device chosen";
  ASSERT_EQ(run.ranking.devices.size(), 2u);
  EXPECT_EQ(run.ranking.devices[0].device.id(), "cpu:0");
  EXPECT_TRUE(run.ranking.devices[0].chosen);
  EXPECT_EQ(run.ranking.devices[0].reason, "fastest measured: 71,200 samples/s vs cuda:0 8,700");
  EXPECT_EQ(run.ranking.devices[1].position, 2);
  EXPECT_EQ(run.ranking.devices[1].reason, "slower: 8,700 samples/s measured vs the chosen cpu:0's 71,200");
  const json& choice = run.plan["device_choice"];
  EXPECT_EQ(choice["rule"], "measured");
  EXPECT_TRUE(starts_with(choice["status"], "cpu:0 by measured speed (cpu:0 71,200, cuda:0 8,700 samples/s; measured now, cached in "))
      << choice;
  EXPECT_EQ(choice["devices"][0]["throughput"], 71234.0);
  EXPECT_NE(plan_to_text(run.plan).find("  device choice            cpu:0 by measured speed"), std::string::npos);
  // Each device timed in a worker of its own, with the plan made for it.
  ASSERT_GE(services.calibrate_workers.size(), 2u);
  EXPECT_EQ(services.calibrate_workers[0].device.id(), "cuda:0");
  EXPECT_EQ(services.calibrate_plans[0]["device"], "cuda:0");
  EXPECT_EQ(services.calibrate_workers[1].device.id(), "cpu:0");
  EXPECT_EQ(services.calibrate_plans[1]["device"], "cpu:0");

  // Cached per device and config: a plan that may only read the cache chooses the same way.
  testing::FakePlanServices later;
  const PlannedRun again = plan_run(gpu_and_cpu(t / "calibration.json", Calibrate::kCachedOnly), later);
  EXPECT_EQ(again.device.id(), "cpu:0");
  EXPECT_TRUE(later.calibrate_plans.empty());
  EXPECT_NE(again.plan["device_choice"]["status"].get<std::string>().find("; cached in "), std::string::npos);
  EXPECT_NE(again.plan["device_choice"]["devices"][0]["measured"], "now");

  // Another config is another workload: measured again.
  PlanRequest other = gpu_and_cpu(t / "calibration.json", Calibrate::kIfMissing);
  other.user_config = {{"num_envs", 64}};
  testing::FakePlanServices third;
  third.device_rates = {{"cuda:0", 90000}, {"cpu:0", 70000}};
  EXPECT_EQ(plan_run(other, third).device.id(), "cuda:0");
}

TEST(DeviceChoice, AFigureWithinTheMarginKeepsTheClassRulesDevice) {
  TempDir t;
  testing::FakePlanServices services;
  const PlannedRun run = planned_with({{"cuda:0", 100}, {"cpu:0", 102}}, t / "c.json", Calibrate::kIfMissing, services);
  EXPECT_EQ(run.device.id(), "cuda:0");
  EXPECT_EQ(run.ranking.devices[0].reason, "first by device class; the figures are within 3% of each other: 100 samples/s vs cpu:0 102");
  EXPECT_TRUE(starts_with(run.plan["device_choice"]["status"], "cuda:0 by device class, the measured speeds within 3%"))
      << run.plan["device_choice"];
}

// The class rule's first, also the fastest but by less than the margin: the measurement did not
// decide, and the plan does not say it did.
TEST(DeviceChoice, AFirstByClassThatIsFastestWithinTheMarginIsChosenByClass) {
  TempDir t;
  testing::FakePlanServices services;
  const PlannedRun run = planned_with({{"cuda:0", 100.5}, {"cpu:0", 100}}, t / "c.json", Calibrate::kIfMissing, services);
  EXPECT_EQ(run.device.id(), "cuda:0");
  EXPECT_TRUE(starts_with(run.plan["device_choice"]["status"], "cuda:0 by device class")) << run.plan["device_choice"];
  EXPECT_TRUE(starts_with(run.ranking.devices[0].reason, "first by device class; the figures are within 3%"))
      << run.ranking.devices[0].reason;
}

TEST(DeviceChoice, ADeviceWhoseMeasurementFailsRanksAfterTheMeasuredOnesWithTheFailure) {
  TempDir t;
  testing::FakePlanServices services;  // 0: the calibrate command fails there
  const PlannedRun run = planned_with({{"cuda:0", 0}, {"cpu:0", 50}}, t / "c.json", Calibrate::kIfMissing, services);
  EXPECT_EQ(run.device.id(), "cpu:0");
  EXPECT_EQ(run.ranking.devices[1].device.id(), "cuda:0");
  EXPECT_EQ(run.ranking.devices[1].reason, "not measured: the step failed on purpose");
  EXPECT_NE(run.plan["device_choice"]["status"].get<std::string>().find("samples/s; cuda:0 failed; measured now"),
            std::string::npos)
      << run.plan["device_choice"];
  EXPECT_EQ(run.plan["device_choice"]["devices"][1]["failure"], "the step failed on purpose");
  // The failure is not cached: the next run measures that device again.
  const json cache = json::parse(testing::read_text(t / "c.json"));
  ASSERT_EQ(cache["device_speeds"].size(), 1u) << cache.dump(2);
  EXPECT_EQ(cache["device_speeds"][0]["key"]["device"], "cpu:0");

  testing::FakePlanServices none_works;
  TempDir t2;
  const PlannedRun by_class =
      planned_with({{"cuda:0", 0}, {"cpu:0", 0}}, t2 / "c.json", Calibrate::kIfMissing, none_works);
  EXPECT_EQ(by_class.device.id(), "cuda:0") << "none measured: the class rule's choice";
  EXPECT_EQ(by_class.plan["device_choice"]["status"],
            "by device class: no device could be measured (cuda:0: the step failed on purpose; cpu:0: the step failed "
            "on purpose)");
}

TEST(DeviceChoice, WithoutMeasuringTheClassRuleChoosesAndSaysWhy) {
  TempDir t;
  testing::FakePlanServices services;
  const PlannedRun run = planned_with({{"cuda:0", 1}, {"cpu:0", 1000}}, t / "c.json", Calibrate::kCachedOnly, services);
  EXPECT_EQ(run.device.id(), "cuda:0");
  EXPECT_TRUE(services.calibrate_plans.empty());
  EXPECT_EQ(run.plan["device_choice"]["rule"], "device class");
  EXPECT_EQ(run.plan["device_choice"]["status"],
            "by device class: no figures cached for every device with this config, and --no-calibrate");
  EXPECT_NE(run.ranking.devices[0].reason.find("; not measured: no figures cached"), std::string::npos)
      << run.ranking.devices[0].reason;

  // --device names one: nothing to choose, nothing measured, nothing said.
  testing::FakePlanServices named;
  named.device_rates = services.device_rates;
  const PlannedRun cuda = plan_run(gpu_and_cpu(t / "c.json", Calibrate::kIfMissing, "cuda"), named);
  EXPECT_EQ(cuda.device.id(), "cuda:0");
  EXPECT_FALSE(cuda.plan.contains("device_choice"));
  EXPECT_EQ(cuda.ranking.devices[0].reason, "requested with --device cuda");
  for (const WorkerPlacement& w : named.calibrate_workers) EXPECT_EQ(w.device.id(), "cuda:0");

  // A distributed run takes its devices by class (here one rank on each of two machines).
  PlanRequest distributed = gpu_and_cpu(t / "c.json", Calibrate::kIfMissing);
  distributed.launch.world_size = 2;
  distributed.launch.nnodes = 2;
  distributed.launch.source = "--nproc-per-node";
  testing::FakePlanServices ranks;
  ranks.device_rates = services.device_rates;
  const PlannedRun d = plan_run(distributed, ranks);
  EXPECT_EQ(d.device.id(), "cuda:0");
  EXPECT_EQ(d.plan["device_choice"]["status"], "by device class: a distributed run takes its devices by class");

  // An algorithm without a calibrate command has nothing to time its step with.
  PlanRequest no_calibrate = gpu_and_cpu(t / "c.json", Calibrate::kIfMissing);
  no_calibrate.algorithm = testing::algorithm_info(json::object(), "ppo");
  testing::FakePlanServices plain;
  const PlannedRun p = plan_run(no_calibrate, plain);
  EXPECT_EQ(p.device.id(), "cuda:0");
  EXPECT_EQ(p.plan["device_choice"]["status"], "by device class: ppo has no calibrate command to time its training step with");
}

TEST(DeviceChoice, SpeedsReadWithThreeSignificantDigits) {
  EXPECT_EQ(speed_text(71234), "71,200");
  EXPECT_EQ(speed_text(8702), "8,700");
  EXPECT_EQ(speed_text(1234567), "1,230,000");
  EXPECT_EQ(speed_text(343.4), "343");
  EXPECT_EQ(speed_text(16.25), "16.2");
  EXPECT_EQ(speed_text(4.304), "4.30");
}

}  // namespace
}  // namespace mlhost
