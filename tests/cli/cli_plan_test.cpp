// --print-plan and the planning options: rules, the hardware settings file, command-line
// overrides, and their errors, through the real host.
#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

class PlanCliTest : public CliTest {
 protected:
  std::vector<std::string> toyreg() {
    return {"--print-plan", "--algorithm", "toyreg", "--plugin-dir", (test_plugin_root() / "toyreg").string()};
  }
  static std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

TEST_F(PlanCliTest, PrintPlanShowsEveryValueWithItsSourceAndRunsNothing) {
  const Result r = host({"--print-plan"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const char* part : {"Plan for cpu:0", "batch size", "256", "rule: cpu, any memory (autoconfig.json rule 7)",
                           "precision", "fp32", "model preset", "reduced", "threads",
                           "device: recommended by the cpu plugin"})
    EXPECT_TRUE(contains(r.out, part)) << part << "\n" << r.describe();
  EXPECT_TRUE(fs::is_empty(tmp())) << "--print-plan must not create a run folder";
}

TEST_F(PlanCliTest, PrintPlanWithAnAlgorithmShowsItsConfig) {
  if (!have_toyreg()) GTEST_SKIP() << "toyreg not built";
  const Result r = host(plus(toyreg(), {"--batch-size", "32", "--set", "steps=7"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "command line --batch-size")) << r.describe();
  EXPECT_TRUE(contains(r.out, "model                    y = w x + b, 2 parameters")) << r.describe();
  const auto brace = r.out.find('{');
  ASSERT_NE(brace, std::string::npos) << r.describe();
  const json config = json::parse(r.out.substr(brace), nullptr, false);
  ASSERT_FALSE(config.is_discarded()) << r.describe();
  EXPECT_EQ(config["batch_size"], 32);
  EXPECT_EQ(config["steps"], 7);
  EXPECT_EQ(config["samples"], 256) << "the CPU rule's preset 'reduced' applies";
  EXPECT_FALSE(config.contains("$parameters")) << "preset metadata is not config";
  EXPECT_TRUE(fs::is_empty(tmp()));
}

// --command picks the command whose plan is shown: what eval uses of the plan, not training's.
TEST_F(PlanCliTest, PrintPlanOfAnotherCommand) {
  if (!have_toyreg()) GTEST_SKIP() << "toyreg not built";
  const Result r = host(plus(toyreg(), {"--command", "eval"}));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Config of toyreg (eval)")) << r.describe();
  EXPECT_TRUE(fs::is_empty(tmp()));
  const Result unknown = host(plus(toyreg(), {"--command", "nosuch"}));
  EXPECT_EQ(unknown.exit_code, 2) << unknown.describe();
  EXPECT_TRUE(contains(unknown.err, "nosuch")) << unknown.describe();
}

TEST_F(PlanCliTest, SettingsFileIsAppliedAndUserFlagsWin) {
  write_file(tmp() / "hw.ini", "precision = bf16\nbatch_size = 100\n[cpu]\nintra_op_threads = 1\n");
  Result r = host({"--print-plan", "--hardware-config", (tmp() / "hw.ini").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "bf16")) << r.describe();
  EXPECT_TRUE(contains(r.out, "hw.ini:2")) << r.describe();
  EXPECT_TRUE(contains(r.out, "1 intra / 1 inter")) << r.describe();

  r = host({"--print-plan", "--hardware-config", (tmp() / "hw.ini").string(), "--precision", "fp32", "--batch-size",
            "8"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "command line --precision")) << r.describe();
  EXPECT_TRUE(contains(r.out, "command line --batch-size")) << r.describe();

  // --threads wins over the settings file's intra_op_threads, and says so.
  r = host({"--print-plan", "--hardware-config", (tmp() / "hw.ini").string(), "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "2 intra / 1 inter")) << r.describe();
  EXPECT_TRUE(contains(r.out, "command line --threads")) << r.describe();

  // The environment variable names the file when the flag does not.
  RunOptions env;
  env.env["MLH_HARDWARE_CONFIG"] = (tmp() / "hw.ini").string();
  r = host({"--print-plan"}, env);
  EXPECT_TRUE(contains(r.out, "hw.ini:2")) << r.describe();
}

TEST_F(PlanCliTest, SettingsFileErrorsNameFileLineAndKey) {
  write_file(tmp() / "hw.ini", "# settings\nprecision = fp32\n\n[cuda]\nmemory_fractoin = 0.5\n");
  Result r = host({"--print-plan", "--hardware-config", (tmp() / "hw.ini").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "hw.ini', line 5: unknown key 'memory_fractoin'")) << r.describe();

  write_file(tmp() / "bad.ini", "precision = fp8\n");
  r = host({"--print-plan", "--hardware-config", (tmp() / "bad.ini").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "line 1: key 'precision' = 'fp8'")) << r.describe();

  r = host({"--print-plan", "--hardware-config", (tmp() / "missing.ini").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "missing.ini")) << r.describe();
}

TEST_F(PlanCliTest, ARunWithABadSettingsFileWritesNothing) {
  if (!have_toyreg()) GTEST_SKIP() << "toyreg not built";
  write_file(tmp() / "hw.ini", "deterministic = maybe\n");
  const Result r = host({"--algorithm", "toyreg", "--plugin-dir", (test_plugin_root() / "toyreg").string(), "--run-dir",
                         (tmp() / "run").string(), "--hardware-config", (tmp() / "hw.ini").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "key 'deterministic'")) << r.describe();
  EXPECT_FALSE(fs::exists(tmp() / "run")) << "nothing may be written before the plan is valid";
}

TEST_F(PlanCliTest, UserRulesExtendTheShippedOnes) {
  write_file(tmp() / "rules.json", R"({"rules": [{"device": "cpu", "batch_size": 77, "preset": "full"}]})");
  Result r = host({"--print-plan", "--rules", (tmp() / "rules.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "77")) << r.describe();
  EXPECT_TRUE(contains(r.out, "rules.json rule 1")) << r.describe();

  write_file(tmp() / "broken.json", R"({"rules": [{"device": "cpu", "batch_size": "big"}]})");
  r = host({"--print-plan", "--rules", (tmp() / "broken.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "rules[0].batch_size")) << r.describe();
}

TEST_F(PlanCliTest, ImpossiblePlansAreRefused) {
  // fp16 on this CPU: refused where the probe finds no fp16 (AVX2 CPUs), accepted where it
  // does (AVX-512 FP16, AMX): the answer is the probe's, not ours.
  const json report = probe({});
  bool cpu_has_fp16 = false;
  for (const json& d : report["devices"])
    if (d.value("id", "") == "cpu:0")
      for (const json& p : d["precisions"]) cpu_has_fp16 = cpu_has_fp16 || p == "fp16";
  Result r = host({"--print-plan", "--precision", "fp16"});
  if (cpu_has_fp16) {
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_TRUE(contains(r.out, "command line --precision")) << r.describe();
  } else {
    EXPECT_EQ(r.exit_code, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, "precision fp16 (command line --precision) is not supported on cpu:0")) << r.describe();
  }

  r = host({"--print-plan", "--precision", "fp8"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--precision 'fp8'")) << r.describe();

  r = host({"--print-plan", "--batch-size", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--batch-size")) << r.describe();

  r = host({"--probe", "--batch-size", "8"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--batch-size only applies with --algorithm or --print-plan")) << r.describe();
}

// --device naming a plugin that crashed while probing says so (as --probe does), not that no
// such device exists.
TEST_F(PlanCliTest, ADeviceOfAPluginThatCrashedInProbingSaysItCrashed) {
  REQUIRE_CASE("crash");
  const Result r = host({"--print-plan", "--device", "crash:0", "--plugin-dir", case_dir("crash").string()});
  EXPECT_NE(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.err, "the crash plugin failed: ")) << r.describe();
}

TEST_F(PlanCliTest, FakeGpuGetsTheDiscreteGpuClassRule) {
  REQUIRE_CASE("good-gpu");
  const Result r = host({"--print-plan", "--plugin-dir", case_dir("good-gpu").string()});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "Plan for fakegpu:0")) << r.describe();
  EXPECT_TRUE(contains(r.out, "rule: discrete gpu, any memory")) << r.describe();
  EXPECT_TRUE(contains(r.out, "512")) << r.describe();
}

}  // namespace
}  // namespace mlhost::cli_test
