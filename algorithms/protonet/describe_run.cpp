// What a ProtoNet run does with the plan, for the host to print with it (describe_run): the
// encoder it builds (Conv-4 or ResNet-12) and the plan fields it uses.
#include "describe_run.hpp"

#include <algorithm>
#include <optional>

#include <mlh/run_description.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "config.hpp"
#include "data_sets.hpp"
#include "encoder.hpp"

namespace protonet {

namespace {

// The training episodes as the run will fit them to its data (episode_fit.hpp), where the file
// lists (or an IDX labels file) tell without decoding an image; the config's own where they
// cannot be read (the run then says why).
EpisodeShape predicted_training_shape(const Config& cfg) {
  try {
    std::vector<ClassSize> classes = dataset_class_sizes(cfg.train_data);
    if (cfg.validate && !cfg.has_val_classes) {
      const double fraction = fitted_val_fraction(classes, cfg, nullptr);
      for (ClassSize& c : classes) c.images -= held_out_count(c.images, fraction);
    }
    return fit_episodes(classes, cfg.train, train_shape_fields(), "training").shape;
  } catch (const std::exception&) {
    return cfg.train;
  }
}

}  // namespace

std::string describe_run(const mlh::RunContext& ctx) {
  const Config cfg = parse_config(nlohmann::json::parse(ctx.config_json()));
  const std::string command = ctx.command().empty() ? command_table().default_name() : ctx.command();
  const bool trains = command == "train" || command == "benchmark" || command == "calibrate";
  const bool episodes = command == "train" || command == "eval";  // assembled by the data workers
  const DatasetSpec& data = cfg.train_data;
  const Encoder net = make_encoder(cfg, data.channels);
  const std::string model = net->name();
  const std::string not_training = command + " does not train";

  mlh::RunDescription d;
  d.model(net->parameter_count(), model + ": " + net->layers() + ", " + std::to_string(data.height) + "x" +
                                      std::to_string(data.width) + "x" + std::to_string(data.channels) + " images to " +
                                      std::to_string(net->embedding_dim(data.height, data.width)) + "-d embeddings");
  const EpisodeShape shape = trains ? predicted_training_shape(cfg) : cfg.train;
  d.no_effect("batch_size", std::string(MLH_PLUGIN_NAME) +
                                "'s batch is the episode: train_way x (train_shot + train_query) images (" +
                                std::to_string(shape.way) + " x " + std::to_string(shape.shot + shape.query) +
                                " here" + (shape.way != cfg.train.way ? ", fitted to the training data's classes" : "") +
                                ")");
  if (net->checkpointed_part().empty())
    d.no_effect("gradient_checkpointing", "a Python module's forward is one call, not recomputed in parts");
  else
    d.uses_if(trains, "gradient_checkpointing", "recomputes each " + net->checkpointed_part() + " in the backward pass",
              not_training);
  // classify and forward embed outside autocast: forward's outputs are compared in fp32.
  const bool embeds_once = command == "classify" || command == "forward";
  d.uses_if(!embeds_once, "precision", "autocast for the " + model + " forward pass (fp16 with a gradient scaler)",
            command + " embeds in fp32");
  d.uses("preset", "the training and evaluation schedule (episodes, ways, epochs); the model is the config's "
                   "model.encoder (Conv-4 unless set) at its width in every preset");
  d.uses_if(!embeds_once, "pinned_memory", "episodes are page-locked by the data workers and copied without blocking",
            command + " copies its images once");
  d.uses_if(episodes, "dataloader_workers", "threads that assemble the next episodes while the current one trains",
            command + " assembles its episodes itself");
  d.uses_if(episodes, "prefetch_factor", "episodes each data worker keeps ready", command + " assembles its episodes itself");
  d.uses_if(command == "train", "empty_cache_steps", "releases the device's cached memory every N episodes",
            command + " does not release the cache");
  if (command == "train") {  // training episodes, as calibrate counts them (validation and early stopping aside)
    const int64_t planned = cfg.epochs * cfg.episodes_per_epoch;
    const std::optional<int64_t> max_steps = mlh::rt::RuntimePlan::parse(ctx.plan_json()).max_steps;
    d.work(static_cast<double>(std::min(planned, max_steps.value_or(planned))), "episodes",
           "epochs or episodes_per_epoch");
  }
  d.uses_if(command == "train", "max_steps", "trains that many episodes (one optimizer step each), then validates "
            "and saves as at the end of the last epoch", command + " does not train");
  d.uses_if(command == "train", "init_from", "the encoder's first weights", command + " does not train");
  d.uses("channels_last", model + "'s weights and its input images in NHWC layout");
  d.uses("cudnn_benchmark", "cuDNN picks " + model + "'s convolution algorithms by timing them");
  d.uses_if(trains, "cuda_graphs",
            "each training episode (forward, backward, Adam) replayed as one captured graph; fp16's loss scaling, "
            "several ranks and micro-batches run eagerly",
            not_training);
  return d.json();
}

}  // namespace protonet
