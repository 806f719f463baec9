#include "plan/hardware_settings.hpp"

#include <gtest/gtest.h>
#include <mlh/plan_fields.hpp>

#include <fstream>
#include <sstream>

#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

std::string error_of(const std::string& text) {
  TempDir t;
  testing::write_text(t / "hw.ini", text);
  try {
    read_hardware_settings(t / "hw.ini");
  } catch (const SettingsError& e) {
    return e.what();
  }
  return "";
}

TEST(HardwareSettings, ShippedDefaultFileIsAllComments) {
  HardwareSettings s = read_hardware_settings(std::string(MLH_TEST_SHARE_DIR) + "/hardware.ini");
  EXPECT_TRUE(s.global.empty());
  EXPECT_TRUE(s.per_device.empty());
}

TEST(HardwareSettings, ShippedFileDocumentsEveryKey) {
  std::ifstream in(std::string(MLH_TEST_SHARE_DIR) + "/hardware.ini");
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& key : hardware_setting_keys())
    EXPECT_NE(text.str().find("# " + key + " = "), std::string::npos) << key << " is not documented";
}

TEST(HardwareSettings, SectionsOverrideTheTopAndAutoIsUnset) {
  TempDir t;
  testing::write_text(t / "hw.ini",
                      "# comment\nprecision = bf16\nmemory_fraction = 0.9  # inline comment\nbatch_size = auto\n"
                      "\n[cuda]\nmemory_fraction = 0.5\nprecision = fp16\n\n[cpu]\nintra_op_threads = 3\n");
  HardwareSettings s = read_hardware_settings(t / "hw.ini");
  EXPECT_EQ(s.get("precision", "cpu")->value, "bf16");
  EXPECT_EQ(s.get("precision", "cuda")->value, "fp16");
  EXPECT_EQ(s.get("memory_fraction", "cuda")->value, "0.5");
  EXPECT_EQ(s.get("memory_fraction", "mps")->value, "0.9");
  EXPECT_EQ(s.get("intra_op_threads", "cpu")->value, "3");
  EXPECT_FALSE(s.get("intra_op_threads", "cuda").has_value());
  EXPECT_FALSE(s.get("batch_size", "cpu").has_value()) << "auto means: not set";
  EXPECT_EQ(s.get("precision", "cuda")->origin, (t / "hw.ini").string() + ":8");
}

// The file's keys and their checks come from the plan's table (mlh::kPlanFields' settings):
// every key it declares is read, takes auto, and refuses a value of the wrong kind, naming
// the key; a bounded count refuses one past its bound.
TEST(HardwareSettings, EveryKeyOfThePlansTableIsCheckedByItsKind) {
  int keys = 0;
  for (const mlh::PlanFieldInfo& f : mlh::kPlanFields) {
    for (const mlh::PlanSetting& setting : f.settings) {
      if (!setting.key) continue;
      ++keys;
      const std::string key = setting.key;
      EXPECT_EQ(error_of(key + " = auto\n"), "") << key;
      const std::string bad = setting.kind == mlh::SettingKind::kAllocatorConf ? "not a conf" : "%bad%";
      EXPECT_NE(error_of(key + " = " + bad + "\n").find("key '" + key + "'"), std::string::npos) << key;
      if (setting.kind == mlh::SettingKind::kCount && setting.max) {
        EXPECT_EQ(error_of(key + " = " + std::to_string(setting.max) + "\n"), "") << key;
        EXPECT_NE(error_of(key + " = " + std::to_string(setting.max + 1) + "\n").find("must be at most"),
                  std::string::npos)
            << key;
      }
    }
  }
  EXPECT_EQ(static_cast<size_t>(keys) + 2, hardware_setting_keys().size()) << "the plan's keys and the launcher's two";
}

TEST(HardwareSettings, ErrorsNameFileLineAndKey) {
  std::string e = error_of("precision = fp32\n\n[cuda]\nmemory_fractoin = 0.5\n");
  EXPECT_NE(e.find("hw.ini', line 4: unknown key 'memory_fractoin'"), std::string::npos) << e;
  e = error_of("precision = fp8\n");
  EXPECT_NE(e.find("line 1: key 'precision' = 'fp8': must be one of auto, fp32, fp16, bf16"), std::string::npos) << e;
  e = error_of("\nmemory_fraction = 1.5\n");
  EXPECT_NE(e.find("line 2: key 'memory_fraction' = '1.5': must be a number in (0, 1]"), std::string::npos) << e;
  e = error_of("batch_size = -3\n");
  EXPECT_NE(e.find("key 'batch_size'"), std::string::npos) << e;
  e = error_of("intra_op_threads = two\n");
  EXPECT_NE(e.find("must be an integer >= 1"), std::string::npos) << e;
  e = error_of("deterministic = yes\n");
  EXPECT_NE(e.find("key 'deterministic'"), std::string::npos) << e;
  e = error_of("precision = fp32\nprecision = bf16\n");
  EXPECT_NE(e.find("line 2: key 'precision' is set twice (first at"), std::string::npos) << e;
  e = error_of("[Not A Kind]\nprecision = fp32\n");
  EXPECT_NE(e.find("section [Not A Kind]"), std::string::npos) << e;
  e = error_of("this line has no equals sign\n");
  EXPECT_NE(e.find("hw.ini'"), std::string::npos) << e;
  EXPECT_THROW(read_hardware_settings("/nonexistent/hw.ini"), SettingsError);
}

}  // namespace
}  // namespace mlhost
