// Device ranking as the CLI shows it: the fake discrete GPU plugin (good-gpu, "fakegpu"),
// --no-gpu, --device, and a second plugin named "cpu" (dup-cpu).
#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

class RankingTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    REQUIRE_CASE("good-gpu");
    gpu_dir_ = case_dir("good-gpu").string();
  }
  std::string gpu_dir_;
};

TEST_F(RankingTest, DiscreteGpuBeatsCpu) {
  const json report = probe({"--plugin-dir", gpu_dir_});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "fakegpu:0") << report.dump(2);

  const json* gpu0 = find_device(report, "fakegpu:0");
  ASSERT_NE(gpu0, nullptr) << report.dump(2);
  EXPECT_EQ((*gpu0)["chosen"], true);
  EXPECT_EQ((*gpu0)["rank"], 1);
  EXPECT_EQ((*gpu0)["class"], "discrete gpu");
  EXPECT_TRUE(contains(str((*gpu0)["reason"]), "highest ranked")) << gpu0->dump(2);

  const json* cpu = find_device(report, "cpu:0");
  ASSERT_NE(cpu, nullptr) << report.dump(2);
  EXPECT_EQ((*cpu)["chosen"], false);
  EXPECT_EQ((*cpu)["rank"], 2);
  EXPECT_TRUE(contains(str((*cpu)["reason"]), "lower device class")) << cpu->dump(2);
  EXPECT_TRUE(contains(str((*cpu)["reason"]), "fakegpu:0")) << cpu->dump(2);

  const json* gpu1 = find_device(report, "fakegpu:1");
  ASSERT_NE(gpu1, nullptr) << report.dump(2);
  EXPECT_EQ((*gpu1)["chosen"], false);
  EXPECT_TRUE((*gpu1)["rank"].is_null()) << "an unavailable device is not a candidate: " << gpu1->dump(2);
  EXPECT_EQ((*gpu1)["available"], false);
  const std::string why = str((*gpu1)["unavailable_reason"]);
  EXPECT_FALSE(why.empty());
  EXPECT_TRUE(contains(str((*gpu1)["reason"]), "unavailable")) << gpu1->dump(2);
  EXPECT_TRUE(contains(str((*gpu1)["reason"]), why)) << gpu1->dump(2);

  // Candidates first (in rank order), then the excluded.
  ASSERT_GE(report["devices"].size(), 3u);
  EXPECT_EQ(report["devices"][0]["id"], "fakegpu:0");
  EXPECT_EQ(report["devices"][1]["id"], "cpu:0");
}

TEST_F(RankingTest, TextReportShowsTheRanking) {
  const Result r = host({"--probe", "--plugin-dir", gpu_dir_});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Chosen: fakegpu:0")) << r.describe();
  EXPECT_TRUE(contains(r.out, "lower device class")) << r.describe();
  EXPECT_TRUE(contains(r.out, "fake device 1 is broken on purpose")) << r.describe();
}

TEST_F(RankingTest, NoGpuPicksTheCpu) {
  const json report = probe({"--plugin-dir", gpu_dir_, "--no-gpu"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "cpu:0") << report.dump(2);
  EXPECT_EQ(report["request"]["no_gpu"], true);
  const json* gpu0 = find_device(report, "fakegpu:0");
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["chosen"], false);
  EXPECT_TRUE((*gpu0)["rank"].is_null());
  EXPECT_TRUE(contains(str((*gpu0)["reason"]), "--no-gpu")) << gpu0->dump(2);
}

TEST_F(RankingTest, DeviceCpuPicksTheCpu) {
  const json report = probe({"--plugin-dir", gpu_dir_, "--device", "cpu"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "cpu:0") << report.dump(2);
  EXPECT_EQ(report["request"]["device"], "cpu");
  const json* cpu = find_device(report, "cpu:0");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(contains(str((*cpu)["reason"]), "--device cpu")) << cpu->dump(2);
  const json* gpu0 = find_device(report, "fakegpu:0");
  ASSERT_NE(gpu0, nullptr);
  EXPECT_TRUE(contains(str((*gpu0)["reason"]), "not requested")) << gpu0->dump(2);
}

TEST_F(RankingTest, DeviceWithIndexPicksThatDevice) {
  const json report = probe({"--plugin-dir", gpu_dir_, "--device", "fakegpu:0"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "fakegpu:0") << report.dump(2);

  // The unavailable one cannot be forced: nothing chosen, and the error says why.
  const json broken = probe({"--plugin-dir", gpu_dir_, "--device", "fakegpu:1"});
  ASSERT_FALSE(broken.is_discarded());
  EXPECT_TRUE(broken["chosen"].is_null()) << broken.dump(2);
  EXPECT_TRUE(contains(str(broken["error"]), "fakegpu:1")) << broken.dump(2);
  EXPECT_TRUE(contains(str(broken["error"]), "unavailable")) << broken.dump(2);
}

TEST_F(RankingTest, DeviceCudaWithoutCudaChoosesNothing) {
  const Result r = host({"--probe", "--json", "--plugin-dir", gpu_dir_, "--device", "cuda"});
  ASSERT_EQ(r.exit_code, 0) << "a probe reports, it does not fail:" << r.describe();
  const json report = stdout_json(r);
  ASSERT_FALSE(report.is_discarded());
  EXPECT_TRUE(report["chosen"].is_null()) << report.dump(2);
  ASSERT_TRUE(report["error"].is_string()) << report.dump(2);
  EXPECT_TRUE(contains(report["error"].get<std::string>(), "cuda")) << report["error"];
  for (const json& d : report["devices"]) EXPECT_EQ(d["chosen"], false);

  const Result text = host({"--probe", "--device", "cuda"});
  ASSERT_EQ(text.exit_code, 0) << text.describe();
  EXPECT_TRUE(contains(text.out, "Chosen: none")) << text.describe();
}

// --device gpu: the best ranked GPU whichever plugin reports it, as PyTorch and Lightning
// users ask for one; without a GPU nothing is chosen, as for --device cuda.
TEST_F(RankingTest, DeviceGpuChoosesTheBestGpuOfAnyKind) {
  const json report = probe({"--plugin-dir", gpu_dir_, "--device", "gpu"});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(report["chosen"], "fakegpu:0") << report.dump(2);
  const json* cpu = find_device(report, "cpu:0");
  ASSERT_NE(cpu, nullptr) << report.dump(2);
  EXPECT_TRUE(contains(str((*cpu)["reason"]), "not requested (--device gpu)")) << cpu->dump(2);
  const Result contradiction = host({"--probe", "--no-gpu", "--device", "gpu"});
  EXPECT_EQ(contradiction.exit_code, 2) << contradiction.describe();
}

// A run on a device this machine does not have is the user's to change: exit 2 before any
// folder is made, with the way out (--device cpu) in the message; for cuda and for gpu.
TEST_F(RankingTest, ARunOnADeviceTheMachineLacksExitsTwoSayingTheWayOut) {
  if (!have_toyreg()) GTEST_SKIP() << "this build has no toyreg plugin (configured with MLH_WITH_TORCH=OFF)";
  REQUIRE_CASE("toyreg");
  for (const char* device : {"cuda", "gpu"}) {
    if (!probe({"--device", device})["chosen"].is_null()) GTEST_SKIP() << "this machine has a usable " << device;
    const fs::path run = tmp() / device;
    const Result r = host({"--plugin-dir", case_dir("toyreg").string(), "--algorithm", "toyreg", "--device", device,
                           "--run-dir", run.string()});
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, "no device to run on")) << r.describe();
    EXPECT_TRUE(contains(r.err, "--device cpu runs on the CPU")) << r.describe();
    EXPECT_FALSE(fs::exists(run)) << r.describe();
  }
}

using DuplicateTest = CliTest;

// Search order (discovery.cpp build_search_path): --plugin-dir, then MLH_PLUGIN_PATH, then
// the default folder; the first plugin of a kind and name wins, later ones are refused as
// shadowed, naming the winner's manifest.
void expect_dup_wins(const json& report, const std::string& dup_origin) {
  const json* dup = find_plugin_by_dir(report, case_dir("dup-cpu"));
  const json* real = find_plugin_by_dir(report, default_plugin_dir());
  ASSERT_NE(dup, nullptr) << report.dump(2);
  ASSERT_NE(real, nullptr) << report.dump(2);
  EXPECT_EQ((*dup)["name"], "cpu");
  EXPECT_EQ((*dup)["status"], "ok") << dup->dump(2);
  EXPECT_EQ((*dup)["origin"], dup_origin);
  EXPECT_EQ((*real)["name"], "cpu");
  EXPECT_EQ((*real)["status"], "refused") << real->dump(2);
  EXPECT_EQ((*real)["origin"], "default");
  const std::string reason = str((*real)["reason"]);
  EXPECT_TRUE(contains(reason, "shadowed")) << reason;
  EXPECT_TRUE(contains(reason, "duplicate")) << reason;
  EXPECT_TRUE(contains(reason, (fs::weakly_canonical(case_dir("dup-cpu")) / "cpu.plugin.json").string()) ||
              contains(reason, (case_dir("dup-cpu") / "cpu.plugin.json").string()))
      << "the reason should name the winning manifest: " << reason;
  // The kept "cpu" is the duplicate's device.
  EXPECT_EQ(report["chosen"], "cpu:0");
  const json* cpu = find_device(report, "cpu:0");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ((*cpu)["name"], "duplicate cpu") << cpu->dump(2);
  int cpu_devices = 0;
  for (const json& d : report["devices"]) cpu_devices += d["id"] == "cpu:0";
  EXPECT_EQ(cpu_devices, 1) << "one cpu:0 only: " << report["devices"].dump(2);
}

TEST_F(DuplicateTest, PluginDirShadowsTheDefaultCpuPlugin) {
  REQUIRE_CASE("dup-cpu");
  const json report = probe({"--plugin-dir", case_dir("dup-cpu").string()});
  ASSERT_FALSE(report.is_discarded());
  expect_dup_wins(report, "--plugin-dir");
}

TEST_F(DuplicateTest, PluginPathShadowsTheDefaultCpuPlugin) {
  REQUIRE_CASE("dup-cpu");
  RunOptions o;
  o.env["MLH_PLUGIN_PATH"] = case_dir("dup-cpu").string();
  const json report = probe({}, o);
  ASSERT_FALSE(report.is_discarded());
  expect_dup_wins(report, "MLH_PLUGIN_PATH");
}

TEST_F(DuplicateTest, WithoutTheDefaultFolderTheDuplicateIsTheOnlyCpu) {
  REQUIRE_CASE("dup-cpu");
  const json report = probe({"--no-default-plugin-dir", "--plugin-dir", case_dir("dup-cpu").string()});
  ASSERT_FALSE(report.is_discarded());
  EXPECT_EQ(find_plugin_by_dir(report, default_plugin_dir()), nullptr) << report.dump(2);
  const json* dup = find_plugin_by_dir(report, case_dir("dup-cpu"));
  ASSERT_NE(dup, nullptr);
  EXPECT_EQ((*dup)["status"], "ok");
  EXPECT_EQ(report["chosen"], "cpu:0");
}

}  // namespace
}  // namespace mlhost::cli_test
