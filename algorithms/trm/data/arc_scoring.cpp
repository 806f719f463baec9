#include "arc_scoring.hpp"

#include <algorithm>
#include <cmath>
#include <mlh/plugin.hpp>

namespace trm::arc {
namespace {

using nlohmann::ordered_json;

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The tests of a task in test_puzzles.json, checked.
const ordered_json& test_pairs(const ordered_json& task, const std::string& name, const std::string& where) {
  if (!task.is_object() || !task.contains("test") || !task["test"].is_array() || task["test"].empty())
    throw mlh::DataError(where + ": task '" + name + "' has no \"test\" list of pairs");
  return task["test"];
}

ordered_json attempts(const std::vector<Grid>& grids) {
  ordered_json entry = ordered_json::object();
  for (size_t i = 0; i < grids.size(); ++i) entry["attempt_" + std::to_string(i + 1)] = to_json(grids[i]);
  return entry;
}

}  // namespace

std::string grid_key(const Grid& g) {
  std::string key;
  key.reserve(g.cells.size() + 2);
  key.push_back(static_cast<char>(g.rows));
  key.push_back(static_cast<char>(g.cols));
  key.append(g.cells.begin(), g.cells.end());
  return key;
}

Votes::Votes(std::vector<std::string> identifiers, int64_t blank_identifier_id)
    : identifiers_(std::move(identifiers)), blank_(blank_identifier_id) {}

void Votes::add(int32_t identifier, const int32_t* input, const int32_t* prediction, double q_halt_logit) {
  if (identifier == blank_) return;
  if (identifier < 0 || static_cast<size_t>(identifier) >= identifiers_.size())
    throw mlh::DataError("ARC scoring: puzzle identifier " + std::to_string(identifier) +
                                                   " is not in identifiers.json (" +
                                                   std::to_string(identifiers_.size()) + " names)");
  add_named(identifiers_[static_cast<size_t>(identifier)], input, prediction, q_halt_logit);
}

void Votes::add_named(const std::string& name, const int32_t* input, const int32_t* prediction, double q_halt_logit) {
  const auto [task, augmentation] = parse_augmented_name(name);
  const Grid original_input = undo(augmentation, crop_tokens(input));
  const Grid answer = undo(augmentation, crop_tokens(prediction));
  std::string answer_key = grid_key(answer);
  grids_.emplace(answer_key, answer);
  auto& candidates = tallies_[task][grid_key(original_input)];
  Tally& t = candidates[answer_key];
  if (t.votes == 0) t.first_seen = static_cast<int64_t>(candidates.size());
  t.votes += 1;
  t.confidence_sum += sigmoid(q_halt_logit);
  ++rows_;
}

std::vector<Votes::Candidate> Votes::ranked(const std::string& task, const Grid& input) const {
  std::vector<std::pair<int64_t, Candidate>> found;  // (first seen, candidate)
  const auto by_task = tallies_.find(task);
  if (by_task != tallies_.end()) {
    const auto by_input = by_task->second.find(grid_key(input));
    if (by_input != by_task->second.end())
      for (const auto& [key, tally] : by_input->second)
        found.push_back({tally.first_seen,
                         {grids_.at(key), tally.votes, tally.confidence_sum / static_cast<double>(tally.votes)}});
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    if (a.second.votes != b.second.votes) return a.second.votes > b.second.votes;
    if (a.second.mean_confidence != b.second.mean_confidence) return a.second.mean_confidence > b.second.mean_confidence;
    return a.first < b.first;
  });
  std::vector<Candidate> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

double ArcScore::pass(int k) const {
  for (const auto& [kk, v] : pass_at)
    if (kk == k) return v;
  throw mlh::Error(MLH_ERR_INTERNAL, "ARC scoring: no pass@" + std::to_string(k) + " was computed");
}

ArcScore score(const Votes& votes, const ordered_json& test_puzzles, bool with_answers, const std::string& where) {
  if (!test_puzzles.is_object() || test_puzzles.empty())
    throw mlh::DataError(where + ": expected an object of tasks, found none");
  ArcScore s;
  std::vector<double> correct(kPassKs.size(), 0.0);
  s.submission = ordered_json::object();
  for (const auto& [name, task] : test_puzzles.items()) {
    const ordered_json& pairs = test_pairs(task, name, where);
    std::vector<int64_t> solved(kPassKs.size(), 0);
    ordered_json entries = ordered_json::array();
    for (size_t i = 0; i < pairs.size(); ++i) {
      const std::string field = "test[" + std::to_string(i) + "]";
      if (!pairs[i].is_object() || !pairs[i].contains("input"))
        throw mlh::DataError(where + ": task '" + name + "' " + field + " has no \"input\"");
      const Grid input = parse_grid(pairs[i]["input"], where + ": task '" + name + "' " + field + ".input");
      const std::vector<Votes::Candidate> candidates = votes.ranked(name, input);
      ++s.test_inputs;
      if (candidates.empty()) {
        ++s.inputs_without_predictions;
        entries.push_back(attempts(std::vector<Grid>(kSubmissionAttempts, Grid{1, 1, {0}})));
        continue;
      }
      if (with_answers) {
        if (!pairs[i].contains("output"))
          throw mlh::DataError(where + ": task '" + name + "' " + field + " has no \"output\"");
        const Grid answer = parse_grid(pairs[i]["output"], where + ": task '" + name + "' " + field + ".output");
        for (size_t k = 0; k < kPassKs.size(); ++k) {
          const size_t top = std::min(candidates.size(), static_cast<size_t>(kPassKs[k]));
          solved[k] += std::any_of(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(top),
                                   [&](const Votes::Candidate& c) { return c.grid == answer; });
        }
      }
      std::vector<Grid> best;
      for (size_t a = 0; a < static_cast<size_t>(kSubmissionAttempts); ++a)
        best.push_back(candidates[a < candidates.size() ? a : 0].grid);  // padded with the best, as the reference
      entries.push_back(attempts(best));
    }
    for (size_t k = 0; k < kPassKs.size(); ++k)
      correct[k] += static_cast<double>(solved[k]) / static_cast<double>(pairs.size());
    s.submission[name] = std::move(entries);
    ++s.tasks;
  }
  if (with_answers)
    for (size_t k = 0; k < kPassKs.size(); ++k) s.pass_at.push_back({kPassKs[k], correct[k] / static_cast<double>(s.tasks)});
  return s;
}

}  // namespace trm::arc
