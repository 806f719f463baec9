// ProtoNet's train command: episodic training with validation after each epoch and early
// stopping, on a TrainingSession (checkpoints, resume, stop, export).
#include <algorithm>
#include <map>
#include <optional>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <mlh/runtime/prefetcher.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/throughput.hpp>
#include <mlh/runtime/training_session.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "data_sets.hpp"
#include "evaluate.hpp"
#include "trainer.hpp"
#include "progress.hpp"

namespace protonet {

using nlohmann::json;

namespace {


json shape_json(const EpisodeShape& s) { return {{"way", s.way}, {"shot", s.shot}, {"query", s.query}}; }

// The generators' state at a save, under "step_rng.*" beside the epoch's "rng.*": ResNet-12's
// dropout and DropBlock draw from them in every step, so a run stopped mid-epoch continues
// them from the stop, not from the epoch's start (Conv-4 draws nothing in a step).
void add_step_rng(std::map<std::string, at::Tensor>& tensors) {
  for (auto& [key, value] : mlh::rt::capture_rng_state().to_tensors()) tensors["step_" + key] = value;
}

std::optional<mlh::rt::RngState> step_rng_of(const std::map<std::string, at::Tensor>& tensors) {
  std::map<std::string, at::Tensor> rng;
  const std::string prefix = "step_";
  for (const auto& [key, value] : tensors)
    if (key.compare(0, prefix.size(), prefix) == 0) rng[key.substr(prefix.size())] = value;
  if (rng.empty()) return std::nullopt;  // a checkpoint from before ResNet-12
  return mlh::rt::RngState::from_tensors(rng);
}

// Another implementation's tensor names in the encoder's (--init-from).
mlh::rt::WeightNameMap foreign_names(const EncoderImpl& net) {
  return [&net](const std::string& name) { return net.foreign_weight_name(name); };
}

// A --init-from file that does not fit the config's encoder fails before any image is decoded
// (a folder of images can take minutes); the generators stay as they were.
void check_init_from_before_loading(const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  if (!plan.init_from) return;
  const mlh::rt::RngState before = mlh::rt::capture_rng_state();
  Trainer scratch(cfg, loaded_channels(cfg.train_data), plan);
  mlh::rt::TrainingSession::check_init_weights(plan, *scratch.net, foreign_names(*scratch.net));
  mlh::rt::restore_rng_state(before);
}

// The training and validation sets with the episodes they make, checked against the test
// classes and described in the log.
struct EpisodeSets {
  TrainingSets sets;
  EpisodeShape shape, val_shape;
};

EpisodeSets load_episode_sets(mlh::RunContext& ctx, const Config& cfg, const DataSources& data) {
  EpisodeSets e;
  report_folder_data(ctx, cfg, cfg.train_data, "training");
  if (cfg.has_val_classes && cfg.val_data.root != cfg.train_data.root) report_folder_data(ctx, cfg, cfg.val_data, "validation");
  e.sets = load_training_sets(cfg, data, [&ctx, &cfg](const std::string& change) {
    fitted_to_data(ctx, cfg.strict_data, "data.val_fraction", change);
  });
  const ImageSet& train_set = e.sets.train;
  const ImageSet& val_set = e.sets.val;
  const std::vector<std::string> trained = present_classes(train_set);
  const size_t val_classes_trained =
      cfg.has_val_classes ? check_disjoint_classes(ctx, cfg, trained, present_classes(val_set), "validation") : 0;
  check_test_classes(ctx, cfg, data, trained, /*known_are_trained=*/true);
  ctx.info("training set: " + std::to_string(train_set.size()) + " images of " + std::to_string(trained.size()) +
           " classes, " + std::to_string(train_set.channels) + "x" + std::to_string(train_set.height) + "x" +
           std::to_string(train_set.width) + "; " +
           (!cfg.validate ? std::string("no validation (data.trainval: training and validation classes together)")
                          : "validation set: " + std::to_string(val_set.size()) + " images" +
                                (!cfg.has_val_classes          ? std::string(" (held out from the training classes)")
                                 : val_classes_trained == 0 ? std::string(" (separate classes)")
                                                            : " (its own classes, " + std::to_string(val_classes_trained) +
                                                                  " of them training classes too: data.allow_class_overlap)")));
  e.shape = fit_shape(ctx, cfg.train, train_set, train_shape_fields(), "training", cfg.train_data, cfg.strict_data);
  e.val_shape = cfg.validate ? fit_shape(ctx, cfg.test, val_set, test_shape_fields(), "validation", cfg.val_data,
                                         cfg.strict_data, /*own_fields=*/false)
                             : cfg.test;
  return e;
}

void log_training_start(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan,
                        const EpisodeSets& e, const Trainer& l) {
  ctx.info("training " + shape_name(e.shape) +
           (cfg.validate ? ", validating " + shape_name(e.val_shape) + " (" + std::to_string(cfg.val_episodes) +
                               " episodes)"
                         : ", " + std::to_string(cfg.epochs) + " epochs without validation") +
           "; " + l.net->name() + " (" + l.net->layers() + "), " + std::to_string(l.net->parameter_count()) +
           " parameters; precision " + mlh::rt::to_string(plan.precision) +
           (plan.gradient_checkpointing ? ", gradient checkpointing" : "") + ", " +
           std::to_string(at::get_num_threads()) + " threads");
}

// The result: the best weights (without validation, the last) exported, the summary written.
void export_best(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan,
                 mlh::rt::TrainingSession& session, Trainer& l, const EpisodeSets& e, const TrainProgress& progress,
                 double last_train_loss, double last_train_acc) {
  mlh::rt::TrainingState best = l.state();
  const auto loaded = cfg.validate ? session.checkpoints().load_best(best, plan.device)
                                   : session.checkpoints().load_latest(best, plan.device);
  std::map<std::string, std::string> metadata = l.net->export_metadata(e.sets.train.channels, cfg.distance);
  metadata["format"] = "pt";
  const std::string weights = session.export_weights(*l.net, metadata);
  const json p = progress.to_json();
  if (cfg.validate)
    ctx.info("best validation loss " + p.at("best_val_loss").dump() + " (accuracy " + p.at("best_val_acc").dump() +
             ") at epoch " + p.at("best_epoch").dump() + "; weights: " + weights);
  else
    ctx.info("trained on training and validation classes for " + std::to_string(progress.epoch) + " epochs; weights: " +
             weights);
  session.finish(*l.net, {{"episodes", progress.episode},
                          {"parameters", l.net->parameter_count()},
                          {"epochs", progress.epoch},
                          {"stopped_early", progress.stopped_early},
                          {"best_epoch", progress.best_epoch},
                          {"trainval", cfg.trainval},
                          {"best_val_loss", p.at("best_val_loss")},
                          {"best_val_acc", p.at("best_val_acc")},
                          {"train_loss", last_train_loss},
                          {"train_acc", last_train_acc},
                          {"train_episode", shape_json(e.shape)},
                          {"val_episode", shape_json(e.val_shape)},
                          {"checkpoint", loaded ? loaded->path : ""},
                          {"weights", weights},
                          {"cuda_graph", {{"captures", l.graph.captures()},
                                          {"replays", l.graph.replays()},
                                          {"off", l.graph.why_off()}}},
                          {"oom_backoffs", l.micro.backoffs()},
                          {"query_micro_batch", l.micro.micro_batch(static_cast<int64_t>(e.shape.way) * e.shape.query)}});
}

}  // namespace

void train(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data) {
  check_init_from_before_loading(cfg, plan);
  const EpisodeSets e = load_episode_sets(ctx, cfg, data);
  const ImageSet& train_set = e.sets.train;
  const EpisodeShape& shape = e.shape;
  const EpisodeSampler sampler(train_set), val_sampler(e.sets.val);

  // Distributed: every rank trains on its own episodes (its own random stream, seeded in
  // run_command) and validates on the same ones; rank 0 writes the checkpoints. The session
  // saves at the end of each epoch (below) and when the run is stopped.
  mlh::rt::TrainingSession session(ctx, plan, {cfg.keep_checkpoints, mlh::rt::Goal::Minimize, 0, "episode"});
  mlh::rt::Distributed& dist = session.dist();
  Trainer l(cfg, train_set.channels, plan, &dist);
  session.init_weights(*l.net, foreign_names(*l.net));  // --init-from (every rank reads the same file)
  l.micro = mlh::rt::MicroBatchedStep(ctx, cfg.micro_batch);
  l.log = [&ctx](const std::string& line) { ctx.info(line); };
  // The validation episodes are the same every epoch, from their own generator.
  std::mt19937_64 val_rng(cfg.seed + 1);
  const std::vector<EpisodeIndices> val_episodes =
      cfg.validate ? sample_episodes(val_sampler, e.val_shape, cfg.val_episodes, val_rng) : std::vector<EpisodeIndices>{};

  TrainProgress progress;
  // The generators' state at the start of the current epoch: an epoch's episodes are drawn
  // at its start, so a run stopped mid-epoch resumes by drawing them again and skipping.
  mlh::rt::RngState epoch_rng = mlh::rt::capture_rng_state();
  auto state = [&] {  // the checkpoint's layout, the same since the first version (step_rng.* since ResNet-12)
    mlh::rt::TrainingState s = l.state();
    s.tensors = epoch_rng.to_tensors();
    add_step_rng(s.tensors);
    s.values = {{"progress", progress.to_json()}, {"scaler", l.scaler.state()}, {"train_way", shape.way},
                {"micro_batch", l.micro.state()}};
    return s;
  };
  std::optional<mlh::rt::RngState> step_rng;  // a resumed run's, restored once its epoch's episodes are drawn
  mlh::rt::TrainingState saved = l.state();
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint& checkpoint) {
    progress = TrainProgress::from_json(checkpoint.values.at("progress"));
    l.scaler.load_state(checkpoint.values.at("scaler"));
    if (checkpoint.values.contains("micro_batch")) l.micro.load_state(checkpoint.values.at("micro_batch"));
    epoch_rng = mlh::rt::RngState::from_tensors(saved.tensors);
    // The checkpoint holds rank 0's random streams; the other ranks keep their own, or
    // they would draw rank 0's episodes from here on.
    if (dist.is_main()) {
      mlh::rt::restore_rng_state(epoch_rng);
      step_rng = step_rng_of(saved.tensors);
    }
    return "at epoch " + std::to_string(progress.epoch) + ", episode " + std::to_string(progress.episode);
  });

  log_training_start(ctx, cfg, plan, e, l);
  mlh::rt::ThroughputMeter speed(ctx);
  const int64_t per_epoch = cfg.episodes_per_epoch, total = session.step_limit(cfg.epochs * per_epoch);
  const int64_t images_per_episode = static_cast<int64_t>(shape.way) * (shape.shot + shape.query);
  double last_train_loss = 0, last_train_acc = 0;
  l.net->train();
  bool at_max_steps = false;  // --max-steps: this epoch is the last, validated and saved as any
  while (progress.epoch < cfg.epochs && !progress.stopped_early && !at_max_steps) {
    const int64_t skip = progress.episode_in_epoch;
    const std::vector<EpisodeIndices> episodes = sample_episodes(sampler, shape, per_epoch, mlh::rt::host_rng());
    if (step_rng) {
      mlh::rt::restore_rng_state(*step_rng);
      step_rng.reset();
    }
    mlh::rt::Prefetcher<Episode> batches(
        [&](int64_t i) -> std::optional<Episode> {
          if (skip + i >= per_epoch) return std::nullopt;
          return ready_for(plan, assemble_episode(train_set, episodes[static_cast<size_t>(skip + i)]));
        },
        mlh::rt::prefetch_depth(plan.prefetch_factor, plan.dataloader_workers),
        static_cast<int>(plan.dataloader_workers));
    while (progress.episode_in_epoch < per_epoch) {
      std::optional<Episode> episode = batches.next();
      if (!episode)
        throw mlh::Error(MLH_ERR_INTERNAL,
                         "episode " + std::to_string(progress.episode_in_epoch) + " of the epoch was not produced");
      l.set_lr(progress.episode);
      const ProtoLoss r = l.train_step(*episode);
      progress.add_episode(r.loss.item<double>(), r.accuracy.item<double>());
      ++progress.episode_in_epoch;
      ++progress.episode;
      speed.record_step(images_per_episode, progress.episode);
      ctx.progress(progress.episode, total, "episodes");
      at_max_steps = session.after_step(progress.episode, [&] { session.save(state(), progress.episode); });
      if (at_max_steps) break;
    }
    // Means over the epoch's episodes (a resumed epoch's before the stop too) and every rank's;
    // the validation figures agree everywhere, so every rank takes the same best-epoch and
    // early-stop decisions.
    last_train_loss = dist.mean(progress.epoch_loss());
    last_train_acc = dist.mean(progress.epoch_acc());
    ctx.metric("train/loss", last_train_loss, progress.episode);
    ctx.metric("train/acc", last_train_acc, progress.episode);
    ctx.metric("train/lr", l.lr(), progress.episode);
    const std::string epoch_line = "epoch " + std::to_string(progress.epoch + 1) + "/" + std::to_string(cfg.epochs) +
                                   ": train loss " + mlh::fixed(last_train_loss, 4) + " acc " + mlh::fixed(last_train_acc, 4);
    if (!cfg.validate) {
      // Retraining on train + val: every epoch's weights are the latest result.
      progress.end_epoch_unvalidated();
      ctx.info(epoch_line);
      epoch_rng = mlh::rt::capture_rng_state();
      session.save(state(), progress.episode);
      session.stop_if_asked("after epoch " + std::to_string(progress.epoch), nullptr);
      continue;
    }
    EpisodeStats val = evaluate(l, e.sets.val, val_episodes);
    val.loss = dist.mean(val.loss);
    val.accuracy = dist.mean(val.accuracy);
    ctx.metric("val/loss", val.loss, progress.episode);
    ctx.metric("val/acc", val.accuracy, progress.episode);

    const bool better = progress.end_epoch(val.loss, val.accuracy, cfg.patience);
    ctx.info(epoch_line + ", val loss " + mlh::fixed(val.loss, 4) + " acc " + mlh::fixed(val.accuracy, 4) +
             (better ? " (best)" : ""));
    epoch_rng = mlh::rt::capture_rng_state();
    session.save(state(), progress.episode, val.loss);
    if (progress.stopped_early) {
      ctx.info("early stop: no better validation loss for " + std::to_string(cfg.patience) + " epochs");
      break;
    }
    session.stop_if_asked("after epoch " + std::to_string(progress.epoch), nullptr);
  }
  speed.flush();
  export_best(ctx, cfg, plan, session, l, e, progress, last_train_loss, last_train_acc);
}

}  // namespace protonet
