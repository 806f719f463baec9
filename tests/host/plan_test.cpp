#include "plan/plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "temp_dir.hpp"
#include "test_devices.hpp"

namespace mlhost {
namespace {

using nlohmann::json;
constexpr int64_t GiB = 1ll << 30;

Device gpu(const std::string& name, int64_t memory, int cc_major, int cc_minor) {
  return testing::cuda_gpu(name, memory, cc_major, cc_minor);
}

Device mps(int64_t memory) { return testing::apple_mps(memory); }

Device cpu() {
  Device d;
  d.plugin = d.kind = "cpu";
  d.name = "AMD EPYC";
  d.torch_device = "cpu";
  d.device_class = MLH_DEVICE_CLASS_CPU;
  d.memory_total_bytes = 24 * GiB;
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_BF16 | MLH_PRECISION_FP64;
  d.fast_precisions = MLH_PRECISION_FP32 | MLH_PRECISION_BF16 | MLH_PRECISION_FP64;
  d.recommended_threads = 2;
  return d;
}

class PlanTest : public ::testing::Test {
 protected:
  json plan(const Device& d, std::function<void(PlanInputs&)> tweak = nullptr) {
    PlanInputs in;
    in.device = &d;
    in.rules = &rules_;
    if (tweak) tweak(in);
    return make_plan(in);
  }
  std::string error(const Device& d, std::function<void(PlanInputs&)> tweak) {
    try {
      plan(d, tweak);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  }
  std::vector<AutoRule> rules_ = read_rules(MLH_TEST_SHARE_DIR "/autoconfig.json");
};

TEST_F(PlanTest, EachStandInDeviceGetsTheTableRow) {
  struct Row {
    Device device;
    int64_t batch;
    bool checkpointing;
    std::string preset, precision;
  };
  const std::vector<Row> rows = {
      {gpu("NVIDIA A100-SXM4-40GB", 40 * GiB, 8, 0), 2048, false, "full", "bf16"},
      {gpu("NVIDIA GeForce RTX 3090", 24 * GiB, 8, 6), 1536, false, "full", "bf16"},
      {gpu("Tesla V100-SXM2-16GB", 16160ll << 20, 7, 0), 1024, false, "full", "fp16"},
      {gpu("NVIDIA GeForce RTX 3060", 12 * GiB, 8, 6), 512, true, "full", "bf16"},
      {mps(32 * GiB), 512, false, "full", "fp32"},
      {mps(16 * GiB), 256, true, "reduced", "fp32"},
      {cpu(), 256, false, "reduced", "fp32"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.device.name);
    const json p = plan(r.device);
    EXPECT_EQ(p["batch_size"], r.batch);
    EXPECT_EQ(p["gradient_checkpointing"], r.checkpointing);
    EXPECT_EQ(p["preset"], r.preset);
    EXPECT_EQ(p["precision"], r.precision);
    EXPECT_EQ(p["sources"]["batch_size"].get<std::string>().rfind("rule: " + r.device.kind, 0), 0u)
        << p["sources"].dump(2);
    EXPECT_NE(p["sources"]["precision"].get<std::string>().find("auto"), std::string::npos);
  }
}

TEST_F(PlanTest, DeviceFactsShapeTheDefaults) {
  const json a100 = plan(gpu("A100", 40 * GiB, 8, 0));
  EXPECT_EQ(a100["tf32_matmul"], true);
  EXPECT_EQ(a100["pinned_memory"], true);
  EXPECT_GE(a100["dataloader_workers"].get<int>(), 1);
  const json c = plan(cpu());
  EXPECT_EQ(c["tf32_matmul"], false);
  EXPECT_EQ(c["pinned_memory"], false);
  EXPECT_EQ(c["dataloader_workers"], 0);
  EXPECT_EQ(c["threads"]["intra_op"], 2);
  EXPECT_EQ(c["threads"]["inter_op"], 1);
  EXPECT_EQ(c["memory_fraction"], 0.9);
  EXPECT_FALSE(a100.contains("memory")) << "no allocator settings without a memory cap";
}

TEST_F(PlanTest, CommandLineBeatsSettingsBeatsRules) {
  testing::TempDir t;
  testing::write_text(t / "hw.ini", "batch_size = 100\nprecision = fp32\n[cuda]\ngradient_checkpointing = true\n"
                                    "memory_fraction = 0.5\nintra_op_threads = 3\n");
  const HardwareSettings settings = read_hardware_settings(t / "hw.ini");
  const Device a100 = gpu("A100", 40 * GiB, 8, 0);

  json p = plan(a100, [&](PlanInputs& in) { in.settings = &settings; });
  EXPECT_EQ(p["batch_size"], 100);
  EXPECT_EQ(p["sources"]["batch_size"], "settings file " + (t / "hw.ini").string() + ":1");
  EXPECT_EQ(p["precision"], "fp32");
  EXPECT_EQ(p["gradient_checkpointing"], true);
  EXPECT_EQ(p["memory_fraction"], 0.5);
  EXPECT_EQ(p["memory"]["garbage_collection_threshold"], 0.8) << "the CUDA allocator reclaims under a cap";
  EXPECT_EQ(p["threads"]["intra_op"], 3);
  EXPECT_EQ(p["preset"], "full") << "the rule still fills what the file leaves";

  p = plan(a100, [&](PlanInputs& in) {
    in.settings = &settings;
    in.batch_size = 64;
    in.precision = "fp16";
  });
  EXPECT_EQ(p["batch_size"], 64);
  EXPECT_EQ(p["sources"]["batch_size"], "command line --batch-size");
  EXPECT_EQ(p["precision"], "fp16");
  EXPECT_EQ(p["sources"]["precision"], "command line --precision");

  // "auto" on the command line leaves the choice to the file.
  p = plan(a100, [&](PlanInputs& in) {
    in.settings = &settings;
    in.precision = "auto";
  });
  EXPECT_EQ(p["precision"], "fp32");
}

TEST_F(PlanTest, TheAlgorithmsOwnConfigAndPresetsCount) {
  const json description = json::parse(R"({
    "config_schema": {"type": "object", "properties": {"batch_size": {"type": "integer"}}},
    "config_defaults": {"batch_size": 32},
    "presets": {"full": {}, "reduced": {}, "tiny": {}, "task": {"batch_size": 24}}})");
  const json user = {{"batch_size", 48}};
  json p = plan(cpu(), [&](PlanInputs& in) {
    in.description = &description;
    in.user_config = &user;
  });
  EXPECT_EQ(p["batch_size"], 48);
  EXPECT_EQ(p["sources"]["batch_size"], "config (batch_size)");

  const json tiny = {{"preset", "tiny"}};
  p = plan(cpu(), [&](PlanInputs& in) {
    in.description = &description;
    in.user_config = &tiny;
  });
  EXPECT_EQ(p["preset"], "tiny");
  EXPECT_EQ(p["batch_size"], 256);  // the CPU rule's: "tiny" says nothing of batches

  // A task preset the user chose brings its batch size, above the rules; the user's own
  // batch_size still comes first.
  json task = {{"preset", "task"}};
  p = plan(cpu(), [&](PlanInputs& in) {
    in.description = &description;
    in.user_config = &task;
  });
  EXPECT_EQ(p["batch_size"], 24);
  EXPECT_EQ(p["sources"]["batch_size"], "preset task (batch_size)");
  task["batch_size"] = 40;
  p = plan(cpu(), [&](PlanInputs& in) {
    in.description = &description;
    in.user_config = &task;
  });
  EXPECT_EQ(p["batch_size"], 40);

  const json bogus = {{"preset", "huge"}};
  EXPECT_NE(error(cpu(), [&](PlanInputs& in) {
              in.description = &description;
              in.user_config = &bogus;
            }).find("preset 'huge' (config (preset)) is not one of the algorithm's presets (full, reduced, task, tiny)"),
            std::string::npos);

  const json no_presets = json::parse(R"({"config_schema": {}, "config_defaults": {}, "presets": {}})");
  p = plan(cpu(), [&](PlanInputs& in) { in.description = &no_presets; });
  EXPECT_EQ(p["preset"], nullptr);
  EXPECT_EQ(p["sources"]["preset"], "the algorithm has no preset 'reduced'");
}

TEST_F(PlanTest, ImpossibleChoicesAreErrorsNamingTheValue) {
  EXPECT_EQ(error(cpu(), [](PlanInputs& in) { in.precision = "fp16"; }),
            "precision fp16 (command line --precision) is not supported on cpu:0 (supports fp32, bf16, fp64)");
  EXPECT_NE(error(mps(16 * GiB), [](PlanInputs& in) { in.precision = "fp16"; }).find("fp16 autocast"),
            std::string::npos);
  EXPECT_NE(error(gpu("V100", 16 * GiB, 7, 0), [](PlanInputs& in) { in.precision = "bf16"; }).find("not supported"),
            std::string::npos);
  Device unknown_memory = cpu();
  unknown_memory.memory_total_bytes = MLH_UNKNOWN;
  const HardwareSettings settings = parse_hardware_settings("memory_limit_gb = 4\n", "hw.ini");
  EXPECT_EQ(error(unknown_memory, [&](PlanInputs& in) { in.settings = &settings; }),
            "memory_limit_gb (settings file hw.ini:1): the memory of cpu:0 is unknown");
}

// bf16 on MPS needs macOS 14 (the mps plugin then lists bf16) and a LibTorch with bf16
// autocast on MPS (2.6); either missing is an error before anything runs.
TEST_F(PlanTest, Bf16OnMpsNeedsMacOs14AndLibTorch26) {
  EXPECT_EQ(error(mps(16 * GiB), [](PlanInputs& in) { in.precision = "bf16"; }),
            "precision bf16 (command line --precision) is not supported on mps:0 (supports fp32, fp16); bf16 on MPS "
            "needs macOS 14 or later");
  const Device sonoma = testing::apple_mps(16 * GiB, /*bf16=*/true);
  EXPECT_EQ(error(sonoma,
                  [](PlanInputs& in) {
                    in.precision = "bf16";
                    in.algorithm_torch = "1.13.1";
                  }),
            "precision bf16 (command line --precision) on mps:0 needs LibTorch 2.6 or later, the first with bf16 "
            "autocast on MPS; the algorithm was built with LibTorch 1.13.1");
  const json p = plan(sonoma, [](PlanInputs& in) {
    in.precision = "bf16";
    in.algorithm_torch = "2.15.0";
  });
  EXPECT_EQ(p["precision"], "bf16");
  // auto never picks it: MPS runs bf16 no faster than fp32.
  EXPECT_EQ(plan(sonoma)["precision"], "fp32");
}

TEST_F(PlanTest, EveryDeviceGetsAMemoryLimit) {
  // The CPU: LibTorch's tensor memory capped at 90% of the memory by default.
  json p = plan(cpu());
  EXPECT_EQ(p["memory_fraction"], 0.9);
  EXPECT_EQ(p["memory_limit_bytes"], std::llround(0.9 * 24 * GiB));
  EXPECT_NE(plan_to_text(p).find("memory limit             21.6 GiB"), std::string::npos) << plan_to_text(p);
  // The settings file's fraction, or its GiB, whichever is smaller.
  HardwareSettings s = parse_hardware_settings("memory_fraction = 0.5\nmemory_limit_gb = 6\n", "hw.ini");
  p = plan(cpu(), [&](PlanInputs& in) { in.settings = &s; });
  EXPECT_EQ(p["memory_limit_bytes"], 6 * GiB);
  EXPECT_EQ(p["sources"]["memory_fraction"], "settings file hw.ini:2 (6 GiB)");
  s = parse_hardware_settings("memory_fraction = 0.1\nmemory_limit_gb = 6\n", "hw.ini");
  p = plan(cpu(), [&](PlanInputs& in) { in.settings = &s; });
  EXPECT_EQ(p["memory_limit_bytes"], std::llround(0.1 * 24 * GiB));
  // A GPU has none by default; in GiB it becomes the allocator's fraction, and its cap in bytes.
  const Device a100 = gpu("A100", 40 * GiB, 8, 0);
  p = plan(a100);
  EXPECT_EQ(p["memory_fraction"], nullptr);
  EXPECT_FALSE(p.contains("memory_limit_bytes"));
  s = parse_hardware_settings("[cuda]\nmemory_limit_gb = 30\n", "hw.ini");
  p = plan(a100, [&](PlanInputs& in) { in.settings = &s; });
  EXPECT_DOUBLE_EQ(p["memory_fraction"].get<double>(), 0.75);
  EXPECT_EQ(p["memory_limit_bytes"], 30 * GiB);
  EXPECT_EQ(p["memory"]["garbage_collection_threshold"], 0.8);
}

TEST_F(PlanTest, TextShowsEveryValueWithItsSource) {
  const std::string text = plan_to_text(plan(gpu("NVIDIA A100-SXM4-40GB", 40 * GiB, 8, 0)));
  for (const char* part : {"Plan for cuda:0 (NVIDIA A100-SXM4-40GB, 40.0 GiB)", "batch size", "2048",
                           "rule: cuda, >= 40 GB (autoconfig.json rule 1)", "precision", "bf16", "model preset",
                           "full", "threads", "TF32 matmul"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
}

}  // namespace
}  // namespace mlhost
