// A dataset of one's own through the real host, as docs/trm.md ("Training on your own data")
// tells a user to make it: 4x4 "row fill" puzzles with named tokens. A run trained in one
// directory with relative paths evaluates and solves from another, also with an older
// model.json; solve prints the dataset's own names and takes a puzzle of its shape, refusing
// a wrong one by the field; and a missing or malformed data file exits 2 naming the file,
// leaving no run folder.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "algorithm_host_test.hpp"
#include "data/dataset.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::vector<std::string> kNames = {"_", ".", "R", "G", "B", "Y"};  // pad, blank, four colours

// `count` puzzles of 4x4: each row shows its colour in one cell, the answer fills the row with
// it. One example per puzzle, each puzzle its own group.
trm::DatasetSetData row_fill_set(int count, uint32_t seed) {
  std::mt19937 rng(seed);
  trm::DatasetSetData s;
  s.name = "all";
  s.puzzle_indices = {0};
  s.group_indices = {0};
  for (int p = 0; p < count; ++p) {
    for (int row = 0; row < 4; ++row) {
      const int32_t colour = 2 + static_cast<int32_t>(rng() % 4);
      const uint32_t shown = rng() % 4;
      for (uint32_t col = 0; col < 4; ++col) {
        s.inputs.push_back(col == shown ? colour : 1);
        s.labels.push_back(colour);
      }
    }
    s.puzzle_identifiers.push_back(0);
    s.puzzle_indices.push_back(p + 1);
    s.group_indices.push_back(p + 1);
  }
  return s;
}

void write_row_fill_dataset(const std::string& dir) {
  for (const auto& [split, count] : {std::make_pair(std::string("train"), 48), std::make_pair(std::string("test"), 6)}) {
    trm::DatasetMetadata m;
    m.pad_id = 0;
    m.ignore_label_id = 0;
    m.blank_identifier_id = 0;
    m.vocab_size = 6;
    m.seq_len = 16;
    m.num_puzzle_identifiers = 1;
    m.total_groups = count;
    m.mean_puzzle_examples = 1;
    m.total_puzzles = count;
    m.token_names = kNames;
    trm::write_dataset_split(dir + "/" + split, m, {row_fill_set(count, split == "train" ? 1 : 2)});
  }
}

class TrmOwnData : public HostTempDirTest {
 protected:
  TrmOwnData() : HostTempDirTest("trm-own-data-") {}
  void SetUp() override {
    HostTempDirTest::SetUp();
    lab_ = dir_ + "/lab";
    elsewhere_ = dir_ + "/elsewhere";
    fs::create_directories(elsewhere_);
    write_row_fill_dataset(lab_ + "/rowfill");
  }
  // The host run from `cwd`, as a user in that directory would.
  static HostResult host_in(const std::string& cwd, const std::string& args) {
    return run_host("env -C '" + cwd + "' " + std::string(TRM_HOST_BIN), TRM_PLUGIN_DIR, "--device cpu " + args);
  }
  // A few steps of a tiny model: what is checked here is where things are found, not learning.
  HostResult train_in_lab(const std::string& run, const std::string& data) {
    return host_in(lab_, "--algorithm trm --run-dir " + run + " --set data.dir=" + data +
                             " --set train_steps=4 --set batch_size=8 --set eval_every=0 --set model.hidden=32"
                             " --set model.num_heads=2 --set model.h_cycles=1 --set model.l_cycles=1"
                             " --set model.halt_max_steps=2 --set model.puzzle_emb_ndim=0 --set model.mlp_t=true");
  }
  std::string lab_, elsewhere_;
};

TEST_F(TrmOwnData, TrainedInOneDirectoryEvaluatesAndSolvesFromAnother) {
  const HostResult t = train_in_lab("runs/own", "rowfill");  // both relative to lab/
  ASSERT_EQ(t.rc, 0) << t.output;
  EXPECT_NE(t.output.find("tokens named by dataset.json's token_names"), std::string::npos) << t.output;
  const std::string run = lab_ + "/runs/own";
  const json record = read_json_file(run + "/model.json");
  EXPECT_EQ(record["data_dir"], lab_ + "/rowfill");
  // The host made the relative data.dir absolute before the plugin saw it.
  EXPECT_EQ(record["data_dir_config"], lab_ + "/rowfill");
  EXPECT_EQ(record["token_names"], json(kNames));

  // From elsewhere/, with the run named relative to it: the reloaded config's data.dir
  // ("rowfill") is not there, model.json's path is.
  const std::string resume = "--algorithm trm --run-dir ../lab/runs/own --resume ";
  const HostResult e = host_in(elsewhere_, resume + "--command eval");
  ASSERT_EQ(e.rc, 0) << e.output;
  const json eval = read_json_file(run + "/commands/eval-1/summary.json")["result"];
  EXPECT_EQ(eval["examples"], 6) << eval.dump();
  EXPECT_EQ(eval["data_dir"], lab_ + "/rowfill") << eval.dump();

  // solve prints the dataset's names: test example 0's first row, as the dataset holds it.
  const HostResult so = host_in(elsewhere_, resume + "--command solve --set solve.index=0");
  ASSERT_EQ(so.rc, 0) << so.output;
  const trm::DatasetSetData test = row_fill_set(6, 2);
  std::string first_row;
  for (int c = 0; c < 4; ++c) first_row += (c ? " " : "") + kNames[static_cast<size_t>(test.inputs[static_cast<size_t>(c)])];
  EXPECT_NE(so.output.find("  " + first_row + "\n"), std::string::npos) << first_row << "\n" << so.output;
  const json solved = read_json_file(run + "/commands/solve-1/summary.json")["result"];
  const std::string answer = solved["answer_text"].get<std::string>();
  EXPECT_EQ(std::count(answer.begin(), answer.end(), '\n'), 4) << answer;
  for (char ch : answer) EXPECT_NE(std::string("_.RGBY \n").find(ch), std::string::npos) << "'" << ch << "' in\n" << answer;
  EXPECT_TRUE(solved.contains("correct"));

  // A puzzle of the dataset's own shape, in its names.
  const HostResult given = host_in(elsewhere_, resume + "--command solve --set 'solve.puzzle=R... .G.. ..B. ...Y'");
  ASSERT_EQ(given.rc, 0) << given.output;
  // The puzzle's four rows in order, each a log line of its own.
  size_t at = 0;
  for (const char* row : {"  R . . .\n", "  . G . .\n", "  . . B .\n", "  . . . Y\n"}) {
    at = given.output.find(row, at);
    ASSERT_NE(at, std::string::npos) << row << "\n" << given.output;
  }
  EXPECT_EQ(read_json_file(run + "/commands/solve-2/summary.json")["result"]["answer"].size(), 16u);

  // The wrong size, or a token the dataset does not name: refused naming the field and value.
  const HostResult small = host_in(elsewhere_, resume + "--command solve --set solve.puzzle=RGB");
  EXPECT_EQ(small.rc, 2) << small.output;
  EXPECT_NE(small.output.find("config field 'solve.puzzle': 3 cells given, this model's puzzles have 16 (a 4x4 grid)"),
            std::string::npos)
      << small.output;
  const HostResult unknown = host_in(elsewhere_, resume + "--command solve --set solve.puzzle=RGBXRGBYRGBYRGBY");
  EXPECT_EQ(unknown.rc, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("config field 'solve.puzzle': unknown token 'X' at cell 4"), std::string::npos)
      << unknown.output;
  EXPECT_FALSE(fs::exists(run + "/commands/solve-3")) << "a refused command leaves no folder";

  // Training resumed from elsewhere finds the data, and the plan shows the model it has.
  const HostResult r = host_in(elsewhere_, "--algorithm trm --run-dir ../lab/runs/own --resume --set train_steps=6");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("sequence 16, vocabulary 6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dataset '" + lab_ + "/rowfill'"), std::string::npos) << r.output;

  // model.json as an older run wrote it: the path relative to lab/, no names. Found above the
  // run folder; tokens by the ids then.
  json old = record;
  for (const char* newer : {"data_dir_config", "text_file_config", "token_names", "blank_identifier_id"}) old.erase(newer);
  old["data_dir"] = "rowfill";
  std::ofstream(run + "/model.json") << old.dump(2);
  const HostResult oe = host_in(elsewhere_, resume + "--command eval");
  ASSERT_EQ(oe.rc, 0) << oe.output;
  EXPECT_EQ(read_json_file(run + "/commands/eval-2/summary.json")["result"]["data_dir"], lab_ + "/rowfill");
}

TEST_F(TrmOwnData, AMissingNpyExits2NamingItAndLeavesNoRunFolder) {
  fs::remove(lab_ + "/rowfill/train/all__labels.npy");
  const HostResult t = train_in_lab("runs/broken", "rowfill");
  EXPECT_EQ(t.rc, 2) << t.output;
  // data.dir was "rowfill", relative to lab/: named by the absolute path the host made of it.
  EXPECT_NE(t.output.find("dataset file '" + lab_ + "/rowfill/train/all__labels.npy' is missing"), std::string::npos)
      << t.output;
  EXPECT_FALSE(fs::exists(lab_ + "/runs/broken")) << t.output;

  // A malformed dataset.json the same way.
  write_row_fill_dataset(lab_ + "/second");
  std::ofstream(lab_ + "/second/test/dataset.json") << "{\"vocab_size\": 6, ";
  const HostResult m = train_in_lab("runs/broken", "second");
  EXPECT_EQ(m.rc, 2) << m.output;
  EXPECT_NE(m.output.find("'" + lab_ + "/second/test/dataset.json': not valid JSON"), std::string::npos) << m.output;
  EXPECT_FALSE(fs::exists(lab_ + "/runs/broken")) << m.output;
}

TEST_F(TrmOwnData, DataGoneAtEvalExits2AndLeavesNoCommandFolder) {
  ASSERT_EQ(train_in_lab("runs/own", "rowfill").rc, 0);
  fs::remove(lab_ + "/rowfill/test/all__inputs.npy");
  const HostResult e = host_in(elsewhere_, "--algorithm trm --run-dir ../lab/runs/own --resume --command eval");
  EXPECT_EQ(e.rc, 2) << e.output;
  EXPECT_NE(e.output.find(lab_ + "/rowfill/test/all__inputs.npy' is missing"), std::string::npos) << e.output;
  EXPECT_FALSE(fs::exists(lab_ + "/runs/own/commands/eval-1")) << e.output;
  EXPECT_TRUE(fs::exists(lab_ + "/runs/own/model.json")) << "the trained run is untouched";
}

}  // namespace
