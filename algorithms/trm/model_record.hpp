// What a TRM run folder records about its model, so that eval, solve and generate rebuild it
// on any device: <run>/model.json holds the mode, the ModelConfig (gradient checkpointing is
// the current plan's, not saved), and where the data came from. Also: the model config a new
// run derives from its config and data, and the dataset a puzzle run uses (generated into the
// run folder when data.dir is empty). Free of LibTorch.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "data/build_data.hpp"
#include "data/dataset.hpp"
#include "model/model_config.hpp"

namespace trm {

struct ModelRecord {
  std::string mode = "puzzle";  // puzzle or text
  ModelConfig model{};
  // The data it trained on: written absolute, so that a command on the run finds them from
  // any directory. Older runs' model.json hold them as training was given them, perhaps
  // relative to the directory it ran in (trained_data.hpp finds those).
  std::string data_dir;   // puzzle: the dataset folder
  std::string text_file;  // text: the corpus
  // The config's data.dir and data.text_file as training had them ("" for a dataset generated
  // into the run): a command whose config (the trained run's, reloaded) still says the same
  // means the run's own data. Absent in older runs' model.json.
  std::optional<std::string> data_dir_config, text_file_config;
  // puzzle: the names of the tokens (token_names.hpp) and the blank puzzle identifier, for
  // solve.puzzle. Older runs' model.json have no names (then empty) and identifier 0.
  std::vector<std::string> token_names;
  int64_t blank_identifier_id = 0;
};

std::string model_json_path(const std::string& run_dir);
// Writes <run>/model.json, data_dir and text_file made absolute against the current directory.
void write_model_record(const std::string& run_dir, const ModelRecord& record);
// mlh::Error naming the file when missing ("train first") or malformed.
ModelRecord read_model_record(const std::string& run_dir);

// Whether `command` runs a trained run's model (eval, solve, generate, forward, export).
bool loads_trained_model(const std::string& command);

// model.safetensors' metadata: the model as mlhost.load_run() rebuilds it, the mode, and
// whether the weights are the EMA's.
std::map<std::string, std::string> weights_metadata(const ModelConfig& model, const std::string& mode, bool ema);

// Whether `dir` holds a dataset: train/dataset.json and test/dataset.json.
bool holds_dataset(const std::string& dir);

// The model of a puzzle run on a split with this metadata / of a text run.
ModelConfig puzzle_model_config(const Config& cfg, const DatasetMetadata& metadata);
ModelConfig text_model_config(const Config& cfg);

// The shapes (vocabulary, sequence length, puzzle identifiers) of the dataset a puzzle run
// trains on: its dataset.json when data.dir (or <run>/data) holds one, else those of the
// dataset cfg.build would generate, without generating it.
DatasetMetadata puzzle_dataset_shape(const Config& cfg, const std::string& run_dir);

// The dataset folder of a puzzle run: data.dir, or <run>/data, built from cfg.build when it
// does not hold a dataset yet (log receives the builder's progress).
std::string ensure_puzzle_dataset(const Config& cfg, const std::string& run_dir,
                                  const std::function<void(const std::string&)>& log);

// build-data: writes cfg.build's dataset to build.out_dir (or data.dir); the out folder must
// not already hold a dataset (nothing is overwritten).
BuildReport build_dataset(const Config& cfg, const std::string& out_dir,
                          const std::function<void(const std::string&)>& log);

}  // namespace trm
