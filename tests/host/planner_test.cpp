// The planning stage through its entry point, plan_run(), with services that spawn nothing
// (planning.hpp): where each value comes from, what calibration and the batch size finder
// change, and what each worker starts with.
#include "plan/planner.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "plan/allocator.hpp"
#include "plan/calibration/cache.hpp"
#include "plan/hardware_settings.hpp"
#include "plan/plan_text.hpp"
#include "planning.hpp"
#include "test_files.hpp"
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
  // A plan for the cpu of an algorithm with a calibrate command, nothing cached (the cache
  // file in `dir`), the system's allocators: a first run that calibrates.
  PlanRequest calibrating_request(const TempDir& dir) {
    PlanRequest request = testing::request_for(cpu());
    request.algorithm = testing::algorithm_info(json::parse(R"({"commands": ["train", "calibrate"]})"));
    request.allocators.system = true;
    request.measurement.calibrate = MeasurementPolicy::Calibrate::kIfMissing;
    request.measurement.cache_file = dir / "calibration.json";
    return request;
  }
  json plan(const Device& d, std::function<void(PlanRequest&)> tweak = nullptr) {
    PlanRequest request = testing::request_for(d);
    if (tweak) tweak(request);
    return plan_run(request, services_).plan;
  }
  std::string error(const Device& d, std::function<void(PlanRequest&)> tweak) {
    try {
      plan(d, tweak);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  }
  std::string plan_run_error(const PlanRequest& request) {
    try {
      testing::FakePlanServices services;
      plan_run(request, services);
    } catch (const PlanError& e) {
      return e.what();
    }
    return "";
  }
  testing::FakePlanServices services_;
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

// Defaults and effects come from the one table of torch backends: a device of the GPU class
// that runs on LibTorch's cpu (a stand-in, or a third-party device) is planned as the CPU it
// runs on, and nothing of a GPU's is planned for it only to be marked as doing nothing.
TEST_F(PlanTest, ADeviceIsPlannedByTheTorchDeviceItRunsOn) {
  Device d = gpu("a GPU-class device on LibTorch's cpu", 8 * GiB, 8, 0);
  d.plugin = d.kind = "fakegpu";
  d.torch_device = "cpu";
  const json p = plan(d);
  const json c = plan(cpu());
  for (const char* field :
       {"pinned_memory", "dataloader_workers", "cudnn_benchmark", "channels_last", "tf32_matmul", "memory_fraction"})
    EXPECT_EQ(p[field], c[field]) << field;
  EXPECT_FALSE(p.contains("memory")) << "no CUDA allocator settings for a device CUDA does not run";
  const json no_effect = p.value("no_effect", json::object());
  for (const char* field : {"pinned_memory", "cudnn_benchmark", "tf32_matmul", "memory", "empty_cache_steps"})
    EXPECT_FALSE(no_effect.contains(field)) << field << ": planned, then marked as doing nothing: " << no_effect.dump(2);
  // The rules still go by the device's class (its batch size and preset are a GPU's).
  EXPECT_EQ(p["sources"]["batch_size"].get<std::string>().rfind("rule: ", 0), 0u) << p["sources"].dump(2);
}

TEST_F(PlanTest, CommandLineBeatsSettingsBeatsRules) {
  TempDir t;
  testing::write_text(t / "hw.ini", "batch_size = 100\nprecision = fp32\n[cuda]\ngradient_checkpointing = true\n"
                                    "memory_fraction = 0.5\nintra_op_threads = 3\n");
  const HardwareSettings settings = read_hardware_settings(t / "hw.ini");
  const Device a100 = gpu("A100", 40 * GiB, 8, 0);

  json p = plan(a100, [&](PlanRequest& in) { in.settings = settings; });
  EXPECT_EQ(p["batch_size"], 100);
  EXPECT_EQ(p["sources"]["batch_size"], "settings file " + (t / "hw.ini").string() + ":1");
  EXPECT_EQ(p["precision"], "fp32");
  EXPECT_EQ(p["gradient_checkpointing"], true);
  EXPECT_EQ(p["memory_fraction"], 0.5);
  EXPECT_EQ(p["memory"]["garbage_collection_threshold"], 0.8) << "the CUDA allocator reclaims under a cap";
  EXPECT_EQ(p["memory"]["max_split_size_mb"], 256) << "and keeps large blocks whole";
  EXPECT_EQ(p["threads"]["intra_op"], 3);
  EXPECT_EQ(p["preset"], "full") << "the rule still fills what the file leaves";

  p = plan(a100, [&](PlanRequest& in) {
    in.settings = settings;
    in.overrides.batch_size = 64;
    in.overrides.precision = "fp16";
  });
  EXPECT_EQ(p["batch_size"], 64);
  EXPECT_EQ(p["sources"]["batch_size"], "command line --batch-size");
  EXPECT_EQ(p["precision"], "fp16");
  EXPECT_EQ(p["sources"]["precision"], "command line --precision");
}

TEST_F(PlanTest, TheAlgorithmsOwnConfigAndPresetsCount) {
  const AlgorithmInfo description = testing::algorithm_info(json::parse(R"({
    "config_schema": {"type": "object", "properties": {"batch_size": {"type": "integer"}, "preset": {"type": "string"}}},
    "config_defaults": {"batch_size": 32},
    "presets": {"full": {}, "reduced": {}, "tiny": {}, "task": {"batch_size": 24}}})"));
  const json user = {{"batch_size", 48}};
  json p = plan(cpu(), [&](PlanRequest& in) {
    in.algorithm = description;
    in.user_config = user;
  });
  EXPECT_EQ(p["batch_size"], 48);
  EXPECT_EQ(p["sources"]["batch_size"], "config (batch_size)");

  const json tiny = {{"preset", "tiny"}};
  p = plan(cpu(), [&](PlanRequest& in) {
    in.algorithm = description;
    in.user_config = tiny;
  });
  EXPECT_EQ(p["preset"], "tiny");
  EXPECT_EQ(p["batch_size"], 256);  // the CPU rule's: "tiny" says nothing of batches

  // A task preset the user chose brings its batch size, above the rules; the user's own
  // batch_size still comes first.
  json task = {{"preset", "task"}};
  p = plan(cpu(), [&](PlanRequest& in) {
    in.algorithm = description;
    in.user_config = task;
  });
  EXPECT_EQ(p["batch_size"], 24);
  EXPECT_EQ(p["sources"]["batch_size"], "preset task (batch_size)");
  task["batch_size"] = 40;
  p = plan(cpu(), [&](PlanRequest& in) {
    in.algorithm = description;
    in.user_config = task;
  });
  EXPECT_EQ(p["batch_size"], 40);

  const json bogus = {{"preset", "huge"}};
  EXPECT_NE(error(cpu(), [&](PlanRequest& in) {
              in.algorithm = description;
              in.user_config = bogus;
            }).find("preset 'huge' (config (preset)) is not one of the algorithm's presets (full, reduced, task, tiny)"),
            std::string::npos);

  const AlgorithmInfo no_presets = testing::algorithm_info({{"presets", json::object()}});
  p = plan(cpu(), [&](PlanRequest& in) { in.algorithm = no_presets; });
  EXPECT_EQ(p["preset"], nullptr);
  EXPECT_EQ(p["sources"]["preset"], "the algorithm has no preset 'reduced'");
}

TEST_F(PlanTest, ImpossibleChoicesAreErrorsNamingTheValue) {
  EXPECT_EQ(error(cpu(), [](PlanRequest& in) { in.overrides.precision = "fp16"; }),
            "precision fp16 (command line --precision) is not supported on cpu:0 (supports fp32, bf16, fp64)");
  EXPECT_NE(error(mps(16 * GiB), [](PlanRequest& in) { in.overrides.precision = "fp16"; }).find("fp16 autocast"),
            std::string::npos);
  EXPECT_NE(error(gpu("V100", 16 * GiB, 7, 0), [](PlanRequest& in) { in.overrides.precision = "bf16"; }).find("not supported"),
            std::string::npos);
  Device unknown_memory = cpu();
  unknown_memory.memory_total_bytes = MLH_UNKNOWN;
  const HardwareSettings settings = parse_hardware_settings("memory_limit_gb = 4\n", "hw.ini");
  EXPECT_EQ(error(unknown_memory, [&](PlanRequest& in) { in.settings = settings; }),
            "memory_limit_gb (settings file hw.ini:1): the memory of cpu:0 is unknown");
}

// bf16 on MPS needs macOS 14 (the mps plugin then lists bf16) and a LibTorch with bf16
// autocast on MPS (2.6); either missing is an error before anything runs.
TEST_F(PlanTest, Bf16OnMpsNeedsMacOs14AndLibTorch26) {
  EXPECT_EQ(error(mps(16 * GiB), [](PlanRequest& in) { in.overrides.precision = "bf16"; }),
            "precision bf16 (command line --precision) is not supported on mps:0 (supports fp32, fp16); bf16 on MPS "
            "needs macOS 14 or later");
  const Device sonoma = testing::apple_mps(16 * GiB, /*bf16=*/true);
  EXPECT_EQ(error(sonoma,
                  [](PlanRequest& in) {
                    in.overrides.precision = "bf16";
                    in.algorithm = testing::algorithm_info(json::object(), "algo", "1.13.1");
                  }),
            "precision bf16 (command line --precision) on mps:0 needs LibTorch 2.6 or later, the first with bf16 "
            "autocast on MPS; the algorithm was built with LibTorch 1.13.1");
  const json p = plan(sonoma, [](PlanRequest& in) {
    in.overrides.precision = "bf16";
    in.algorithm = testing::algorithm_info(json::object(), "algo", "2.15.0");
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
  p = plan(cpu(), [&](PlanRequest& in) { in.settings = s; });
  EXPECT_EQ(p["memory_limit_bytes"], 6 * GiB);
  EXPECT_EQ(p["sources"]["memory_fraction"], "settings file hw.ini:2 (6 GiB)");
  s = parse_hardware_settings("memory_fraction = 0.1\nmemory_limit_gb = 6\n", "hw.ini");
  p = plan(cpu(), [&](PlanRequest& in) { in.settings = s; });
  EXPECT_EQ(p["memory_limit_bytes"], std::llround(0.1 * 24 * GiB));
  // A GPU has none by default; in GiB it becomes the allocator's fraction, and its cap in bytes.
  const Device a100 = gpu("A100", 40 * GiB, 8, 0);
  p = plan(a100);
  EXPECT_EQ(p["memory_fraction"], nullptr);
  EXPECT_FALSE(p.contains("memory_limit_bytes"));
  s = parse_hardware_settings("[cuda]\nmemory_limit_gb = 30\n", "hw.ini");
  p = plan(a100, [&](PlanRequest& in) { in.settings = s; });
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

// ---- the entry point: what it asks of the outside and what every worker gets -------------

// Every value has a source people read and a kind code reads; what the user chose is told
// apart from rules, devices and defaults by the kind, not by parsing the text.
TEST_F(PlanTest, EverySourceHasAKindBesideItsText) {
  const HardwareSettings settings = parse_hardware_settings("pinned_memory = true\n", "hw.ini");
  const json p = plan(cpu(), [&](PlanRequest& in) {
    in.settings = settings;
    in.overrides.batch_size = 64;
  });
  ASSERT_EQ(p["sources"].size(), p["source_kinds"].size()) << p.dump(2);
  for (const auto& [field, text] : p["sources"].items()) EXPECT_TRUE(p["source_kinds"].contains(field)) << field;
  EXPECT_EQ(p["source_kinds"]["batch_size"], "command_line");
  EXPECT_EQ(p["source_kinds"]["pinned_memory"], "settings_file");
  EXPECT_EQ(p["source_kinds"]["preset"], "rule");
  EXPECT_EQ(p["source_kinds"]["threads"], "device");
  EXPECT_EQ(p["source_kinds"]["deterministic"], "default");
  // The user's own choice doing nothing is a warning; the rule's batch size would only be marked.
  EXPECT_NE(p["warnings"].dump().find("pinned_memory = true (settings file hw.ini:1)"), std::string::npos) << p.dump(2);
}

// The worker's CPU side is the host's on every device: the plan's threads and allocator reach
// the environment whatever the device plugin returns; its own variables are added, and one
// of the CPU side it sets too is not used and is warned about.
TEST_F(PlanTest, EveryWorkerGetsThePlansCpuSideAndTheDevicesOwnVariables) {
  if (built_with_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer build: the plan keeps glibc";
  services_.device_variables = {{"CUDA_VISIBLE_DEVICES", "GPU-1234"}, {"MLH_TORCH_DEVICE", "cuda:0"},
                                {"OMP_NUM_THREADS", "99"}};
  PlanRequest request = testing::request_for(gpu("NVIDIA A100", 40 * GiB, 8, 0));
  request.overrides.allocator = "glibc-tuned";
  const PlannedRun run = plan_run(request, services_);
  ASSERT_EQ(run.workers.size(), 1u);
  const WorkerPlacement& w = run.workers[0];
  EXPECT_EQ(w.torch_device, "cuda:0");
  const std::string threads = std::to_string(run.plan["threads"]["intra_op"].get<int>());
  EXPECT_EQ(w.environment.at("OMP_NUM_THREADS"), threads) << "the plan's, not the plugin's 99";
  EXPECT_EQ(w.environment.at("OPENBLAS_NUM_THREADS"), threads);
  EXPECT_EQ(w.environment.at("CUDA_VISIBLE_DEVICES"), "GPU-1234");
  EXPECT_NE(w.environment.at("GLIBC_TUNABLES").find("glibc.malloc.mmap_threshold=33554432"), std::string::npos);
  EXPECT_EQ(run.plan["environment"], json(w.environment));
  EXPECT_EQ(run.plan["worker_torch_device"], "cuda:0");
  EXPECT_NE(run.plan["warnings"].dump().find("device plugin 'cuda' sets OMP_NUM_THREADS=99 for the worker; not used"),
            std::string::npos)
      << run.plan.dump(2);
}

// Ranks sharing a CPU split its cores; each worker gets its rank and the rendezvous, the plan
// the layout.
TEST_F(PlanTest, EachRankIsAWorkerWithItsPlaceAndTheRendezvous) {
  PlanRequest request = testing::request_for(cpu());
  request.launch.source = "--nproc-per-node";
  request.launch.world_size = request.launch.workers_here = request.launch.local_processes = 2;
  request.launch.master_port = 29555;
  const PlannedRun run = plan_run(request, services_);
  ASSERT_EQ(run.workers.size(), 2u);
  EXPECT_EQ(run.plan["threads"]["intra_op"], 1) << "2 cores, 2 ranks";
  EXPECT_EQ(run.plan["distributed"]["global_batch_size"], 512);
  EXPECT_EQ(run.plan["distributed"]["ranks"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const WorkerPlacement& w = run.workers[static_cast<size_t>(i)];
    EXPECT_EQ(w.rank, i);
    EXPECT_EQ(w.world_size, 2);
    EXPECT_EQ(w.environment.at("RANK"), std::to_string(i));
    EXPECT_EQ(w.environment.at("MASTER_PORT"), "29555");
    EXPECT_EQ(w.environment.at("OMP_NUM_THREADS"), "1");
  }
  EXPECT_FALSE(run.plan["environment"].contains("RANK")) << "the plan's environment is the device's and the CPU side's";
}

// global_batch_size (the TRM reference's meaning: one step's batch over all ranks) is split
// among the ranks, from the user's config or from the preset; an explicit batch size wins.
TEST_F(PlanTest, AGlobalBatchSizeIsSplitAmongTheRanks) {
  const AlgorithmInfo description = testing::algorithm_info(json::parse(R"({
    "config_schema": {"type": "object", "properties": {"batch_size": {"type": "integer"},
                      "global_batch_size": {"type": "integer"}, "preset": {"type": "string"}}},
    "config_defaults": {"batch_size": 32, "global_batch_size": 0},
    "presets": {"full": {}, "reduced": {}, "arc": {"batch_size": 8, "global_batch_size": 768}}})"));
  auto with = [&](const json& user, int ranks) {
    PlanRequest request = testing::request_for(cpu());
    request.algorithm = description;
    request.user_config = user;
    if (ranks > 1) {
      request.launch.source = "--nproc-per-node";
      request.launch.world_size = request.launch.workers_here = request.launch.local_processes = ranks;
    }
    return request;
  };
  PlannedRun run = plan_run(with({{"global_batch_size", 96}}, 4), services_);
  EXPECT_EQ(run.plan["batch_size"], 24);
  EXPECT_EQ(run.plan["sources"]["batch_size"], "config (global_batch_size 96 over 4 ranks)");
  EXPECT_EQ(run.plan["distributed"]["global_batch_size"], 96);
  run = plan_run(with({{"preset", "arc"}}, 2), services_);
  EXPECT_EQ(run.plan["batch_size"], 384);
  EXPECT_EQ(run.plan["sources"]["batch_size"], "preset arc (global_batch_size 768 over 2 ranks)");
  run = plan_run(with({{"preset", "arc"}}, 1), services_);
  EXPECT_EQ(run.plan["batch_size"], 768);
  // The user's own per-rank batch_size comes before the preset's global one.
  run = plan_run(with({{"preset", "arc"}, {"batch_size", 16}}, 2), services_);
  EXPECT_EQ(run.plan["batch_size"], 16);
  EXPECT_EQ(run.plan["distributed"]["global_batch_size"], 32);
  // 0 means unset.
  run = plan_run(with({{"global_batch_size", 0}, {"batch_size", 5}}, 1), services_);
  EXPECT_EQ(run.plan["batch_size"], 5);
  try {
    plan_run(with({{"global_batch_size", 100}}, 3), services_);
    FAIL() << "100 rows were split among 3 ranks";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("config global_batch_size 100 does not divide among 3 ranks"), std::string::npos)
        << e.what();
  }
}

TEST_F(PlanTest, AnUnknownCommandIsRefusedNamingThoseThereAre) {
  EXPECT_EQ(error(cpu(),
                  [](PlanRequest& in) {
                    in.algorithm = testing::algorithm_info(json::object());
                    in.command = "fly";
                  }),
            "--command 'fly': algorithm 'algo' has [\"train\",\"eval\"]");
  EXPECT_EQ(services_.describe_runs, 0) << "refused before any plugin was asked";
}

// A config only the plugin refuses (its describe_run) is refused before a calibration measures
// any candidate, each of which would fail on it.
TEST_F(PlanTest, AConfigThePluginRefusesIsRefusedBeforeAnyCandidateIsMeasured) {
  TempDir t;
  PlanRequest request = calibrating_request(t);
  services_.refuse_config = "config field 'gymnasium.id': env=gymnasium needs the environment";
  try {
    plan_run(request, services_);
    ADD_FAILURE() << "planned a config the plugin refuses";
  } catch (const PlanError& e) {
    EXPECT_EQ(std::string(e.what()), services_.refuse_config);
  }
  EXPECT_TRUE(services_.calibrate_plans.empty()) << services_.calibrate_plans.size() << " candidates measured";
  EXPECT_EQ(services_.describe_runs, 1);
}

// Calibration through the entry point: candidates measured in workers prepared for each (the
// allocator's variables, the thread count), the fastest by the margin chosen, cached, and a
// later plan takes it from the cache without measuring.
TEST_F(PlanTest, CalibratesWhenNothingIsCachedAndTakesTheCacheAfter) {
  if (built_with_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer build: the plan keeps glibc";
  TempDir t;
  PlanRequest request = calibrating_request(t);
  services_.throughput = [](const CalibrationSettings& s) {
    return (s.allocator == "glibc-tuned" ? 10.0 : 5.0) * (s.threads == 1 ? 1.5 : 1.0) * (s.precision == "bf16" ? 3 : 1);
  };
  services_.precision_check = {{"precision", "bf16"}, {"passed", true}, {"fp32_loss", 1.0}, {"reduced_loss", 1.01},
                               {"steps", 30}};
  const PlannedRun run = plan_run(request, services_);
  ASSERT_TRUE(run.calibration) << run.plan["calibration"].dump(2);
  EXPECT_EQ(run.plan["allocator"]["name"], "glibc-tuned");
  EXPECT_EQ(run.plan["threads"]["intra_op"], 1);
  EXPECT_EQ(run.plan["precision"], "bf16");
  EXPECT_EQ(run.plan["source_kinds"]["allocator"], "calibration");
  EXPECT_EQ(run.plan["calibration"]["status"].get<std::string>().rfind("measured now", 0), 0u) << run.plan["calibration"];
  // Each candidate ran in a worker prepared for it.
  ASSERT_GE(services_.calibrate_plans.size(), 3u);
  for (size_t i = 0; i < services_.calibrate_plans.size(); ++i) {
    const json& plan = services_.calibrate_plans[i];
    const auto& env = services_.calibrate_workers[i].environment;
    EXPECT_EQ(env.at("OMP_NUM_THREADS"), std::to_string(plan["threads"]["intra_op"].get<int>()));
    EXPECT_EQ(env.count("GLIBC_TUNABLES") == 1, plan["allocator"]["name"] == "glibc-tuned") << plan["allocator"];
  }
  // The run's config and environment follow the calibrated plan.
  EXPECT_EQ(run.workers[0].environment.at("OMP_NUM_THREADS"), "1");

  testing::FakePlanServices later;
  later.throughput = [](const CalibrationSettings&) { return -1.0; };
  request.measurement.calibrate = MeasurementPolicy::Calibrate::kCachedOnly;
  const PlannedRun cached = plan_run(request, later);
  EXPECT_TRUE(later.calibrate_plans.empty()) << "the cache answered";
  EXPECT_EQ(cached.plan["allocator"]["name"], "glibc-tuned");
  EXPECT_EQ(cached.plan["calibration"]["status"].get<std::string>().rfind("cached in", 0), 0u);

  // Without a calibrate command there is nothing to measure with.
  request.algorithm = testing::algorithm_info(json::object());
  request.measurement.calibrate = MeasurementPolicy::Calibrate::kAlways;
  const PlannedRun none = plan_run(request, later);
  EXPECT_EQ(none.plan["calibration"]["status"], "not calibrated: algo has no calibrate command");
}

// The time bound never cuts bf16 out: the allocators and thread counts measured before it stop
// while its measurement (with the quality check) still fits, and the calibration says it is
// partial.
TEST_F(PlanTest, TheTimeBoundLeavesBf16ItsTurn) {
  if (built_with_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer build: the plan keeps glibc";
  TempDir t;
  PlanRequest request = calibrating_request(t);
  request.measurement.seconds = 1.0;
  services_.calibrate_delay = std::chrono::milliseconds(300);
  services_.throughput = [](const CalibrationSettings& s) { return s.precision == "bf16" ? 3.0 : 1.0; };
  services_.precision_check = {{"precision", "bf16"}, {"passed", true}, {"fp32_loss", 1.0}, {"reduced_loss", 1.01},
                               {"steps", 30}};
  const PlannedRun run = plan_run(request, services_);
  bool bf16_measured = false;
  for (const json& plan : services_.calibrate_plans) bf16_measured = bf16_measured || plan["precision"] == "bf16";
  EXPECT_TRUE(bf16_measured) << services_.calibrate_plans.size() << " measurements, none of bf16";
  EXPECT_EQ(run.plan["precision"], "bf16") << run.plan["calibration"].dump(2);
}

// A cached calibration made before an allocator was installed never measured it: a run that
// may calibrate measures again (and tries it); one that may not keeps the cache and says so.
TEST_F(PlanTest, AnAllocatorInstalledAfterTheCalibrationIsTriedByTheNextOne) {
  if (built_with_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer build: the plan keeps glibc";
  TempDir t, libs;
  PlanRequest request = testing::request_for(cpu());
  request.algorithm = testing::algorithm_info(json::parse(R"({"commands": ["train", "calibrate"]})"));
  request.allocators.system = false;
  request.allocators.path = libs.path().string();  // nothing installed there yet
  request.measurement.calibrate = MeasurementPolicy::Calibrate::kIfMissing;
  request.measurement.cache_file = t / "calibration.json";
  services_.throughput = [](const CalibrationSettings& s) { return s.allocator == "jemalloc" ? 20.0 : 5.0; };
  const PlannedRun first = plan_run(request, services_);
  ASSERT_TRUE(first.calibration) << first.plan["calibration"].dump(2);
  for (const json& plan : services_.calibrate_plans) EXPECT_NE(plan["allocator"]["name"], "jemalloc");

  std::ofstream(libs / allocator_library_file("jemalloc")) << "ELF";  // installed now
  testing::FakePlanServices may_not;
  request.measurement.calibrate = MeasurementPolicy::Calibrate::kCachedOnly;
  const PlannedRun cached = plan_run(request, may_not);
  EXPECT_TRUE(may_not.calibrate_plans.empty());
  EXPECT_NE(cached.plan["calibration"]["status"].get<std::string>().find("it never measured jemalloc (installed since)"),
            std::string::npos)
      << cached.plan["calibration"];

  testing::FakePlanServices may;
  may.throughput = services_.throughput;
  request.measurement.calibrate = MeasurementPolicy::Calibrate::kIfMissing;
  const PlannedRun again = plan_run(request, may);
  EXPECT_EQ(again.plan["calibration"]["status"].get<std::string>().rfind("measured now", 0), 0u) << again.plan["calibration"];
  EXPECT_EQ(again.plan["allocator"]["name"], "jemalloc") << again.plan.dump(2);
}

// --batch-size auto: the finder's batch wins, the config gets it, and an algorithm whose batch
// is not a batch size is refused naming the option.
TEST_F(PlanTest, TheBatchSizeFinderGivesTheBatch) {
  TempDir t;
  const json description = json::parse(R"({"commands": ["train", "calibrate"],
    "config_schema": {"type": "object", "properties": {"batch_size": {"type": "integer"}}}})");
  PlanRequest request = testing::request_for(cpu());
  request.algorithm = testing::algorithm_info(description);
  request.overrides.batch_size_auto = true;
  request.measurement.cache_file = t / "calibration.json";
  const PlannedRun run = plan_run(request, services_);
  EXPECT_EQ(run.plan["batch_size"], 48);
  EXPECT_EQ(run.plan["source_kinds"]["batch_size"], "batch_finder");
  EXPECT_EQ(run.config["batch_size"], 48);
  ASSERT_EQ(services_.calibrate_plans.size(), 1u);
  EXPECT_EQ(services_.calibrate_plans[0]["calibration"]["batch_search"]["start"], 256 / 8);

  request.algorithm = testing::algorithm_info(json::parse(R"({"commands": ["train", "calibrate"]})"));
  EXPECT_EQ(plan_run_error(request).rfind("--batch-size auto: algo has no batch_size in its config", 0), 0u);
}

}  // namespace
}  // namespace mlhost
