// mlh::ConfigTable: one declaration of a field gives its schema entry, its default and its
// member's value, and a config that breaks the declaration is refused naming the field.
#include <mlh/config_table.hpp>

#include <gtest/gtest.h>

namespace {

using nlohmann::json;

struct Inner {
  double rate = 0;
  std::vector<int64_t> widths;
};
struct Toy {
  int64_t steps = 0;
  std::string mode;
  bool verbose = false;
  std::optional<double> limit;
  std::vector<std::string> files;
  Inner inner;
};

const mlh::ConfigTable<Toy>& toy_table() {
  static const auto table =
      mlh::ConfigTable<Toy>("toy")
          .field("steps", MLH_MEMBER(steps), 10, mlh::at_least(1).unit("steps"), "how long to train")
          .field("mode", MLH_MEMBER(mode), "fast", mlh::one_of({"fast", "slow"}), "the mode")
          .field("verbose", MLH_MEMBER(verbose), false, mlh::any_value(), "say more")
          .field("limit", MLH_MEMBER(limit), nullptr, mlh::above(0), "a cap (null: none)")
          .field("files", MLH_MEMBER(files), "", mlh::FieldRule().or_one_string(), "a file or files")
          .field("inner.rate", MLH_MEMBER(inner.rate), 0.5, mlh::between(0, 1), "a rate")
          .field("inner.widths", MLH_MEMBER(inner.widths), {8, 8}, mlh::FieldRule().items_at_least(1).min_items(1),
                 "layer widths")
          .host_field("preset", "string", "read by the host")
          .retired_field("old_threads", 0, "use --threads");
  return table;
}

std::string error_of(const json& config) {
  try {
    toy_table().parse(config);
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigTable, SchemaAndDefaultsComeFromTheDeclarations) {
  const json& schema = toy_table().schema();
  EXPECT_EQ(schema["additionalProperties"], false);
  EXPECT_EQ(schema["properties"]["steps"],
            (json{{"type", "integer"}, {"minimum", 1}, {"unit", "steps"}, {"description", "how long to train"}}));
  EXPECT_EQ(schema["properties"]["mode"]["enum"], (json{"fast", "slow"}));
  EXPECT_EQ(schema["properties"]["limit"]["type"], (json{"number", "null"}));
  EXPECT_EQ(schema["properties"]["files"]["type"], (json{"string", "array"}));
  const json& inner = schema["properties"]["inner"];
  EXPECT_EQ(inner["type"], "object");
  EXPECT_EQ(inner["additionalProperties"], false);
  EXPECT_EQ(inner["properties"]["widths"]["items"], (json{{"type", "integer"}, {"minimum", 1}}));
  EXPECT_EQ(inner["properties"]["widths"]["minItems"], 1);
  EXPECT_EQ(inner["properties"]["rate"]["maximum"], 1);
  // The host's and retired fields are in the schema, not in the defaults.
  EXPECT_TRUE(schema["properties"].contains("preset"));
  EXPECT_TRUE(schema["properties"].contains("old_threads"));
  EXPECT_EQ(toy_table().defaults(), (json{{"steps", 10}, {"mode", "fast"}, {"verbose", false}, {"limit", nullptr},
                                          {"files", ""}, {"inner", {{"rate", 0.5}, {"widths", {8, 8}}}}}));
  EXPECT_EQ(json::parse(toy_table().schema_text()), schema);
}

TEST(ConfigTable, ParseFillsTheMembersAndMergesNestedObjects) {
  const Toy d = toy_table().parse(json::object());
  EXPECT_EQ(d.steps, 10);
  EXPECT_EQ(d.mode, "fast");
  EXPECT_FALSE(d.limit.has_value());
  EXPECT_TRUE(d.files.empty());
  EXPECT_EQ(d.inner.widths, (std::vector<int64_t>{8, 8}));
  const Toy t = toy_table().parse({{"steps", 3}, {"limit", 2.5}, {"files", "a.txt"}, {"inner", {{"rate", 1}}},
                                   {"preset", "any"}, {"old_threads", 0}});
  EXPECT_EQ(t.steps, 3);
  EXPECT_DOUBLE_EQ(*t.limit, 2.5);
  EXPECT_EQ(t.files, (std::vector<std::string>{"a.txt"}));
  EXPECT_DOUBLE_EQ(t.inner.rate, 1.0);
  EXPECT_EQ(t.inner.widths, (std::vector<int64_t>{8, 8}));  // the rest of "inner" keeps its defaults
  EXPECT_EQ(toy_table().parse({{"files", {"a", "b"}}}).files, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(toy_table().parse({{"limit", nullptr}}).limit.has_value());
}

TEST(ConfigTable, BadValuesAreRefusedNamingTheField) {
  EXPECT_EQ(error_of({{"steps", 0}}), "config field 'steps': 0 must be >= 1");
  EXPECT_EQ(error_of({{"steps", "many"}}), "config field 'steps': expected an integer, got \"many\"");
  EXPECT_EQ(error_of({{"mode", "medium"}}), "config field 'mode': \"medium\" is not one of [\"fast\",\"slow\"]");
  EXPECT_EQ(error_of({{"limit", 0}}), "config field 'limit': 0 must be > 0");
  EXPECT_EQ(error_of({{"inner", {{"rate", 1.5}}}}), "config field 'inner.rate': 1.5 must be <= 1");
  EXPECT_EQ(error_of({{"inner", {{"widths", {8, 0}}}}}), "config field 'inner.widths[1]': 0 must be >= 1");
  EXPECT_EQ(error_of({{"inner", {{"widths", json::array()}}}}), "config field 'inner.widths': needs at least 1 item");
  EXPECT_NE(error_of({{"inner", {{"depth", 2}}}}).find("config field 'inner.depth' is unknown (known: rate, widths)"),
            std::string::npos);
  EXPECT_EQ(error_of({{"old_threads", 4}}), "config field 'old_threads' is retired: use --threads");
  try {
    toy_table().parse(json::array());
    ADD_FAILURE() << "an array is no config";
  } catch (const mlh::Error& e) {
    EXPECT_STREQ(e.what(), "toy config: expected a JSON object");
  }
}

TEST(ConfigTable, AFieldDeclaredTwiceIsAProgrammingError) {
  EXPECT_THROW((mlh::ConfigTable<Toy>("toy")
                    .field("steps", MLH_MEMBER(steps), 1, mlh::any_value(), "a")
                    .field("steps", MLH_MEMBER(steps), 2, mlh::any_value(), "b")),
               std::logic_error);
}

// An nlohmann::json member is a leaf field holding a JSON object as it is (an environment
// library's own settings): schema type object without properties, any keys inside.
struct WithSettings {
  nlohmann::json settings;
};

TEST(ConfigTable, AJsonMemberHoldsAnObjectAsItIs) {
  const auto table = mlh::ConfigTable<WithSettings>("lib").field("settings", MLH_MEMBER(settings), json::object(),
                                                                 mlh::any_value(), "passed on");
  EXPECT_EQ(table.schema()["properties"]["settings"]["type"], "object");
  EXPECT_FALSE(table.schema()["properties"]["settings"].contains("properties"));
  EXPECT_EQ(table.parse(json::object()).settings, json::object());
  const json given = {{"settings", {{"size", 7}, {"walls", {1, 2}}}}};
  EXPECT_EQ(table.parse(given).settings, given["settings"]);
  try {
    table.parse(json{{"settings", 5}});
    ADD_FAILURE() << "a number is not an object";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("config field 'settings'"), std::string::npos) << e.what();
  }
}

}  // namespace
