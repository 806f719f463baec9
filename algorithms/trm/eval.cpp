// TRM's commands on a trained run (its best or latest checkpoint): eval on the test split or
// held-out text (with an ARC dataset's votes, pass@K and submission.json); solve, the model's
// answer to one puzzle; generate, a text prompt continued.
#include <cctype>
#include <optional>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>
#include <nlohmann/json.hpp>

#include "arc_eval.hpp"
#include "commands.hpp"
#include "data/maze.hpp"
#include "data/sudoku.hpp"
#include "evaluate.hpp"
#include "sampling.hpp"
#include "text_data.hpp"
#include "trained_model.hpp"

namespace trm {
namespace {

using nlohmann::json;

std::string fmt(double v, int digits = 2) { return mlh::fixed(v, digits); }

bool is_sudoku(const ModelConfig& m) { return m.seq_len == 81 && m.vocab_size == 11; }
bool is_maze(const ModelConfig& m, int& size) {
  size = 0;
  while (static_cast<int64_t>(size + 1) * (size + 1) <= m.seq_len) ++size;
  return m.vocab_size == 6 && static_cast<int64_t>(size) * size == m.seq_len;
}

// A Sudoku in tokens as a 9x9 board, blanks '.', boxes separated.
std::vector<std::string> sudoku_lines(const std::vector<int32_t>& tokens) {
  std::vector<std::string> lines;
  for (int r = 0; r < 9; ++r) {
    if (r == 3 || r == 6) lines.push_back("------+-------+------");
    std::string line;
    for (int c = 0; c < 9; ++c) {
      if (c == 3 || c == 6) line += "| ";
      const int32_t t = tokens[static_cast<size_t>(r * 9 + c)];
      line += (t >= 2 && t <= 10) ? static_cast<char>('0' + t - 1) : '.';
      if (c < 8) line += ' ';
    }
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> maze_lines(const std::vector<int32_t>& tokens, int size) {
  std::vector<std::string> lines;
  for (int r = 0; r < size; ++r) {
    std::string line;
    for (int c = 0; c < size; ++c) {
      const int32_t t = tokens[static_cast<size_t>(r * size + c)];
      line += (t >= 1 && t <= 5) ? kMazeCharset[t - 1] : '?';
    }
    lines.push_back(line);
  }
  return lines;
}

SudokuGrid sudoku_grid(const std::vector<int32_t>& tokens) {
  SudokuGrid g{};
  for (size_t i = 0; i < 81; ++i) g[i] = tokens[i] >= 2 && tokens[i] <= 10 ? static_cast<uint8_t>(tokens[i] - 1) : 0;
  return g;
}

// solve.puzzle: 81 cells, digits 1-9 and '.' or '0' for blanks; whitespace and the board
// separators '|', '-', '+' are ignored so that a pasted board works.
std::vector<int32_t> parse_sudoku(const std::string& text) {
  std::vector<int32_t> tokens;
  for (char ch : text) {
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '|' || ch == '-' || ch == '+') continue;
    if (ch == '.' || ch == '0') tokens.push_back(1);
    else if (ch >= '1' && ch <= '9') tokens.push_back(ch - '0' + 1);
    else
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("config field 'solve.puzzle': unexpected character '") + ch +
                                                     "' (digits 1-9, '.' or '0' for blanks)");
  }
  if (tokens.size() != 81)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "config field 'solve.puzzle': expected 81 cells, got " + std::to_string(tokens.size()));
  return tokens;
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
    const TextCorpus corpus(tm.run.text_file, cfg.data.text_eval_fraction, tm.run.model.seq_len);
    const TextEvalResult r =
        evaluate_text(tm.model(), text_eval_batches(corpus, cfg.batch_size, 0), make_eval_settings(cfg, plan, 0));
    ctx.info("held-out text: loss " + fmt(r.loss, 4) + " nats/byte (" + fmt(r.bits_per_byte, 3) +
             " bits/byte), next-byte accuracy " + fmt(r.token_accuracy, 4) + " over " + std::to_string(r.tokens) + " bytes");
    ctx.metric("eval/loss", r.loss, tm.step);
    ctx.metric("eval/token_accuracy", r.token_accuracy, tm.step);
    summary.update({{"loss", r.loss}, {"bits_per_byte", r.bits_per_byte}, {"token_accuracy", r.token_accuracy},
                    {"tokens", r.tokens}});
  } else {
    const std::string dir = cfg.data.dir.empty() ? tm.run.data_dir : cfg.data.dir;
    const DatasetSplit test = DatasetSplit::open(dir + "/test");
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
  if (!cfg.solve.puzzle.empty()) {
    if (!is_sudoku(m))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'solve.puzzle': this model is not a Sudoku model (seq_len " +
                                                     std::to_string(m.seq_len) + ", vocab " + std::to_string(m.vocab_size) +
                                                     "); use solve.index for its test examples");
    batch.rows = 1;
    batch.seq_len = 81;
    batch.inputs = parse_sudoku(cfg.solve.puzzle);
    batch.labels.assign(81, kIgnoreLabel);
    batch.puzzle_identifiers = {0};
    batch.valid = 1;
    source = "the given puzzle";
  } else {
    const std::string dir = cfg.data.dir.empty() ? tm.run.data_dir : cfg.data.dir;
    const DatasetSplit test = DatasetSplit::open(dir + "/test");
    if (cfg.solve.index >= test.num_examples())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'solve.index': the test split '" + test.dir() + "' holds " +
                                                     std::to_string(test.num_examples()) + " examples, index " +
                                                     std::to_string(cfg.solve.index) + " asked");
    EvalBatches batches(test, 1);
    for (int64_t i = 0; i <= cfg.solve.index; ++i) batches.next(batch);
    label = batch.labels;
    source = "test example " + std::to_string(cfg.solve.index) + " of '" + test.dir() + "'";
  }
  const Answers a = predict(tm.model(), batch, make_eval_settings(cfg, plan, 0));
  int maze_size = 0;
  std::vector<std::string> puzzle_view, answer_view;
  if (is_sudoku(m)) {
    puzzle_view = sudoku_lines(batch.inputs);
    answer_view = sudoku_lines(a.tokens);
  } else if (is_maze(m, maze_size)) {
    puzzle_view = maze_lines(batch.inputs, maze_size);
    answer_view = maze_lines(a.tokens, maze_size);
  } else {
    std::string in, out;
    for (size_t i = 0; i < batch.inputs.size(); ++i) {
      in += std::to_string(batch.inputs[i]) + " ";
      out += std::to_string(a.tokens[i]) + " ";
    }
    puzzle_view = {in};
    answer_view = {out};
  }
  ctx.info("solving " + source + " with " + tm.checkpoint_path + " (step " + std::to_string(tm.step) + ")");
  ctx.info("puzzle:");
  for (const std::string& l : puzzle_view) ctx.info("  " + l);
  ctx.info("model's answer (halting at step " + std::to_string(a.halt_steps[0]) + " of " + std::to_string(m.halt_max_steps) + "):");
  for (const std::string& l : answer_view) ctx.info("  " + l);
  json summary = {{"source", source}, {"answer", a.tokens}, {"halt_step", a.halt_steps[0]}};
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
  if (is_sudoku(m)) {
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
  SamplingOptions options;
  options.temperature = cfg.generate.temperature;
  options.top_k = cfg.generate.top_k;
  options.top_p = cfg.generate.top_p;
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
