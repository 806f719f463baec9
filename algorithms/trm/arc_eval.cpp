#include "arc_eval.hpp"

#include <filesystem>
#include <mlh/format.hpp>
#include <mlh/plugin.hpp>

#include "data/arc_tasks.hpp"
#include "data/files.hpp"
#include "data/py_json.hpp"

namespace trm {
namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

std::vector<std::string> read_identifiers(const std::string& path) {
  const ordered_json ids = arc::read_json_file(path);
  if (!ids.is_array()) throw mlh::DataError("'" + path + "': expected a list of names");
  std::vector<std::string> names;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_string())
      throw mlh::DataError("'" + path + "': entry " + std::to_string(i) + " is not a string");
    names.push_back(ids[i].get<std::string>());
  }
  return names;
}

std::optional<ArcDatasetFiles> load_arc_dataset_files(const std::string& data_dir) {
  const std::string ids_path = (fs::path(data_dir) / "identifiers.json").string();
  const std::string tests_path = (fs::path(data_dir) / "test_puzzles.json").string();
  const bool has_ids = fs::exists(ids_path), has_tests = fs::exists(tests_path);
  // Sudoku and maze folders have identifiers.json (["<blank>"]) but no test puzzles.
  if (!has_tests) return std::nullopt;
  if (!has_ids)
    throw mlh::DataError("ARC dataset '" + data_dir + "' has test_puzzles.json but no identifiers.json");
  ArcDatasetFiles f;
  f.identifiers = read_identifiers(ids_path);
  f.test_puzzles = arc::read_json_file(tests_path);
  if (!f.test_puzzles.is_object())
    throw mlh::DataError("'" + tests_path + "': expected an object of tasks");
  f.test_puzzles_path = tests_path;
  return f;
}

json arc_metrics(const arc::ArcScore& s) {
  json m = json::object();
  for (const auto& [k, v] : s.pass_at) m["pass@" + std::to_string(k)] = v;
  return m;
}

std::string arc_line(const arc::ArcScore& s) {
  std::string line = "ARC";
  for (const auto& [k, v] : s.pass_at)
    if (k <= 2) line += " pass@" + std::to_string(k) + " " + mlh::fixed(100 * v, 2) + "%";
  line += " over " + std::to_string(s.tasks) + " tasks (" + std::to_string(s.test_inputs) + " test inputs";
  if (s.inputs_without_predictions > 0) line += ", " + std::to_string(s.inputs_without_predictions) + " without predictions";
  return line + ")";
}

void write_submission(const std::string& path, const arc::ArcScore& s) {
  // As Python's json.dump writes it, so that the file reads like the reference's.
  const std::string text = python_json_dumps(s.submission);
  write_text_file(path, text);
}

}  // namespace trm
