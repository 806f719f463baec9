#include "evaluate.hpp"

#include <chrono>
#include <functional>
#include <cmath>
#include <optional>

#include <ATen/ATen.h>

#include "model/loss.hpp"
#include "trainer.hpp"

namespace trm {
namespace {

// Leaves the model in eval mode for a scope and restores its mode after.
class EvalModeScope {
 public:
  explicit EvalModeScope(Trm& model) : model_(model), was_training_(model->is_training()) { model_->eval(); }
  ~EvalModeScope() { model_->train(was_training_); }

 private:
  Trm& model_;
  bool was_training_;
};

std::vector<double> to_doubles(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

std::vector<int32_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kInt).contiguous();
  return std::vector<int32_t>(c.data_ptr<int32_t>(), c.data_ptr<int32_t>() + c.numel());
}

}  // namespace

StepOutput run_every_step(Trm& model, const BatchTensors& data, const EvalSettings& settings,
                          const std::function<void(int64_t, const StepOutput&)>& each) {
  EvalModeScope eval_mode(model);
  at::NoGradGuard no_grad;
  Carry carry = model->initial_carry(data);
  StepOutput out;
  for (int64_t step = 1; step <= model->config().halt_max_steps; ++step) {
    {
      std::optional<mlh::rt::AutocastScope> autocast;
      if (settings.precision != mlh::rt::Precision::kFp32) autocast.emplace(settings.precision, settings.device);
      out = model->forward(carry, data);
    }
    if (each) each(step, out);
  }
  return out;
}

namespace {

// The final answers, the answers at each row's halting step and the halting steps.
struct Run {
  at::Tensor final_tokens, halted_tokens, halt_steps;
  at::Tensor final_q_halt_logits;  // the last step's, as the reference's ARC evaluator reads them
};

Run run_all_steps(Trm& model, const Batch& batch, const EvalSettings& settings) {
  const int64_t max_steps = model->config().halt_max_steps;
  Run r;
  r.halt_steps = at::zeros({batch.rows}, at::TensorOptions().dtype(at::kInt).device(settings.device));
  run_every_step(model, to_tensors(batch, settings.device), settings, [&](int64_t step, const StepOutput& out) {
    r.final_tokens = out.logits.argmax(-1).to(at::kInt);
    r.final_q_halt_logits = out.q_halt_logits;
    if (!r.halted_tokens.defined()) r.halted_tokens = r.final_tokens.clone();
    // Rows whose halt logit turns positive now (or that reach the limit) halt here.
    const at::Tensor halts = step >= max_steps ? at::ones_like(r.halt_steps, at::kBool) : out.q_halt_logits.gt(0);
    const at::Tensor halts_now = r.halt_steps.eq(0).logical_and(halts);
    r.halt_steps.masked_fill_(halts_now, static_cast<int>(step));
    r.halted_tokens = at::where(halts_now.unsqueeze(-1), r.final_tokens, r.halted_tokens);
  });
  return r;
}

}  // namespace

EvalSettings make_eval_settings(const Config& cfg, const mlh::rt::RuntimePlan& plan, int64_t max_examples) {
  EvalSettings s;
  s.device = plan.device;
  s.precision = plan.precision;
  s.batch_size = cfg.batch_size;
  s.max_examples = max_examples;
  return s;
}

at::Tensor next_token_logits(Trm& model, const Batch& batch, int64_t position, const EvalSettings& settings) {
  const StepOutput out = run_every_step(model, to_tensors(batch, settings.device), settings);
  return out.logits[0][position].to(at::kCPU, at::kFloat).contiguous();
}

Answers predict(Trm& model, const Batch& batch, const EvalSettings& settings) {
  const Run r = run_all_steps(model, batch, settings);
  return {to_vector(r.final_tokens), to_vector(r.halt_steps), to_doubles(r.final_q_halt_logits)};
}

PuzzleEvalResult evaluate_puzzles(Trm& model, const DatasetSplit& test, const EvalSettings& settings, arc::Votes* votes,
                                  SavedPredictions* saved) {
  const auto start = std::chrono::steady_clock::now();
  PuzzleEvalResult r;
  EvalBatches batches(test, settings.batch_size);
  Batch batch;
  int64_t exact = 0, halted_exact = 0, tokens_right = 0, tokens_labelled = 0, halt_step_sum = 0;
  while (batches.next(batch)) {
    int64_t rows = batch.valid;
    if (settings.max_examples > 0) rows = std::min(rows, settings.max_examples - r.examples);
    if (rows <= 0) break;
    const Run run = run_all_steps(model, batch, settings);
    const std::vector<int32_t> final_tokens = to_vector(run.final_tokens);
    const std::vector<int32_t> halted_tokens = to_vector(run.halted_tokens);
    const std::vector<int32_t> halt_steps = to_vector(run.halt_steps);
    if (votes || saved) {
      const std::vector<double> q = to_doubles(run.final_q_halt_logits);
      if (saved) saved->add(batch, rows, final_tokens, q);
      for (int64_t row = 0; votes && row < rows; ++row) {
        const size_t at = static_cast<size_t>(row * batch.seq_len);
        votes->add(batch.puzzle_identifiers[static_cast<size_t>(row)], &batch.inputs[at], &final_tokens[at],
                   q[static_cast<size_t>(row)]);
      }
    }
    for (int64_t row = 0; row < rows; ++row) {
      bool all_right = true, halted_all_right = true;
      for (int64_t t = 0; t < batch.seq_len; ++t) {
        const size_t i = static_cast<size_t>(row * batch.seq_len + t);
        if (batch.labels[i] == kIgnoreLabel) continue;
        ++tokens_labelled;
        const bool right = final_tokens[i] == batch.labels[i];
        tokens_right += right;
        all_right &= right;
        halted_all_right &= halted_tokens[i] == batch.labels[i];
      }
      exact += all_right;
      halted_exact += halted_all_right;
      halt_step_sum += halt_steps[static_cast<size_t>(row)];
    }
    r.examples += rows;
    if (settings.max_examples > 0 && r.examples >= settings.max_examples) break;
  }
  if (r.examples > 0) {
    const auto n = static_cast<double>(r.examples);
    r.exact_accuracy = static_cast<double>(exact) / n;
    r.halted_exact_accuracy = static_cast<double>(halted_exact) / n;
    r.mean_halt_steps = static_cast<double>(halt_step_sum) / n;
  }
  if (tokens_labelled > 0) r.token_accuracy = static_cast<double>(tokens_right) / static_cast<double>(tokens_labelled);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::pair<PuzzleEvalResult, std::optional<arc::ArcScore>> evaluate_test_split(
    Trm& model, const DatasetSplit& test, const std::optional<ArcDatasetFiles>& arc_files, const EvalSettings& settings,
    SavedPredictions* saved) {
  std::optional<arc::Votes> votes;
  if (arc_files) votes.emplace(arc_files->identifiers, test.metadata().blank_identifier_id);
  const PuzzleEvalResult r = evaluate_puzzles(model, test, settings, votes ? &*votes : nullptr, saved);
  std::optional<arc::ArcScore> score;
  if (votes) score = arc::score(*votes, arc_files->test_puzzles, /*with_answers=*/true, arc_files->test_puzzles_path);
  return {r, std::move(score)};
}

TextEvalResult evaluate_text(Trm& model, const std::vector<Batch>& batches, const EvalSettings& settings) {
  at::NoGradGuard no_grad;
  TextEvalResult r;
  double loss_sum = 0;
  int64_t right = 0;
  for (const Batch& batch : batches) {
    const BatchTensors data = to_tensors(batch, settings.device);
    const StepOutput out = run_every_step(model, data, settings);
    const at::Tensor valid_rows = at::arange(batch.rows, at::TensorOptions().device(settings.device)).lt(batch.valid);
    const at::Tensor labelled = data.labels.ne(kIgnoreLabel).logical_and(valid_rows.unsqueeze(-1));
    const at::Tensor ce = softmax_cross_entropy(out.logits, data.labels, kIgnoreLabel);
    loss_sum += ce.masked_select(labelled).to(at::kDouble).sum().item<double>();
    right += out.logits.argmax(-1).eq(data.labels).logical_and(labelled).sum().item<int64_t>();
    r.tokens += labelled.sum().item<int64_t>();
  }
  if (r.tokens > 0) {
    r.loss = loss_sum / static_cast<double>(r.tokens);
    r.bits_per_byte = r.loss / std::log(2.0);
    r.token_accuracy = static_cast<double>(right) / static_cast<double>(r.tokens);
  }
  return r;
}

}  // namespace trm
