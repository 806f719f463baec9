// The TRM algorithm plugin (Jolicoeur-Martineau 2025, "Less is More: Recursive Reasoning with
// Tiny Networks"; the reference code TinyRecursiveModels): its description for the host and
// the dispatch to its commands (commands.hpp).
#include <mlh/plugin.hpp>

#include "commands.hpp"
#include "config.hpp"

namespace {

class Trm : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "TRM: tiny recursive model, deep supervision with ACT, on Sudoku, mazes, reference datasets or text";
    d.commands = trm::command_table().names();
    d.config_schema_json = trm::config_schema_json();
    d.config_defaults_json = trm::config_defaults_json();
    d.presets_json = trm::presets_json();
    return d;
  }

  void run(mlh::RunContext& ctx) override { trm::run_command(ctx); }
  std::string describe_run(const mlh::RunContext& ctx) override { return trm::describe_run(ctx); }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(Trm)
