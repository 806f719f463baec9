// dataset.json parsing and DatasetSplit validation: a valid split opens; each inconsistency
// is an error naming the file and the problem.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/dataset.hpp"
#include "fixtures.hpp"

namespace {

using namespace trm;

const char* kValid = R"({"pad_id": 0, "ignore_label_id": 0, "blank_identifier_id": 0, "vocab_size": 11,
  "seq_len": 81, "num_puzzle_identifiers": 1, "total_groups": 1000, "mean_puzzle_examples": 1.0,
  "total_puzzles": 1000, "sets": ["all"]})";

nlohmann::json valid() { return nlohmann::json::parse(kValid); }

TEST(DatasetJson, ValidFileParsesEveryField) {
  const DatasetMetadata m = parse_dataset_json(kValid, "d/dataset.json");
  EXPECT_EQ(m.pad_id, 0);
  ASSERT_TRUE(m.ignore_label_id.has_value());
  EXPECT_EQ(*m.ignore_label_id, 0);
  EXPECT_EQ(m.blank_identifier_id, 0);
  EXPECT_EQ(m.vocab_size, 11);
  EXPECT_EQ(m.seq_len, 81);
  EXPECT_EQ(m.num_puzzle_identifiers, 1);
  EXPECT_EQ(m.total_groups, 1000);
  EXPECT_EQ(m.mean_puzzle_examples, 1.0);
  EXPECT_EQ(m.total_puzzles, 1000);
  EXPECT_TRUE(m.has_total_puzzles);
  EXPECT_EQ(m.sets, std::vector<std::string>{"all"});
  // to_json gives back an equal document.
  EXPECT_EQ(to_json(m), valid());
}

TEST(DatasetJson, NullIgnoreLabelAndHrmFileWithoutTotalPuzzles) {
  auto j = valid();
  j["ignore_label_id"] = nullptr;
  j.erase("total_puzzles");
  j["mean_puzzle_examples"] = 3;  // an integer is a number too
  const DatasetMetadata m = parse_dataset_json(j.dump(), "hrm.json");
  EXPECT_FALSE(m.ignore_label_id.has_value());
  EXPECT_FALSE(m.has_total_puzzles);
  EXPECT_EQ(m.total_puzzles, m.total_groups);
  EXPECT_EQ(m.mean_puzzle_examples, 3.0);
  EXPECT_TRUE(to_json(m)["ignore_label_id"].is_null());
}

// mlhost's token_names: optional (the reference's files have none), kept when given, and
// written back only when there.
TEST(DatasetJson, OptionalTokenNames) {
  EXPECT_TRUE(parse_dataset_json(kValid, "d/dataset.json").token_names.empty());
  EXPECT_FALSE(to_json(parse_dataset_json(kValid, "d/dataset.json")).contains("token_names"));
  auto j = valid();
  j["token_names"] = {"_", ".", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  const DatasetMetadata m = parse_dataset_json(j.dump(), "d/dataset.json");
  ASSERT_EQ(m.token_names.size(), 11u);
  EXPECT_EQ(m.token_names[1], ".");
  EXPECT_EQ(to_json(m), j);
  j["token_names"][3] = ".";
  EXPECT_DATA_ERROR(parse_dataset_json(j.dump(), "d/dataset.json"),
                    "d/dataset.json': field 'token_names' the name of token 3, \".\", names another token too");
}

TEST(DatasetJson, EachBadFieldIsNamed) {
  EXPECT_DATA_ERROR(parse_dataset_json("{not json", "p/dataset.json"), "p/dataset.json': not valid JSON");
  EXPECT_DATA_ERROR(parse_dataset_json("[1]", "p/dataset.json"), "expected a JSON object");
  for (const char* field : {"pad_id", "ignore_label_id", "blank_identifier_id", "vocab_size", "seq_len",
                            "num_puzzle_identifiers", "total_groups", "mean_puzzle_examples", "sets"}) {
    auto j = valid();
    j.erase(field);
    EXPECT_DATA_ERROR(parse_dataset_json(j.dump(), "p/dataset.json"), "field '" + std::string(field) + "' is missing");
    j = valid();
    j[field] = "7";
    EXPECT_DATA_ERROR(parse_dataset_json(j.dump(), "p/dataset.json"), "p/dataset.json': field '" + std::string(field) + "'");
  }
  struct Case {
    const char* field;
    nlohmann::json value;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"vocab_size", 0, "out of range"},
      {"vocab_size", 2.5, "must be an integer"},
      {"seq_len", -1, "out of range"},
      {"seq_len", 1ull << 40, "out of range"},
      {"pad_id", 11, "out of range"},  // not below vocab_size
      {"num_puzzle_identifiers", 0, "out of range"},
      {"blank_identifier_id", 1, "out of range"},
      {"total_groups", -3, "out of range"},
      {"total_puzzles", -1, "out of range"},
      {"total_puzzles", true, "must be an integer"},
      {"mean_puzzle_examples", -0.5, "must be finite and >= 0"},
      {"sets", nlohmann::json::array(), "non-empty list"},
      {"sets", nlohmann::json::array({1}), "non-string"},
      {"sets", nlohmann::json::array({"../x"}), "invalid set name"},
      {"sets", nlohmann::json::array({""}), "invalid set name"},
      {"sets", nlohmann::json::array({"a", "a"}), "twice"},
      {"ignore_label_id", 1ull << 40, "out of range"},
      {"token_names", "RGB", "must be a list of strings"},
      {"token_names", nlohmann::json::array({"_", 1}), "non-string"},
      {"token_names", nlohmann::json::array({"_", "."}), "has 2 names, vocab_size is 11"},
  };
  for (const auto& c : cases) {
    auto j = valid();
    j[c.field] = c.value;
    SCOPED_TRACE(std::string(c.field) + " = " + c.value.dump());
    EXPECT_DATA_ERROR(parse_dataset_json(j.dump(), "p/dataset.json"), "field '" + std::string(c.field) + "'");
    EXPECT_DATA_ERROR(parse_dataset_json(j.dump(), "p/dataset.json"), c.message);
  }
}

TEST(DatasetSplit, SmallWrittenSplitOpens) {
  TempDir dir;
  auto s = trm_test::small_split(4, 2);
  write_dataset_split(dir / "train", s.meta, {s.set});
  const DatasetSplit d = DatasetSplit::open(dir / "train");
  EXPECT_EQ(d.dir(), dir / "train");
  ASSERT_EQ(d.sets().size(), 1u);
  const DatasetSet& set = d.sets()[0];
  EXPECT_EQ(set.name, "all");
  EXPECT_EQ(set.inputs.dtype(), DType::kUInt8);  // vocab 50 <= 256: stored as the reference does
  EXPECT_EQ(set.puzzle_indices.dtype(), DType::kInt32);
  EXPECT_EQ(d.num_puzzles(), 8);
  EXPECT_EQ(d.num_groups(), 4);
  EXPECT_EQ(d.num_examples(), static_cast<int64_t>(s.set.inputs.size()) / 4);
  EXPECT_EQ(set.inputs.as_int64(5), s.set.inputs[5]);
  EXPECT_TRUE(d.warnings().empty());
  EXPECT_EQ(d.metadata().sets, std::vector<std::string>{"all"});

  // A large vocabulary is stored as int32.
  auto w = trm_test::small_split(2, 1, 3, 1000);
  write_dataset_split(dir / "wide", w.meta, {w.set});
  EXPECT_EQ(DatasetSplit::open(dir / "wide").sets()[0].labels.dtype(), DType::kInt32);

  // total_groups disagreeing with the arrays is only a warning.
  s.meta.total_groups = 99;
  write_dataset_split(dir / "warn", s.meta, {s.set});
  const DatasetSplit warn = DatasetSplit::open(dir / "warn");
  ASSERT_EQ(warn.warnings().size(), 1u);
  EXPECT_NE(warn.warnings()[0].find("total_groups"), std::string::npos);
}

TEST(DatasetSplit, IgnoreLabelsOutsideTheVocabulary) {
  TempDir dir;
  auto s = trm_test::small_split(2, 1, 4, 300);  // int32 storage, so -100 fits
  s.set.labels[1] = -100;
  s.set.labels[2] = 299;
  write_dataset_split(dir / "a", s.meta, {s.set});  // -100 is always an ignore label
  s.meta.ignore_label_id = 777;
  s.set.labels[3] = 777;
  write_dataset_split(dir / "b", s.meta, {s.set});
  s.set.labels[3] = 778;
  EXPECT_DATA_ERROR(write_dataset_split(dir / "c", s.meta, {s.set}), "holds label 778 at element 3");
}

// Writes a valid split, then replaces one of its files by `broken` and expects the error.
void expect_broken(const std::string& file, DType t, const std::vector<int64_t>& shape, const std::vector<int32_t>& values,
                   const std::string& message) {
  TempDir dir;
  auto s = trm_test::small_split(3, 2);
  write_dataset_split(dir / "t", s.meta, {s.set});
  const std::string path = dir / ("t/all__" + file + ".npy");
  if (t == DType::kInt32) {
    write_npy(path, t, shape, values.data());
  } else {
    std::vector<uint8_t> b(values.begin(), values.end());
    write_npy(path, t, shape, b.data());
  }
  SCOPED_TRACE(file + ": " + message);
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), path);
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), message);
}

TEST(DatasetSplit, EachInconsistencyNamesTheFile) {
  auto s = trm_test::small_split(3, 2);  // puzzles of 1,2,3,1,2,3 examples: N = 12
  const int64_t n = 12;
  ASSERT_EQ(static_cast<int64_t>(s.set.inputs.size()), n * 4);
  std::vector<int32_t> tokens(static_cast<size_t>(n * 4), 1);
  expect_broken("labels", DType::kUInt8, {n, 5}, std::vector<int32_t>(static_cast<size_t>(n * 5), 1), "expected shape (N, seq_len = 4)");
  expect_broken("labels", DType::kUInt8, {n - 1, 4}, std::vector<int32_t>(static_cast<size_t>((n - 1) * 4), 1), "has 11 rows");
  expect_broken("inputs", DType::kUInt8, {n * 4}, tokens, "expected shape");
  expect_broken("inputs", DType::kUInt8, {n, 4}, [&] { auto t = tokens; t[17] = 50; return t; }(), "token 50 outside [0, vocab_size = 50)");
  expect_broken("labels", DType::kUInt8, {n, 4}, [&] { auto t = tokens; t[3] = 200; return t; }(), "holds label 200");
  expect_broken("puzzle_indices", DType::kInt32, {7}, {0, 1, 3, 6, 7, 9, 11}, "must end at the number of examples = 12");
  expect_broken("puzzle_indices", DType::kInt32, {7}, {0, 1, 3, 2, 7, 9, 12}, "decreases at position 3");
  expect_broken("puzzle_indices", DType::kInt32, {7}, {1, 1, 3, 6, 7, 9, 12}, "must start at 0");
  expect_broken("puzzle_indices", DType::kInt32, {0}, {}, "is empty");
  expect_broken("puzzle_indices", DType::kInt32, {1, 7}, {0, 1, 3, 6, 7, 9, 12}, "expected a 1-d array");
  expect_broken("puzzle_identifiers", DType::kInt32, {6}, {1, 2, 3, 4, 7, 1}, "identifier 7 outside [0, num_puzzle_identifiers = 7)");
  expect_broken("puzzle_identifiers", DType::kInt32, {6}, {1, 2, -1, 4, 5, 1}, "identifier -1");
  expect_broken("puzzle_identifiers", DType::kInt32, {5}, {1, 2, 3, 4, 5}, "describes 6 puzzles");
  expect_broken("group_indices", DType::kInt32, {4}, {0, 2, 4, 5}, "must end at the number of puzzles = 6");
  expect_broken("group_indices", DType::kInt32, {4}, {0, 4, 2, 6}, "decreases");
  {
    TempDir dir;
    write_dataset_split(dir / "t", s.meta, {s.set});
    const std::vector<float> f(static_cast<size_t>(n * 4), 1.f);
    write_npy(dir / "t/all__inputs.npy", DType::kFloat32, {n, 4}, f.data());
    EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), "not an integer type");
    std::filesystem::remove(dir / "t/all__inputs.npy");
    EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), dir / "t/all__inputs.npy' is missing");
    std::filesystem::remove(dir / "t/dataset.json");
    EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), dir / "t/dataset.json' is missing");
    EXPECT_DATA_ERROR(DatasetSplit::open(dir / "nowhere"), "is missing");
  }
}

TEST(DatasetSplit, BadMetadataFileNamesIt) {
  TempDir dir;
  auto s = trm_test::small_split(2, 1);
  write_dataset_split(dir / "t", s.meta, {s.set});
  trm_test::write_bytes(dir / "t/dataset.json", R"({"pad_id": 0})");
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), dir / "t/dataset.json");
  // A set listed in the metadata without its files.
  auto j = to_json(s.meta);
  j["sets"] = {"all", "extra"};
  trm_test::write_bytes(dir / "t/dataset.json", j.dump());
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), "extra__inputs.npy' is missing");
}

// Files that are there but cannot be used: not .npy, cut short, unreadable, a folder.
TEST(DatasetSplit, UnusableFilesAreDataErrorsNamingThem) {
  TempDir dir;
  auto s = trm_test::small_split(2, 1);
  write_dataset_split(dir / "t", s.meta, {s.set});
  const std::string labels = dir / "t/all__labels.npy";
  const std::string good = trm_test::read_bytes(labels);
  trm_test::write_bytes(labels, "not a numpy file at all");
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), labels + "': bad magic");
  trm_test::write_bytes(labels, good.substr(0, good.size() - 3));
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), labels + "': data too short");
  trm_test::write_bytes(labels, good);
  if (::geteuid() != 0) {  // root reads any file
    std::filesystem::permissions(labels, std::filesystem::perms::none);
    EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), labels + "': cannot open");
    std::filesystem::permissions(labels, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  std::filesystem::remove(labels);
  std::filesystem::create_directory(labels);
  EXPECT_DATA_ERROR(DatasetSplit::open(dir / "t"), labels + "': not a regular file");
}

TEST(DatasetSplit, WriterRejectsBadSets) {
  TempDir dir;
  auto s = trm_test::small_split(2, 1);
  s.set.labels.pop_back();
  EXPECT_MLH_ERROR(write_dataset_split(dir / "t", s.meta, {s.set}), "N * seq_len");
  s = trm_test::small_split(2, 1);
  s.set.inputs[0] = 300;  // vocab 50: stored as uint8
  EXPECT_MLH_ERROR(write_dataset_split(dir / "t", s.meta, {s.set}), "does not fit uint8");
}

}  // namespace
