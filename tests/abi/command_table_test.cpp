// mlh::CommandTable (mlh/command_table.hpp): one table gives an algorithm's description its
// commands and its run() its dispatch; through the generated ABI table, the host sees the
// same names it can run, and an unknown one fails with the table's names.
#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_host.hpp"

namespace {

using Table = mlh::CommandTable<std::vector<std::string>&>;

TEST(CommandTable, NamesInOrderTheFirstIsTheDefault) {
  const Table table{{"train", [](std::vector<std::string>& ran) { ran.push_back("train"); }},
                    {"eval", [](std::vector<std::string>& ran) { ran.push_back("eval"); }}};
  EXPECT_EQ(table.names(), (std::vector<std::string>{"train", "eval"}));
  EXPECT_EQ(table.default_name(), "train");
  std::vector<std::string> ran;
  table.run("eval", ran);
  table.run("", ran);
  table.run("train", ran);
  EXPECT_EQ(ran, (std::vector<std::string>{"eval", "train", "train"}));
}

TEST(CommandTable, AnUnknownCommandListsTheTablesNames) {
  const Table table{{"train", [](std::vector<std::string>&) {}}, {"eval", [](std::vector<std::string>&) {}},
                    {"build-data", [](std::vector<std::string>&) {}}};
  std::vector<std::string> ran;
  try {
    table.run("dance", ran);
    ADD_FAILURE() << "an unknown command ran";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "unknown command 'dance' (train, eval, build-data)");
  }
  EXPECT_THROW(table.run("Train", ran), mlh::Error) << "names are exact";
}

TEST(CommandTable, AMalformedTableIsThePluginsMistake) {
  auto code_of = [](auto make) {
    try {
      make();
    } catch (const mlh::Error& e) {
      return e.code();
    }
    return MLH_OK;
  };
  const auto nothing = [](std::vector<std::string>&) {};
  EXPECT_EQ(code_of([] { Table table{}; }), MLH_ERR_INTERNAL);
  EXPECT_EQ(code_of([&] { Table table{{"", nothing}}; }), MLH_ERR_INTERNAL);
  EXPECT_EQ(code_of([&] { Table table{{"train", nothing}, {"train", nothing}}; }), MLH_ERR_INTERNAL);
  EXPECT_EQ(code_of([] { Table table{{"train", nullptr}}; }), MLH_ERR_INTERNAL);
  EXPECT_EQ(code_of([&] { Table table{{"train", nothing}, {"eval", nothing}}; }), MLH_OK);
}

// A plugin whose description and dispatch both come from its table.
class TabledAlgorithm : public mlh::AlgorithmPlugin {
 public:
  static const mlh::CommandTable<mlh::RunContext&>& commands() {
    static const mlh::CommandTable<mlh::RunContext&> table{
        {"train", [](mlh::RunContext& ctx) { ctx.info("trained"); }},
        {"sample", [](mlh::RunContext& ctx) { ctx.info("sampled"); }}};
    return table;
  }
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "commands from a table";
    d.commands = commands().names();
    return d;
  }
  void run(mlh::RunContext& ctx) override { commands().run(ctx.command(), ctx); }
};

TEST(CommandTable, TheHostSeesTheNamesItCanRun) {
  using Abi = mlh::detail::AlgorithmTable<TabledAlgorithm>;
  mlh_error e{};
  e.struct_size = sizeof(e);
  mlh_plugin_instance* inst = nullptr;
  ASSERT_EQ(Abi::create(&inst, &e), MLH_OK);
  const mlh_algorithm_description* d = nullptr;
  ASSERT_EQ(Abi::describe(inst, &d, &e, "tabled", "1.0.0"), MLH_OK) << e.message;
  ASSERT_EQ(d->command_count, 2u);
  EXPECT_STREQ(d->commands[0], "train");
  EXPECT_STREQ(d->commands[1], "sample");

  FakeHost host;
  const mlh_host_callbacks callbacks = host.callbacks();
  mlh_run_context ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.host = &callbacks;
  for (uint32_t i = 0; i < d->command_count; ++i) {
    ctx.command = d->commands[i];
    EXPECT_EQ(Abi::run(inst, &ctx, &e), MLH_OK) << d->commands[i] << ": " << e.message;
  }
  EXPECT_EQ(host.logs, (std::vector<std::string>{"trained", "sampled"}));
  ctx.command = "dance";
  EXPECT_EQ(Abi::run(inst, &ctx, &e), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(e.message, "unknown command 'dance' (train, sample)");
  Abi::destroy(inst);
}

}  // namespace
