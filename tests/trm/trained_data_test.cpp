// model.json's data paths: written absolute with the config's value beside them; an older
// model.json (relative path, no config value, no token names) still loads; and a command on
// a trained run finds its data from any directory, or says everything it tried.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "model_record.hpp"
#include "temp_dir.hpp"
#include "trained_data.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Runs the test body in another working directory, and goes back after.
class InDirectory {
 public:
  explicit InDirectory(const fs::path& dir) : before_(fs::current_path()) { fs::current_path(dir); }
  ~InDirectory() { fs::current_path(before_); }

 private:
  fs::path before_;
};

// What holds_dataset looks for.
void make_dataset_folder(const fs::path& dir) {
  for (const char* split : {"train", "test"}) {
    fs::create_directories(dir / split);
    std::ofstream(dir / split / "dataset.json") << "{}";
  }
}

// A puzzle run's record: the default config's model on a 16-cell, 6-token dataset.
trm::ModelRecord puzzle_record() {
  trm::DatasetMetadata data;
  data.seq_len = 16;
  data.vocab_size = 6;
  data.num_puzzle_identifiers = 1;
  trm::ModelRecord r;
  r.model = trm::puzzle_model_config(trm::parse_config(json::object()), data);
  r.token_names = {"_", ".", "R", "G", "B", "Y"};
  r.blank_identifier_id = 0;
  return r;
}

trm::Config config_with_data_dir(const std::string& dir) {
  trm::Config c = trm::parse_config(json::object());
  c.data.dir = dir;
  return c;
}

std::string data_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mlh::DataError& e) {
    return e.what();
  } catch (const mlh::Error& e) {
    return std::string("not a DataError: ") + e.what();
  }
  return "(no error)";
}

TEST(TrmModelJson, WrittenAbsoluteWithTheConfigValueAndTokenNames) {
  TempDir tmp;
  InDirectory in(tmp.path());
  trm::ModelRecord r = puzzle_record();
  r.data_dir = "data/own/";
  r.data_dir_config = "data/own/";
  r.blank_identifier_id = 2;
  trm::write_model_record("run", r);
  const json j = json::parse(std::ifstream(tmp / "run/model.json"));
  EXPECT_EQ(j["data_dir"], (tmp / "data/own").string()) << "absolute, as seen from where training ran";
  EXPECT_EQ(j["data_dir_config"], "data/own/") << "the config's value, as given";
  EXPECT_TRUE(j["text_file_config"].is_null());
  const trm::ModelRecord back = trm::read_model_record("run");
  EXPECT_EQ(back.data_dir, (tmp / "data/own").string());
  EXPECT_EQ(back.data_dir_config, std::optional<std::string>("data/own/"));
  EXPECT_EQ(back.token_names, r.token_names);
  EXPECT_EQ(back.blank_identifier_id, 2);
}

// model.json as runs wrote it before it recorded absolute paths: no config value, no names.
TEST(TrmModelJson, AnOlderRecordWithARelativePathLoads) {
  TempDir tmp;
  trm::ModelRecord r = puzzle_record();
  trm::write_model_record(tmp.str(), r);
  json j = json::parse(std::ifstream(tmp / "model.json"));
  for (const char* newer : {"data_dir_config", "text_file_config", "token_names", "blank_identifier_id"}) j.erase(newer);
  j["data_dir"] = "data/own";
  std::ofstream(tmp / "model.json") << j.dump(2);
  const trm::ModelRecord old = trm::read_model_record(tmp.str());
  EXPECT_EQ(old.data_dir, "data/own");
  EXPECT_FALSE(old.data_dir_config.has_value());
  EXPECT_TRUE(old.token_names.empty());
  EXPECT_EQ(old.blank_identifier_id, 0);
  EXPECT_EQ(old.model.seq_len, 16);

  // Token names that do not fit the model are refused naming the file.
  j["token_names"] = {"_", "."};
  std::ofstream(tmp / "model.json") << j.dump(2);
  std::string e = "(no error)";
  try {
    trm::read_model_record(tmp.str());
  } catch (const mlh::Error& error) {
    e = error.what();
  }
  EXPECT_NE(e.find("model.json"), std::string::npos) << e;
  EXPECT_NE(e.find("has 2 names, vocab_size is 6"), std::string::npos) << e;
}

// Trained in <tmp>/lab as `--run-dir runs/r1 --set data.dir=data/own`, evaluated from <tmp>/elsewhere.
class TrmTrainedData : public ::testing::Test {
 protected:
  void SetUp() override {
    lab_ = tmp_.path() / "lab";
    run_ = lab_ / "runs/r1";
    fs::create_directories(run_);
    fs::create_directories(tmp_.path() / "elsewhere");
    make_dataset_folder(lab_ / "data/own");
  }
  TempDir tmp_;
  fs::path lab_, run_;
};

TEST_F(TrmTrainedData, AnOlderRunsRelativePathIsFoundFromTheRunFolder) {
  trm::ModelRecord old = puzzle_record();
  old.data_dir = "data/own";  // as the older model.json has it: relative to lab/
  InDirectory in(tmp_.path() / "elsewhere");
  // The reloaded config still says data/own: the run's own data, found above the run folder.
  EXPECT_EQ(trm::trained_dataset_dir(config_with_data_dir("data/own"), old, run_.string()), (lab_ / "data/own").string());
  EXPECT_EQ(trm::trained_dataset_dir(config_with_data_dir(""), old, run_.string()), (lab_ / "data/own").string());
  // Data generated into the run folder (data.dir was empty): <run>/data as the run was named.
  make_dataset_folder(run_ / "data");
  old.data_dir = "runs/r1/data";
  EXPECT_EQ(trm::trained_dataset_dir(config_with_data_dir(""), old, run_.string()), (run_ / "data").string());
}

TEST_F(TrmTrainedData, TheCurrentDirectoryIsTriedFirst) {
  trm::ModelRecord old = puzzle_record();
  old.data_dir = "data/own";
  make_dataset_folder(tmp_.path() / "elsewhere/data/own");
  InDirectory in(tmp_.path() / "elsewhere");
  EXPECT_EQ(trm::trained_dataset_dir(config_with_data_dir(""), old, run_.string()),
            (tmp_.path() / "elsewhere/data/own").string());
}

TEST_F(TrmTrainedData, NotFoundSaysWhatWasTried) {
  trm::ModelRecord old = puzzle_record();
  old.data_dir = "data/gone";
  InDirectory in(tmp_.path() / "elsewhere");
  const std::string e =
      data_error_of([&] { trm::trained_dataset_dir(config_with_data_dir("data/gone"), old, run_.string()); });
  EXPECT_NE(e.find("records 'data/gone' (relative to the directory training ran in)"), std::string::npos) << e;
  for (const fs::path& tried : {tmp_.path() / "elsewhere/data/gone", lab_ / "runs/data/gone", lab_ / "data/gone"})
    EXPECT_NE(e.find("'" + tried.string() + "'"), std::string::npos) << tried << "\n" << e;
  EXPECT_NE(e.find("--set data.dir=PATH"), std::string::npos) << e;

  // A new record's absolute path that is gone: named, and the field that names another.
  trm::ModelRecord now = puzzle_record();
  now.data_dir = (lab_ / "data/moved").string();
  now.data_dir_config = "data/moved";
  const std::string g = data_error_of([&] { trm::trained_dataset_dir(config_with_data_dir("data/moved"), now, run_.string()); });
  EXPECT_NE(g.find("records '" + (lab_ / "data/moved").string() + "'; tried"), std::string::npos) << g;
}

TEST_F(TrmTrainedData, ANewRecordIsFoundFromAnywhere) {
  trm::ModelRecord r = puzzle_record();
  {
    InDirectory in(lab_);
    r.data_dir = "data/own";
    r.data_dir_config = "data/own";
    trm::write_model_record(run_.string(), r);
  }
  InDirectory in(tmp_.path() / "elsewhere");
  const trm::ModelRecord back = trm::read_model_record(run_.string());
  // The reloaded config's relative data.dir means nothing here: model.json's absolute path does.
  make_dataset_folder(tmp_.path() / "elsewhere/data/own");  // a decoy of the same name
  EXPECT_EQ(trm::trained_dataset_dir(config_with_data_dir("data/own"), back, run_.string()), (lab_ / "data/own").string());
  // data.dir set to something else names other data, read as given.
  EXPECT_EQ(trm::trained_dataset_dir(config_with_data_dir("data/other"), back, run_.string()), "data/other");
}

TEST_F(TrmTrainedData, TextFilesTheSameWay) {
  std::ofstream(lab_ / "corpus.txt") << "text";
  trm::ModelRecord old;
  old.mode = "text";
  old.text_file = "corpus.txt";
  trm::Config cfg = trm::parse_config(json::object());
  cfg.data.text_file = "corpus.txt";
  InDirectory in(tmp_.path() / "elsewhere");
  EXPECT_EQ(trm::trained_text_file(cfg, old, run_.string()), (lab_ / "corpus.txt").string());
  cfg.data.text_file = "mine.txt";
  EXPECT_EQ(trm::trained_text_file(cfg, old, run_.string()), "mine.txt");
}

}  // namespace
