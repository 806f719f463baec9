// ARC evaluation and solving around a model's predictions: an ARC dataset folder (build-data
// kind=arc) is recognised by its identifiers.json and test_puzzles.json; its test split's
// predictions are voted on (data/arc_scoring.hpp), scored as pass@K and written as a Kaggle
// submission.json.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "data/arc_scoring.hpp"

namespace trm {

struct ArcDatasetFiles {
  std::vector<std::string> identifiers;  // identifiers.json: index = puzzle identifier
  nlohmann::ordered_json test_puzzles;   // test_puzzles.json, in its order
  std::string test_puzzles_path;
};

// The files of an ARC dataset folder, or nothing when `data_dir` has neither (another kind
// of dataset). One without the other, or a file that does not parse, is an error naming it.
std::optional<ArcDatasetFiles> load_arc_dataset_files(const std::string& data_dir);

// identifiers.json: the names of the puzzle identifiers; errors name the file.
std::vector<std::string> read_identifiers(const std::string& path);

// pass@K as metrics ("pass@1", ...), and a one-line description of pass@1 and pass@2.
nlohmann::json arc_metrics(const arc::ArcScore&);
std::string arc_line(const arc::ArcScore&);

// Writes the submission atomically (Kaggle's format, json.dump's separators).
void write_submission(const std::string& path, const arc::ArcScore&);

}  // namespace trm
