// What a TRM run does with the plan, for the host to print with it (describe_run): the model it
// builds (from the config and the dataset's shapes, or a trained run's model.json) and the
// plan fields it uses.
#include <algorithm>
#include <filesystem>
#include <string>

#include <mlh/run_description.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/parameters.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "model/trm.hpp"
#include "model_record.hpp"

namespace trm {
namespace {

// The model a run of `command` builds: a trained run's for the commands that load one.
ModelConfig model_of_run(const Config& cfg, const std::string& command, const std::string& run_dir) {
  if (loads_trained_model(command) && std::filesystem::exists(model_json_path(run_dir))) return read_model_record(run_dir).model;
  if (cfg.text()) return text_model_config(cfg);
  // A resumed run whose data.dir, relative to where it first trained, is not here: the shape
  // its model.json records (training finds the data by it: trained_data.hpp).
  const std::string data_dir = cfg.data.dir.empty() ? run_dir + "/data" : cfg.data.dir;
  if (!holds_dataset(data_dir) && std::filesystem::exists(model_json_path(run_dir))) {
    const ModelRecord r = read_model_record(run_dir);
    if (r.mode == "puzzle") {
      DatasetMetadata shape;
      shape.seq_len = r.model.seq_len;
      shape.vocab_size = r.model.vocab_size;
      shape.num_puzzle_identifiers = r.model.num_puzzle_identifiers;
      return puzzle_model_config(cfg, shape);
    }
  }
  return puzzle_model_config(cfg, puzzle_dataset_shape(cfg, run_dir));
}

std::string model_shape(const ModelConfig& m) {
  std::string shape = "hidden " + std::to_string(m.hidden) + ", " + std::to_string(m.num_heads) + " heads, " +
                      std::to_string(m.l_layers) + " layers, H " + std::to_string(m.h_cycles) + " x L " +
                      std::to_string(m.l_cycles) + " cycles, up to " + std::to_string(m.halt_max_steps) +
                      " supervision steps; sequence " + std::to_string(m.seq_len) + ", vocabulary " +
                      std::to_string(m.vocab_size);
  if (m.mlp_t) shape += ", MLP across the sequence";
  if (m.puzzle_emb_ndim > 0)
    shape += ", " + std::to_string(m.num_puzzle_identifiers) + " puzzle embeddings of " + std::to_string(m.puzzle_emb_ndim);
  return shape;
}

}  // namespace

std::string describe_run(const mlh::RunContext& ctx) {
  const Config cfg = parse_config(nlohmann::json::parse(ctx.config_json()));
  const std::string command = ctx.command().empty() ? command_table().default_name() : ctx.command();
  mlh::RunDescription d;
  if (command == "build-data") {
    // It writes a dataset with plain C++: no plan field matters (the description lists none).
    return d.json();
  }
  const ModelConfig m = model_of_run(cfg, command, ctx.run_dir());
  d.model(mlh::rt::parameter_count(*Trm(m)), model_shape(m));

  const bool trains = command == "train" || command == "calibrate" || command == "benchmark";
  const std::string not_training = command + " does not train";
  // solve with an ARC challenges file answers every test input of every task, in batches.
  const bool solves_arc = command == "solve" && !cfg.solve.arc_challenges.empty();
  d.uses_if(trains || command == "eval" || solves_arc, "batch_size",
            trains       ? "rows per training step (per rank in a distributed run)"
            : solves_arc ? "rows per batch of the challenges' test inputs"
                         : "rows per evaluation batch",
            command + " works on one puzzle or prompt at a time");
  d.uses_if(trains, "gradient_checkpointing", "recomputes each step of the recursion's gradient cycle in backward",
            not_training);
  d.uses("precision", "autocast for the recursion (fp16 with a gradient scaler)");
  const std::string preset = mlh::rt::RuntimePlan::parse(ctx.plan_json()).preset.value_or("");
  if (!preset.empty())
    d.uses("preset", preset == "full" || preset == "reduced"
                       ? "sizes the model (full: the reference's hidden 512, 8 heads, H 3 x L 6; reduced: hidden 128, "
                         "4 heads, H 2 x L 2)"
                         : "the " + preset + " task's settings");
  d.uses_if(command == "train" || command == "eval", "pinned_memory",
            "batches are page-locked (by the data workers in training) and copied without blocking",
            command + " copies single puzzles or prompts");
  const std::string in_order = command + " takes its batches in order in the training thread";
  d.uses_if(command == "train", "dataloader_workers", "threads that draw and assemble the next training batches",
            in_order);
  d.uses_if(command == "train", "prefetch_factor", "training batches each data worker keeps ready", in_order);
  d.uses_if(command == "train", "empty_cache_steps", "releases the device's cached memory every N steps",
            command + " does not release the cache");
  d.uses_if(command == "train", "max_steps", "trains that many optimizer steps, then evaluates and saves as at the end",
            command + " does not train");
  if (command == "train") {  // samples, as calibrate counts them (a rank's batch per step)
    const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
    const int64_t steps = std::min(cfg.train_steps, plan.max_steps.value_or(cfg.train_steps));
    d.work(static_cast<double>(steps * plan.batch_size.value_or(cfg.batch_size)), "samples", "train_steps",
           cfg.max_minutes * 60);
  }
  d.uses_if(command == "train", "init_from",
            "the model's first weights (an mlhost run's, or the reference's state dict: names without '_orig_mod.model.')",
            command + " does not train");
  d.no_effect("channels_last", "TRM has no convolutions");
  d.no_effect("cudnn_benchmark", "TRM has no convolutions");
  d.no_effect("cuda_graphs", "TRM's step is not captured: its halting decides on the host which rows get a new example");
  return d.json();
}

}  // namespace trm
