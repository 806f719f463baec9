// TRM's build-data and train commands: a generated dataset written in the reference's format,
// and ACT deep supervision on a puzzle dataset or a text file, on a TrainingSession
// (checkpoints, resume, stop, export), with evals of the EMA weights along the way.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>

#include <ATen/Parallel.h>
#include <mlh/format.hpp>
#include <mlh/runtime/parameters.hpp>
#include <mlh/runtime/prefetcher.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/training_session.hpp>
#include <nlohmann/json.hpp>

#include "arc_eval.hpp"
#include "commands.hpp"
#include "data/token_names.hpp"
#include "evaluate.hpp"
#include "model_record.hpp"
#include "text_data.hpp"
#include "trained_data.hpp"
#include "trainer.hpp"

namespace trm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string fmt(double v, int digits = 2) { return mlh::fixed(v, digits); }
using mlh::scientific;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The training data of either mode behind one interface: batches, the held-out evaluation,
// and the sampler's state for checkpoints. next and state are called by one data worker at a
// time (mlh::rt::OrderedPrefetcher), never concurrently.
struct TrainingData {
  std::function<Batch()> next;
  std::function<json()> state;
  std::function<void(const json&)> load_state;
  // Evaluates `model` on the held-out data; fills metrics and returns the checkpoint metric
  // (puzzles: exact accuracy; text: held-out loss) and a one-line description.
  std::function<std::pair<double, std::string>(Trm&, int64_t max_examples, json& metrics)> evaluate;
};

struct PuzzleSource {
  DatasetSplit train, test;
  TrainSampler sampler;
  std::optional<ArcDatasetFiles> arc;  // an ARC dataset's: its evaluation votes and scores
  PuzzleSource(DatasetSplit tr, DatasetSplit te, int64_t batch, uint64_t seed)
      : train(std::move(tr)), test(std::move(te)), sampler(train, batch, seed) {}
};

// What the data functions of either mode read, kept alive by train_command while it trains.
struct DataOwners {
  std::unique_ptr<PuzzleSource> puzzles;
  std::unique_ptr<TextCorpus> corpus;
  std::unique_ptr<TextSampler> text_sampler;
  std::vector<Batch> text_eval;  // built at the first eval
};

// Text mode: the file's bytes (a resumed run's from where its model.json says), sampled in
// global batches of which each rank trains its rows; the held-out tail is the eval.
TrainingData open_text_data(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan,
                            mlh::rt::Distributed& dist, const std::optional<ModelRecord>& resumed,
                            int64_t global_batch, ModelRecord& record, DataOwners& owners) {
  TrainingData data;
  const std::string text_file = resumed ? trained_text_file(cfg, *resumed, ctx.run_dir()) : cfg.data.text_file;
  owners.corpus = std::make_unique<TextCorpus>(text_file, cfg.data.text_eval_fraction, cfg.model.text_seq_len);
  owners.text_sampler = std::make_unique<TextSampler>(*owners.corpus, global_batch, cfg.seed);
  record.model = text_model_config(cfg);
  record.text_file = text_file;
  record.text_file_config = cfg.data.text_file;
  ctx.info("text '" + text_file + "': " + std::to_string(owners.corpus->train().size()) + " training bytes, " +
           std::to_string(owners.corpus->eval().size()) + " held out");
  data.next = [&owners, &dist] { return shard_rows(owners.text_sampler->next(), dist.rank(), dist.world_size()); };
  data.state = [&owners] { return owners.text_sampler->state(); };
  data.load_state = [&owners](const json& s) { owners.text_sampler->load_state(s); };
  data.evaluate = [&owners, &cfg, &plan](Trm& model, int64_t max_examples, json& metrics) {
    if (owners.text_eval.empty()) owners.text_eval = text_eval_batches(*owners.corpus, cfg.batch_size, 0);
    std::vector<Batch> batches = owners.text_eval;
    if (max_examples > 0)
      batches.resize(std::min<size_t>(batches.size(),
                                      static_cast<size_t>((max_examples + cfg.batch_size - 1) / cfg.batch_size)));
    const TextEvalResult r = evaluate_text(model, batches, make_eval_settings(cfg, plan, 0));
    metrics = {{"loss", r.loss}, {"bits_per_byte", r.bits_per_byte}, {"token_accuracy", r.token_accuracy}};
    return std::make_pair(r.loss, "held-out loss " + fmt(r.loss, 4) + " (" + fmt(r.bits_per_byte, 3) +
                                      " bits/byte), next-byte accuracy " + fmt(r.token_accuracy, 3));
  };
  return data;
}

// Puzzle mode: the dataset folder (built by rank 0 when missing; a resumed run's from where
// its model.json says), checked, with the test split as the eval (ARC's scores where it is one).
TrainingData open_puzzle_data(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan,
                              mlh::rt::Distributed& dist, const std::optional<ModelRecord>& resumed,
                              int64_t global_batch, ModelRecord& record, DataOwners& owners) {
  TrainingData data;
  // Rank 0 builds a missing dataset; the others wait and then find it.
  auto locate = [&] {
    return resumed ? trained_dataset_dir(cfg, *resumed, ctx.run_dir())
                   : ensure_puzzle_dataset(cfg, ctx.run_dir(), [&](const std::string& m) { ctx.info(m); });
  };
  std::string dir;
  if (dist.is_main()) dir = locate();
  dist.barrier();
  if (!dist.is_main()) dir = locate();
  owners.puzzles = std::make_unique<PuzzleSource>(DatasetSplit::open(dir + "/train"),
                                                  DatasetSplit::open(dir + "/test"), global_batch, cfg.seed);
  owners.puzzles->arc = load_arc_dataset_files(dir);
  for (const DatasetSplit* split : {&owners.puzzles->train, &owners.puzzles->test})
    for (const std::string& w : split->warnings()) ctx.warn(w);
  const DatasetMetadata& tm = owners.puzzles->train.metadata();
  const DatasetMetadata& em = owners.puzzles->test.metadata();
  if (tm.seq_len != em.seq_len || tm.vocab_size != em.vocab_size)
    throw mlh::DataError("dataset '" + dir + "': train/ and test/ disagree (seq_len " + std::to_string(tm.seq_len) +
                         " vs " + std::to_string(em.seq_len) + ", vocab_size " + std::to_string(tm.vocab_size) + " vs " +
                         std::to_string(em.vocab_size) + ")");
  if (!tm.token_names.empty() && !em.token_names.empty() && tm.token_names != em.token_names)
    throw mlh::DataError("dataset '" + dir + "': train/dataset.json and test/dataset.json name the tokens differently");
  const TokenNaming naming =
      token_naming(tm.token_names.empty() ? em.token_names : tm.token_names, tm.vocab_size, tm.seq_len);
  record.model = puzzle_model_config(cfg, tm);
  record.data_dir = dir;
  record.data_dir_config = cfg.data.dir;
  record.token_names = naming.names;
  record.blank_identifier_id = tm.blank_identifier_id;
  ctx.info("dataset '" + dir + "': " + std::to_string(owners.puzzles->train.num_examples()) + " training examples (" +
           std::to_string(owners.puzzles->train.num_groups()) + " groups), " +
           std::to_string(owners.puzzles->test.num_examples()) +
           " test examples; seq_len " + std::to_string(tm.seq_len) + ", vocab " + std::to_string(tm.vocab_size) +
           ", tokens named by " + naming.source);
  data.next = [&owners, &dist] { return shard_rows(owners.puzzles->sampler.next(), dist.rank(), dist.world_size()); };
  data.state = [&owners] { return owners.puzzles->sampler.state(); };
  data.load_state = [&owners](const json& s) { owners.puzzles->sampler.load_state(s); };
  data.evaluate = [&owners, &cfg, &plan](Trm& model, int64_t max_examples, json& metrics) {
    const auto [r, arc_score] = evaluate_test_split(model, owners.puzzles->test, owners.puzzles->arc,
                                                    make_eval_settings(cfg, plan, max_examples));
    metrics = {{"exact_accuracy", r.exact_accuracy},
               {"token_accuracy", r.token_accuracy},
               {"mean_halt_steps", r.mean_halt_steps},
               {"halted_exact_accuracy", r.halted_exact_accuracy},
               {"examples", r.examples}};
    std::string line = "exact accuracy " + fmt(r.exact_accuracy, 4) + ", token accuracy " + fmt(r.token_accuracy, 4) +
                       ", mean halting steps " + fmt(r.mean_halt_steps) + " on " + std::to_string(r.examples) +
                       " test examples";
    if (!arc_score) return std::make_pair(r.exact_accuracy, line);
    // ARC: the best checkpoint is the one with the best pass@2 (Kaggle's score).
    metrics.update(arc_metrics(*arc_score));
    return std::make_pair(arc_score->pass(2), arc_line(*arc_score) + "; " + line);
  };
  return data;
}

}  // namespace

void build_data_command(mlh::RunContext& ctx, const Config& cfg) {
  const std::string out = cfg.build.out_dir.empty() ? cfg.data.dir : cfg.build.out_dir;
  const BuildReport r = build_dataset(cfg, out, [&](const std::string& m) { ctx.info(m); });
  ctx.info("wrote the " + cfg.build.kind + " dataset to '" + out + "': " + std::to_string(r.train_examples) +
           " training and " + std::to_string(r.test_examples) + " test examples in " + fmt(r.seconds) + " s");
  ctx.summary(json{{"dir", out},
                   {"kind", cfg.build.kind},
                   {"train_examples", r.train_examples},
                   {"test_examples", r.test_examples},
                   {"seconds", r.seconds}}
                  .dump());
}

void train_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  // Distributed: every rank draws the same global batch (batch_size x ranks, same seed) and
  // trains on its own share of its rows; the sampler's state is then the same everywhere.
  // Periodic checkpoints are this loop's (below): the last one waits for the final eval.
  const mlh::rt::Goal goal = cfg.text() ? mlh::rt::Goal::Minimize : mlh::rt::Goal::Maximize;
  mlh::rt::TrainingSession session(ctx, plan, {cfg.keep_checkpoints, goal});
  mlh::rt::Distributed& dist = session.dist();
  const int64_t global_batch = cfg.batch_size * dist.world_size();
  if (cfg.global_batch_size > 0 && global_batch != cfg.global_batch_size)
    ctx.warn("global_batch_size is " + std::to_string(cfg.global_batch_size) + " but each step trains on " +
             std::to_string(global_batch) + " rows (batch_size " + std::to_string(cfg.batch_size) + " x " +
             std::to_string(dist.world_size()) + " ranks): --batch-size overrides it");
  ModelRecord record;
  record.mode = cfg.mode;
  // A resumed run finds its data where its model.json says, from whatever directory it
  // resumes in (the reloaded config's relative data.dir was relative to where it started).
  std::optional<ModelRecord> resumed;
  if (ctx.resume() && fs::exists(model_json_path(ctx.run_dir()))) resumed = read_model_record(ctx.run_dir());
  DataOwners owners;
  TrainingData data = cfg.text() ? open_text_data(ctx, cfg, plan, dist, resumed, global_batch, record, owners)
                                 : open_puzzle_data(ctx, cfg, plan, dist, resumed, global_batch, record, owners);
  record.model.gradient_checkpointing = plan.gradient_checkpointing;
  if (dist.is_main()) write_model_record(ctx.run_dir(), record);

  Trainer t(cfg, plan, record.model, &dist, [&](torch::nn::Module& m) { session.init_weights(m); });
  t.micro_batching() = mlh::rt::MicroBatchedStep(ctx, cfg.micro_batch);
  mlh::rt::TrainingState saved = t.state();
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint&) {
    t.restored(saved);
    if (saved.values.contains("sampler")) data.load_state(saved.values["sampler"]);
    return "at step " + std::to_string(t.global_step());
  });
  // Training batches drawn in order and assembled (on CUDA also page-locked) by the plan's data
  // workers while the steps run; checkpoints record the sampler as of the last batch trained on.
  mlh::rt::OrderedPrefetcher<Batch, StepBatch, json> batches(
      data.next, data.state, [&](Batch b) { return prepare_batch(std::move(b), plan.device, plan.pinned_memory); },
      mlh::rt::prefetch_depth(plan.prefetch_factor, plan.dataloader_workers), static_cast<int>(plan.dataloader_workers));
  const int64_t parameters = mlh::rt::parameter_count(*t.model());
  const ModelConfig& m = record.model;
  ctx.info("trm " + cfg.mode + ": " + std::to_string(parameters) + " parameters (hidden " + std::to_string(m.hidden) +
           ", " + std::to_string(m.num_heads) + " heads, " + std::to_string(m.l_layers) + " layers, H " +
           std::to_string(m.h_cycles) + " x L " + std::to_string(m.l_cycles) + (m.mlp_t ? ", mlp_t" : "") +
           (m.causal ? ", causal" : "") + "), up to " + std::to_string(m.halt_max_steps) + " supervision steps; batch " +
           std::to_string(cfg.batch_size) +
           (dist.enabled() ? " per rank x " + std::to_string(dist.world_size()) + " ranks (" + dist.backend() + ")" : "") +
           ", " + std::to_string(cfg.train_steps) + " steps; precision " +
           mlh::rt::to_string(plan.precision) + (plan.gradient_checkpointing ? ", gradient checkpointing" : "") +
           "; torch threads " + std::to_string(at::get_num_threads()));

  std::optional<double> last_eval;
  json last_eval_metrics;
  auto evaluate = [&](int64_t max_examples) {
    std::optional<Ema::Swapped> ema_weights;
    if (t.ema()) ema_weights.emplace(*t.ema());
    json metrics;
    auto [metric, line] = data.evaluate(t.model(), max_examples, metrics);
    for (auto& [name, value] : metrics.items()) ctx.metric("eval/" + name, value.get<double>(), t.global_step());
    ctx.info("step " + std::to_string(t.global_step()) + " eval" + (t.ema() ? " (EMA weights)" : "") + ": " + line);
    last_eval = metric;
    last_eval_metrics = metrics;
  };
  auto save = [&] {
    mlh::rt::TrainingState s = t.state();
    s.values["sampler"] = batches.state();
    session.save(s, t.global_step(), last_eval);
  };

  const auto start = Clock::now();
  const int64_t start_step = t.global_step();
  auto last_log = Clock::now();
  StepStats s;
  bool out_of_time = false;
  const int64_t train_steps = session.step_limit(cfg.train_steps);  // fewer under --max-steps
  while (t.global_step() < train_steps) {
    const auto step_start = Clock::now();
    s = t.step(batches.next());
    s.loss = dist.mean(s.loss);  // the global batch's loss
    const int64_t step = t.global_step();
    const double step_seconds = seconds_since(step_start);
    ctx.metric("train/loss", s.loss, step);
    ctx.metric("train/lr", s.lr, step);
    ctx.metric("perf/samples_per_s", static_cast<double>(global_batch) / step_seconds, step);
    if (s.count > 0) {
      ctx.metric("train/accuracy", s.accuracy, step);
      ctx.metric("train/exact_accuracy", s.exact_accuracy, step);
      ctx.metric("train/q_halt_accuracy", s.q_halt_accuracy, step);
      ctx.metric("train/steps", s.steps, step);
    }
    ctx.progress(step, train_steps, "steps");
    // Every rank must take the same decision, or one would wait for the others forever.
    if (cfg.max_minutes > 0) out_of_time = dist.any(seconds_since(start) >= cfg.max_minutes * 60.0);
    const bool last = step == train_steps || out_of_time;
    if (seconds_since(last_log) >= 5.0 || last) {
      last_log = Clock::now();
      ctx.info("step " + std::to_string(step) + "/" + std::to_string(train_steps) + ": loss " + fmt(s.loss, 4) +
               (s.count > 0 ? ", halted rows: accuracy " + fmt(s.accuracy, 3) + ", exact " + fmt(s.exact_accuracy, 3) +
                                  ", steps " + fmt(s.steps)
                            : std::string()) +
               ", lr " + scientific(s.lr) + ", " +
               fmt(static_cast<double>((step - start_step) * global_batch) / seconds_since(start), 1) + " samples/s");
    }
    if (cfg.eval_every > 0 && step % cfg.eval_every == 0 && !last) evaluate(cfg.eval_examples);
    session.after_step(step, save, /*save_now=*/step % cfg.checkpoint_every == 0 && !last);
    if (out_of_time) {
      ctx.info("max_minutes (" + fmt(cfg.max_minutes) + ") reached at step " + std::to_string(step));
      break;
    }
  }
  const double wall = seconds_since(start);
  evaluate(0);  // the whole held-out set
  save();
  {
    std::optional<Ema::Swapped> ema_weights;  // the EMA weights are the result
    if (t.ema()) ema_weights.emplace(*t.ema());
    session.export_weights(*t.model(), weights_metadata(record.model, cfg.mode, t.ema() != nullptr));
  }
  const double sps = static_cast<double>((t.global_step() - start_step) * global_batch) / wall;
  ctx.info("done: " + std::to_string(t.global_step()) + " steps in " + fmt(wall) + " s (" + fmt(sps, 1) + " samples/s)");
  json summary = {{"steps", t.global_step()},
                  {"wall_seconds", wall},
                  {"samples_per_s", sps},
                  {"parameters", parameters},
                  {"intra_op_threads", at::get_num_threads()},
                  {"final_train_loss", s.loss},
                  {"eval", last_eval_metrics},
                  {"mode", cfg.mode},
                  {"global_batch_size", global_batch},
                  {"oom_backoffs", t.micro_batching().backoffs()},
                  {"micro_batch", t.micro_batching().micro_batch(cfg.batch_size)}};
  session.finish(*t.model(), summary);
}

}  // namespace trm
