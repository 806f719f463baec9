// ProtoNet's benchmark command: training episodes on synthetic images of fixed 28x28 shapes,
// timed with the plan's settings, comparable between machines (calibrate.cpp times the run's
// own episode).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/precision.hpp>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "benchmark_encoders.hpp"
#include "commands.hpp"
#include "data_sets.hpp"
#include "trainer.hpp"

namespace protonet {

namespace {

using nlohmann::json;

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
    ctx.info(name + ": " + mlh::fixed(results.back().throughput, 2) + " episodes/s (median " + mlh::fixed(results.back().median_ms, 2) +
             " ms)");
    const double images = static_cast<double>(shape.way * (shape.shot + shape.query));
    const double conv_gflops = flops_per_image * images * results.back().throughput / 1e9;
    notes.push_back(name + ": convolution training at " + mlh::fixed(conv_gflops, 1) + " GFLOP/s = " +
                    mlh::fixed(100.0 * conv_gflops / matmul_gflops, 0) + "% of the 1024x1024 fp32 matmul's " +
                    mlh::fixed(matmul_gflops, 1) + " GFLOP/s (" + std::to_string(at::get_num_threads()) + " threads)");
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
      ctx.info(name + ": " + mlh::fixed(results.back().throughput, 2) + " episodes/s (median " +
               mlh::fixed(results.back().median_ms, 2) + " ms)");
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
      notes.push_back("5-way 5-shot 15-query, " + name + ": " + mlh::fixed(r.throughput, 2) + " episodes/s, convolution at " +
                      mlh::fixed(100.0 * share, 0) + "% of the matmul");
      ctx.info(notes.back().get<std::string>());
    };
    const bool onednn = at::globalContext().userEnabledMkldnn();
    time_variant(std::string("plan (") + (plan.channels_last ? "channels-last" : "NCHW") + ", oneDNN " +
                     (onednn ? "on" : "off") + ")",
                 plan.channels_last, onednn);
    time_variant(plan.channels_last ? "NCHW" : "channels-last", !plan.channels_last, onednn);
    time_variant("oneDNN off (ATen im2col + GEMM)", plan.channels_last, false);
    if (l.net->has_fused_cpu_block())
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
    ctx.info("embed_28x28_batch500: " + mlh::fixed(results.back().throughput, 0) + " images/s");
  }
  if (cfg.compare_encoders) extra["encoders"] = compare_encoders(ctx, cfg, plan, results, notes);
  json summary = mlh::rt::benchmarks_summary(results);
  summary["notes"] = notes;
  summary.update(extra);
  ctx.summary(summary.dump());
}

}  // namespace protonet
