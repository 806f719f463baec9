// benchmark: training samples per second of TRM on Sudoku-shaped data (seq 81, vocab 11) for
// the TARGETS' two sizes and the config's model, in fp32 and in each reduced precision the
// device runs (CPU: bf16; CUDA: fp16 and bf16), with model FLOPs utilization: model FLOP/s
// (flops.hpp) over the peak FLOP/s of a large matmul measured in the same run and precision
// (and, for GPUs whose datasheet peak we know, over that too). One training step = one ACT
// step forward, loss, backward and the optimizer step (Trainer::step).
#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <mlh/format.hpp>
#include <mlh/runtime/memory.hpp>
#include <mlh/runtime/benchmark.hpp>
#include <mlh/runtime/cpu_linear.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "flops.hpp"
#include "model_record.hpp"
#include "trainer.hpp"

namespace trm {
namespace {

using nlohmann::json;

// FLOP/s of an n x n matmul in `dtype` on `device`: the practical peak MFU is measured against.
// Where the model's linear layers run the runtime's own product (mlh/runtime/cpu_linear.hpp:
// float32 on an AVX-512 CPU), the faster of it and LibTorch's: against LibTorch's alone the
// default model read 100% and more.
double matmul_peak(c10::Device device, c10::ScalarType dtype, int64_t n) {
  const at::Tensor a = at::randn({n, n}, at::TensorOptions().device(device)).to(dtype);
  const at::Tensor b = at::randn({n, n}, at::TensorOptions().device(device)).to(dtype);
  mlh::rt::BenchmarkOptions o;
  o.device = device;
  o.warmup_iterations = 2;
  o.min_iterations = 5;
  o.min_seconds = 0.5;
  double best_ms = mlh::rt::run_benchmark("matmul", [&] { (void)at::mm(a, b); }, o).median_ms;
  if (mlh::rt::cpu_linear_applies(a, b))
    best_ms = std::min(best_ms, mlh::rt::run_benchmark("linear", [&] { (void)mlh::rt::linear(a, b); }, o).median_ms);
  return 2.0 * static_cast<double>(n * n * n) / (best_ms / 1000.0);
}

// Datasheet dense peaks (FLOP/s) of GPUs we know, by a substring of the device name. fp32 with
// TF32 allowed runs its matmuls on the tensor cores: against the plain fp32 peak, the first H100
// run read 123% "MFU".
std::optional<double> datasheet_peak(const std::string& device_name, mlh::rt::Precision p, bool tf32) {
  struct Gpu {
    const char* name;
    double fp32, tf32, half;
  };
  static const Gpu gpus[] = {{"H200", 67e12, 494.7e12, 989.4e12},
                             {"H100", 67e12, 494.7e12, 989.4e12},
                             {"A100", 19.5e12, 156e12, 312e12}};
  for (const Gpu& g : gpus)
    if (device_name.find(g.name) != std::string::npos)
      return p != mlh::rt::Precision::kFp32 ? g.half : tf32 ? g.tf32 : g.fp32;
  return std::nullopt;
}

}  // namespace

void benchmark_command(mlh::RunContext& ctx, const Config& user_cfg, const mlh::rt::RuntimePlan& plan) {
  const bool cpu = plan.device.is_cpu();
  // The TARGETS measure batch 32 on the CPU; a GPU gets the plan's batch.
  const int64_t batch_size = cpu ? 32 : user_cfg.batch_size;
  std::string device_name;
  try {
    device_name = json::parse(ctx.device_json()).value("name", "");
  } catch (const json::exception&) {
  }
  std::vector<mlh::rt::Precision> precisions{mlh::rt::Precision::kFp32};
  if (!cpu) precisions.push_back(mlh::rt::Precision::kFp16);
  precisions.push_back(mlh::rt::Precision::kBf16);

  struct Size {
    std::string name;
    Config cfg;
  };
  std::vector<Size> sizes;
  auto sized = [&](const std::string& name, int64_t hidden, int64_t heads, int64_t h, int64_t l) {
    Config c = user_cfg;
    c.model.hidden = hidden;
    c.model.num_heads = heads;
    c.model.h_cycles = h;
    c.model.l_cycles = l;
    c.model.l_layers = 2;
    sizes.push_back({name, c});
  };
  sized("small_h128_H2_L2", 128, 4, 2, 2);
  sized("default_h512_H3_L6", 512, 8, 3, 6);
  sizes.push_back({"config", user_cfg});

  DatasetMetadata sudoku;
  sudoku.seq_len = 81;
  sudoku.vocab_size = 11;
  sudoku.num_puzzle_identifiers = 1;
  const Batch batch = random_batch(batch_size, user_cfg.seed);
  std::vector<mlh::rt::BenchmarkResult> results;
  json mfu = json::object();
  std::map<mlh::rt::Precision, double> peaks;
  const int plan_threads = at::get_num_threads();

  for (Size& size : sizes) {
    size.cfg.model.puzzle_emb_ndim = 0;  // the TARGETS' shape: 81 positions
    size.cfg.ema = false;
    ModelConfig model = puzzle_model_config(size.cfg, sudoku);
    model.gradient_checkpointing = plan.gradient_checkpointing;
    const double flops_per_sample = train_flops_per_step(model);
    for (mlh::rt::Precision precision : precisions) {
      mlh::rt::RuntimePlan p = plan;
      p.precision = precision;
      const std::string name = size.name + "_" + mlh::rt::to_string(precision);
      mlh::rt::BenchmarkResult r;
      try {
        Trainer t(size.cfg, p, model);
        mlh::rt::BenchmarkOptions o;
        o.device = plan.device;
        o.items_per_iteration = static_cast<double>(batch_size);
        o.unit = "samples";
        o.warmup_iterations = 1;
        o.min_iterations = size.name == "default_h512_H3_L6" && cpu ? 2 : 5;
        o.min_seconds = cpu ? 2.0 : 1.0;
        r = mlh::rt::run_benchmark("train_" + name, [&] { t.step(batch); }, o);
      } catch (const std::exception& e) {
        ctx.warn(name + ": not measured (" + e.what() + ")");
        continue;
      }
      results.push_back(r);
      if (!peaks.count(precision)) peaks[precision] = matmul_peak(plan.device, mlh::rt::scalar_type(precision), cpu ? 1024 : 8192);
      const double model_flops = flops_per_sample * r.throughput;
      json m = {{"model_tflops_per_s", model_flops / 1e12},
                {"measured_matmul_tflops_per_s", peaks[precision] / 1e12},
                {"mfu_vs_measured_matmul", model_flops / peaks[precision]}};
      std::string line = "train " + name + ": " + mlh::fixed(r.throughput, 1) + " samples/s (median " +
                         mlh::fixed(r.median_ms, 1) + " ms per batch of " + std::to_string(batch_size) + "), " +
                         mlh::fixed(model_flops / 1e9, 1) + " model GFLOP/s = " +
                         mlh::fixed(100.0 * model_flops / peaks[precision], 1) + "% of a measured " +
                         (cpu ? "1024" : "8192") + "^2 matmul";
      if (auto peak = datasheet_peak(device_name, precision, plan.tf32_matmul)) {
        m["mfu_vs_datasheet"] = model_flops / *peak;
        line += ", " + mlh::fixed(100.0 * model_flops / *peak, 1) + "% of the datasheet peak";
      }
      mfu[name] = m;
      ctx.info(line);
    }
  }
  // One thread against the plan's threads on the small model (TARGETS: never slower).
  if (cpu && plan_threads > 1) {
    Config c = sizes[0].cfg;
    ModelConfig model = puzzle_model_config(c, sudoku);
    for (int threads : {1, plan_threads}) {
      at::set_num_threads(threads);
      Trainer t(c, plan, model);
      mlh::rt::BenchmarkOptions o;
      o.items_per_iteration = static_cast<double>(batch_size);
      o.unit = "samples";
      o.warmup_iterations = 1;
      o.min_iterations = 5;
      o.min_seconds = 2.0;
      const auto r = mlh::rt::run_benchmark(
          "train_small_h128_H2_L2_fp32_" + std::to_string(threads) + "thread" + (threads > 1 ? "s" : ""), [&] { t.step(batch); }, o);
      results.push_back(r);
      ctx.info(r.name + ": " + mlh::fixed(r.throughput, 1) + " samples/s");
    }
    at::set_num_threads(plan_threads);
  }
  json summary = mlh::rt::benchmarks_summary(results);
  summary["mfu"] = mfu;
  // The device memory one training step of the default model peaks at, without and with
  // gradient checkpointing of the recursion, at the same batch (CUDA: the caching
  // allocator's peak, weights and optimizer state included; TARGETS: >= 30% lower with it),
  // where the device's allocator keeps a peak.
  if (mlh::rt::memory_stats(plan.device).peak) {
    const Size& size = sizes[1];
    for (bool checkpointing : {false, true}) {
      ModelConfig model = puzzle_model_config(size.cfg, sudoku);
      model.gradient_checkpointing = checkpointing;
      mlh::rt::RuntimePlan p = plan;
      p.gradient_checkpointing = checkpointing;
      Trainer t(size.cfg, p, model);
      t.step(batch);  // the optimizer state exists from here on
      mlh::rt::reset_peak_memory(plan.device);
      t.step(batch);
      const std::optional<int64_t> peak = mlh::rt::memory_stats(plan.device).peak;
      if (!peak) break;
      summary[checkpointing ? "peak_bytes_checkpointed" : "peak_bytes_plain"] = *peak;
      ctx.info(std::string("train step of ") + size.name + (checkpointing ? " with" : " without") +
               " gradient checkpointing: peak " + mlh::fixed(static_cast<double>(*peak) / (1 << 20), 0) + " MiB");
    }
  }
  summary["batch_size"] = batch_size;
  ctx.summary(summary.dump());
}

}  // namespace trm
