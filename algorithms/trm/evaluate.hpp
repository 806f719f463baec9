// Evaluating a TRM: on a puzzle test split every ACT step runs (as the reference's evaluate),
// and on held-out text one next-byte prediction per position. Runs in eval mode without
// gradients under the plan's precision; the caller chooses the weights (the EMA's when kept).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/precision.hpp>

#include "arc_eval.hpp"
#include "config.hpp"

#include "data/arc_scoring.hpp"
#include "data/dataset.hpp"
#include "data/sampler.hpp"
#include "model/trm.hpp"
#include "saved_predictions.hpp"

namespace trm {

struct EvalSettings {
  c10::Device device{c10::DeviceType::CPU};
  mlh::rt::Precision precision = mlh::rt::Precision::kFp32;
  int64_t batch_size = 64;
  int64_t max_examples = 0;  // 0: all
};

struct PuzzleEvalResult {
  int64_t examples = 0;
  double exact_accuracy = 0;   // examples whose every labelled token is right
  double token_accuracy = 0;   // labelled tokens that are right
  double mean_halt_steps = 0;  // the first step whose halt logit is positive (else halt_max_steps)
  double halted_exact_accuracy = 0;  // exact accuracy of the answer at that halting step
  double seconds = 0;
};

// The model's answer to each row of `batch` after all halt_max_steps steps (argmax per
// position), with the step at which it would have halted.
struct Answers {
  std::vector<int32_t> tokens;       // rows x seq_len
  std::vector<int32_t> halt_steps;   // rows
  std::vector<double> q_halt_logits;  // rows: the last step's halt logit
};
// The plan's device and precision, the config's batch size.
EvalSettings make_eval_settings(const Config& cfg, const mlh::rt::RuntimePlan& plan, int64_t max_examples);

// Logits (float32, CPU, [vocab]) at `position` of the single row of `batch` after all ACT
// steps: the next-token distribution of a causal (text) model.
at::Tensor next_token_logits(Trm& model, const Batch& batch, int64_t position, const EvalSettings& settings);

// Runs all halt_max_steps ACT steps of `data` in eval mode (no row halts early), without
// gradients, under the settings' precision; `each(step, output)` sees every step's output
// (steps from 1). Returns the last one.
StepOutput run_every_step(Trm& model, const BatchTensors& data, const EvalSettings& settings,
                          const std::function<void(int64_t, const StepOutput&)>& each = {});

Answers predict(Trm& model, const Batch& batch, const EvalSettings& settings);

// With `votes`, every evaluated row's final answer and halt logit is also cast as an ARC vote
// (the rows' inputs must be ARC's 30x30 encoding); with `saved`, kept for outside evaluators.
PuzzleEvalResult evaluate_puzzles(Trm& model, const DatasetSplit& test, const EvalSettings& settings,
                                  arc::Votes* votes = nullptr, SavedPredictions* saved = nullptr);

// Evaluates the test split, and on an ARC dataset (`arc_files`) also votes and scores pass@K:
// the score, with the submission it implies, comes back beside the result. With `saved`,
// every evaluated row's prediction is also kept there.
std::pair<PuzzleEvalResult, std::optional<arc::ArcScore>> evaluate_test_split(
    Trm& model, const DatasetSplit& test, const std::optional<ArcDatasetFiles>& arc_files, const EvalSettings& settings,
    SavedPredictions* saved = nullptr);

struct TextEvalResult {
  int64_t tokens = 0;
  double loss = 0;            // mean cross-entropy per byte, nats
  double bits_per_byte = 0;
  double token_accuracy = 0;
};
TextEvalResult evaluate_text(Trm& model, const std::vector<Batch>& batches, const EvalSettings& settings);

}  // namespace trm
