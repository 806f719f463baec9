// TRM's commands on a trained run (its best or latest checkpoint): eval on the test split or
// held-out text (with an ARC dataset's votes, pass@K and submission.json); solve, the model's
// answer to one puzzle; generate, a text prompt continued.
#include <optional>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <nlohmann/json.hpp>

#include "arc_eval.hpp"
#include "commands.hpp"
#include "config_specs.hpp"
#include "data/build_data.hpp"
#include "data/puzzle_text.hpp"
#include "data/sudoku.hpp"
#include "data/token_names.hpp"
#include "evaluate.hpp"
#include "sampling.hpp"
#include "text_data.hpp"
#include "trained_data.hpp"
#include "trained_model.hpp"

namespace trm {
namespace {

using nlohmann::json;

std::string fmt(double v, int digits = 2) { return mlh::fixed(v, digits); }

// The names solve shows and reads tokens by: the solved dataset's own when it names them,
// else those the run trained with (model.json), else those of the reference's layout or the
// ids (an older run's model.json has none).
std::vector<std::string> solve_token_names(const ModelRecord& run, const DatasetMetadata* solved) {
  if (solved && !solved->token_names.empty()) return solved->token_names;
  if (!run.token_names.empty()) return run.token_names;
  return token_naming({}, run.model.vocab_size, run.model.seq_len).names;
}

bool is_sudoku(const ModelConfig& m, const std::vector<std::string>& names) {
  return m.seq_len == kSudokuSeqLen && m.vocab_size == kSudokuVocabSize && names == sudoku_token_names();
}

SudokuGrid sudoku_grid(const std::vector<int32_t>& tokens) {
  SudokuGrid g{};
  for (size_t i = 0; i < 81; ++i) g[i] = tokens[i] >= 2 && tokens[i] <= 10 ? static_cast<uint8_t>(tokens[i] - 1) : 0;
  return g;
}

// A Sudoku as solve.puzzle always took it: '0' for a blank too, and a pasted board's '|', '-'
// and '+' skipped.
std::string sudoku_text(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|' || ch == '-' || ch == '+') continue;
    out += ch == '0' ? '.' : ch;
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace

void eval_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  TrainedModel tm = load_trained_model(ctx, cfg, plan);
  ctx.info("evaluating " + tm.checkpoint_path + " (step " + std::to_string(tm.step) + (tm.ema_weights ? ", EMA weights" : "") +
           ") on " + plan.torch_device);
  json summary = {{"checkpoint", tm.checkpoint_path}, {"step", tm.step}, {"ema", tm.ema_weights}};
  if (tm.run.mode == "text") {
    if (cfg.eval_save_predictions)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       "config field 'eval_save_predictions': saves a puzzle test split's predictions; this run is text");
    const TextCorpus corpus(trained_text_file(cfg, tm.run, tm.run_dir), cfg.data.text_eval_fraction,
                            tm.run.model.seq_len);
    const TextEvalResult r =
        evaluate_text(tm.model(), text_eval_batches(corpus, cfg.batch_size, 0), make_eval_settings(cfg, plan, 0));
    ctx.info("held-out text: loss " + fmt(r.loss, 4) + " nats/byte (" + fmt(r.bits_per_byte, 3) +
             " bits/byte), next-byte accuracy " + fmt(r.token_accuracy, 4) + " over " + std::to_string(r.tokens) + " bytes");
    ctx.metric("eval/loss", r.loss, tm.step);
    ctx.metric("eval/token_accuracy", r.token_accuracy, tm.step);
    summary.update({{"loss", r.loss}, {"bits_per_byte", r.bits_per_byte}, {"token_accuracy", r.token_accuracy},
                    {"tokens", r.tokens}});
  } else {
    const std::string dir = trained_dataset_dir(cfg, tm.run, tm.run_dir);
    const DatasetSplit test = open_test_split_for(dir, tm.run.model);
    const std::optional<ArcDatasetFiles> arc_files = load_arc_dataset_files(dir);
    std::optional<SavedPredictions> saved;
    if (cfg.eval_save_predictions) saved.emplace();
    const auto [r, arc_score] = evaluate_test_split(tm.model(), test, arc_files,
                                                    make_eval_settings(cfg, plan, cfg.eval_examples), saved ? &*saved : nullptr);
    ctx.info("test split '" + test.dir() + "' (" + std::to_string(r.examples) + " examples): exact accuracy " +
             fmt(r.exact_accuracy, 4) + ", token accuracy " + fmt(r.token_accuracy, 4) + ", mean halting steps " +
             fmt(r.mean_halt_steps) + " (exact accuracy when halting there: " + fmt(r.halted_exact_accuracy, 4) + "), " +
             fmt(r.seconds) + " s");
    ctx.metric("eval/exact_accuracy", r.exact_accuracy, tm.step);
    ctx.metric("eval/token_accuracy", r.token_accuracy, tm.step);
    ctx.metric("eval/mean_halt_steps", r.mean_halt_steps, tm.step);
    summary.update({{"exact_accuracy", r.exact_accuracy},
                    {"token_accuracy", r.token_accuracy},
                    {"mean_halt_steps", r.mean_halt_steps},
                    {"halted_exact_accuracy", r.halted_exact_accuracy},
                    {"examples", r.examples},
                    {"data_dir", dir}});
    if (saved) {
      const std::string path = ctx.run_dir() + "/" + SavedPredictions::file_name(tm.step);
      saved->write(path);
      ctx.info("predictions of " + std::to_string(saved->rows()) + " examples written to " + path +
               " (the TRM reference's format: torch.load it)");
      summary["predictions"] = path;
    }
    if (arc_score) {
      const std::string path = ctx.run_dir() + "/submission.json";
      write_submission(path, *arc_score);
      ctx.info(arc_line(*arc_score) + "; submission written to " + path);
      const json m = arc_metrics(*arc_score);
      for (const auto& [name, value] : m.items()) ctx.metric("eval/" + name, value.get<double>(), tm.step);
      summary.update(m);
      summary["submission"] = path;
    }
  }
  ctx.summary(summary.dump());
}

void solve_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  if (!cfg.solve.arc_challenges.empty()) return solve_arc_command(ctx, cfg, plan);
  TrainedModel tm = load_trained_model(ctx, cfg, plan);
  if (tm.run.mode != "puzzle") throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "solve needs a puzzle model (this run is text: use generate)");
  const ModelConfig& m = tm.run.model;
  Batch batch;
  std::vector<int32_t> label;
  std::string source;
  std::vector<std::string> names;
  if (!cfg.solve.puzzle.empty()) {
    names = solve_token_names(tm.run, nullptr);
    batch.rows = 1;
    batch.seq_len = m.seq_len;
    batch.inputs = parse_puzzle(is_sudoku(m, names) ? sudoku_text(cfg.solve.puzzle) : cfg.solve.puzzle, names,
                                m.seq_len, "solve.puzzle");
    batch.labels.assign(batch.inputs.size(), kIgnoreLabel);
    batch.puzzle_identifiers = {static_cast<int32_t>(tm.run.blank_identifier_id)};
    batch.valid = 1;
    source = "the given puzzle";
  } else {
    const std::string dir = trained_dataset_dir(cfg, tm.run, tm.run_dir);
    const DatasetSplit test = open_test_split_for(dir, m);
    if (cfg.solve.index >= test.num_examples())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'solve.index': the test split '" + test.dir() + "' holds " +
                                                     std::to_string(test.num_examples()) + " examples, index " +
                                                     std::to_string(cfg.solve.index) + " asked");
    names = solve_token_names(tm.run, &test.metadata());
    EvalBatches batches(test, 1);
    for (int64_t i = 0; i <= cfg.solve.index; ++i) batches.next(batch);
    label = batch.labels;
    source = "test example " + std::to_string(cfg.solve.index) + " of '" + test.dir() + "'";
  }
  const Answers a = predict(tm.model(), batch, make_eval_settings(cfg, plan, 0));
  const std::vector<std::string> puzzle_view = puzzle_lines(batch.inputs, names);
  const std::vector<std::string> answer_view = puzzle_lines(a.tokens, names);
  ctx.info("solving " + source + " with " + tm.checkpoint_path + " (step " + std::to_string(tm.step) + ")");
  ctx.info("puzzle:");
  for (const std::string& l : puzzle_view) ctx.info("  " + l);
  ctx.info("model's answer (halting at step " + std::to_string(a.halt_steps[0]) + " of " + std::to_string(m.halt_max_steps) + "):");
  for (const std::string& l : answer_view) ctx.info("  " + l);
  json summary = {{"source", source},
                  {"answer", a.tokens},
                  {"answer_text", joined(answer_view)},
                  {"halt_step", a.halt_steps[0]}};
  if (!label.empty()) {
    int64_t right = 0, labelled = 0;
    for (size_t i = 0; i < label.size(); ++i)
      if (label[i] != kIgnoreLabel) {
        ++labelled;
        right += a.tokens[i] == label[i];
      }
    ctx.info(right == labelled ? "correct: the answer equals the label"
                               : "wrong: " + std::to_string(labelled - right) + " of " + std::to_string(labelled) +
                                     " cells differ from the label");
    summary["correct"] = right == labelled;
    summary["cells_wrong"] = labelled - right;
  }
  if (is_sudoku(m, names)) {
    const SudokuGrid answer = sudoku_grid(a.tokens);
    const bool valid = is_valid_solution(answer) && consistent(sudoku_grid(batch.inputs), answer);
    ctx.info(valid ? "the answer is a valid Sudoku solution of the puzzle"
                   : "the answer is not a valid solution of the puzzle");
    summary["valid_solution"] = valid;
  }
  ctx.summary(summary.dump());
}

void generate_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  TrainedModel tm = load_trained_model(ctx, cfg, plan);
  if (tm.run.mode != "text") throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "generate needs a text model (this run is puzzle: use solve)");
  const int64_t seq_len = tm.run.model.seq_len;
  std::vector<int32_t> context(cfg.generate.prompt.begin(), cfg.generate.prompt.end());
  for (int32_t& t : context) t &= 0xFF;  // bytes
  if (context.empty()) context.push_back('\n');  // an empty prompt starts as after a line
  const SamplingOptions options = sampling_options(cfg);
  std::mt19937_64 rng(cfg.seed);
  std::string generated;
  at::NoGradGuard no_grad;
  for (int64_t n = 0; n < cfg.generate.max_tokens; ++n) {
    // The last seq_len bytes, left-aligned: causal attention makes the padding after them
    // invisible to the last position.
    const int64_t len = std::min<int64_t>(seq_len, static_cast<int64_t>(context.size()));
    Batch batch;
    batch.rows = 1;
    batch.seq_len = seq_len;
    batch.inputs.assign(static_cast<size_t>(seq_len), 0);
    std::copy(context.end() - len, context.end(), batch.inputs.begin());
    batch.labels.assign(static_cast<size_t>(seq_len), kIgnoreLabel);
    batch.puzzle_identifiers = {0};
    batch.valid = 1;
    const at::Tensor logits = next_token_logits(tm.model(), batch, len - 1, make_eval_settings(cfg, plan, 0));
    const std::vector<float> values(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
    const auto token = static_cast<int32_t>(sample_token(values, options, rng));
    context.push_back(token);
    generated.push_back(static_cast<char>(token));
  }
  ctx.info("prompt: " + json(cfg.generate.prompt).dump());
  ctx.info("generated (" + std::to_string(generated.size()) + " bytes, temperature " + mlh::fixed(options.temperature) +
           ", top_k " + std::to_string(options.top_k) + ", top_p " + mlh::fixed(options.top_p) + "):");
  ctx.info(cfg.generate.prompt + generated);
  ctx.summary(json{{"prompt", cfg.generate.prompt},
                   {"text", generated},
                   {"bytes", generated.size()}}
                  .dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace trm
