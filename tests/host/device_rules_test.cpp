#include "plan/device_rules.hpp"

#include <gtest/gtest.h>

#include "test_files.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost {
namespace {

constexpr int64_t GiB = 1ll << 30;

Device device(const std::string& kind, int32_t cls, int64_t memory) {
  Device d;
  d.plugin = d.kind = kind;
  d.device_class = cls;
  d.memory_total_bytes = memory;
  return d;
}

std::vector<DeviceRule> shipped() { return read_device_rules(std::string(MLH_TEST_SHARE_DIR) + "/autoconfig.json"); }

struct Expect {
  std::string kind;
  int32_t cls;
  int64_t memory;
  int64_t batch;
  bool checkpointing;
  std::string preset;
};

TEST(DeviceRules, ShippedRulesGiveTheDocumentedTable) {
  const std::vector<DeviceRule> rules = shipped();
  const int32_t gpu = MLH_DEVICE_CLASS_DISCRETE_GPU, mac = MLH_DEVICE_CLASS_UNIFIED_GPU, cpu = MLH_DEVICE_CLASS_CPU;
  const std::vector<Expect> table = {
      {"cuda", gpu, 80 * GiB, 2048, false, "full"},         {"cuda", gpu, 40 * GiB, 2048, false, "full"},
      {"cuda", gpu, 39'600 * (GiB / 1000), 2048, false, "full"},  // an A100 40GB as NVML reports it
      {"cuda", gpu, 24 * GiB, 1536, false, "full"},         {"cuda", gpu, 32 * GiB, 1536, false, "full"},
      // A 24 GB card (RTX 3090: 24,268 MiB) is 24 GiB nominal: the 24-40 row, not 16-24.
      {"cuda", gpu, 24'268 * (GiB / 1024), 1536, false, "full"},
      {"cuda", gpu, 16 * GiB, 1024, false, "full"},         {"cuda", gpu, 15'780 * (GiB / 1000), 1024, false, "full"},
      {"cuda", gpu, 12 * GiB, 512, true, "full"},           {"cuda", gpu, 8 * GiB, 512, true, "full"},
      {"mps", mac, 64 * GiB, 512, false, "full"},           {"mps", mac, 32 * GiB, 512, false, "full"},
      {"mps", mac, 16 * GiB, 256, true, "reduced"},         {"cpu", cpu, 24 * GiB, 256, false, "reduced"},
      {"cpu", cpu, -1, 256, false, "reduced"},
      // Device kinds the table does not name fall back to their class.
      {"rocm", gpu, 64 * GiB, 512, true, "full"},          {"mycpu", cpu, 4 * GiB, 256, false, "reduced"},
  };
  for (const Expect& e : table) {
    SCOPED_TRACE(e.kind + " " + std::to_string(e.memory / (GiB / 1000)) + " MiB-ish");
    const DeviceRule* r = match_device_rule(rules, device(e.kind, e.cls, e.memory));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->batch_size, e.batch);
    EXPECT_EQ(r->gradient_checkpointing, e.checkpointing);
    EXPECT_EQ(r->preset, e.preset);
  }
  EXPECT_EQ(match_device_rule(rules, device("cuda", gpu, 12 * GiB))->describe(), "cuda, < 16 GB");
  EXPECT_EQ(match_device_rule(rules, device("cuda", gpu, 20 * GiB))->describe(), "cuda, 16-24 GB");
  EXPECT_EQ(match_device_rule(rules, device("cuda", gpu, 20 * GiB))->origin, "autoconfig.json rule 3");
}

TEST(DeviceRules, NominalMemoryRoundsUpToWholeGib) {
  EXPECT_EQ(nominal_memory_gib(40 * GiB), 40);
  EXPECT_EQ(nominal_memory_gib(42298834944), 40);  // A100 40GB as the driver reports it
  EXPECT_EQ(nominal_memory_gib(12622168064), 12);  // RTX 3060 12GB
  EXPECT_EQ(nominal_memory_gib(16160ll << 20), 16);  // V100 16GB
  EXPECT_EQ(nominal_memory_gib(-1), -1);
}

TEST(DeviceRules, UserFileExtendsOrReplaces) {
  TempDir t;
  testing::write_text(t / "mine.json", R"({"rules": [{"device": "cuda", "min_memory_gb": 70, "batch_size": 4096}]})");
  std::vector<DeviceRule> rules = load_device_rules(std::string(MLH_TEST_SHARE_DIR) + "/autoconfig.json", t / "mine.json");
  const Device h100 = device("cuda", MLH_DEVICE_CLASS_DISCRETE_GPU, 80 * GiB);
  EXPECT_EQ(match_device_rule(rules, h100)->batch_size, 4096);
  EXPECT_EQ(match_device_rule(rules, h100)->origin, "mine.json rule 1");
  EXPECT_FALSE(match_device_rule(rules, h100)->preset.has_value()) << "a user rule sets only what it names";
  EXPECT_EQ(match_device_rule(rules, device("cpu", MLH_DEVICE_CLASS_CPU, GiB))->batch_size, 256) << "extend keeps the rest";

  testing::write_text(t / "only.json", R"({"mode": "replace", "rules": [{"class": "cpu", "batch_size": 32}]})");
  rules = load_device_rules(std::string(MLH_TEST_SHARE_DIR) + "/autoconfig.json", t / "only.json");
  EXPECT_EQ(rules.size(), 1u);
  EXPECT_EQ(match_device_rule(rules, h100), nullptr);
}

TEST(DeviceRules, BadRulesNameTheField) {
  TempDir t;
  auto error_of = [&](const std::string& text) -> std::string {
    testing::write_text(t / "r.json", text);
    try {
      std::string mode;
      read_device_rules(t / "r.json", &mode);
    } catch (const DeviceRulesError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("[]").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"rules": 3})").find("'rules'"), std::string::npos);
  EXPECT_NE(error_of(R"({"mode": "merge", "rules": []})").find("'mode'"), std::string::npos);
  EXPECT_NE(error_of(R"({"rules": [{"batch_size": 8}]})").find("rules[0] needs 'device' or 'class'"), std::string::npos);
  EXPECT_NE(error_of(R"({"rules": [{"device": "cuda", "batch_size": 0}]})").find("rules[0].batch_size"), std::string::npos);
  EXPECT_NE(error_of(R"({"rules": [{"device": "cuda", "batchsize": 8}]})").find("unknown field 'batchsize'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"rules": [{"device": "cuda", "min_memory_gb": "lots"}]})").find("min_memory_gb"),
            std::string::npos);
}

}  // namespace
}  // namespace mlhost
