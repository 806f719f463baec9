#include "plan/algorithm_config.hpp"

#include <gtest/gtest.h>

#include "test_files.hpp"

namespace mlhost {
namespace {

using nlohmann::json;

const json kSchema = json::parse(R"({
  "type": "object", "additionalProperties": false,
  "properties": {
    "steps": {"type": "integer", "minimum": 1},
    "lr": {"type": "number", "exclusiveMinimum": 0},
    "name": {"type": "string"},
    "mode": {"enum": ["fast", "exact"]},
    "optimizer": {"type": "object", "properties": {"beta": {"type": "number", "maximum": 1}}},
    "sizes": {"type": "array", "items": {"type": "integer"}}
  }
})");

std::string error_of(const json& config) {
  try {
    validate_config(config, kSchema);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(AlgorithmConfig, SetParsesValuesAsJsonOrText) {
  json c = json::object();
  apply_set(c, "steps=10", kSchema);
  apply_set(c, "lr=1e-3", kSchema);
  apply_set(c, "optimizer.beta=0.9", kSchema);
  apply_set(c, "sizes=[1,2]", kSchema);
  apply_set(c, "name=123", kSchema);  // the schema says string: keep the text
  apply_set(c, "mode=fast", kSchema);  // not JSON: text
  EXPECT_EQ(c["steps"], 10);
  EXPECT_DOUBLE_EQ(c["lr"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(c["optimizer"]["beta"].get<double>(), 0.9);
  EXPECT_EQ(c["sizes"], json::parse("[1,2]"));
  EXPECT_EQ(c["name"], "123");
  EXPECT_EQ(c["mode"], "fast");
  EXPECT_NO_THROW(validate_config(c, kSchema));
}

// Fields marked "path" (mlh::path()): a relative value becomes absolute from the folder the
// command is given in, by --set and in a --config file; "" and absolute values stay, and so
// does every other field.
TEST(AlgorithmConfig, PathFieldsAreRecordedAbsolute) {
  const json schema = json::parse(R"({"type": "object", "properties": {
    "data": {"type": "object", "properties": {"root": {"type": "string", "path": true},
                                              "format": {"type": "string"}}},
    "query": {"type": ["string", "array"], "path": true},
    "name": {"type": "string"}}})");
  const std::filesystem::path here = std::filesystem::current_path();
  json c = json::object();
  apply_set(c, "data.root=imgs/../my images/train", schema);
  apply_set(c, "data.format=folder", schema);
  apply_set(c, "name=runs/x", schema);
  EXPECT_EQ(c["data"]["root"], (here / "my images/train").string());
  EXPECT_EQ(c["data"]["format"], "folder");
  EXPECT_EQ(c["name"], "runs/x");
  apply_set(c, "data.root=/abs/train", schema);
  EXPECT_EQ(c["data"]["root"], "/abs/train");
  apply_set(c, "data.root=", schema);
  EXPECT_EQ(c["data"]["root"], "");

  json file = json::parse(R"({"data": {"root": "./train", "format": "x"}, "query": ["a.png", "/b.png", ""],
                              "name": "n", "unknown": "u"})");
  absolute_paths(file, schema, "/from/here");
  EXPECT_EQ(file["data"]["root"], "/from/here/train");
  EXPECT_EQ(file["data"]["format"], "x");
  EXPECT_EQ(file["query"], json::parse(R"(["/from/here/a.png", "/b.png", ""])"));
  EXPECT_EQ(file["name"], "n");
  EXPECT_EQ(file["unknown"], "u");
}

TEST(AlgorithmConfig, SetRejectsMalformedAssignments) {
  json c = {{"steps", 1}};
  EXPECT_THROW(apply_set(c, "steps", kSchema), ConfigError);
  EXPECT_THROW(apply_set(c, "=3", kSchema), ConfigError);
  EXPECT_THROW(apply_set(c, "a..b=3", kSchema), ConfigError);
  EXPECT_THROW(apply_set(c, "a.=3", kSchema), ConfigError);
  try {
    apply_set(c, "steps.inner=3", kSchema);
    FAIL() << "descending into a number must fail";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'steps'"), std::string::npos) << e.what();
  }
}

TEST(AlgorithmConfig, ValidationNamesTheField) {
  EXPECT_EQ(error_of({{"steps", 3}, {"lr", 0.1}}), "");
  EXPECT_EQ(error_of({{"steps", 3.0}}), "") << "3.0 is an integer in JSON Schema";
  EXPECT_EQ(error_of({{"steps", "abc"}}), "config field 'steps': expected an integer, got \"abc\"");
  EXPECT_EQ(error_of({{"steps", 0}}), "config field 'steps': 0 must be >= 1");
  EXPECT_EQ(error_of({{"lr", 0}}), "config field 'lr': 0 must be > 0");
  EXPECT_EQ(error_of({{"mode", "slow"}}), "config field 'mode': \"slow\" is not one of [\"fast\",\"exact\"]");
  EXPECT_EQ(error_of({{"optimizer", {{"beta", 2}}}}), "config field 'optimizer.beta': 2 must be <= 1");
  EXPECT_EQ(error_of({{"sizes", {1, "x"}}}), "config field 'sizes[1]': expected an integer, got \"x\"");
  EXPECT_NE(error_of({{"stpes", 1}}).find("config field 'stpes' is unknown (known: "), std::string::npos);
}

TEST(AlgorithmConfig, MergeIsDeep) {
  json base = {{"a", 1}, {"o", {{"x", 1}, {"y", 2}}}};
  json merged = merge_config(base, {{"o", {{"y", 3}}}, {"b", true}});
  EXPECT_EQ(merged, json::parse(R"({"a":1,"b":true,"o":{"x":1,"y":3}})"));
}

TEST(AlgorithmConfig, FileErrorsNameFileAndLine) {
  TempDir t;
  testing::write_text(t / "ok.json", R"({"steps": 5})");
  EXPECT_EQ(load_config_file(t / "ok.json")["steps"], 5);
  testing::write_text(t / "bad.json", "{\n  \"steps\": 5,\n  oops\n}");
  try {
    load_config_file(t / "bad.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  testing::write_text(t / "array.json", "[1]");
  EXPECT_THROW(load_config_file(t / "array.json"), ConfigError);
  EXPECT_THROW(load_config_file(t / "missing.json"), ConfigError);
}

}  // namespace
}  // namespace mlhost
