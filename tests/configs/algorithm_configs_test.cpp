// protonet's, ppo's and trm's config tables: every field described, and every config that
// was valid before the tables (v0.1's defaults and saved run configs) still valid and read
// the same way.
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <mlh/config_schema.hpp>

#include "ppo/config.hpp"
#include "protonet/config.hpp"
#include "trm/config.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;

json read_fixture(const std::string& name) {
  std::ifstream in(std::string(MLH_CONFIG_FIXTURES) + "/v0.1/" + name);
  EXPECT_TRUE(in) << name;
  return json::parse(in);
}

struct Algorithm {
  std::string name;
  json schema, defaults;
  std::function<void(const json&)> parse;  // throws mlh::Error on a bad config
  std::vector<std::string> saved_runs;
  std::function<json()> blank_struct;     // the table's view of a value-initialized Config
  std::function<json()> parsed_defaults;  // the table's view of the Config it parses from {}
};

template <class Config>
std::function<json()> blank_of(const mlh::ConfigTable<Config>& table) {
  return [&table] { return table.to_json(Config{}); };
}
template <class Config>
std::function<json()> defaults_of(const mlh::ConfigTable<Config>& table) {
  return [&table] { return table.to_json(table.parse(json::object())); };
}

std::vector<Algorithm> algorithms() {
  return {{"protonet", json::parse(protonet::config_schema_json()), json::parse(protonet::config_defaults_json()),
           [](const json& c) { protonet::parse_config(c); }, {"protonet.run-reduced.json", "protonet.run-omniglot-1shot.json"},
           blank_of(protonet::config_table()), defaults_of(protonet::config_table())},
          {"ppo", json::parse(ppo::config_schema_json()), json::parse(ppo::config_defaults_json()),
           [](const json& c) { ppo::parse_config(c); }, {"ppo.run-puzzle4.json", "ppo.run-cartpole-seed7.json"},
           blank_of(ppo::config_table()), defaults_of(ppo::config_table())},
          {"trm", json::parse(trm::config_schema_json()), json::parse(trm::config_defaults_json()),
           [](const json& c) { trm::parse_config(c); }, {"trm.run-sudoku-easy.json", "trm.run-text.json"},
           blank_of(trm::config_table()), defaults_of(trm::config_table())}};
}

// Every leaf field's dotted path and schema. A group has "properties"; an object without them
// is a leaf (a JSON object passed on as it is, e.g. ppo's library.settings).
void leaves(const json& schema, const std::string& prefix, std::map<std::string, json>& out) {
  for (const auto& [key, field] : schema["properties"].items()) {
    if (field.value("type", json()) == "object" && field.contains("properties")) leaves(field, prefix + key + ".", out);
    else out[prefix + key] = field;
  }
}

// Each value-initialized leaf: 0, false, "", [] or null.
void expect_blank(const json& j, const std::string& where) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) expect_blank(value, where + (where.empty() ? "" : ".") + key);
    return;
  }
  const bool blank = j.is_null() || (j.is_boolean() && !j.get<bool>()) || (j.is_number() && j.get<double>() == 0) ||
                     (j.is_string() && j.get<std::string>().empty()) || (j.is_array() && j.empty());
  EXPECT_TRUE(blank) << where << " has a default in its struct (" << j.dump()
                     << "): a field's default is declared in the config table alone";
}

// The table is the only declaration of a default: the structs carry none (a default written
// there would be a second one, which parsing always overwrites and nothing would check), and
// the struct parsed from {} holds exactly the table's defaults.
TEST(ConfigTables, TheTableIsTheOnlyDefault) {
  for (const Algorithm& a : algorithms()) {
    SCOPED_TRACE(a.name);
    expect_blank(a.blank_struct(), "");
    // A list field that also takes one string has "" (the empty list) as its default.
    json defaults = a.defaults;
    const json parsed = a.parsed_defaults();
    std::function<void(const json&, json&)> empty_lists = [&](const json& p, json& d) {
      for (const auto& [key, value] : p.items()) {
        if (!d.contains(key)) continue;
        if (value.is_object()) empty_lists(value, d[key]);
        else if (value == json::array() && d[key] == "") d[key] = json::array();
      }
    };
    empty_lists(parsed, defaults);
    EXPECT_EQ(parsed, defaults) << "a member's type changes its table default";
  }
}

TEST(ConfigTables, EveryFieldHasADescription) {
  for (const Algorithm& a : algorithms()) {
    std::map<std::string, json> fields;
    leaves(a.schema, "", fields);
    EXPECT_GT(fields.size(), 30u) << a.name;
    for (const auto& [path, field] : fields)
      EXPECT_FALSE(field.value("description", "").empty()) << a.name << ": " << path << " has no description";
  }
}

TEST(ConfigTables, TheDefaultsHoldTheirOwnSchema) {
  for (const Algorithm& a : algorithms()) {
    EXPECT_EQ(mlh::config_schema_violation(a.defaults, a.schema), "") << a.name;
    EXPECT_NO_THROW(a.parse(json::object())) << a.name;
  }
}

TEST(ConfigCompatibility, EveryOldFieldIsStillAccepted) {
  for (const Algorithm& a : algorithms()) {
    std::map<std::string, json> before, now;
    leaves(read_fixture(a.name + ".schema.json"), "", before);
    leaves(a.schema, "", now);
    for (const auto& [path, unused] : before) EXPECT_TRUE(now.count(path)) << a.name << ": " << path << " went";
  }
}

TEST(ConfigCompatibility, OldDefaultsAndSavedRunConfigsStillValidateAndParse) {
  for (const Algorithm& a : algorithms()) {
    const json old_defaults = read_fixture(a.name + ".defaults.json");
    EXPECT_EQ(mlh::config_schema_violation(old_defaults, a.schema), "") << a.name;
    EXPECT_NO_THROW(a.parse(old_defaults)) << a.name;
    // The old fields' defaults did not change, but for retired fields and the deliberate
    // changes listed here; fields added since (with defaults that keep the old behaviour) are
    // the only others.
    const std::set<std::pair<std::string, std::string>> changed_on_purpose = {
        // 5, the default data's (Fashion-MNIST's) training classes, where 60 (Omniglot's, which
        // the omniglot presets keep) was fitted down on every default run.
        {"protonet", "/train_way"}};
    const json now = a.defaults.flatten(), before = old_defaults.flatten();
    for (const auto& [pointer, value] : before.items()) {
      if (pointer == "/torch_threads" || changed_on_purpose.count({a.name, pointer})) continue;
      ASSERT_TRUE(now.contains(pointer)) << a.name << ": " << pointer << " went";
      EXPECT_EQ(now[pointer], value) << a.name << ": the default of " << pointer << " changed";
    }
    for (const std::string& run : a.saved_runs) {
      const json saved = read_fixture(run);
      EXPECT_EQ(mlh::config_schema_violation(saved, a.schema), "") << run;
      EXPECT_NO_THROW(a.parse(saved)) << run;
    }
  }
}

TEST(ConfigCompatibility, SavedRunConfigsReadAsBefore) {
  const protonet::Config p = protonet::parse_config(read_fixture("protonet.run-omniglot-1shot.json"));
  EXPECT_EQ(p.train_data.format, "omniglot");
  EXPECT_EQ(p.train_data.split, "train");
  EXPECT_EQ(p.val_data.split, "val");
  EXPECT_EQ(p.test_data.split, "test");
  EXPECT_EQ(p.test_data.root, "data/omniglot/data");  // '' means root for split formats
  EXPECT_TRUE(p.train_data.invert && p.test_data.invert);
  EXPECT_EQ(p.train.way, 60);
  EXPECT_EQ(p.train.shot, 1);
  EXPECT_EQ(p.patience, 201);

  const ppo::Config q = ppo::parse_config(read_fixture("ppo.run-cartpole-seed7.json"));
  EXPECT_EQ(q.seed, 7u);
  EXPECT_EQ(q.total_timesteps, 4096);
  EXPECT_DOUBLE_EQ(*q.target_kl, 0.02);
  EXPECT_EQ(q.network.mlp_hidden, (std::vector<int64_t>{64, 64}));

  const trm::Config t = trm::parse_config(read_fixture("trm.run-text.json"));
  EXPECT_TRUE(t.text());
  EXPECT_EQ(t.model.hidden, 128);
  EXPECT_EQ(t.batch_size, 32);
  EXPECT_EQ(t.build.subsets, (std::vector<std::string>{"training", "evaluation"}));
  EXPECT_FALSE(t.ema);
}

TEST(ConfigCompatibility, TorchThreadsIsRetiredForThePlansThreads) {
  // Saved configs hold 0 (the old default); any other value would bypass the plan.
  EXPECT_NO_THROW(ppo::parse_config({{"torch_threads", 0}}));
  EXPECT_NO_THROW(trm::parse_config({{"torch_threads", 0}}));
  for (const auto& parse : {std::function<void(const json&)>([](const json& c) { ppo::parse_config(c); }),
                            std::function<void(const json&)>([](const json& c) { trm::parse_config(c); })}) {
    try {
      parse({{"torch_threads", 2}});
      ADD_FAILURE() << "torch_threads 2 accepted";
    } catch (const mlh::Error& e) {
      EXPECT_NE(std::string(e.what()).find("config field 'torch_threads' is retired"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--threads"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
