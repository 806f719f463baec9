// Plan values take effect in the worker, through the real host with the toyreg plugin (the
// runtime's report in summary.json, result.plan_applied: mlh/runtime/plan_effects.hpp), and
// values that do nothing on this run are marked and warned about; the hardware settings file
// is found where users keep it. docs/plan.md, "What each field does", names these tests.
#include "cli_harness.hpp"

namespace mlhost::cli_test {
namespace {

class PlanEffectsCliTest : public ToyregTest {
 protected:
  // toyreg in run folder `run` (a few quick steps), with `extra` arguments.
  Result toyreg(const std::string& run, const std::vector<std::string>& extra, RunOptions options = {}) {
    std::vector<std::string> args{"--plugin-dir", toyreg_, "--algorithm", "toyreg", "--run-dir", (tmp() / run).string(),
                                  "--no-calibrate", "--set", "steps=20"};
    args.insert(args.end(), extra.begin(), extra.end());
    return host(args, options);
  }
  std::string settings(const std::string& text) {
    write_file(tmp() / "hw.ini", text);
    return (tmp() / "hw.ini").string();
  }
  json applied(const std::string& run) { return file_json(tmp() / run / "summary.json")["result"]["plan_applied"]; }
};

TEST_F(PlanEffectsCliTest, ThreadsAndOpenMpSettingsReachTheWorker) {
  const std::string hw = settings("intra_op_threads = 1\nomp_proc_bind = close\nomp_wait_policy = passive\n");
  const Result r = toyreg("run", {"--hardware-config", hw});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json a = applied("run");
  EXPECT_EQ(a["threads"]["intra_op"], 1) << a.dump(2);
  EXPECT_EQ(a["threads"]["inter_op"], 1) << a.dump(2);
  EXPECT_EQ(a["omp_proc_bind"], "close") << "the worker started with the plan's OpenMP binding: " << a.dump(2);
  EXPECT_EQ(a["omp_wait_policy"], "passive") << a.dump(2);
  // Without the settings: the device's recommendation, and OpenMP's own binding.
  ASSERT_EQ(toyreg("plain", {"--no-hardware-config"}).exit_code, 0);
  const json plain = applied("plain");
  EXPECT_EQ(plain["threads"]["intra_op"], file_json(tmp() / "plain" / "plan.json")["threads"]["intra_op"]);
  EXPECT_TRUE(plain["omp_proc_bind"].is_null()) << plain.dump(2);
}

TEST_F(PlanEffectsCliTest, DeterministicAndTheMemoryCapReachTheWorker) {
  const std::string hw = settings("deterministic = true\nmemory_limit_gb = 1\n");
  const Result r = toyreg("run", {"--hardware-config", hw});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json a = applied("run");
  EXPECT_EQ(a["deterministic"], true) << a.dump(2);
  EXPECT_EQ(a["memory_limit_bytes"]["cpu_tensor_cap"], int64_t{1} << 30) << a.dump(2);
  EXPECT_EQ(file_json(tmp() / "run" / "plan.json")["memory_limit_bytes"], int64_t{1} << 30);
  ASSERT_EQ(toyreg("plain", {"--no-hardware-config"}).exit_code, 0);
  EXPECT_EQ(applied("plain")["deterministic"], false);
}

TEST_F(PlanEffectsCliTest, BatchSizeAndPresetReachTheWorkersConfig) {
  const Result r = toyreg("run", {"--hardware-config", settings("preset = full\n"), "--batch-size", "32"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json result = file_json(tmp() / "run" / "summary.json")["result"];
  EXPECT_EQ(result["batch_size"], 32) << result.dump(2);
  EXPECT_EQ(result["samples"], 1024) << "the full preset's samples: " << result.dump(2);
  const json plan = file_json(tmp() / "run" / "plan.json");
  EXPECT_FALSE(plan["no_effect"].contains("batch_size")) << plan.dump(2);
  EXPECT_EQ(plan["model"]["parameters"], 2) << plan.dump(2);
}

// On the CPU, GPU-only values do nothing: the plan marks each with the reason, the run warns
// about each one the settings file set (naming its line), and still runs.
TEST_F(PlanEffectsCliTest, ValuesWithoutEffectAreMarkedAndWarnedAbout) {
  const std::string hw = settings("pinned_memory = true\ncudnn_benchmark = true\nempty_cache_steps = 5\n");
  const Result r = toyreg("run", {"--hardware-config", hw});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const char* part : {"pinned memory            on (no effect: batches are in host memory already on cpu:0)",
                           "cuDNN benchmark          on (no effect: cuDNN runs on CUDA GPUs only)",
                           "empty cache every        5 (no effect: the CPU keeps no device cache to release)"})
    EXPECT_TRUE(contains(r.out + r.err, part)) << part << r.describe();
  EXPECT_TRUE(contains(r.err, "pinned_memory = true (settings file " + hw + ":1) has no effect on this run")) << r.describe();
  const json plan = file_json(tmp() / "run" / "plan.json");
  EXPECT_EQ(plan["no_effect"]["pinned_memory"], "batches are in host memory already on cpu:0");
  EXPECT_EQ(plan["warnings"].size(), 3u) << plan.dump(2);
  EXPECT_EQ(applied("run")["pinned_memory"], nullptr) << "nothing was pinned";
  // What toyreg itself does not use is marked too, from its describe_run.
  EXPECT_EQ(plan["no_effect"].value("gradient_checkpointing", ""), "") << "off: nothing to mark";
  const Result ckpt = host({"--print-plan", "--plugin-dir", toyreg_, "--algorithm", "toyreg", "--hardware-config",
                            settings("gradient_checkpointing = true\n")});
  ASSERT_EQ(ckpt.exit_code, 0) << ckpt.describe();
  EXPECT_TRUE(contains(ckpt.out, "on (no effect: a linear model has no activations to recompute)")) << ckpt.describe();
}

// Without --hardware-config the file is found where users keep it: the current folder first,
// then $XDG_CONFIG_HOME/mlhost; the plan names the one it read. (/etc/mlhost is the last
// place: tests/host/settings_file_test.cpp.)
TEST_F(PlanEffectsCliTest, SettingsFileIsFoundWhereUsersKeepIt) {
  RunOptions options;
  options.env["XDG_CONFIG_HOME"] = (tmp() / "xdg").string();
  write_file(tmp() / "xdg" / "mlhost" / "hardware.ini", "batch_size = 48\n");
  Result r = host({"--print-plan"}, options);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(contains(r.out, "batch size               48")) << r.describe();
  EXPECT_TRUE(contains(r.out, "settings file            " + (tmp() / "xdg" / "mlhost" / "hardware.ini").string() +
                                  " (found in $XDG_CONFIG_HOME/mlhost)"))
      << r.describe();

  write_file(tmp() / "mlhost.ini", "batch_size = 24\n");
  r = host({"--print-plan"}, options);
  EXPECT_TRUE(contains(r.out, "batch size               24")) << r.describe();
  EXPECT_TRUE(contains(r.out, "./mlhost.ini (found in the current folder)")) << r.describe();

  r = host({"--print-plan", "--no-hardware-config"}, options);
  EXPECT_TRUE(contains(r.out, "batch size               256")) << r.describe();
  EXPECT_TRUE(contains(r.out, "settings file            none (--no-hardware-config)")) << r.describe();

  r = host({"--print-plan", "--no-hardware-config", "--hardware-config", (tmp() / "mlhost.ini").string()}, options);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "--no-hardware-config cannot be combined with --hardware-config")) << r.describe();

  // A bad file found by itself is an error naming it, as a named one is.
  write_file(tmp() / "mlhost.ini", "pinned_memroy = true\n");
  r = host({"--print-plan"}, options);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "mlhost.ini', line 1: unknown key 'pinned_memroy'")) << r.describe();
}

}  // namespace
}  // namespace mlhost::cli_test
