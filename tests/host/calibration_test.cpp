// Calibration's logic (plan/calibration/result.hpp, cache.hpp): which measured setting wins,
// how results are cached and checked, and how the plan takes them.
#include "plan/calibration/result.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "plan/allocator.hpp"
#include "plan/calibration/cache.hpp"
#include "plan/calibration/workload.hpp"
#include <mlh/config_table.hpp>
#include "plan/hardware_settings.hpp"
#include "plan/plan_text.hpp"
#include "planning.hpp"
#include "test_files.hpp"
#include "test_devices.hpp"

namespace mlhost {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

CalibrationSettings s(const std::string& allocator, int threads, const std::string& precision = "fp32") {
  return {allocator, threads, precision};
}

CalibrationKey key(const std::string& algorithm = "protonet") {
  CalibrationKey k;
  k.algorithm = algorithm;
  k.algorithm_version = "1.0.0";
  k.torch_version = "1.13.1";
  k.device = "cpu:0";
  k.device_name = "AMD EPYC";
  k.cores = 2;
  k.memory_gib = 24;
  k.host_version = "0.1.0";
  return k;
}

CalibrationResult result(const std::string& algorithm = "protonet") {
  CalibrationResult r;
  r.key = key(algorithm);
  r.benchmark = "train_episode";
  r.unit = "episodes";
  r.measurements = {{s("glibc", 2), 4.9}, {s("jemalloc", 2), 16.5}, {s("jemalloc", 1), 9.0}, {s("jemalloc", 2, "bf16"), 30}};
  r.chosen = s("jemalloc", 2);
  r.varied = {"allocator", "threads", "precision"};
  r.precision_check = {{"precision", "bf16"}, {"passed", false}, {"fp32_loss", 1.0}, {"reduced_loss", 2.0}};
  r.seconds = 12;
  r.measured_at = "2026-11-24T08:00:00Z";
  return r;
}

TEST(Calibration, ASlowerOrBarelyFasterSettingNeverReplacesTheIncumbent) {
  const CalibrationSettings incumbent = s("jemalloc", 2);
  EXPECT_EQ(pick_fastest({{incumbent, 10}, {s("glibc", 2), 9}}, incumbent, 0.03), incumbent);
  EXPECT_EQ(pick_fastest({{incumbent, 10}, {s("glibc", 2), 10.2}}, incumbent, 0.03), incumbent) << "within the margin";
  EXPECT_EQ(pick_fastest({{incumbent, 10}, {s("glibc", 2), 10.4}, {s("tcmalloc", 2), 12}}, incumbent, 0.03),
            s("tcmalloc", 2));
  // The incumbent's best figure counts when it was measured twice.
  EXPECT_EQ(pick_fastest({{incumbent, 8}, {s("glibc", 2), 10}, {incumbent, 10}}, incumbent, 0.03), incumbent);
  // Not measured at all: nothing to compare with, so it stays.
  EXPECT_EQ(pick_fastest({{s("glibc", 2), 100}}, incumbent, 0.03), incumbent);
}

TEST(Calibration, ThreadCandidatesArePowersOfTwoAndEveryCore) {
  EXPECT_EQ(thread_candidates(1), (std::vector<int>{1}));
  EXPECT_EQ(thread_candidates(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(thread_candidates(6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(thread_candidates(8), (std::vector<int>{1, 2, 4, 8}));
}

TEST(Calibration, ResultRoundTripsAndSaysWhatItMeasured) {
  const CalibrationResult r = result();
  const CalibrationResult back = CalibrationResult::from_json(r.to_json(), "x");
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(*back.throughput_of(s("jemalloc", 2)), 16.5);
  EXPECT_EQ(back.glibc_reference()->throughput, 4.9);
  EXPECT_EQ(calibrated_source(r, "allocator"), "calibrated: jemalloc 16.5 vs 4.90 episodes/s with glibc defaults");
  EXPECT_EQ(calibrated_source(r, "threads"), "calibrated: 2 threads 16.5 episodes/s (1 thread 9.00)");
  EXPECT_EQ(calibrated_source(r, "precision"),
            "calibrated: fp32 16.5 episodes/s vs bf16 30.0; bf16 quality check failed (loss 2.00 vs fp32 1.00)");
}

// A check on held-out data reads as the two accuracies, their difference and its interval.
TEST(Calibration, AHeldOutCheckSaysBothAccuraciesAndTheInterval) {
  CalibrationResult r = result();
  r.chosen = s("jemalloc", 2, "bf16");
  r.precision_check = {{"precision", "bf16"}, {"passed", true}, {"steps", 100}, {"held_out", 100},
                       {"fp32_loss", 0.45}, {"reduced_loss", 0.44}, {"fp32_accuracy", 0.843},
                       {"reduced_accuracy", 0.854}, {"difference", 0.011}, {"interval", {0.006, 0.016}}};
  EXPECT_EQ(calibrated_source(r, "precision"),
            "calibrated: bf16 30.0 episodes/s vs fp32 16.5; bf16 quality check passed: held-out accuracy 85.4% vs "
            "fp32 84.3% (difference +1.1 points, 95% interval +0.6 to +1.6, 100 episodes after 100 training steps)");
  r.chosen = s("jemalloc", 2);
  r.precision_check["passed"] = false;
  r.precision_check["difference"] = -0.04;
  r.precision_check["interval"] = {-0.05, -0.03};
  EXPECT_NE(calibrated_source(r, "precision").find("bf16 quality check failed: held-out accuracy"), std::string::npos);
  EXPECT_NE(calibrated_source(r, "precision").find("difference -4.0 points, 95% interval -5.0 to -3.0"), std::string::npos)
      << calibrated_source(r, "precision");
}

TEST(Calibration, UntrustworthyResultsAreRejectedNamingTheField) {
  auto error = [](json j) {
    try {
      CalibrationResult::from_json(j, "cache 'c.json': calibrations[0]");
    } catch (const CalibrationError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const json good = result().to_json();
  json bad = good;
  bad["chosen"]["threads"] = 0;
  EXPECT_EQ(error(bad), "cache 'c.json': calibrations[0].chosen.threads: '0' must be an integer >= 1");
  bad = good;
  bad["chosen"] = s("tcmalloc", 2).to_json();
  EXPECT_NE(error(bad).find("chosen: expected settings that were measured"), std::string::npos);
  bad = good;
  bad["chosen"] = s("jemalloc", 2, "bf16").to_json();  // measured faster, but its check failed
  EXPECT_NE(error(bad).find("chosen.precision"), std::string::npos);
  // Measured in bf16 without varying the precision (a GPU, where the plan picks bf16): the
  // cache entry is good, and reads back as it was written.
  json gpu = good;
  gpu["varied"] = json::array({"allocator"});
  gpu["precision_check"] = nullptr;
  gpu["measurements"] = json::array({{{"settings", s("glibc", 2, "bf16").to_json()}, {"throughput", 200}},
                                     {{"settings", s("jemalloc", 2, "bf16").to_json()}, {"throughput", 210}}});
  gpu["chosen"] = s("jemalloc", 2, "bf16").to_json();
  EXPECT_EQ(error(gpu), "");
  EXPECT_EQ(CalibrationResult::from_json(gpu, "x").to_json(), gpu);
  bad = good;
  bad["measurements"][1]["throughput"] = -3;
  EXPECT_NE(error(bad).find("measurements[1].throughput"), std::string::npos);
  bad = good;
  bad["key"].erase("torch_version");
  EXPECT_NE(error(bad).find("key.torch_version: expected a value (it is missing)"), std::string::npos);
  bad = good;
  bad["varied"] = json::array({"batch"});
  EXPECT_NE(error(bad).find("varied"), std::string::npos);
  EXPECT_NE(error(json::array()).find("expected an object"), std::string::npos);
}

TEST(CalibrationCache, KeepsOneEntryPerKey) {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "mlhost" / "calibration.json";
  CalibrationCache cache(file);
  cache.load();  // none yet
  EXPECT_FALSE(cache.find(key()));
  cache.store(result("protonet"));
  cache.store(result("trm"));
  CalibrationCache reread(file);
  reread.load();
  ASSERT_TRUE(reread.find(key("protonet")));
  ASSERT_TRUE(reread.find(key("trm")));
  // A changed key (the other LibTorch build) finds nothing; its result is kept beside the
  // first one's, so switching back and forth measures neither again.
  CalibrationKey changed = key();
  changed.torch_version = "2.15.0";
  EXPECT_FALSE(reread.find(changed));
  CalibrationResult newer = result();
  newer.key = changed;
  reread.store(newer);
  reread.store(newer);  // measured again: replaces its own entry
  CalibrationCache third(file);
  third.load();
  EXPECT_TRUE(third.find(changed));
  EXPECT_TRUE(third.find(key())) << "the other build's entry stays";
  EXPECT_TRUE(third.find(key("trm")));
  const json stored = json::parse(std::ifstream(file));
  EXPECT_EQ(stored["calibrations"].size(), 3u) << stored.dump(2);
}

TEST(CalibrationCache, KeepsTheMostRecentEntriesOfOneAlgorithmAndDevice) {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "calibration.json";
  CalibrationCache cache(file);
  std::vector<CalibrationKey> keys;
  for (size_t i = 0; i < CalibrationCache::kKeptPerDevice + 2; ++i) {
    CalibrationResult r = result();
    r.key.host_version = "0." + std::to_string(i);
    keys.push_back(r.key);
    cache.store(r);
  }
  cache.store(result("trm"));
  CalibrationCache reread(file);
  reread.load();
  EXPECT_FALSE(reread.find(keys[0]));
  EXPECT_FALSE(reread.find(keys[1]));
  for (size_t i = 2; i < keys.size(); ++i) EXPECT_TRUE(reread.find(keys[i])) << i;
  EXPECT_TRUE(reread.find(key("trm")));
}

// Two runs that read the cache before either stored (the race of two runs calibrating at
// once): each store re-reads the file under its lock, so neither entry is lost.
TEST(CalibrationCache, TwoRunsStoringAtOnceKeepBothEntries) {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "calibration.json";
  CalibrationCache first(file), second(file);
  first.load();
  second.load();
  first.store(result("protonet"));
  second.store(result("trm"));
  CalibrationCache reread(file);
  reread.load();
  EXPECT_TRUE(reread.find(key("protonet")));
  EXPECT_TRUE(reread.find(key("trm")));
  // And from two processes storing many entries at once.
  const pid_t child = ::fork();
  if (child == 0) {
    CalibrationCache mine(file);
    for (int i = 0; i < 20; ++i) {
      CalibrationResult r = result("child" + std::to_string(i));
      mine.store(r);
    }
    ::_exit(0);
  }
  CalibrationCache mine(file);
  for (int i = 0; i < 20; ++i) mine.store(result("parent" + std::to_string(i)));
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  reread.load();
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(reread.find(key("child" + std::to_string(i)))) << i;
    EXPECT_TRUE(reread.find(key("parent" + std::to_string(i)))) << i;
  }
}

// A damaged file reads as an error (the planner warns and measures again), and the next store
// replaces it with a valid file holding just that entry.
TEST(CalibrationCache, AStoreReplacesADamagedFile) {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "calibration.json";
  std::ofstream(file) << "{not json";
  CalibrationCache cache(file);
  EXPECT_THROW(cache.load(), CalibrationError);
  cache.store(result("trm"));
  CalibrationCache reread(file);
  reread.load();
  EXPECT_TRUE(reread.find(key("trm")));
}

TEST(CalibrationCache, BadContentIsAnErrorNamingTheFileAndNothingOfItIsUsed) {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "calibration.json";
  auto error_for = [&](const std::string& text) {
    std::ofstream(file) << text;
    CalibrationCache cache(file);
    try {
      cache.load();
    } catch (const CalibrationError& e) {
      EXPECT_FALSE(cache.find(key())) << "nothing of a bad file is used";
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_for("{not json"), "calibration cache '" + file.string() + "': not valid JSON");
  EXPECT_NE(error_for(R"({"schema_version": 2, "calibrations": []})").find("schema_version"), std::string::npos);
  json one_bad = {{"schema_version", 1}, {"calibrations", {result().to_json(), {{"key", 1}}}}};
  const std::string e = error_for(one_bad.dump());
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("calibrations[1]"), std::string::npos) << e;
}

TEST(CalibrationCache, BatchSizesAreKeptPerConfigAndCheckedFieldByField) {
  TempDir dir;
  const fs::path file = fs::path(dir.path()) / "calibration.json";
  const std::string config_a(64, 'a'), config_b(64, 'b');
  const json found = {{"batch", 48}, {"reason", "48 fits"}, {"trials", json::array()}, {"complete", true}};
  {
    CalibrationCache cache(file);
    cache.load();
    cache.store(result());
    cache.store_batch_size({key(), config_a, found, "2026-11-24T10:00:00Z"});
    cache.store_batch_size({key(), config_b, found, "2026-11-24T10:00:00Z"});
  }
  CalibrationCache cache(file);
  cache.load();
  ASSERT_TRUE(cache.find(key())) << "storing a batch size kept the calibration";
  ASSERT_TRUE(cache.find_batch_size(key(), config_a));
  EXPECT_EQ(cache.find_batch_size(key(), config_a)->result["batch"], 48);
  EXPECT_TRUE(cache.find_batch_size(key(), config_b));
  EXPECT_FALSE(cache.find_batch_size(key(), std::string(64, 'c'))) << "another config searches anew";

  json bad = json::parse(std::ifstream(file));
  bad["batch_sizes"][1]["result"]["batch"] = 0;
  std::ofstream(file) << bad.dump();
  CalibrationCache reread(file);
  try {
    reread.load();
    FAIL() << "a batch of 0 was trusted";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch_sizes[1].result.batch"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(reread.find_batch_size(key(), config_a)) << "nothing of a bad file is used";
}

TEST(CalibrationCache, FileFollowsXdgCacheHome) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(calibration_cache_file(), fs::path("/x/cache/mlhost/calibration.json"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", ::getenv("HOME") ? ::getenv("HOME") : "/root", 1);
  EXPECT_EQ(calibration_cache_file(), fs::path(::getenv("HOME")) / ".cache/mlhost/calibration.json");
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

Device cpu() { return testing::epyc_cpu(); }

// The plan of `algorithm` on the CPU with `r` in the calibration cache; `tweak` adjusts the
// request. Nothing is measured: the cached result is what the plan takes.
json plan_with_cached(CalibrationResult r, const std::function<void(PlanRequest&)>& tweak = nullptr) {
  TempDir t;
  PlanRequest request = testing::request_for(cpu());
  request.algorithm = testing::algorithm_info(json::parse(R"({"commands": ["train", "calibrate"]})"), "protonet");
  r.key = calibration_key(request.algorithm->manifest, request.device);
  {
    testing::FakePlanServices uncalibrated;  // the config this request runs, which keys the calibration
    r.key.workload = workload_hash(request.algorithm->config_schema, plan_run(request, uncalibrated).config);
  }
  CalibrationCache cache(t / "calibration.json");
  cache.store(r);
  request.measurement.cache_file = cache.file();
  if (tweak) tweak(request);
  testing::FakePlanServices services;
  json plan = plan_run(request, services).plan;
  EXPECT_TRUE(services.calibrate_plans.empty()) << "a cached calibration is not measured again";
  return plan;
}

TEST(CalibrationInThePlan, CalibratedValuesCountAfterTheCommandLineAndTheSettingsFile) {
  if (built_with_address_sanitizer()) GTEST_SKIP() << "AddressSanitizer build: the plan keeps glibc";
  CalibrationResult r = result();
  r.chosen = s("glibc", 1);
  r.measurements.push_back({s("glibc", 1), 50});
  json p = plan_with_cached(r);
  EXPECT_EQ(p["allocator"]["name"], "glibc");
  EXPECT_EQ(p["threads"]["intra_op"], 1);
  EXPECT_EQ(p["precision"], "fp32");
  EXPECT_EQ(p["sources"]["allocator"].get<std::string>().rfind("calibrated: glibc 50.0", 0), 0u) << p["sources"];
  EXPECT_EQ(p["sources"]["threads"].get<std::string>().rfind("calibrated: 1", 0), 0u) << p["sources"];
  EXPECT_EQ(p["calibration"]["status"].get<std::string>().rfind("cached in ", 0), 0u) << p["calibration"];
  EXPECT_EQ(p["calibration"]["chosen"], r.chosen.to_json());
  EXPECT_NE(plan_to_text(p).find("calibration              cached in "), std::string::npos);

  const HardwareSettings settings = parse_hardware_settings("allocator = glibc-tuned\nintra_op_threads = 2\n", "hw.ini");
  p = plan_with_cached(r, [&](PlanRequest& in) {
    in.settings = settings;
    in.overrides.precision = "bf16";
  });
  EXPECT_EQ(p["allocator"]["name"], "glibc-tuned");
  EXPECT_EQ(p["sources"]["allocator"], "settings file hw.ini:1");
  EXPECT_EQ(p["threads"]["intra_op"], 2);
  EXPECT_EQ(p["precision"], "bf16");
  EXPECT_EQ(p["sources"]["precision"], "command line --precision");
}

TEST(CalibrationInThePlan, OnlyWhatWasVariedIsTaken) {
  CalibrationResult r = result();
  r.varied = {"allocator"};  // threads and precision were what the plan had anyway
  r.chosen = s("jemalloc", 1);
  r.measurements.push_back({s("jemalloc", 1), 17});
  const json p = plan_with_cached(r);
  EXPECT_EQ(p["threads"]["intra_op"], 2) << "threads from the device, not the calibration";
  EXPECT_EQ(p["sources"]["threads"].get<std::string>().rfind("device", 0), 0u);
}

struct StepConfig {
  double lr = 0;
  int64_t hidden = 0, seed = 0, steps = 0;
};

// The fields a config table marks speed_neutral are left out of the workload a calibration is
// kept for, nested ones too; every other value, and values the schema does not know, count.
TEST(CalibrationWorkload, SpeedNeutralFieldsDoNotChangeIt) {
  static const auto table = mlh::ConfigTable<StepConfig>("toy")
                                .field("lr", MLH_MEMBER(lr), 0.1, mlh::above(0).speed_neutral(), "learning rate")
                                .field("model.hidden", MLH_MEMBER(hidden), 64, mlh::at_least(1), "width")
                                .field("model.seed", MLH_MEMBER(seed), 0, mlh::speed_neutral(), "init seed")
                                .field("steps", MLH_MEMBER(steps), 100, mlh::at_least(1).unit("steps").speed_neutral(),
                                       "how long");
  const json& schema = table.schema();
  EXPECT_EQ(schema["properties"]["lr"]["speed_neutral"], true) << schema.dump(2);
  const json config = {{"lr", 0.1}, {"model", {{"hidden", 64}, {"seed", 3}}}, {"steps", 100}, {"extra", 1}};
  EXPECT_EQ(step_workload(schema, config), json({{"model", {{"hidden", 64}}}, {"extra", 1}}));
  json other_schedule = config;
  other_schedule["lr"] = 0.003;
  other_schedule["steps"] = 5;
  other_schedule["model"]["seed"] = 9;
  EXPECT_EQ(workload_hash(schema, other_schedule), workload_hash(schema, config));
  json wider = config;
  wider["model"]["hidden"] = 128;
  EXPECT_NE(workload_hash(schema, wider), workload_hash(schema, config));
  EXPECT_EQ(workload_hash(schema, config).size(), 64u);
}

}  // namespace
}  // namespace mlhost
