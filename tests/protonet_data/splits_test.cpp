// The split lists (data.splits): the shipped standard splits are the reference's files byte
// for byte and disjoint; Omniglot and miniImageNet select their classes through them (shipped,
// a folder, the dataset's own files, trainval); bad lists and names are errors naming the
// list; and the overlap check's class identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "data/splits.hpp"
#include "fixtures.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

using namespace protonet;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string builtin(const std::string& file) {
  for (const BuiltinSplit& s : builtin_split_table())
    if (file == s.file) return s.text;
  ADD_FAILURE() << "no built-in split " << file;
  return "";
}

std::vector<std::string> lines(const std::string& text, bool skip_header = false) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  if (skip_header && !out.empty()) out.erase(out.begin());
  return out;
}

// "<Alphabet>/<character>" of each "<Alphabet>/<character>/rotDDD" line.
std::set<std::string> characters(const std::string& file) {
  std::set<std::string> out;
  for (const std::string& l : lines(builtin(file))) out.insert(l.substr(0, l.rfind('/')));
  return out;
}

DatasetSpec spec(const std::string& format, const std::string& root, const std::string& split,
                 const std::string& splits) {
  DatasetSpec s;
  s.height = s.width = 28;
  s.channels = 1;
  s.format = format;
  s.root = root;
  s.split = split;
  s.splits = splits;
  return s;
}

void character(const fs::path& root, const std::string& key, int seed) {
  pdt::write_png(root / key / "00.png", 28, 28, 1, pdt::pattern_image(seed, 28, 28, 1));
}

}  // namespace

TEST(BuiltinSplits, AreTheShippedFilesByteForByte) {
  size_t n = 0;
  for (const BuiltinSplit& s : builtin_split_table()) {
    EXPECT_EQ(std::string(s.text), read(fs::path(PROTONET_SPLITS_DIR) / s.file)) << s.file;
    ++n;
  }
  EXPECT_EQ(n, 7u) << "vinyals train/val/test/trainval, ravi train/val/test";
}

TEST(BuiltinSplits, VinyalsIsTheReferenceSplit) {
  // Vinyals et al.: 1200 characters for training (1028 train + 172 val), 423 for testing,
  // each in four rotations; no character in two splits; trainval is train and val.
  EXPECT_EQ(lines(builtin("vinyals/train.txt")).size(), 4112u);
  EXPECT_EQ(lines(builtin("vinyals/val.txt")).size(), 688u);
  EXPECT_EQ(lines(builtin("vinyals/test.txt")).size(), 1692u);
  EXPECT_EQ(lines(builtin("vinyals/trainval.txt")).size(), 4800u);
  const auto train = characters("vinyals/train.txt"), val = characters("vinyals/val.txt"),
             test = characters("vinyals/test.txt"), trainval = characters("vinyals/trainval.txt");
  EXPECT_EQ(train.size(), 1028u);
  EXPECT_EQ(val.size(), 172u);
  EXPECT_EQ(test.size(), 423u);
  std::set<std::string> both(train);
  both.insert(val.begin(), val.end());
  EXPECT_EQ(both, trainval);
  for (const std::string& c : test) EXPECT_EQ(trainval.count(c), 0u) << c;
  for (const std::string& c : val) EXPECT_EQ(train.count(c), 0u) << c;
}

TEST(BuiltinSplits, RaviIsTheReferenceSplit) {
  // Ravi and Larochelle: 64 / 16 / 20 classes of 600 images, disjoint.
  std::map<std::string, std::map<std::string, int>> per_split;
  for (const char* split : {"train", "val", "test"}) {
    const std::string text = builtin(std::string("ravi/") + split + ".csv");
    ASSERT_EQ(text.rfind("filename,label\n", 0), 0u) << split;
    for (const std::string& l : lines(text, true)) per_split[split][l.substr(l.find(',') + 1)]++;
  }
  EXPECT_EQ(per_split["train"].size(), 64u);
  EXPECT_EQ(per_split["val"].size(), 16u);
  EXPECT_EQ(per_split["test"].size(), 20u);
  std::set<std::string> seen;
  for (auto& [split, classes] : per_split)
    for (auto& [label, count] : classes) {
      EXPECT_EQ(count, 600) << split << " " << label;
      EXPECT_TRUE(seen.insert(label).second) << label << " is in two splits";
    }
}

TEST(Splits, OmniglotTakesTheShippedVinyalsLists) {
  // Every character of the Vinyals split (one image each), under the official archives' two
  // folders: each split lists its own classes in the file's order; trainval is train + val.
  TempDir d;
  std::set<std::string> all;
  for (const char* f : {"vinyals/trainval.txt", "vinyals/test.txt"})
    for (const std::string& c : characters(f)) all.insert(c);
  ASSERT_EQ(all.size(), 1623u);
  int seed = 0;
  for (const std::string& c : all) {
    character(d / (seed % 2 ? "images_background" : "images_evaluation"), c, seed);
    ++seed;
  }

  for (const char* split : {"train", "val", "test", "trainval"}) {
    const std::vector<std::string> names = dataset_class_names(spec("omniglot", d.path(), split, "vinyals"));
    EXPECT_EQ(names, lines(builtin(std::string("vinyals/") + split + ".txt"))) << split;
  }
  // Decoded: one image per class, rotated as its class says.
  DatasetSpec s = spec("omniglot", d.path(), "val", "vinyals");
  const ImageSet set = load_dataset(s);
  EXPECT_EQ(set.size(), 688u);
  EXPECT_EQ(set.class_names.size(), 688u);
}

TEST(Splits, AFolderOfListsAndTrainvalFromTrainAndVal) {
  TempDir d;
  for (const char* c : {"Greek/character01", "Greek/character02", "Latin/character01", "Latin/character02"})
    character(d / "images", c, 1);
  pdt::write_text(d / "lists/train.txt", "Greek/character01\nGreek/character02/rot090\n");
  pdt::write_text(d / "lists/val.txt", "# validation\nLatin/character01/rot000\n");
  pdt::write_text(d / "lists/test.txt", "Latin/character02/rot000\n");
  const std::string root = (d / "images").string(), lists = (d / "lists").string();
  EXPECT_EQ(dataset_class_names(spec("omniglot", root, "train", lists)),
            (std::vector<std::string>{"Greek/character01/rot000", "Greek/character02/rot090"}));
  // No trainval.txt: train's list, then val's.
  EXPECT_EQ(dataset_class_names(spec("omniglot", root, "trainval", lists)),
            (std::vector<std::string>{"Greek/character01/rot000", "Greek/character02/rot090", "Latin/character01/rot000"}));
  pdt::write_text(d / "lists/trainval.txt", "Latin/character02\n");
  EXPECT_EQ(dataset_class_names(spec("omniglot", root, "trainval", lists)),
            (std::vector<std::string>{"Latin/character02/rot000"}));
  // The dataset's own <root>/splits/ stays the default.
  pdt::write_text(d / "images/splits/test.txt", "Greek/character02\n");
  EXPECT_EQ(dataset_class_names(spec("omniglot", root, "test", "")), (std::vector<std::string>{"Greek/character02/rot000"}));
}

TEST(Splits, MiniImageNetTakesTheShippedRaviLists) {
  // The test split's 12,000 images (empty files: listing classes reads no pixels).
  TempDir d;
  const std::string text = builtin("ravi/test.csv");
  std::vector<std::string> labels;
  fs::create_directories(d / "images");
  for (const std::string& l : lines(text, true)) {
    std::ofstream(d / "images" / l.substr(0, l.find(','))).flush();
    const std::string label = l.substr(l.find(',') + 1);
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
  }
  EXPECT_EQ(dataset_class_names(spec("miniimagenet", d.path(), "test", "ravi")), labels);
  // An image the list names but the folder lacks: the error names the shipped list and the line.
  fs::remove(d / "images" / lines(text, true)[5].substr(0, lines(text, true)[5].find(',')));
  EXPECT_DATA_ERROR(dataset_class_names(spec("miniimagenet", d.path(), "test", "ravi")), "built-in ravi/test.csv",
                    "line 7", "does not exist");
}

TEST(Splits, BadNamesAndListsAreErrorsNamingThem) {
  TempDir d;
  character(d.path(), "Greek/character01", 1);
  const std::string root = d.path();
  // A shipped split of the other dataset, and a name that is neither shipped nor a folder.
  EXPECT_DATA_ERROR(dataset_class_names(spec("omniglot", root, "train", "ravi")), "data.splits 'ravi'", "miniimagenet",
                    "'vinyals'");
  EXPECT_DATA_ERROR(dataset_class_names(spec("omniglot", root, "train", "vinyal")), "data.splits 'vinyal'",
                    "neither a shipped split");
  // A folder without the split's list.
  pdt::write_text(d / "lists/train.txt", "Greek/character01\n");
  EXPECT_DATA_ERROR(dataset_class_names(spec("omniglot", root, "test", (d / "lists").string())),
                    (d / "lists/test.txt").string());
  // A split naming a class that does not exist: the file, the line and the class.
  pdt::write_text(d / "lists/val.txt", "Greek/character01\nGreek/character07/rot090\n");
  EXPECT_DATA_ERROR(dataset_class_names(spec("omniglot", root, "val", (d / "lists").string())),
                    (d / "lists/val.txt").string(), "line 2", "Greek/character07");
  // An empty split.
  pdt::write_text(d / "lists/val.txt", "# nothing yet\n\n");
  EXPECT_DATA_ERROR(dataset_class_names(spec("omniglot", root, "val", (d / "lists").string())),
                    (d / "lists/val.txt").string(), "lists no classes");
  // miniImageNet without its CSV points at the shipped split.
  fs::create_directories(d / "mini/images");
  EXPECT_DATA_ERROR(dataset_class_names(spec("miniimagenet", (d / "mini").string(), "val", "")),
                    (d / "mini/val.csv").string(), "data.splits=ravi");
  pdt::write_text(d / "mini/val.csv", "filename,label\n");
  EXPECT_DATA_ERROR(dataset_class_names(spec("miniimagenet", (d / "mini").string(), "val", "")),
                    (d / "mini/val.csv").string(), "lists no images");
}

TEST(Splits, ClassIdentityIsTheCharacterForOmniglot) {
  EXPECT_EQ(class_identity("omniglot", "Greek/character01/rot090"), "Greek/character01");
  EXPECT_EQ(class_identity("folder", "cats/rot090"), "cats/rot090");
  EXPECT_EQ(shared_classes("omniglot", {"A/c1/rot000", "A/c1/rot090", "A/c2/rot000", "B/c1/rot180"},
                           {"A/c1/rot270", "B/c1/rot000"}),
            (std::vector<std::string>{"A/c1", "B/c1"}));
  EXPECT_TRUE(shared_classes("idx", {"5", "6"}, {"0", "1"}).empty());
  EXPECT_EQ(shared_classes("idx", {"5", "6"}, {"6"}), (std::vector<std::string>{"6"}));
}
