// Scoring ARC predictions as the TRM reference's evaluator does (evaluators/arc.py): every
// prediction of an augmented version of a task is cropped to its grid, the augmentation is
// undone, and the predictions for each test input are pooled over all versions of the task;
// candidates are ranked by votes, then by mean halting confidence (sigmoid of the halt logit),
// ties kept in the order the candidates were first seen (Python's stable sort). pass@K counts a
// test input as solved when its answer is among the K best candidates; a task scores the share
// of its test inputs solved, and pass@K is the mean over the tasks of test_puzzles.json.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "arc_grid.hpp"
#include "arc_tokens.hpp"

namespace trm::arc {

// The Pass@K values the reference reports, and the attempts a Kaggle submission has.
inline const std::vector<int> kPassKs = {1, 2, 5, 10, 100, 1000};
constexpr int kSubmissionAttempts = 2;

class Votes {
 public:
  // identifiers: identifiers.json (index = puzzle identifier); blank_identifier_id's rows are
  // padding and ignored.
  Votes(std::vector<std::string> identifiers, int64_t blank_identifier_id);

  // One row: its puzzle identifier, input and predicted tokens (kArcSeqLen each) and the
  // halt logit of its last step. Errors name the identifier when it is out of range.
  void add(int32_t identifier, const int32_t* input, const int32_t* prediction, double q_halt_logit);
  // The same for a row of the version named `name` ("<task>|||t<k>|||<colours>" or the task).
  void add_named(const std::string& name, const int32_t* input, const int32_t* prediction, double q_halt_logit);

  // For one task (its id without augmentation) and one test input grid: the candidates, best
  // first, with their votes and mean halting confidence.
  struct Candidate {
    Grid grid;
    int64_t votes = 0;
    double mean_confidence = 0;
  };
  std::vector<Candidate> ranked(const std::string& task, const Grid& input) const;

  int64_t rows() const { return rows_; }

 private:
  struct Tally {
    int64_t votes = 0;
    double confidence_sum = 0;
    int64_t first_seen = 0;
  };
  std::vector<std::string> identifiers_;
  int64_t blank_;
  int64_t rows_ = 0;
  // task -> input grid key -> prediction grid key -> tally; grids by key.
  std::unordered_map<std::string, std::unordered_map<std::string, std::unordered_map<std::string, Tally>>> tallies_;
  std::unordered_map<std::string, Grid> grids_;
};

// An exact key of a grid's shape and cells (the reference hashes the same bytes with SHA-256).
std::string grid_key(const Grid&);

struct ArcScore {
  std::vector<std::pair<int, double>> pass_at;  // (K, mean over tasks)
  double pass(int k) const;                     // pass@k of kPassKs; an error for another k
  int64_t tasks = 0, test_inputs = 0;
  int64_t inputs_without_predictions = 0;
  // Kaggle's format: {task: [{"attempt_1": grid, "attempt_2": grid}, ...]} in test_puzzles'
  // order, one entry per test input. The reference leaves out an input that got no
  // prediction; here it gets [[0]] attempts so that the file stays a valid submission.
  nlohmann::ordered_json submission;
};

// test_puzzles: the parsed test_puzzles.json ({task: {"train": [...], "test": [{"input",
// "output"}]}}); with_answers false (a challenges file, no solutions) gives no pass@K, only
// the submission. `where` names the file in errors.
ArcScore score(const Votes&, const nlohmann::ordered_json& test_puzzles, bool with_answers, const std::string& where);

}  // namespace trm::arc
