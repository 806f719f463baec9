// The sweep folder's sweep.json: what the sweep was started with (the algorithm, the spec,
// the --config and --set every trial shares) and its trials as expanded then. A resumed sweep
// runs these trials, and refuses a command line that asks for another sweep.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep_spec.hpp"

namespace mlhost {

struct SweepRecord {
  std::string algorithm;
  SweepSpec spec;
  std::string config_file;        // --config, absolute; empty: none
  std::vector<std::string> sets;  // the --set every trial gets before its own
  std::vector<SweepTrial> trials;

  nlohmann::json to_json() const;
  // What must match for a command line to continue this sweep: all but the trials.
  nlohmann::json identity() const;
};

void write_sweep_record(const std::filesystem::path& sweep_dir, const SweepRecord& record);
// nullopt when the folder holds no sweep.json. Throws SweepError naming the file when it
// cannot be read.
std::optional<SweepRecord> read_sweep_record(const std::filesystem::path& sweep_dir);

}  // namespace mlhost
