// One check of a plan setting (mlh/plan_setting_check.hpp, from the plan's table): the
// command line, the hardware settings file, the calibration cache and the worker's plan
// reader accept exactly the values the table declares, and refuse the others with the
// table's words. A choice added to the table, or a bound changed there, reaches every entry
// point; an entry point with a list of its own fails here. (The runtime's RuntimePlan::parse
// is checked the same way in tests/runtime/apply_plan_test.cpp.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <mlh/plan_reader.hpp>
#include <mlh/plan_setting_check.hpp>

#include "cli/cli.hpp"
#include "plan/allocator_env.hpp"
#include "plan/calibration/result.hpp"
#include "plan/hardware_settings.hpp"

namespace mlhost {
namespace {

using nlohmann::json;

// What an entry point said of a value: "" when it took it, else its message.
using EntryPoint = std::string (*)(const std::string& setting, const std::string& value);

std::string from_command_line(const std::string& setting, const std::string& value) {
  const std::string option = setting == "intra_op_threads" ? "--threads" : "--" + setting;
  const std::vector<const char*> argv = {"host", "--algorithm", "toyreg", option.c_str(), value.c_str()};
  try {
    parse_cli(static_cast<int>(argv.size()), argv.data());
  } catch (const CliError& e) {
    return e.what();
  }
  return "";
}

std::string from_settings_file(const std::string& setting, const std::string& value) {
  try {
    parse_hardware_settings(setting + " = " + value + "\n", "hw.ini");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string from_calibration_cache(const std::string& setting, const std::string& value) {
  CalibrationSettings chosen{"glibc", 2, "fp32"};
  json settings = chosen.to_json();
  const std::string field = setting == "intra_op_threads" ? "threads" : setting;
  settings[field] = field == "threads" ? json(std::stoll(value)) : json(value);
  CalibrationResult r;
  r.benchmark = "step";
  r.unit = "steps";
  r.varied = {"allocator"};
  json j = r.to_json();
  j["key"] = {{"algorithm", "toyreg"}, {"algorithm_version", "1"}, {"torch_version", "2.15.0"}, {"device", "cpu:0"},
              {"device_name", "CPU"},  {"cores", 2},               {"memory_gib", 24},         {"host_version", "0.1.0"}};
  j["measurements"] = json::array({{{"settings", settings}, {"throughput", 1.0}}});
  j["chosen"] = settings;
  try {
    CalibrationResult::from_json(j, "cache");
  } catch (const CalibrationError& e) {
    return e.what();
  }
  return "";
}

// The worker's side of the host: the allocator's environment, read from the plan it wrote.
std::string from_worker_plan(const std::string& setting, const std::string& value) {
  try {
    if (setting == "allocator") {
      // A library where the allocator needs one, as the planner writes it.
      allocator_environment(
          mlh::PlanReader(json({{"allocator", {{"name", value}, {"library", "/usr/lib/liballocator.so"}}}}).dump()), "", "");
    } else {
      const json plan_value = setting == "intra_op_threads" ? json(std::stoll(value)) : json(value);
      mlh::PlanReader(json({{"value", plan_value}}).dump()).setting("value", mlh::plan_setting(setting));
    }
  } catch (const mlh::Error& e) {
    return e.what();
  }
  return "";
}

struct Case {
  std::string setting;
  std::vector<std::string> refused;
  std::vector<std::string> accepted;  // besides the table's choices
};

TEST(PlanSettingCheck, EveryEntryPointAcceptsAndRefusesWhatThePlanTableSays) {
  const std::vector<Case> cases = {
      {"precision", {"fp8", "FP32", ""}, {}},
      {"allocator", {"fastest", "mimalloc"}, {}},
      {"intra_op_threads", {"0", "4097"}, {"1", "4096"}},
  };
  const std::vector<std::pair<const char*, EntryPoint>> entry_points = {{"command line", from_command_line},
                                                                        {"settings file", from_settings_file},
                                                                        {"calibration cache", from_calibration_cache},
                                                                        {"worker's plan", from_worker_plan}};
  for (const Case& c : cases) {
    std::vector<std::string> accepted = mlh::plan_setting_choices(mlh::plan_setting(c.setting));
    accepted.insert(accepted.end(), c.accepted.begin(), c.accepted.end());
    for (const auto& [where, entry] : entry_points) {
      for (const std::string& value : accepted) EXPECT_EQ(entry(c.setting, value), "") << where << ": " << c.setting << " " << value;
      for (const std::string& value : c.refused) {
        // In the table's words, with "auto" where the entry point takes it too.
        const std::string problem = mlh::plan_setting_problem(c.setting, value);
        const std::string or_auto = mlh::plan_setting_problem(c.setting, value, /*or_auto=*/true);
        const std::string said = entry(c.setting, value);
        EXPECT_NE(said, "") << where << " took " << c.setting << " '" << value << "'";
        EXPECT_TRUE(said.find(problem) != std::string::npos || said.find(or_auto) != std::string::npos)
            << where << ": " << said << " (the table: " << problem << ")";
        if (!value.empty()) EXPECT_NE(said.find(value), std::string::npos) << where << " names the value: " << said;
      }
    }
  }
}

TEST(PlanSettingCheck, TheTablesWordsForEachKind) {
  EXPECT_EQ(mlh::plan_setting_problem("precision", "fp8"), "must be one of fp32, fp16, bf16");
  EXPECT_EQ(mlh::plan_setting_problem("precision", "fp8", /*or_auto=*/true), "must be one of auto, fp32, fp16, bf16");
  EXPECT_EQ(mlh::plan_setting_problem("intra_op_threads", "4097"), "must be at most 4096 (beyond any machine's cores)");
  EXPECT_EQ(mlh::plan_setting_problem("intra_op_threads", "2.5"), "must be an integer >= 1");
  EXPECT_EQ(mlh::plan_setting_problem("memory_fraction", "1.5"), "must be a number in (0, 1]");
  EXPECT_EQ(mlh::plan_setting_problem("deterministic", "yes", true), "must be one of auto, true, false");
  EXPECT_EQ(mlh::plan_setting_problem("preset", "Big"), "must be a preset name ([a-z0-9_-], up to 64 characters)");
  EXPECT_EQ(mlh::plan_setting_problem("jemalloc_conf", "background_thread:true,narenas:2"), "");
  EXPECT_NE(mlh::plan_setting_problem("jemalloc_conf", "background_thread"), "");
  EXPECT_EQ(mlh::plan_setting_problem("malloc_mmap_threshold", "33554433"),
            "must be at most 33554432 (32 MiB, glibc's limit)");
  EXPECT_THROW(mlh::plan_setting("precison"), std::logic_error);
}

}  // namespace
}  // namespace mlhost
