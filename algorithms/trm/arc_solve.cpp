// solve on an ARC challenges file: every test input of every task, in every version of the
// task the model was trained on, voted on as the evaluation does, into a Kaggle
// submission.json. A TRM knows a task through its puzzle embeddings (the reference trains on
// the evaluation tasks' demonstration pairs), so the versions are the ones named in the
// training data's identifiers.json; a task it never saw is still answered once, unaugmented,
// with the blank embedding, and the run warns about it.
#include <chrono>
#include <map>

#include <mlh/format.hpp>
#include <nlohmann/json.hpp>

#include "arc_eval.hpp"
#include "commands.hpp"
#include "data/arc_tasks.hpp"
#include "data/arc_tokens.hpp"
#include "evaluate.hpp"
#include "trained_data.hpp"
#include "trained_model.hpp"

namespace trm {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

struct Version {
  int32_t identifier;
  std::string name;
  arc::Augmentation augmentation;  // parsed from the name once
};

// One row to run: the version's input tokens, under its identifier and name.
struct Row {
  int32_t identifier;
  const std::string* name;  // in `versions`, whose vectors do not change once made
  std::vector<int32_t> input;
};

}  // namespace

void solve_arc_command(mlh::RunContext& ctx, const Config& cfg, const mlh::rt::RuntimePlan& plan) {
  const auto start = std::chrono::steady_clock::now();
  TrainedModel tm = load_trained_model(ctx, cfg, plan);
  const ModelConfig& m = tm.run.model;
  if (tm.run.mode != "puzzle" || m.seq_len != arc::kArcSeqLen || m.vocab_size != arc::kArcVocabSize)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'solve.arc_challenges': this run's model is not an ARC model "
                                               "(seq_len " + std::to_string(m.seq_len) + ", vocab " +
                                                   std::to_string(m.vocab_size) + "; ARC's are 900 and 12)");
  // Read and checked as build-data reads tasks (errors name the file, the task and the field);
  // without solutions every test pair's output is a placeholder the scoring does not read.
  const std::string path = cfg.solve.arc_challenges;
  const std::vector<arc::Task> tasks = arc::parse_tasks(arc::read_json_file(path), path);
  if (tasks.empty()) throw mlh::DataError("ARC challenges '" + path + "' hold no task");
  ordered_json challenges = ordered_json::object();
  for (const arc::Task& t : tasks) challenges[t.id] = t.json;

  // The versions of each task the model was trained on, in identifier order.
  const std::string data_dir = trained_dataset_dir(cfg, tm.run, tm.run_dir);
  const std::vector<std::string> names = read_identifiers(data_dir + "/identifiers.json");
  std::map<std::string, std::vector<Version>> versions;
  for (size_t id = 1; id < names.size(); ++id) {
    auto [task, augmentation] = arc::parse_augmented_name(names[id]);
    versions[task].push_back({static_cast<int32_t>(id), names[id], augmentation});
  }

  std::vector<Row> rows;
  std::vector<std::string> unknown;
  for (const arc::Task& t : tasks) {
    auto found = versions.find(t.id);
    if (found == versions.end()) {
      unknown.push_back(t.id);
      found = versions.emplace(t.id, std::vector<Version>{{0, t.id, {}}}).first;
    }
    for (const arc::Example& pair : t.test)
      for (const Version& v : found->second)
        rows.push_back({v.identifier, &v.name, arc::to_tokens(arc::apply(v.augmentation, pair.input))});
  }
  if (!unknown.empty())
    ctx.warn(std::to_string(unknown.size()) + " of " + std::to_string(challenges.size()) +
             " tasks are not in the training data's identifiers.json ('" + data_dir + "/identifiers.json'), e.g. '" +
             unknown.front() + "': each is answered once, unaugmented, with the blank puzzle embedding");
  ctx.info("solving " + std::to_string(challenges.size()) + " ARC tasks of '" + path + "' with " + tm.checkpoint_path +
           " (step " + std::to_string(tm.step) + "): " + std::to_string(rows.size()) + " rows over their versions");

  arc::Votes votes(names, 0);
  const EvalSettings settings = make_eval_settings(cfg, plan, 0);
  for (size_t first = 0; first < rows.size(); first += static_cast<size_t>(settings.batch_size)) {
    const size_t n = std::min(rows.size() - first, static_cast<size_t>(settings.batch_size));
    Batch batch;
    batch.rows = static_cast<int64_t>(n);
    batch.seq_len = arc::kArcSeqLen;
    batch.valid = batch.rows;
    for (size_t r = first; r < first + n; ++r) {
      batch.inputs.insert(batch.inputs.end(), rows[r].input.begin(), rows[r].input.end());
      batch.puzzle_identifiers.push_back(rows[r].identifier);
    }
    batch.labels.assign(batch.inputs.size(), kIgnoreLabel);
    const Answers a = predict(tm.model(), batch, settings);
    for (size_t r = 0; r < n; ++r)
      votes.add_named(*rows[first + r].name, &batch.inputs[r * arc::kArcSeqLen], &a.tokens[r * arc::kArcSeqLen],
                      a.q_halt_logits[r]);
    ctx.progress(static_cast<int64_t>(first + n), static_cast<int64_t>(rows.size()), "rows");
  }
  const arc::ArcScore s = arc::score(votes, challenges, /*with_answers=*/false, path);
  const std::string out = ctx.run_dir() + "/submission.json";
  write_submission(out, s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ctx.info("wrote " + out + ": " + std::to_string(s.tasks) + " tasks, " + std::to_string(s.test_inputs) +
           " test inputs, two attempts each (" + mlh::fixed(seconds) + " s)");
  ctx.summary(json{{"challenges", path},
                   {"submission", out},
                   {"tasks", s.tasks},
                   {"test_inputs", s.test_inputs},
                   {"rows", rows.size()},
                   {"unknown_tasks", unknown.size()},
                   {"seconds", seconds}}
                  .dump());
}

}  // namespace trm
