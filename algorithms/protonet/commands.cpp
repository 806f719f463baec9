#include "commands.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/distributed.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/memory.hpp>
#include <mlh/runtime/oom_backoff.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/prefetcher.hpp>
#include <mlh/runtime/safetensors.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/throughput.hpp>
#include <nlohmann/json.hpp>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include "config.hpp"
#include "episodes.hpp"
#include "model.hpp"
#include "proto_loss.hpp"

namespace protonet {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string fmt(double v, int digits = 4) { return mlh::fixed(v, digits); }

std::string shape_name(const EpisodeShape& s) {
  return std::to_string(s.way) + "-way " + std::to_string(s.shot) + "-shot " + std::to_string(s.query) + "-query";
}

// The images of `set` at `keep`, labels and class names kept.
ImageSet subset(const ImageSet& set, const std::vector<int64_t>& keep) {
  ImageSet out;
  out.channels = set.channels;
  out.height = set.height;
  out.width = set.width;
  out.class_names = set.class_names;
  out.pixels.resize(keep.size() * set.image_bytes());
  out.labels.reserve(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    std::copy_n(set.image(keep[i]), set.image_bytes(), out.pixels.data() + i * set.image_bytes());
    out.labels.push_back(set.labels[keep[i]]);
  }
  return out;
}

// Holds out `fraction` of each class's images (at least one where a class has two or more).
std::pair<ImageSet, ImageSet> hold_out(const ImageSet& set, double fraction, uint64_t seed) {
  std::map<int32_t, std::vector<int64_t>> by_class;
  for (size_t i = 0; i < set.size(); ++i) by_class[set.labels[i]].push_back(static_cast<int64_t>(i));
  std::mt19937_64 rng(seed ^ 0x5eed0f0a1ULL);
  std::vector<int64_t> train, val;
  for (auto& [label, images] : by_class) {
    for (size_t i = images.size(); i > 1; --i) std::swap(images[i - 1], images[uniform_index(rng, i)]);
    size_t n_val = static_cast<size_t>(std::llround(fraction * static_cast<double>(images.size())));
    if (images.size() >= 2) n_val = std::clamp<size_t>(n_val, 1, images.size() - 1);
    else n_val = 0;
    val.insert(val.end(), images.begin(), images.begin() + n_val);
    train.insert(train.end(), images.begin() + n_val, images.end());
  }
  std::sort(train.begin(), train.end());
  std::sort(val.begin(), val.end());
  return {subset(set, train), subset(set, val)};
}

ImageSet load_checked(const DatasetLoader& load, const DatasetSpec& spec, const std::string& what) {
  try {
    ImageSet set = load(spec);
    if (set.size() == 0) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, what + " set is empty ('" + spec.root + "')");
    return set;
  } catch (const DataError& e) {
    throw mlh::Error(MLH_ERR_IO, what + " data: " + e.what());
  }
}

// The episode shape capped at the classes `sampler` has enough images of.
EpisodeShape fit_shape(const mlh::RunContext& ctx, EpisodeShape s, const EpisodeSampler& sampler,
                       const std::string& what) {
  const int classes = sampler.eligible_classes(s.shot + s.query);
  if (classes < 2)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, what + " set: fewer than 2 classes have " +
                                                   std::to_string(s.shot + s.query) + " images");
  if (classes < s.way) {
    ctx.warn(what + " episodes: " + std::to_string(s.way) + "-way asked, " + std::to_string(classes) +
             " classes available: using " + std::to_string(classes) + "-way");
    s.way = classes;
  }
  return s;
}

// An episode as the data workers hand it over: page-locked when the plan pins batches for a
// CUDA device, so that pinning runs in the workers and the copy in the step does not block.
Episode ready_for(const mlh::rt::RuntimePlan& plan, Episode e) {
  if (!mlh::rt::pins_batches(plan.device, plan.pinned_memory)) return e;
  const int64_t support = e.support.size(0);
  e.images = mlh::rt::pin_for_transfer(e.images, plan.device, plan.pinned_memory);
  e.support = e.images.narrow(0, 0, support);
  e.query_images = e.images.narrow(0, support, e.images.size(0) - support);
  e.query_targets = mlh::rt::pin_for_transfer(e.query_targets, plan.device, plan.pinned_memory);
  return e;
}

struct EpisodeStats {
  double loss = 0, accuracy = 0;
  std::vector<double> accuracies;
};

// Model, optimizer and one episode's step.
struct Learner {
  Learner(const Config& c, int64_t channels, const mlh::rt::RuntimePlan& p, mlh::rt::Distributed* d = nullptr)
      : dist(d),
        cfg(c),
        plan(p),
        net(channels, c.width),
        optimizer(net->parameters(), torch::optim::AdamOptions(c.lr)),
        scaler(65536.0, 2.0, 0.5, 2000, p.precision == mlh::rt::Precision::kFp16),
        distance(parse_distance(c.distance)),
        channels_last(plan.channels_last) {
    net->to(plan.device);
    // cuDNN's fastest convolutions (tensor cores) want NHWC; on the CPU it rarely helps.
    if (channels_last) mlh::rt::to_channels_last(*net);
    if (dist) dist->broadcast_module(*net);  // every rank starts from rank 0's weights
  }

  void set_lr(int64_t episode) {
    const double lr = cfg.lr * std::pow(0.5, static_cast<double>(episode / cfg.lr_halve_every));
    for (auto& group : optimizer.param_groups())
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }
  double lr() { return static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options()).lr(); }

  // The episode's loss over its support and the queries [query_begin, query_begin + queries)
  // (every query by default).
  ProtoLoss forward(const Episode& e, bool train, int64_t query_begin = 0, int64_t queries = -1) {
    const int64_t k = static_cast<int64_t>(e.way) * e.shot;
    const int64_t all_queries = e.images.size(0) - k;
    if (queries < 0) queries = all_queries;
    at::Tensor images = e.images, targets = e.query_targets;
    if (queries < all_queries) {
      images = at::cat({e.images.narrow(0, 0, k), e.images.narrow(0, k + query_begin, queries)});
      targets = e.query_targets.narrow(0, query_begin, queries);
    }
    images = mlh::rt::to_device(images, plan.device, plan.pinned_memory);
    if (channels_last) images = images.contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor embeddings;
    {
      mlh::rt::AutocastScope autocast(plan.precision, plan.device);
      embeddings = net->forward(images, train && plan.gradient_checkpointing);
    }
    return proto_loss(embeddings.narrow(0, 0, k), embeddings.narrow(0, k, queries),
                      mlh::rt::to_device(targets, plan.device, plan.pinned_memory), e.way, distance, cfg.cosine_scale);
  }

  // One episode, its queries in micro-batches that back off when memory runs out
  // (oom_backoff.hpp): each micro-batch embeds the support set again with its share of the
  // queries, and the loss (a mean over queries) is weighted by that share, so the gradients
  // add up to the episode's. Batch norm sees each micro-batch's images: after a back-off its
  // statistics are those of the smaller micro-batches.
  ProtoLoss train_step(const Episode& e) {
    const int64_t queries = e.query_targets.size(0);
    ProtoLoss total;
    micro.run(queries,
              {[&] {
                 optimizer.zero_grad();
                 total = ProtoLoss();
               },
               [&](int64_t begin, int64_t count, double weight) {
                 ProtoLoss r = forward(e, true, begin, count);
                 if (count == queries) {  // the whole episode at once: no copies
                   scaler.scale(r.loss).backward();
                   total = r;
                   return;
                 }
                 scaler.scale(r.loss * weight).backward();
                 const at::Tensor part = r.loss.detach() * weight;
                 total.loss = total.loss.defined() ? total.loss + part : part;
                 total.accuracy += r.accuracy * weight;
               },
               [&] {
                 // Data-parallel: each rank's episode is its share; the step uses the mean gradient.
                 if (dist) dist->average_gradients(net->parameters());
                 scaler.step(optimizer);
                 scaler.update();
               }},
              plan.device, {net.get()});
    return total;
  }

  mlh::rt::TrainingState state() {
    mlh::rt::TrainingState s;
    s.add("model", *net).add("optimizer", optimizer);
    return s;
  }

  mlh::rt::Distributed* dist;  // null: one process
  const Config& cfg;
  const mlh::rt::RuntimePlan& plan;
  Conv4 net;
  torch::optim::Adam optimizer;
  mlh::rt::GradScaler scaler;
  Distance distance;
  bool channels_last;
  mlh::rt::MicroBatchedStep micro;  // the run's, logging through its context (train())
};

// Runs `episodes` in eval mode without gradients, assembled ahead by the prefetcher.
EpisodeStats evaluate(Learner& l, const ImageSet& set, const std::vector<EpisodeIndices>& episodes,
                      const std::function<void(int64_t)>& on_episode = nullptr) {
  torch::NoGradGuard no_grad;
  const bool was_training = l.net->is_training();
  l.net->eval();
  const int64_t n = static_cast<int64_t>(episodes.size());
  mlh::rt::Prefetcher<Episode> batches(
      [&](int64_t i) -> std::optional<Episode> {
        if (i >= n) return std::nullopt;
        return ready_for(l.plan, assemble_episode(set, episodes[static_cast<size_t>(i)]));
      },
      mlh::rt::prefetch_depth(l.plan.prefetch_factor, l.plan.dataloader_workers),
      static_cast<int>(l.plan.dataloader_workers));
  EpisodeStats s;
  int64_t i = 0;
  while (auto e = batches.next()) {
    const ProtoLoss r = l.forward(*e, false);
    s.loss += r.loss.item<double>();
    s.accuracies.push_back(r.accuracy);
    s.accuracy += r.accuracy;
    if (on_episode) on_episode(++i);
  }
  if (n > 0) {
    s.loss /= static_cast<double>(n);
    s.accuracy /= static_cast<double>(n);
  }
  l.net->train(was_training);
  return s;
}

std::vector<EpisodeIndices> sample_episodes(const EpisodeSampler& sampler, const EpisodeShape& shape, int64_t n,
                                            std::mt19937_64& rng) {
  std::vector<EpisodeIndices> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(sampler.sample(shape.way, shape.shot, shape.query, rng));
  return out;
}

std::optional<mlh::rt::LoadedCheckpoint> load_trained(const Config& cfg, Learner& l,
                                                      mlh::rt::CheckpointManager& checkpoints) {
  mlh::rt::TrainingState s = l.state();
  return cfg.checkpoint == "latest" ? checkpoints.load_latest(s, l.plan.device)
                                    : checkpoints.load_best(s, l.plan.device);
}

void train(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DatasetLoader& load) {
  ImageSet train_set = load_checked(load, cfg.train_data, "training");
  ImageSet val_set;
  if (cfg.has_val_classes) {
    val_set = load_checked(load, cfg.val_data, "validation");
  } else {
    auto [t, v] = hold_out(train_set, cfg.val_fraction, cfg.seed);
    train_set = std::move(t);
    val_set = std::move(v);
  }
  ctx.info("training set: " + std::to_string(train_set.size()) + " images of " +
           std::to_string(EpisodeSampler(train_set).eligible_classes(1)) + " classes, " +
           std::to_string(train_set.channels) + "x" + std::to_string(train_set.height) + "x" +
           std::to_string(train_set.width) + "; validation set: " + std::to_string(val_set.size()) + " images" +
           (cfg.has_val_classes ? " (separate classes)" : " (held out from the training classes)"));
  const EpisodeSampler sampler(train_set), val_sampler(val_set);
  const EpisodeShape shape = fit_shape(ctx, cfg.train, sampler, "training");
  const EpisodeShape val_shape = fit_shape(ctx, cfg.test, val_sampler, "validation");

  // Distributed: every rank trains on its own episodes (its own random stream, seeded in
  // run_command) and validates on the same ones; rank 0 writes the checkpoints.
  mlh::rt::Distributed dist(ctx, plan.device);
  Learner l(cfg, train_set.channels, plan, &dist);
  l.micro = mlh::rt::MicroBatchedStep(ctx, cfg.micro_batch);
  mlh::rt::CheckpointManager checkpoints(ctx.run_dir(), cfg.keep_checkpoints, mlh::rt::Goal::Minimize,
                                         [&](const std::string& w) { ctx.warn(w); });
  checkpoints.share_with(dist);
  // The validation episodes are the same every epoch, from their own generator.
  std::mt19937_64 val_rng(cfg.seed + 1);
  const std::vector<EpisodeIndices> val_episodes = sample_episodes(val_sampler, val_shape, cfg.val_episodes, val_rng);

  json progress = {{"epoch", 0}, {"episode_in_epoch", 0}, {"episode", 0}, {"best_val_loss", nullptr},
                   {"best_val_acc", nullptr}, {"best_epoch", -1}, {"bad_epochs", 0}, {"stopped_early", false}};
  // The generators' state at the start of the current epoch: an epoch's episodes are drawn
  // at its start, so a run stopped mid-epoch resumes by drawing them again and skipping.
  mlh::rt::RngState epoch_rng = mlh::rt::capture_rng_state();
  if (ctx.resume()) {
    mlh::rt::TrainingState s = l.state();
    if (auto loaded = checkpoints.load_latest(s, plan.device)) {
      progress = loaded->values.at("progress");
      l.scaler.load_state(loaded->values.at("scaler"));
      if (loaded->values.contains("micro_batch")) l.micro.load_state(loaded->values.at("micro_batch"));
      epoch_rng = mlh::rt::RngState::from_tensors(s.tensors);
      // The checkpoint holds rank 0's random streams; the other ranks keep their own, or
      // they would draw rank 0's episodes from here on.
      if (dist.is_main()) mlh::rt::restore_rng_state(epoch_rng);
      ctx.info("resumed at epoch " + progress.at("epoch").dump() + ", episode " + progress.at("episode").dump() +
               " (" + loaded->path + ")");
    }
  }
  auto make_state = [&](const mlh::rt::RngState& rng) {
    mlh::rt::TrainingState s = l.state();
    s.tensors = rng.to_tensors();
    s.values = {{"progress", progress}, {"scaler", l.scaler.state()}, {"train_way", shape.way},
                {"micro_batch", l.micro.state()}};
    return s;
  };

  ctx.info("training " + shape_name(shape) + ", validating " + shape_name(val_shape) + " (" +
           std::to_string(cfg.val_episodes) + " episodes); Conv-4 width " + std::to_string(cfg.width) + ", " +
           std::to_string(l.net->parameter_count()) + " parameters; precision " + mlh::rt::to_string(plan.precision) +
           (plan.gradient_checkpointing ? ", gradient checkpointing" : "") + ", " +
           std::to_string(at::get_num_threads()) + " threads");
  mlh::rt::ThroughputMeter speed(ctx);
  mlh::rt::MemoryMonitorOptions memory_options;
  memory_options.empty_cache_steps = plan.empty_cache_steps;
  mlh::rt::MemoryMonitor memory(plan.device, ctx, memory_options);

  const int64_t per_epoch = cfg.episodes_per_epoch, total = cfg.epochs * per_epoch;
  const int64_t images_per_episode = static_cast<int64_t>(shape.way) * (shape.shot + shape.query);
  int64_t episode = progress.at("episode");
  double last_train_loss = 0, last_train_acc = 0;
  l.net->train();
  for (int64_t epoch = progress.at("epoch"); epoch < cfg.epochs && !progress.at("stopped_early").get<bool>();
       ++epoch) {
    const int64_t skip = progress.at("episode_in_epoch");
    const std::vector<EpisodeIndices> episodes = sample_episodes(sampler, shape, per_epoch, mlh::rt::host_rng());
    mlh::rt::Prefetcher<Episode> batches(
        [&](int64_t i) -> std::optional<Episode> {
          if (skip + i >= per_epoch) return std::nullopt;
          return ready_for(plan, assemble_episode(train_set, episodes[static_cast<size_t>(skip + i)]));
        },
        mlh::rt::prefetch_depth(plan.prefetch_factor, plan.dataloader_workers),
        static_cast<int>(plan.dataloader_workers));
    double loss_sum = 0, acc_sum = 0;
    int64_t done = 0;
    for (int64_t i = skip; i < per_epoch; ++i) {
      std::optional<Episode> e = batches.next();
      if (!e) throw mlh::Error(MLH_ERR_INTERNAL, "episode " + std::to_string(i) + " of the epoch was not produced");
      l.set_lr(episode);
      const ProtoLoss r = l.train_step(*e);
      loss_sum += r.loss.item<double>();
      acc_sum += r.accuracy;
      ++done;
      ++episode;
      speed.record_step(images_per_episode, episode);
      memory.step(episode);
      ctx.progress(episode, total, "episodes");
      if (dist.should_stop(ctx)) {
        batches.stop();
        progress["epoch"] = epoch;
        progress["episode_in_epoch"] = i + 1;
        progress["episode"] = episode;
        checkpoints.save(make_state(epoch_rng), episode);
        throw mlh::Error(MLH_ERR_CANCELLED, "stopped at episode " + std::to_string(episode) + " (checkpoint saved)");
      }
    }
    // Means over every rank's episodes; the validation figures agree everywhere, so every
    // rank takes the same best-epoch and early-stop decisions.
    last_train_loss = dist.mean(loss_sum / static_cast<double>(std::max<int64_t>(done, 1)));
    last_train_acc = dist.mean(acc_sum / static_cast<double>(std::max<int64_t>(done, 1)));
    EpisodeStats val = evaluate(l, val_set, val_episodes);
    val.loss = dist.mean(val.loss);
    val.accuracy = dist.mean(val.accuracy);
    ctx.metric("train/loss", last_train_loss, episode);
    ctx.metric("train/acc", last_train_acc, episode);
    ctx.metric("val/loss", val.loss, episode);
    ctx.metric("val/acc", val.accuracy, episode);
    ctx.metric("train/lr", l.lr(), episode);

    const bool better = progress.at("best_val_loss").is_null() || val.loss < progress.at("best_val_loss").get<double>();
    if (better) {
      progress["best_val_loss"] = val.loss;
      progress["best_val_acc"] = val.accuracy;
      progress["best_epoch"] = epoch + 1;
      progress["bad_epochs"] = 0;
    } else {
      progress["bad_epochs"] = progress.at("bad_epochs").get<int64_t>() + 1;
    }
    ctx.info("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(cfg.epochs) + ": train loss " +
             fmt(last_train_loss) + " acc " + fmt(last_train_acc) + ", val loss " + fmt(val.loss) + " acc " +
             fmt(val.accuracy) + (better ? " (best)" : ""));
    const bool stop_early = progress.at("bad_epochs").get<int64_t>() >= cfg.patience;
    progress["epoch"] = epoch + 1;
    progress["episode_in_epoch"] = 0;
    progress["episode"] = episode;
    progress["stopped_early"] = stop_early;
    epoch_rng = mlh::rt::capture_rng_state();
    checkpoints.save(make_state(epoch_rng), episode, val.loss);
    if (stop_early) {
      ctx.info("early stop: no better validation loss for " + std::to_string(cfg.patience) + " epochs");
      break;
    }
    if (dist.should_stop(ctx))
      throw mlh::Error(MLH_ERR_CANCELLED, "stopped after epoch " + std::to_string(epoch + 1) + " (checkpoint saved)");
  }
  speed.flush();

  // The best weights are the result.
  mlh::rt::TrainingState best = l.state();
  auto loaded = checkpoints.load_best(best, plan.device);
  const std::string weights = ctx.run_dir() + "/model.safetensors";
  if (dist.is_main())
    mlh::rt::export_module_weights(*l.net, weights,
                                   {{"format", "pt"}, {"model", "protonet-conv4"},
                                    {"in_channels", std::to_string(train_set.channels)},
                                    {"width", std::to_string(cfg.width)}, {"distance", cfg.distance}});
  ctx.info("best validation loss " + progress.at("best_val_loss").dump() + " (accuracy " +
           progress.at("best_val_acc").dump() + ") at epoch " + progress.at("best_epoch").dump() + "; weights: " +
           weights);
  ctx.summary(json{{"episodes", episode},
                   {"parameters", l.net->parameter_count()},
                   {"world_size", dist.world_size()},
                   {"ranks_agree", dist.parameters_agree(*l.net)},
                   {"epochs", progress.at("epoch")},
                   {"stopped_early", progress.at("stopped_early")},
                   {"best_epoch", progress.at("best_epoch")},
                   {"best_val_loss", progress.at("best_val_loss")},
                   {"best_val_acc", progress.at("best_val_acc")},
                   {"train_loss", last_train_loss},
                   {"train_acc", last_train_acc},
                   {"train_episode", {{"way", shape.way}, {"shot", shape.shot}, {"query", shape.query}}},
                   {"val_episode", {{"way", val_shape.way}, {"shot", val_shape.shot}, {"query", val_shape.query}}},
                   {"checkpoint", loaded ? loaded->path : ""},
                   {"weights", weights},
                   {"oom_backoffs", l.micro.backoffs()},
                   {"query_micro_batch", l.micro.micro_batch(static_cast<int64_t>(shape.way) * shape.query)}}
                  .dump());
}

void eval(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DatasetLoader& load) {
  const ImageSet test_set = load_checked(load, cfg.test_data, "test");
  Learner l(cfg, test_set.channels, plan);
  mlh::rt::CheckpointManager checkpoints(ctx.run_dir(), cfg.keep_checkpoints, mlh::rt::Goal::Minimize,
                                         [&](const std::string& w) { ctx.warn(w); });
  auto loaded = load_trained(cfg, l, checkpoints);
  if (!loaded) throw mlh::Error(MLH_ERR_IO, "no trained model in the run folder ('" + checkpoints.dir() + "')");
  const EpisodeSampler sampler(test_set);
  std::mt19937_64 rng(cfg.seed + 2);
  const std::vector<EpisodeIndices> episodes = sample_episodes(sampler, cfg.test, cfg.eval_episodes, rng);
  const EpisodeStats s = evaluate(l, test_set, episodes, [&](int64_t i) { ctx.progress(i, cfg.eval_episodes, "episodes"); });
  double var = 0;
  for (double a : s.accuracies) var += (a - s.accuracy) * (a - s.accuracy);
  const double n = static_cast<double>(s.accuracies.size());
  const double ci95 = n > 1 ? 1.96 * std::sqrt(var / (n - 1)) / std::sqrt(n) : 0.0;
  ctx.metric("eval/acc", s.accuracy, loaded->step);
  ctx.metric("eval/acc_ci95", ci95, loaded->step);
  ctx.metric("eval/loss", s.loss, loaded->step);
  ctx.info("test accuracy, " + shape_name(cfg.test) + ", " + std::to_string(cfg.eval_episodes) + " episodes: " +
           fmt(100 * s.accuracy, 2) + "% +- " + fmt(100 * ci95, 2) + "% (95% CI); checkpoint " + loaded->path);
  ctx.summary(json{{"accuracy", s.accuracy},
                   {"ci95", ci95},
                   {"loss", s.loss},
                   {"episodes", cfg.eval_episodes},
                   {"way", cfg.test.way},
                   {"shot", cfg.test.shot},
                   {"query", cfg.test.query},
                   {"checkpoint", loaded->path}}
                  .dump());
}

// Query files: each file given, or every regular file of each folder given (sorted).
std::vector<std::string> query_files(const std::vector<std::string>& query) {
  std::vector<std::string> files;
  for (const std::string& q : query) {
    std::error_code ec;
    if (fs::is_directory(q, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& entry : fs::directory_iterator(q, ec))
        if (entry.is_regular_file()) in_dir.push_back(entry.path().string());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(q);
    }
  }
  return files;
}

void classify(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DatasetLoader& load,
              const ImageDecoder& decode) {
  if (cfg.support_dir.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "classify: set support_dir");
  if (cfg.query.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "classify: set query (a folder or files)");
  if (!decode) throw mlh::Error(MLH_ERR_UNSUPPORTED, "classify: this build has no image decoder");
  DatasetSpec spec = cfg.train_data;
  spec.format = "folder";
  spec.root = cfg.support_dir;
  spec.labels.clear();
  spec.split.clear();
  spec.classes.clear();
  spec.rotations = false;
  spec.cache_dir.clear();
  const ImageSet support = load_checked(load, spec, "support");
  const std::vector<std::string> files = query_files(cfg.query);
  if (files.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "classify: no query images");
  ImageSet queries;
  try {
    queries = decode(files, spec);
  } catch (const DataError& e) {
    throw mlh::Error(MLH_ERR_IO, std::string("classify: ") + e.what());
  }

  Learner l(cfg, support.channels, plan);
  mlh::rt::CheckpointManager checkpoints(ctx.run_dir(), cfg.keep_checkpoints, mlh::rt::Goal::Minimize,
                                         [&](const std::string& w) { ctx.warn(w); });
  auto loaded = load_trained(cfg, l, checkpoints);
  if (!loaded) throw mlh::Error(MLH_ERR_IO, "no trained model in the run folder ('" + checkpoints.dir() + "')");
  torch::NoGradGuard no_grad;
  l.net->eval();

  // Prototypes: the mean embedding of each class's support images (any number of shots).
  const int64_t way = static_cast<int64_t>(support.class_names.size());
  std::vector<int64_t> all(support.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const at::Tensor support_emb = l.net->forward(images_to_tensor(support, all).to(plan.device)).to(at::kFloat);
  const at::Tensor labels = at::tensor(std::vector<int64_t>(support.labels.begin(), support.labels.end()), at::kLong)
                                .to(plan.device);
  at::Tensor protos = at::zeros({way, support_emb.size(1)}, support_emb.options());
  protos.index_add_(0, labels, support_emb);
  const at::Tensor counts = at::bincount(labels, {}, way).to(at::kFloat).clamp_min(1).unsqueeze(1);
  protos = protos / counts;

  std::vector<int64_t> q_all(queries.size());
  for (size_t i = 0; i < q_all.size(); ++i) q_all[i] = static_cast<int64_t>(i);
  const at::Tensor query_emb = l.net->forward(images_to_tensor(queries, q_all).to(plan.device)).to(at::kFloat);
  const at::Tensor probs =
      at::softmax(proto_logits(query_emb, protos, l.distance, cfg.cosine_scale), 1).to(at::kCPU).contiguous();
  json results = json::array();
  for (size_t i = 0; i < files.size() && static_cast<int64_t>(i) < probs.size(0); ++i) {
    const at::Tensor row = probs[static_cast<int64_t>(i)];
    const int64_t best = row.argmax().item<int64_t>();
    json p = json::object();
    std::string text = files[i] + ": " + support.class_names[static_cast<size_t>(best)] + " (";
    for (int64_t c = 0; c < way; ++c) {
      const double v = row[c].item<double>();
      p[support.class_names[static_cast<size_t>(c)]] = v;
      text += (c ? ", " : "") + support.class_names[static_cast<size_t>(c)] + " " + fmt(v, 3);
    }
    ctx.info(text + ")");
    results.push_back({{"file", files[i]},
                       {"class", support.class_names[static_cast<size_t>(best)]},
                       {"probability", row[best].item<double>()},
                       {"probabilities", p}});
  }
  ctx.summary(json{{"predictions", results},
                   {"classes", support.class_names},
                   {"support_images", support.size()},
                   {"checkpoint", loaded->path}}
                  .dump());
}

// A synthetic 28x28 grayscale set: benchmarks time the model, not the data.
ImageSet synthetic_set(int classes, int per_class) {
  ImageSet s;
  s.channels = 1;
  s.height = s.width = 28;
  std::mt19937_64 rng(7);
  s.pixels.resize(static_cast<size_t>(classes) * per_class * s.image_bytes());
  for (auto& p : s.pixels) p = static_cast<uint8_t>(rng() & 0xff);
  for (int c = 0; c < classes; ++c) {
    s.class_names.push_back(std::to_string(c));
    for (int i = 0; i < per_class; ++i) s.labels.push_back(c);
  }
  return s;
}

// FLOP/s of a 1024x1024 fp32 matmul with the plan's threads: what the convolution training
// rate is compared with (TARGETS: at least 60% of it).
mlh::rt::BenchmarkResult matmul_rate(const mlh::rt::RuntimePlan& plan) {
  const at::Tensor a = at::randn({1024, 1024}).to(plan.device), b = at::randn({1024, 1024}).to(plan.device);
  mlh::rt::BenchmarkOptions o;
  o.device = plan.device;
  o.min_seconds = 1.0;
  o.min_iterations = 5;
  o.items_per_iteration = 2.0 * 1024 * 1024 * 1024 / 1e9;
  o.unit = "GFLOP";
  return mlh::rt::run_benchmark("matmul_1024x1024_fp32", [&] { (void)at::mm(a, b); }, o);
}

void benchmark(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  const ImageSet set = synthetic_set(64, 20);
  const EpisodeSampler sampler(set);
  Learner l(cfg, 1, plan);
  l.net->train();
  std::vector<mlh::rt::BenchmarkResult> results;
  json notes = json::array();
  results.push_back(matmul_rate(plan));
  const double matmul_gflops = results.back().throughput;
  const double flops_per_image = l.net->training_flops_per_image(1, 28, 28);
  mlh::rt::BenchmarkOptions options;
  options.device = plan.device;
  options.min_seconds = 2.0;
  options.min_iterations = 5;
  options.warmup_iterations = 2;
  options.unit = "episodes";
  for (const EpisodeShape& shape : {EpisodeShape{5, 5, 15}, EpisodeShape{60, 5, 5}}) {
    std::mt19937_64 rng(cfg.seed);
    std::vector<Episode> episodes;
    for (int i = 0; i < 4; ++i) episodes.push_back(assemble_episode(set, sampler.sample(shape.way, shape.shot, shape.query, rng)));
    size_t next = 0;
    const std::string name = "train_episode_" + std::to_string(shape.way) + "way_" + std::to_string(shape.shot) +
                             "shot_" + std::to_string(shape.query) + "query_28x28";
    results.push_back(mlh::rt::run_benchmark(name, [&] { l.train_step(episodes[next++ % episodes.size()]); }, options));
    ctx.info(name + ": " + fmt(results.back().throughput, 2) + " episodes/s (median " + fmt(results.back().median_ms, 2) +
             " ms)");
    const double images = static_cast<double>(shape.way * (shape.shot + shape.query));
    const double conv_gflops = flops_per_image * images * results.back().throughput / 1e9;
    notes.push_back(name + ": convolution training at " + fmt(conv_gflops, 1) + " GFLOP/s = " +
                    fmt(100.0 * conv_gflops / matmul_gflops, 0) + "% of the 1024x1024 fp32 matmul's " +
                    fmt(matmul_gflops, 1) + " GFLOP/s (" + std::to_string(at::get_num_threads()) + " threads)");
    ctx.info(notes.back().get<std::string>());
  }
  {
    torch::NoGradGuard no_grad;
    l.net->eval();
    std::vector<int64_t> idx(500);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    const at::Tensor batch = images_to_tensor(set, idx).to(plan.device);
    options.unit = "images";
    options.items_per_iteration = static_cast<double>(idx.size());
    results.push_back(mlh::rt::run_benchmark("embed_28x28_batch500", [&] {
      mlh::rt::AutocastScope autocast(plan.precision, plan.device);
      l.net->forward(batch);
    }, options));
    ctx.info("embed_28x28_batch500: " + fmt(results.back().throughput, 0) + " images/s");
  }
  json summary = mlh::rt::benchmarks_summary(results);
  summary["notes"] = notes;
  ctx.summary(summary.dump());
}

// calibrate: a training episode of the config's training shape (way, shot, query) on
// synthetic 28x28 images, with the plan's threads and precision (mlh/runtime/calibration.hpp).
// No reduced-precision check: the host keeps ProtoNet in fp32.
void calibrate(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  const EpisodeShape& shape = cfg.train;
  const ImageSet set = synthetic_set(std::max(shape.way, 5), shape.shot + shape.query);
  const EpisodeSampler sampler(set);
  Learner l(cfg, 1, plan);
  l.net->train();
  std::mt19937_64 rng(cfg.seed);
  std::vector<Episode> episodes;
  for (int i = 0; i < 2; ++i) episodes.push_back(assemble_episode(set, sampler.sample(shape.way, shape.shot, shape.query, rng)));
  size_t next = 0;
  const json measured = mlh::rt::time_calibration_step(
      "train_episode_" + std::to_string(shape.way) + "way_" + std::to_string(shape.shot) + "shot_" +
          std::to_string(shape.query) + "query",
      [&] { l.train_step(episodes[next++ % episodes.size()]); }, 1.0, "episodes", plan.device, request);
  ctx.summary(json{{"calibration", measured}}.dump());
}

}  // namespace

void run_command(mlh::RunContext& ctx, const DatasetLoader& load, const ImageDecoder& decode) {
  const Config cfg = parse_config(json::parse(ctx.config_json()));
  const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
  mlh::rt::apply_plan(plan);
  // Distributed ranks draw different training episodes; their models start from rank 0's.
  mlh::rt::seed_everything(mlh::rt::seed_for_rank(cfg.seed, ctx.rank()));
  const std::string command = ctx.command().empty() ? "train" : ctx.command();
  if (command == "train") return train(ctx, cfg, plan, load);
  if (command == "eval") return eval(ctx, cfg, plan, load);
  if (command == "classify") return classify(ctx, cfg, plan, load, decode);
  if (command == "benchmark") return benchmark(ctx, cfg, plan);
  if (command == "calibrate") return calibrate(ctx, cfg, plan);
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                   "unknown command '" + command + "' (train, eval, classify, benchmark, calibrate)");
}

}  // namespace protonet
