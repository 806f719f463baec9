// An algorithm's commands in one table, which drives both what describe() lists and what
// run() dispatches to, so the two cannot disagree:
//
//   const mlh::CommandTable<mlh::RunContext&>& commands() {
//     static const mlh::CommandTable<mlh::RunContext&> table{{"train", train}, {"eval", eval}};
//     return table;
//   }
//   mlh::AlgorithmDescription describe() override {
//     ...
//     d.commands = commands().names();          // the first is the default
//   }
//   void run(mlh::RunContext& ctx) override { commands().run(ctx.command(), ctx); }
//
// The arguments are the dispatch's: a plugin that parses its config and plan once for every
// command makes a table of (mlh::RunContext&, const Config&, const Plan&) commands. An unknown
// name is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) that lists the table's names.
// Header-only, no LibTorch.
#ifndef MLH_COMMAND_TABLE_HPP
#define MLH_COMMAND_TABLE_HPP

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "plugin.hpp"

namespace mlh {

template <class... Args>
class CommandTable {
 public:
  using Body = std::function<void(Args...)>;
  struct Command {
    std::string name;
    Body body;
  };

  // The first command is the default. No command, an empty or repeated name, or a command
  // without a body is a mistake in the plugin: mlh::Error(MLH_ERR_INTERNAL) naming it.
  CommandTable(std::initializer_list<Command> commands) : commands_(commands) {
    if (commands_.empty()) throw Error(MLH_ERR_INTERNAL, "command table: no commands");
    for (size_t i = 0; i < commands_.size(); ++i) {
      const Command& c = commands_[i];
      if (c.name.empty()) throw Error(MLH_ERR_INTERNAL, "command table: a command without a name");
      if (!c.body) throw Error(MLH_ERR_INTERNAL, "command table: command '" + c.name + "' has no body");
      for (size_t j = 0; j < i; ++j)
        if (commands_[j].name == c.name) throw Error(MLH_ERR_INTERNAL, "command table: '" + c.name + "' twice");
    }
  }

  // In the table's order: AlgorithmDescription::commands.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Command& c : commands_) out.push_back(c.name);
    return out;
  }
  const std::string& default_name() const { return commands_.front().name; }

  // The command called `name` ("": the default). Unknown: mlh::Error(MLH_ERR_INVALID_ARGUMENT,
  // "unknown command 'dance' (train, eval)").
  const Body& find(const std::string& name) const {
    if (name.empty()) return commands_.front().body;
    for (const Command& c : commands_)
      if (c.name == name) return c.body;
    std::string known;
    for (const Command& c : commands_) known += (known.empty() ? "" : ", ") + c.name;
    throw Error(MLH_ERR_INVALID_ARGUMENT, "unknown command '" + name + "' (" + known + ")");
  }

  void run(const std::string& name, Args... args) const { find(name)(std::forward<Args>(args)...); }

 private:
  std::vector<Command> commands_;
};

}  // namespace mlh

#endif  // MLH_COMMAND_TABLE_HPP
