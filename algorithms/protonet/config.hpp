// ProtoNet's run configuration: its fields (config_table: the schema the host validates and
// the defaults come from it), the presets, and the parsed form the commands use. Free of
// LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mlh/config_table.hpp>
#include <nlohmann/json.hpp>

#include "data/image_set.hpp"

namespace protonet {

struct Config;
const mlh::ConfigTable<Config>& config_table();
const char* config_schema_json();
const char* config_defaults_json();
const char* presets_json();

struct EpisodeShape {
  int way = 5, shot = 5, query = 15;
};

struct Config {
  // Data (see the fields' descriptions for how the validation and test sets are chosen).
  DatasetSpec train_data;
  std::vector<int32_t> val_classes;  // data.val_classes as given
  bool has_val_classes = false;      // idx/folder: val from these classes of the training file
  DatasetSpec val_data;              // omniglot/miniimagenet: split "val"; idx with val_classes
  double val_fraction = 0.1;         // otherwise: this share of each training class, held out
  DatasetSpec test_data;
  bool trainval = false;             // train on train + val classes; no validation (validate false)
  bool validate = true;              // validate each epoch and stop early; false with trainval
  bool allow_class_overlap = false;  // the test or validation classes may include training ones

  EpisodeShape train{60, 5, 5};
  EpisodeShape test{5, 5, 15};
  int64_t epochs = 100, episodes_per_epoch = 100, val_episodes = 100, patience = 10;
  double lr = 1e-3;
  int64_t lr_halve_every = 2000;
  std::string distance = "euclidean";  // or "cosine"
  double cosine_scale = 10.0;
  int64_t width = 64;
  int64_t micro_batch = 0;  // training queries per micro-batch; 0: the whole episode
  uint64_t seed = 0;
  int64_t eval_episodes = 1000;
  int keep_checkpoints = 3;

  // classify
  std::string support_dir;
  std::vector<std::string> query;  // a folder, or image files
  std::string checkpoint = "best";  // "best" or "latest"
};

// Parses a config (missing fields take the defaults). Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT).
Config parse_config(const nlohmann::json& cfg);

}  // namespace protonet
