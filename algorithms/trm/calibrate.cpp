// TRM's calibrate command: a training step of the config's model timed with the plan's
// settings, the reduced-precision quality check, and the batch search of --batch-size auto.
#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>
#include <mlh/runtime/batch_finder.hpp>
#include <mlh/runtime/calibration.hpp>
#include <mlh/runtime/memory.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "model_record.hpp"
#include "trainer.hpp"

namespace trm {

using nlohmann::json;

namespace {

// The batch search of `host --batch-size auto` (batch_finder.hpp): two timed training steps of
// the run's own model (its data's sequence length, vocabulary and puzzle table; a puzzle run
// without data.dir builds its dataset in the search's folder first) on random batches of
// each size tried.
json batch_search(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  ModelConfig model{};
  if (cfg.text()) {
    model = text_model_config(cfg);
  } else {
    const std::string dir = ensure_puzzle_dataset(cfg, ctx.run_dir(), [&](const std::string& m) { ctx.info(m); });
    model = puzzle_model_config(cfg, DatasetSplit::open(dir + "/train").metadata());
  }
  model.gradient_checkpointing = plan.gradient_checkpointing;
  mlh::rt::BatchSearchOptions options = mlh::rt::BatchSearchOptions::from_plan(ctx.plan_json());
  options.memory_limit_bytes = mlh::rt::planned_memory_limit(plan);
  const mlh::rt::BatchSearchResult result = mlh::rt::find_batch_size(
      [&](int64_t rows) {
        Trainer t(cfg, plan, model);
        t.micro_batching().set_backoff(false);  // out of memory: the batch does not fit
        const Batch batch = random_batch(rows, cfg.seed, model.seq_len, model.vocab_size, model.num_puzzle_identifiers);
        t.step(batch);
        const auto start = std::chrono::steady_clock::now();
        t.step(batch);
        t.step(batch);
        return 2.0 * static_cast<double>(rows) / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      plan.device, options);
  return result.to_json();
}

}  // namespace

// calibrate: a training step of the config's model on Sudoku-shaped batches of at most 32
// rows (what the CPU benchmarks measure; larger batches only lengthen the measurement), with
// the plan's threads and precision. The reduced-precision check trains a copy task (each
// label a function of its input, which a few steps learn) for kCheckSteps steps from the
// same start in fp32 and in the reduced precision, and compares the mean loss of the last
// five steps.
void calibrate_command(mlh::RunContext& ctx, const Config& user_cfg, const mlh::rt::RuntimePlan& plan) {
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  if (request.batch_search) {
    ctx.summary(json{{"batch_search", batch_search(ctx, user_cfg, plan)}}.dump());
    return;
  }
  Config cfg = user_cfg;
  cfg.model.puzzle_emb_ndim = 0;
  cfg.ema = false;
  DatasetMetadata sudoku;
  sudoku.seq_len = 81;
  sudoku.vocab_size = 11;
  sudoku.num_puzzle_identifiers = 1;
  ModelConfig model = puzzle_model_config(cfg, sudoku);
  model.gradient_checkpointing = plan.gradient_checkpointing;
  const int64_t rows = std::min<int64_t>(32, cfg.batch_size);
  const Batch batch = random_batch(rows, cfg.seed);
  json reply;
  {
    Trainer t(cfg, plan, model);
    reply["calibration"] = mlh::rt::time_calibration_step("train_step", [&] { t.step(batch); },
                                                          static_cast<double>(rows), "samples", plan.device, request);
  }
  if (request.check_precision) {
    constexpr int64_t kCheckSteps = 15, kCheckRows = 16;
    Batch copy = random_batch(kCheckRows, cfg.seed + 1);
    for (size_t i = 0; i < copy.labels.size(); ++i) copy.labels[i] = copy.inputs[i] % 9 + 2;
    auto loss_after = [&](mlh::rt::Precision precision) {
      mlh::rt::RuntimePlan p = plan;
      p.precision = precision;
      at::manual_seed(static_cast<uint64_t>(cfg.seed));  // the same initial weights in both
      Trainer t(cfg, p, model);
      double tail = 0;
      for (int64_t step = 0; step < kCheckSteps; ++step) {
        const double loss = t.step(copy).loss;
        if (step >= kCheckSteps - 5) tail += loss / 5;
      }
      return tail;
    };
    const double fp32 = loss_after(mlh::rt::Precision::kFp32);
    const double reduced = loss_after(*request.check_precision);
    reply["precision_check"] = mlh::rt::precision_check(*request.check_precision, fp32, reduced, 0.05, kCheckSteps);
  }
  ctx.summary(reply.dump());
}

}  // namespace trm
