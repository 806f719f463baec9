// Where a plan value came from. Every value has a source: a kind that code reads (is it the
// user's choice? a rule's?) and the text people read, e.g. {kRule, "rule: cpu, any memory
// (autoconfig.json rule 7)"}. plan.json keeps the text in "sources" and the kind in
// "source_kinds", field by field (docs/plan.md).
#pragma once

#include <string>

namespace mlhost {

enum class SourceKind {
  kCommandLine,   // --precision, --batch-size, --allocator
  kConfig,        // the user's config of the algorithm (--config, --set, a resumed run's)
  kTrainedRun,    // a command on a trained run (eval, solve, ...): the config it was trained with
  kPreset,        // the preset the user chose (its own batch size)
  kSettingsFile,  // the hardware settings file
  kCalibration,   // measured on this machine
  kBatchFinder,   // --batch-size auto
  kRule,          // the device rules (autoconfig.json, --rules)
  kDevice,        // the device plugin's recommendation
  kAlgorithm,     // the algorithm's default config
  kLaunch,        // the launch layout (ranks)
  kDefault,       // the host's default
};

// "command_line", "settings_file", ...: the kind as plan.json names it.
const char* source_kind_name(SourceKind kind);

// Whether the user chose the value explicitly (command line, settings file, their config):
// such a value doing nothing is a warning, not just a mark.
bool chosen_by_user(SourceKind kind);

struct Source {
  SourceKind kind = SourceKind::kDefault;
  std::string text;
};

}  // namespace mlhost
