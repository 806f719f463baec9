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

// The structs below carry no defaults: every value comes from config_table() through
// parse_config (the table is the only place a field's default and bounds are declared).
struct EpisodeShape {
  int way{}, shot{}, query{};
};

struct Config {
  // Data (see the fields' descriptions for how the validation and test sets are chosen).
  DatasetSpec train_data;
  std::vector<int32_t> val_classes;  // data.val_classes as given
  bool has_val_classes{};  // derived: idx/folder: val from these classes of the training file
  DatasetSpec val_data;              // omniglot/miniimagenet: split "val"; idx with val_classes
  double val_fraction{};  // otherwise: this share of each training class, held out
  DatasetSpec test_data;
  bool trainval{};  // train on train + val classes; no validation (validate false)
  bool validate{};  // derived: validate each epoch and stop early; false with trainval
  bool allow_class_overlap{};  // the test or validation classes may include training ones
  bool strict_data{};  // data.strict: what would be fitted to the data or skipped is an error

  EpisodeShape train;
  EpisodeShape test;
  int64_t epochs{}, episodes_per_epoch{}, val_episodes{}, patience{};
  double lr{};
  int64_t lr_halve_every{};
  std::string distance;  // or "cosine"
  double cosine_scale{};
  std::string encoder;  // model.encoder: "conv4", "resnet12" or "python" (make_encoder, encoder.hpp)
  std::string python_module;    // model.module: "path/to/file.py:Class" for encoder python
  nlohmann::json python_kwargs;  // model.kwargs: its keyword arguments beside in_channels
  double drop_rate{};   // model.drop_rate: resnet12's dropout / DropBlock rate in training
  int64_t width{};
  int64_t micro_batch{};  // training queries per micro-batch; 0: the whole episode
  uint64_t seed{};
  int64_t eval_episodes{};
  bool compare_encoders{};  // benchmark.compare_encoders
  int keep_checkpoints{};

  // classify
  std::string support_dir;
  std::vector<std::string> query;  // a folder, or image files
  std::string checkpoint;  // "best" or "latest"
  std::string forward_inputs;  // forward: a safetensors file of images
};

// Parses a config (missing fields take the defaults). Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT).
Config parse_config(const nlohmann::json& cfg);

}  // namespace protonet
