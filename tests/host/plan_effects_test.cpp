// What each plan value does (plan/effects.hpp): the device's rules, the algorithm's account
// (describe_run), the warnings and errors; and the guard that keeps docs/plan.md's table of
// effects complete: every plan setting has a row, and each row either names the tests that
// check its effect from inside a worker or says why it does not apply.
#include "plan/effects.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "plan/hardware_settings.hpp"
#include "plan/plan_text.hpp"
#include "planning.hpp"
#include "test_devices.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr int64_t GiB = 1ll << 30;

Device cuda_a100() { return testing::cuda_gpu("NVIDIA A100", 40 * GiB, 8, 0); }
Device cuda_v100() { return testing::cuda_gpu("Tesla V100", 16 * GiB, 7, 0); }

// The plan of algorithm `algorithm` on `d` with a settings file of `settings_text`, its
// describe_run answering `run_description` (null: it says nothing, as ABI 1.0 plugins).
json plan_for(const Device& d, const std::string& settings_text = "", const json& run_description = json(),
              const std::string& algorithm = "algo", const std::function<void(PlanRequest&)>& tweak = nullptr) {
  PlanRequest request = testing::request_for(d);
  if (!settings_text.empty()) request.settings = parse_hardware_settings(settings_text, "hw.ini");
  request.allocators.system = false;
  request.algorithm = testing::algorithm_info(json::object(), algorithm);
  if (tweak) tweak(request);
  testing::FakePlanServices services;
  services.run_description = run_description;
  return plan_run(request, services).plan;
}

EffectInputs inputs(const Device& d) {
  EffectInputs in;
  in.device = &d;
  in.algorithm = "algo";
  return in;
}

TEST(PlanEffects, GpuOnlyValuesDoNothingOnTheCpuAndSayWhy) {
  const Device cpu = testing::epyc_cpu();
  json plan = plan_for(cpu, "pinned_memory = true\ncudnn_benchmark = true\ntf32_matmul = true\nempty_cache_steps = 10\n");
  const json& none = plan["no_effect"];
  EXPECT_EQ(none["pinned_memory"], "batches are in host memory already on cpu:0");
  EXPECT_EQ(none["cudnn_benchmark"], "cuDNN runs on CUDA GPUs only");
  EXPECT_EQ(none["tf32_matmul"], "TF32 is a mode of CUDA GPUs (compute capability 8.0 or newer)");
  EXPECT_EQ(none["empty_cache_steps"], "the CPU keeps no device cache to release");
  // Each was set in the settings file: a warning names the line.
  ASSERT_EQ(plan["warnings"].size(), 4u) << plan["warnings"].dump(2);
  EXPECT_EQ(plan["warnings"][0],
            "empty_cache_steps = 10 (settings file hw.ini:4) has no effect on this run: the CPU keeps no device cache "
            "to release");
  // Off or zero asks for nothing, so it is never "without effect"; of the CPU's defaults only
  // the prefetch factor (there are no data workers) does nothing.
  json quiet = plan_for(cpu);
  EXPECT_EQ(quiet["no_effect"].size(), 1u) << quiet["no_effect"].dump(2);
  EXPECT_TRUE(quiet["no_effect"].contains("prefetch_factor"));
  EXPECT_FALSE(quiet.contains("warnings"));
}

TEST(PlanEffects, OnCudaTheSameValuesApplyUnlessTheGpuLacksTheMode) {
  for (const Device& gpu : {cuda_a100(), cuda_v100()}) {
    SCOPED_TRACE(gpu.name);
    json plan = plan_for(gpu, "cudnn_benchmark = true\ntf32_matmul = true\nempty_cache_steps = 10\n");
    EXPECT_FALSE(plan["no_effect"].contains("pinned_memory"));
    EXPECT_FALSE(plan["no_effect"].contains("cudnn_benchmark"));
    EXPECT_FALSE(plan["no_effect"].contains("empty_cache_steps"));
    EXPECT_EQ(plan["no_effect"].contains("tf32_matmul"), gpu.capability_major < 8) << plan["no_effect"].dump();
  }
}

TEST(PlanEffects, PrefetchingNeedsDataWorkers) {
  const Device cpu = testing::epyc_cpu();
  json plan = plan_for(cpu);  // no workers on a CPU run by default
  EXPECT_EQ(plan["no_effect"]["prefetch_factor"],
            "no data workers (dataloader_workers 0): each batch is made when the step needs it");
  EXPECT_FALSE(plan.contains("warnings")) << "a default is marked, not warned about";
  json with_workers = plan_for(cpu, "dataloader_workers = 2\n");
  EXPECT_FALSE(with_workers["no_effect"].contains("prefetch_factor"));
}

TEST(PlanEffects, TheAlgorithmSaysWhatItUsesAndTheRestIsMarked) {
  const Device gpu = cuda_a100();
  const json description = json::parse(R"({
    "model": {"parameters": 1234, "shape": "2 layers"},
    "plan_fields": {"precision": "autocast", "preset": "sizes the model",
                    "batch_size": {"no_effect": "the batch is the episode"},
                    "pinned_memory": "batches pinned"}})");
  json plan = plan_for(gpu, "gradient_checkpointing = true\n", description, "algo");
  const json& none = plan["no_effect"];
  EXPECT_EQ(none["batch_size"], "the batch is the episode");
  EXPECT_EQ(none["gradient_checkpointing"], "algo does not use it (its describe_run lists the plan fields it reads)");
  EXPECT_EQ(none["cudnn_benchmark"], "algo does not use it (its describe_run lists the plan fields it reads)");
  EXPECT_FALSE(none.contains("precision"));
  EXPECT_FALSE(none.contains("pinned_memory"));
  EXPECT_FALSE(none.contains("threads")) << "the runtime applies threads for every algorithm";
  EXPECT_EQ(plan["model"], description["model"]);
  EXPECT_TRUE(plan["effects_declared"].get<bool>());
  ASSERT_EQ(plan["warnings"].size(), 1u) << plan["warnings"].dump();
  EXPECT_NE(plan["warnings"][0].get<std::string>().find("gradient_checkpointing = true (settings file hw.ini:1)"),
            std::string::npos);
  // An algorithm that does not say (ABI 1.0) gets nothing marked on its behalf.
  json silent = plan_for(gpu, "gradient_checkpointing = true\n", json(), "old");
  EXPECT_TRUE(silent["no_effect"].empty()) << silent["no_effect"].dump();
  EXPECT_FALSE(silent["effects_declared"].get<bool>());
  EXPECT_NE(plan_to_text(silent).find("does not say which plan fields it uses"), std::string::npos);
}

TEST(PlanEffects, BatchSizeOnTheCommandLineMustBeABatchSizeOfTheAlgorithm) {
  const Device cpu = testing::epyc_cpu();
  const json description = json::parse(R"({"plan_fields": {"batch_size": {"no_effect": "ppo's batch is num_envs x num_steps"}}})");
  try {
    plan_for(cpu, "", description, "ppo", [](PlanRequest& in) { in.overrides.batch_size = 64; });
    FAIL() << "no error";
  } catch (const PlanError& e) {
    EXPECT_STREQ(e.what(), "--batch-size 64: ppo's batch is num_envs x num_steps");
  }
  // From a rule it is only marked.
  json ruled = plan_for(cpu, "", description, "ppo");
  EXPECT_EQ(ruled["no_effect"]["batch_size"], "ppo's batch is num_envs x num_steps");
}

TEST(PlanEffects, ThePrintedPlanShowsTheReasonBesideTheValueAndTheModel) {
  const Device cpu = testing::epyc_cpu();
  const json description = json::parse(R"({"model": {"parameters": 111936, "shape": "Conv-4: 4 blocks x 64 channels"},
                                            "plan_fields": {"pinned_memory": "pinned"}})");
  json plan = plan_for(cpu, "pinned_memory = true\n", description);
  const std::string text = plan_to_text(plan);
  EXPECT_NE(text.find("pinned memory            on (no effect: batches are in host memory already on cpu:0) settings "
                      "file hw.ini:1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("model                    Conv-4: 4 blocks x 64 channels, 111,936 parameters"), std::string::npos)
      << text;
}

TEST(PlanEffects, MemoryCapsInBytesWhereTheFractionIsOfTheDevicesMemory) {
  json cpu = plan_for(testing::epyc_cpu(), "memory_limit_gb = 4\n");
  EXPECT_EQ(cpu["memory_limit_bytes"], 4 * GiB);
  json gpu = plan_for(cuda_a100(), "memory_limit_gb = 10\n");
  EXPECT_EQ(gpu["memory_limit_bytes"], 10 * GiB);
  EXPECT_NE(gpu["sources"]["memory_limit_bytes"].get<std::string>().find("caching allocator"), std::string::npos);
  // MPS's watermark is a share of Metal's working set, which the probe does not know.
  json mps = plan_for(testing::apple_mps(16 * GiB), "memory_limit_gb = 8\n");
  EXPECT_EQ(mps["memory_fraction"], 0.5);
  EXPECT_FALSE(mps.contains("memory_limit_bytes"));
}

// ---- the table in docs/plan.md -------------------------------------------------------------

const std::vector<std::string> kColumns = {"field", "cpu", "cuda", "mps", "protonet", "ppo", "trm", "other runtime users",
                                           "checked by"};

// field -> its row's cells, from the table under "## What each field does".
std::map<std::string, std::vector<std::string>> effects_table() {
  std::ifstream in(std::string(MLH_TEST_SOURCE_DIR) + "/docs/plan.md");
  std::string line;
  bool in_section = false;
  std::map<std::string, std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## What each field does";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(std::regex_replace(cell, std::regex("^ +| +$"), ""));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    const std::string field = cells.at(0).substr(1, cells.at(0).find('`', 1) - 1);
    rows[field] = cells;
  }
  return rows;
}

// Suite.Name of every TEST, TEST_F and TEST_P under tests/.
std::set<std::string> tests_in_tree() {
  std::set<std::string> names;
  const std::regex test(R"(TEST(?:_F|_P)?\(\s*(\w+),\s*(\w+)\s*\))");
  for (const auto& entry : fs::recursive_directory_iterator(std::string(MLH_TEST_SOURCE_DIR) + "/tests")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), test), end; it != end; ++it)
      names.insert((*it)[1].str() + "." + (*it)[2].str());
  }
  return names;
}

bool not_applicable(const std::string& cell) { return cell.rfind("n/a", 0) == 0; }

TEST(PlanEffectsTable, EveryFieldHasARowWithItsTestsOrWhyItDoesNotApply) {
  const auto table = effects_table();
  const std::set<std::string> tests = tests_in_tree();
  ASSERT_GT(tests.size(), 500u) << "the test sources were not found under " + std::string(MLH_TEST_SOURCE_DIR);
  for (const mlh::PlanFieldInfo& f : mlh::kPlanFields) {
    SCOPED_TRACE(f.name);
    auto row = table.find(f.name);
    ASSERT_NE(row, table.end()) << "docs/plan.md's table has no row for `" << f.name << "`";
    const std::vector<std::string>& cells = row->second;
    ASSERT_EQ(cells.size(), kColumns.size()) << "a row has a cell per column";
    bool applies_somewhere = false;
    for (size_t c = 1; c + 1 < cells.size(); ++c) {
      EXPECT_FALSE(cells[c].empty()) << kColumns[c] << ": say what it does, or n/a and why";
      if (not_applicable(cells[c])) EXPECT_GT(cells[c].size(), 5u) << kColumns[c] << ": n/a needs its reason";
      else applies_somewhere = true;
    }
    const std::string& checked_by = cells.back();
    std::vector<std::string> named;
    const std::regex name("`(\\w+\\.\\w+)`");
    for (std::sregex_iterator it(checked_by.begin(), checked_by.end(), name), end; it != end; ++it)
      named.push_back((*it)[1].str());
    if (applies_somewhere) EXPECT_FALSE(named.empty()) << "it does something somewhere: name the test that checks it";
    for (const std::string& t : named) EXPECT_TRUE(tests.count(t)) << "no test " << t << " under tests/";
  }
  for (const auto& [field, cells] : table) {
    bool known = false;
    known = mlh::find_plan_field(field) != nullptr;
    EXPECT_TRUE(known) << "docs/plan.md has a row for `" << field << "`, which is no plan setting";
  }
}

// A plan in which every setting asks for something, for the device columns' check.
json active_plan(const Device& d) {
  json plan = plan_for(d);
  plan["precision"] = "bf16";
  plan["batch_size"] = 64;
  plan["gradient_checkpointing"] = true;
  plan["preset"] = "full";
  plan["memory_fraction"] = 0.5;
  plan["memory_limit_bytes"] = GiB;
  plan["memory"] = {{"garbage_collection_threshold", 0.8}};
  plan["empty_cache_steps"] = 10;
  plan["pinned_memory"] = true;
  plan["dataloader_workers"] = 2;
  plan["prefetch_factor"] = 2;
  plan["channels_last"] = true;
  plan["cuda_graphs"] = true;
  plan["omp_proc_bind"] = "close";
  plan["omp_wait_policy"] = "passive";
  plan["cudnn_benchmark"] = true;
  plan["tf32_matmul"] = true;
  plan["deterministic"] = true;
  plan["distributed"] = {{"world_size", 2}};
  plan["max_steps"] = 10;
  return plan;
}

TEST(PlanEffectsTable, TheDeviceColumnsAreWhatTheHostDecides) {
  const auto table = effects_table();
  const std::vector<std::pair<size_t, Device>> devices = {
      {1, testing::epyc_cpu()}, {2, cuda_a100()}, {3, testing::apple_mps(32 * GiB, /*bf16=*/true)}};
  for (const auto& [column, device] : devices) {
    const json plan = active_plan(device);
    EffectInputs in = inputs(device);
    in.algorithm_torch = "2.15.0";
    for (const mlh::PlanFieldInfo& f : mlh::kPlanFields) {
      SCOPED_TRACE(std::string(f.name) + " on " + device.kind);
      auto row = table.find(f.name);
      if (row == table.end() || row->second.size() != kColumns.size()) continue;  // the test above fails
      const std::optional<std::string> why = device_no_effect(f.field, plan, in);
      EXPECT_EQ(not_applicable(row->second[column]), why.has_value())
          << "docs/plan.md says \"" << row->second[column] << "\"; the host says "
          << (why ? "no effect: " + *why : "it applies");
    }
  }
}

// Every field a plan's sources name is a setting the table covers: a field added to the plan
// without a row (and a test, or a reason) fails here.
TEST(PlanEffectsTable, EverySettingOfARealPlanIsListed) {
  std::set<std::string> listed;
  for (const mlh::PlanFieldInfo& f : mlh::kPlanFields) listed.insert(f.name);
  std::set<std::string> seen;
  for (const Device& d : {testing::epyc_cpu(), cuda_a100(), testing::apple_mps(16 * GiB)}) {
    const json plan = plan_for(d, "memory_limit_gb = 8\n", json(), "algo", [&](PlanRequest& in) {
      if (d.kind == "mps") return;  // MPS refuses a distributed launch
      in.launch.world_size = in.launch.workers_here = in.launch.local_processes = 2;
      in.launch.source = "--nproc-per-node";
      in.ranking.devices.push_back(in.ranking.devices[0]);  // a second GPU for the second rank
      in.ranking.devices[1].device.index = 1;
    });
    for (const auto& [field, source] : plan["sources"].items()) {
      seen.insert(field);
      EXPECT_TRUE(listed.count(field)) << "plan field '" << field << "' (" << source << ") is not in mlh::kPlanFields";
    }
  }
  for (const std::string& field : listed) EXPECT_TRUE(seen.count(field)) << field << " never appears in a plan";
}

}  // namespace
}  // namespace mlhost
