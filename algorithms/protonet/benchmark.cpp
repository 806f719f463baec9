// ProtoNet's benchmark and calibrate commands: training episodes on synthetic images, timed
// with the plan's settings (benchmark: fixed 28x28 shapes, comparable between machines;
// calibrate: the run's own episode); calibrate's reduced-precision quality check on the run's
// data.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/precision.hpp>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "commands.hpp"
#include "data_sets.hpp"
#include "trainer.hpp"

namespace protonet {

namespace {

using nlohmann::json;

std::string fmt(double v, int digits) { return mlh::fixed(v, digits); }

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

// `n` training episodes of `shape` drawn from `set`.
std::vector<Episode> training_episodes(const ImageSet& set, const EpisodeShape& shape, int n, uint64_t seed) {
  const EpisodeSampler sampler(set);
  std::mt19937_64 rng(seed);
  std::vector<Episode> episodes;
  for (int i = 0; i < n; ++i)
    episodes.push_back(assemble_episode(set, sampler.sample(shape.way, shape.shot, shape.query, rng)));
  return episodes;
}

}  // namespace

void benchmark(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources&) {
  const ImageSet set = synthetic_set(64, 20);
  Trainer l(cfg, 1, plan);
  l.log = [&ctx](const std::string& line) { ctx.info(line); };
  l.net->train();
  std::vector<mlh::rt::BenchmarkResult> results;
  json notes = json::array(), extra = json::object();
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
    const std::vector<Episode> episodes = training_episodes(set, shape, 4, cfg.seed);
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
  // The same episodes without CUDA graphs, where the plan's episodes replay one: what the
  // graph saves in kernel launches.
  if (l.graph.on() && l.graph.replays() > 0) {
    mlh::rt::RuntimePlan eager_plan = plan;
    eager_plan.cuda_graphs = false;
    for (const EpisodeShape& shape : {EpisodeShape{5, 5, 15}, EpisodeShape{60, 5, 5}}) {
      const std::vector<Episode> episodes = training_episodes(set, shape, 4, cfg.seed);
      Trainer eager(cfg, 1, eager_plan);
      eager.net->train();
      size_t next = 0;
      const std::string name = "train_episode_" + std::to_string(shape.way) + "way_" + std::to_string(shape.shot) +
                               "shot_" + std::to_string(shape.query) + "query_28x28_without_cuda_graphs";
      results.push_back(mlh::rt::run_benchmark(name, [&] { eager.train_step(episodes[next++ % episodes.size()]); }, options));
      ctx.info(name + ": " + fmt(results.back().throughput, 2) + " episodes/s (median " +
               fmt(results.back().median_ms, 2) + " ms)");
    }
  } else if (plan.cuda_graphs && !l.graph.why_off().empty()) {
    notes.push_back("CUDA graphs off: " + l.graph.why_off());
  }
  // The convolution paths the training episode could take, each against the same matmul rate
  // (TARGETS: 60%): the plan's own, channels-last toggled, oneDNN (mkldnn) switched off
  // (ATen's own im2col + GEMM convolution), and batch norm, ReLU and pooling as ATen's three
  // ops instead of the fused CPU block. Reported, not chosen: the plan's channels_last
  // decides, oneDNN stays on, and the fused block runs wherever it applies.
  {
    const EpisodeShape shape{5, 5, 15};
    const std::vector<Episode> episodes = training_episodes(set, shape, 4, cfg.seed);
    const double images = static_cast<double>(shape.way * (shape.shot + shape.query));
    json variants = json::object();
    auto time_variant = [&](const std::string& name, bool channels_last, bool mkldnn, bool fused = true) {
      mlh::rt::RuntimePlan p = plan;
      p.channels_last = channels_last;
      const bool mkldnn_was = at::globalContext().userEnabledMkldnn();
      at::globalContext().setUserEnabledMkldnn(mkldnn);
      Trainer v(cfg, 1, p);
      v.net->set_fused_cpu_block(fused);
      v.net->train();
      size_t next = 0;
      const mlh::rt::BenchmarkResult r =
          mlh::rt::run_benchmark(name, [&] { v.train_step(episodes[next++ % episodes.size()]); }, options);
      at::globalContext().setUserEnabledMkldnn(mkldnn_was);
      const double share = flops_per_image * images * r.throughput / 1e9 / matmul_gflops;
      variants[name] = {{"episodes_per_s", r.throughput}, {"gemm_share", share}};
      notes.push_back("5-way 5-shot 15-query, " + name + ": " + fmt(r.throughput, 2) + " episodes/s, convolution at " +
                      fmt(100.0 * share, 0) + "% of the matmul");
      ctx.info(notes.back().get<std::string>());
    };
    const bool onednn = at::globalContext().userEnabledMkldnn();
    time_variant(std::string("plan (") + (plan.channels_last ? "channels-last" : "NCHW") + ", oneDNN " +
                     (onednn ? "on" : "off") + ")",
                 plan.channels_last, onednn);
    time_variant(plan.channels_last ? "NCHW" : "channels-last", !plan.channels_last, onednn);
    time_variant("oneDNN off (ATen im2col + GEMM)", plan.channels_last, false);
    time_variant("batch norm, ReLU and pooling unfused (ATen's ops)", plan.channels_last, onednn, false);
    extra["convolution_variants"] = variants;
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
  summary.update(extra);
  ctx.summary(summary.dump());
}

namespace {

// The reduced-precision quality check on the user's data, judged by what the run is judged by:
// accuracy on classes it never trained on. From the same initial weights, the same training
// episodes (the config's shape, at most kCheckWay-way) in fp32 and in `reduced`, then the same
// held-out episodes (the config's test shape) on the validation classes; where the data has none
// (a validation share of the training classes' images, or data.trainval), on training classes
// split off for the check (check_sets), each model in its own precision. It passes unless the reduced precision's
// accuracy is worse beyond the 95% interval of the paired per-episode differences
// (mlh::rt::held_out_precision_check).
// The budget follows the host's timing bound (request_seconds, about 2 s): fp32 trains for
// 3x that (kCheckMinEpisodes to kCheckMaxEpisodes episodes) and is scored for 2x that
// (kCheckMinHeldOut to kCheckMaxHeldOut episodes); the reduced precision trains and is scored
// on as many.
// The check's training and held-out sets, class-disjoint as a few-shot run is judged: the
// validation classes where the config names them; else a share of the training classes split
// off (kCheckHeldOutShare, at least the test way where the rest keeps two classes); with fewer
// than four training classes, held-out images of the training classes, as `held_out` says.
struct CheckSets {
  ImageSet train, val;
  std::string held_out;  // what the held-out episodes are drawn from, for the report
};
constexpr size_t kCheckHeldOutShare = 5;  // one class in five

CheckSets check_sets(const Config& cfg, const DataSources& data) {
  CheckSets sets;
  if (cfg.has_val_classes) {
    TrainingSets loaded = load_training_sets(cfg, data);
    sets.train = std::move(loaded.train);
    sets.val = std::move(loaded.val);
    sets.held_out = "the validation classes";
    return sets;
  }
  ImageSet all = load_checked(data.load, cfg.train_data, "training");
  const size_t classes = class_sizes(all).size();
  if (classes < 4) {
    std::tie(sets.train, sets.val) = hold_out(all, cfg.val_fraction, cfg.seed);
    sets.held_out = "held-out images of the " + std::to_string(classes) +
                    " training classes (too few classes to hold some out)";
    return sets;
  }
  const size_t held = std::min(std::max(classes / kCheckHeldOutShare, std::min<size_t>(cfg.test.way, classes / 2)),
                               classes - 2);
  std::tie(sets.train, sets.val) = split_off_classes(all, held);
  sets.held_out = std::to_string(held) + " of the " + std::to_string(classes) +
                  " training classes, held out of the check's training";
  return sets;
}

constexpr int kCheckMinEpisodes = 20, kCheckMaxEpisodes = 100, kCheckMinHeldOut = 30, kCheckMaxHeldOut = 100,
              kCheckWay = 20, kHeldOutChunk = 10;

json precision_check_on_data(const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data,
                             mlh::rt::Precision reduced, double request_seconds) {
  CheckSets sets;
  try {
    sets = check_sets(cfg, data);
  } catch (const std::exception& e) {
    return {{"precision", mlh::rt::to_string(reduced)}, {"passed", false},
            {"reason", std::string("the training data could not be loaded for the check: ") + e.what()}};
  }
  const ImageSet& val_set = sets.val;
  const EpisodeSampler sampler(sets.train), val_sampler(val_set);
  // The training's own episodes, fitted to the data as training fits them (silently: the run
  // says so when it trains), at most kCheckWay-way.
  EpisodeShape shape, val_shape;
  try {
    EpisodeShape asked = cfg.train;
    asked.way = std::min(asked.way, kCheckWay);
    shape = fit_episodes(class_sizes(sets.train), asked, train_shape_fields(), "training").shape;
    val_shape = fit_episodes(class_sizes(val_set), cfg.test, test_shape_fields(), "validation").shape;
  } catch (const std::exception& e) {
    return {{"precision", mlh::rt::to_string(reduced)}, {"passed", false},
            {"reason", std::string("the check's episodes cannot be made: ") + e.what()}};
  }
  std::mt19937_64 rng(cfg.seed + 3);
  const std::vector<EpisodeIndices> train_episodes = sample_episodes(sampler, shape, kCheckMaxEpisodes, rng);
  const std::vector<EpisodeIndices> held_out = sample_episodes(val_sampler, val_shape, kCheckMaxHeldOut, rng);

  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  struct Outcome {
    int64_t trained = 0;
    std::vector<double> accuracies;
    double loss = 0;  // mean over the held-out episodes
  };
  // Trains and scores one model: for the time budget (fp32), or as many episodes as `like` did.
  auto train_and_score = [&](mlh::rt::Precision precision, const Outcome* like) {
    mlh::rt::RuntimePlan p = plan;
    p.precision = precision;
    at::manual_seed(cfg.seed);  // the same initial weights in both
    Trainer l(cfg, sets.train.channels, p);
    l.net->train();
    Outcome out;
    const Clock::time_point train_start = Clock::now();
    for (const EpisodeIndices& e : train_episodes) {
      if (like ? out.trained >= like->trained
               : out.trained >= kCheckMinEpisodes && seconds_since(train_start) > 3 * request_seconds)
        break;
      l.train_step(assemble_episode(sets.train, e));
      ++out.trained;
    }
    const Clock::time_point score_start = Clock::now();
    for (size_t first = 0; first < held_out.size(); first += kHeldOutChunk) {
      const size_t done = out.accuracies.size();
      if (like ? done >= like->accuracies.size()
               : done >= static_cast<size_t>(kCheckMinHeldOut) && seconds_since(score_start) > 2 * request_seconds)
        break;
      const std::vector<EpisodeIndices> chunk(held_out.begin() + static_cast<std::ptrdiff_t>(first),
                                              held_out.begin() + static_cast<std::ptrdiff_t>(
                                                                     std::min(first + kHeldOutChunk, held_out.size())));
      const EpisodeStats stats = evaluate(l, val_set, chunk);
      out.loss += stats.loss * static_cast<double>(chunk.size());
      out.accuracies.insert(out.accuracies.end(), stats.accuracies.begin(), stats.accuracies.end());
    }
    out.loss /= static_cast<double>(std::max<size_t>(out.accuracies.size(), 1));
    return out;
  };
  const Outcome fp32 = train_and_score(mlh::rt::Precision::kFp32, nullptr);
  const Outcome low = train_and_score(reduced, &fp32);
  json check = mlh::rt::held_out_precision_check(reduced, fp32.accuracies, low.accuracies, fp32.loss, low.loss,
                                                 fp32.trained);
  check["on"] = std::to_string(fp32.trained) + " training episodes " + shape_name(shape) + ", then " +
                std::to_string(fp32.accuracies.size()) + " held-out episodes " + shape_name(val_shape) + " of " +
                sets.held_out;
  return check;
}

// The episode a run of this config trains: the config's training shape, its way capped at the
// training classes the data lists (as training caps it), on images of the data's size. The
// note says where the way came from.
struct RunEpisode {
  EpisodeShape shape;
  int height = 28, width = 28, channels = 1;
  std::string note;

  std::string name() const {
    return "train_episode_" + std::to_string(shape.way) + "way_" + std::to_string(shape.shot) + "shot_" +
           std::to_string(shape.query) + "query_" + std::to_string(height) + "x" + std::to_string(width) + "x" +
           std::to_string(channels);
  }
};

RunEpisode run_episode(const Config& cfg, const DataSources& data) {
  RunEpisode e;
  e.shape = cfg.train;
  e.height = cfg.train_data.height;
  e.width = cfg.train_data.width;
  e.channels = cfg.train_data.channels;
  try {
    const size_t classes = classes_of(data, cfg.train_data, "training").size();
    if (classes >= 2 && static_cast<size_t>(e.shape.way) > classes) {
      e.note = std::to_string(e.shape.way) + "-way asked, the training data has " + std::to_string(classes) +
               " classes: timed " + std::to_string(classes) + "-way, as training runs";
      e.shape.way = static_cast<int>(classes);
    }
  } catch (const std::exception& ex) {
    e.note = std::string("the training classes could not be listed (") + ex.what() + "): timed the config's " +
             std::to_string(e.shape.way) + "-way";
  }
  return e;
}

}  // namespace

// The training episode a run of this config trains (run_episode: its way, shot, query and
// image size), on synthetic images, with the plan's threads and precision
// (mlh/runtime/calibration.hpp); and, when the host asks, the reduced-precision quality check
// on the run's own data.
void calibrate(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan, const DataSources& data) {
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  const RunEpisode episode = run_episode(cfg, data);
  const EpisodeShape& shape = episode.shape;
  const ImageSet set = synthetic_set(std::max(shape.way, 5), shape.shot + shape.query, episode.height, episode.width,
                                     episode.channels);
  json reply;
  {
    Trainer l(cfg, episode.channels, plan);
    l.net->train();
    const std::vector<Episode> episodes = training_episodes(set, shape, 2, cfg.seed);
    size_t next = 0;
    reply["calibration"] = mlh::rt::time_calibration_step(
        episode.name(), [&] { l.train_step(episodes[next++ % episodes.size()]); }, 1.0, "episodes", plan.device,
        request);
    if (!episode.note.empty()) reply["calibration"]["note"] = episode.note;
  }
  if (request.check_precision)
    reply["precision_check"] = precision_check_on_data(cfg, plan, data, *request.check_precision, request.seconds);
  ctx.summary(reply.dump());
}

}  // namespace protonet
