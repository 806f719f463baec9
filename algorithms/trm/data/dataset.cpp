#include "dataset.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mlh/atomic_file.hpp>
#include <mlh/plugin.hpp>
#include <set>
#include <sstream>

#include "token_names.hpp"

namespace trm {
namespace fs = std::filesystem;
namespace {

// Upper bound for sizes and ids: keeps every later product and int32 conversion safe.
constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

[[noreturn]] void bad_field(const std::string& path, const std::string& field, const std::string& what) {
  throw mlh::DataError("dataset metadata '" + path + "': field '" + field + "' " + what);
}

std::string shown(const nlohmann::json& j) {
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 60) + "..." : s;
}

int64_t get_int(const nlohmann::json& j, const std::string& path, const char* field, int64_t lo, int64_t hi) {
  if (!j.contains(field)) bad_field(path, field, "is missing");
  const auto& v = j.at(field);
  if (!v.is_number_integer()) bad_field(path, field, "must be an integer, got " + shown(v));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    bad_field(path, field, "= " + shown(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi)
    bad_field(path, field, "= " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

[[noreturn]] void bad_file(const NpyArray& a, const std::string& what) {
  throw mlh::DataError("dataset file '" + a.path() + "': " + what);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

void require_integer(const NpyArray& a) {
  if (is_float(a.dtype())) bad_file(a, "dtype " + to_string(a.dtype()) + " is not an integer type");
}

void require_1d(const NpyArray& a) {
  require_integer(a);
  if (a.ndim() != 1) bad_file(a, "expected a 1-d array, got shape " + shape_str(a.shape()));
}

// An index array (puzzle_indices, group_indices): 1-d, from 0, non-decreasing, ending at
// `last`. Read into memory (it is small next to the token arrays) and returned.
std::vector<int64_t> check_index_array(const NpyArray& a, int64_t last, const char* last_what) {
  require_1d(a);
  if (a.size() < 1) bad_file(a, "is empty; it must hold at least the starting 0");
  std::vector<int64_t> v(static_cast<size_t>(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[static_cast<size_t>(i)] = a.as_int64(i);
  if (v[0] != 0) bad_file(a, "must start at 0, starts at " + std::to_string(v[0]));
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1])
      bad_file(a, "decreases at position " + std::to_string(i) + " (" + std::to_string(v[i - 1]) + " then " +
                      std::to_string(v[i]) + ")");
  if (v.back() != last)
    bad_file(a, "must end at " + std::string(last_what) + " = " + std::to_string(last) + ", ends at " + std::to_string(v.back()));
  return v;
}

NpyArray open_array(const std::string& dir, const std::string& set, const char* name) {
  const std::string path = (fs::path(dir) / (set + "__" + name + ".npy")).string();
  if (!fs::exists(path)) throw mlh::DataError("dataset file '" + path + "' is missing");
  return NpyArray::open(path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw mlh::DataError("cannot read dataset metadata '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

DatasetMetadata parse_dataset_json(const std::string& text, const std::string& path) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw mlh::DataError("dataset metadata '" + path + "': not valid JSON");
  if (!j.is_object()) throw mlh::DataError("dataset metadata '" + path + "': expected a JSON object");
  DatasetMetadata m;
  m.vocab_size = get_int(j, path, "vocab_size", 1, kMaxInt32);
  m.seq_len = get_int(j, path, "seq_len", 1, kMaxInt32);
  m.pad_id = get_int(j, path, "pad_id", 0, m.vocab_size - 1);
  if (!j.contains("ignore_label_id")) bad_field(path, "ignore_label_id", "is missing (it may be null)");
  if (!j.at("ignore_label_id").is_null())
    m.ignore_label_id = get_int(j, path, "ignore_label_id", std::numeric_limits<int32_t>::min(), kMaxInt32);
  m.num_puzzle_identifiers = get_int(j, path, "num_puzzle_identifiers", 1, kMaxInt32);
  m.blank_identifier_id = get_int(j, path, "blank_identifier_id", 0, m.num_puzzle_identifiers - 1);
  m.total_groups = get_int(j, path, "total_groups", 0, std::numeric_limits<int64_t>::max());
  if (!j.contains("mean_puzzle_examples")) bad_field(path, "mean_puzzle_examples", "is missing");
  const auto& mpe = j.at("mean_puzzle_examples");
  if (!mpe.is_number()) bad_field(path, "mean_puzzle_examples", "must be a number, got " + shown(mpe));
  m.mean_puzzle_examples = mpe.get<double>();
  if (!std::isfinite(m.mean_puzzle_examples) || m.mean_puzzle_examples < 0)
    bad_field(path, "mean_puzzle_examples", "= " + shown(mpe) + " must be finite and >= 0");
  if (j.contains("total_puzzles")) {
    m.total_puzzles = get_int(j, path, "total_puzzles", 0, std::numeric_limits<int64_t>::max());
    m.has_total_puzzles = true;
  } else {
    m.total_puzzles = m.total_groups;
  }
  if (!j.contains("sets")) bad_field(path, "sets", "is missing");
  const auto& sets = j.at("sets");
  if (!sets.is_array() || sets.empty()) bad_field(path, "sets", "must be a non-empty list of names, got " + shown(sets));
  std::set<std::string> seen;
  for (const auto& s : sets) {
    // Set names become file names (<set>__inputs.npy): no separators, nothing hidden.
    if (!s.is_string()) bad_field(path, "sets", "holds a non-string " + shown(s));
    const std::string name = s.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
        name[0] == '.' || name.find('\0') != std::string::npos)
      bad_field(path, "sets", "holds an invalid set name " + shown(s));
    if (!seen.insert(name).second) bad_field(path, "sets", "names '" + name + "' twice");
    m.sets.push_back(name);
  }
  if (j.contains("token_names")) {
    const auto& names = j.at("token_names");
    if (!names.is_array()) bad_field(path, "token_names", "must be a list of strings, got " + shown(names));
    for (const auto& n : names) {
      if (!n.is_string()) bad_field(path, "token_names", "holds a non-string " + shown(n));
      m.token_names.push_back(n.get<std::string>());
    }
    const std::string problem = token_names_problem(m.token_names, m.vocab_size);
    if (!problem.empty()) bad_field(path, "token_names", problem);
  }
  return m;
}

nlohmann::json to_json(const DatasetMetadata& m) {
  nlohmann::json j;
  j["pad_id"] = m.pad_id;
  j["ignore_label_id"] = m.ignore_label_id ? nlohmann::json(*m.ignore_label_id) : nlohmann::json(nullptr);
  j["blank_identifier_id"] = m.blank_identifier_id;
  j["vocab_size"] = m.vocab_size;
  j["seq_len"] = m.seq_len;
  j["num_puzzle_identifiers"] = m.num_puzzle_identifiers;
  j["total_groups"] = m.total_groups;
  j["mean_puzzle_examples"] = m.mean_puzzle_examples;
  j["total_puzzles"] = m.total_puzzles;
  j["sets"] = m.sets;
  if (!m.token_names.empty()) j["token_names"] = m.token_names;
  return j;
}

DatasetSplit DatasetSplit::open(const std::string& split_dir) {
  DatasetSplit d;
  d.dir_ = split_dir;
  const std::string meta_path = (fs::path(split_dir) / "dataset.json").string();
  if (!fs::exists(meta_path)) throw mlh::DataError("dataset metadata '" + meta_path + "' is missing");
  d.meta_ = parse_dataset_json(read_text(meta_path), meta_path);
  const DatasetMetadata& m = d.meta_;
  int64_t total_groups = 0, total_puzzles = 0, total_examples = 0;
  for (const auto& name : m.sets) {
    DatasetSet s;
    s.name = name;
    s.inputs = open_array(split_dir, name, "inputs");
    s.labels = open_array(split_dir, name, "labels");
    s.puzzle_identifiers = open_array(split_dir, name, "puzzle_identifiers");
    s.puzzle_indices = open_array(split_dir, name, "puzzle_indices");
    s.group_indices = open_array(split_dir, name, "group_indices");

    for (const NpyArray* a : {&s.inputs, &s.labels}) {
      require_integer(*a);
      if (a->ndim() != 2 || a->shape()[1] != m.seq_len)
        bad_file(*a, "expected shape (N, seq_len = " + std::to_string(m.seq_len) + "), got " + shape_str(a->shape()));
    }
    const int64_t n = s.inputs.shape()[0];
    if (s.labels.shape()[0] != n)
      bad_file(s.labels, "has " + std::to_string(s.labels.shape()[0]) + " rows, the inputs have " + std::to_string(n));
    const auto puzzle_idx = check_index_array(s.puzzle_indices, n, "the number of examples");
    const int64_t p = static_cast<int64_t>(puzzle_idx.size()) - 1;
    require_1d(s.puzzle_identifiers);
    if (s.puzzle_identifiers.size() != p)
      bad_file(s.puzzle_identifiers, "has " + std::to_string(s.puzzle_identifiers.size()) +
                                         " entries, puzzle_indices describes " + std::to_string(p) + " puzzles");
    if (p > 0) {
      int64_t lo, hi;
      s.puzzle_identifiers.min_max(0, p, lo, hi);
      if (lo < 0 || hi >= m.num_puzzle_identifiers)
        bad_file(s.puzzle_identifiers, "holds identifier " + std::to_string(lo < 0 ? lo : hi) +
                                           " outside [0, num_puzzle_identifiers = " + std::to_string(m.num_puzzle_identifiers) + ")");
    }
    check_index_array(s.group_indices, p, "the number of puzzles");

    const int64_t tokens = n * m.seq_len;
    if (tokens > 0) {
      int64_t lo, hi;
      s.inputs.min_max(0, tokens, lo, hi);
      if (lo < 0 || hi >= m.vocab_size)
        bad_file(s.inputs, "holds token " + std::to_string(lo < 0 ? lo : hi) + " outside [0, vocab_size = " +
                               std::to_string(m.vocab_size) + ")");
      s.labels.min_max(0, tokens, lo, hi);
      if (lo < 0 || hi >= m.vocab_size) {
        // Out-of-vocabulary labels are allowed only as the ignore label: a second, exact
        // pass (rare: the reference's builders write ignore_label_id = 0, inside the vocab).
        constexpr int64_t kChunk = 1 << 16;
        std::vector<int32_t> buf(kChunk);
        for (int64_t first = 0; first < tokens; first += kChunk) {
          const int64_t cnt = std::min(kChunk, tokens - first);
          s.labels.copy_int32(first, cnt, buf.data());
          for (int64_t k = 0; k < cnt; ++k) {
            const int64_t v = buf[static_cast<size_t>(k)];
            if ((v < 0 || v >= m.vocab_size) && v != -100 && !(m.ignore_label_id && v == *m.ignore_label_id))
              bad_file(s.labels, "holds label " + std::to_string(v) + " at element " + std::to_string(first + k) +
                                     ", outside [0, vocab_size = " + std::to_string(m.vocab_size) +
                                     ") and not the ignore label");
          }
        }
      }
    }
    total_groups += s.num_groups();
    total_puzzles += p;
    total_examples += n;
    d.sets_.push_back(std::move(s));
  }
  if (total_groups != m.total_groups)
    d.warnings_.push_back(meta_path + ": total_groups is " + std::to_string(m.total_groups) + ", the sets hold " +
                          std::to_string(total_groups));
  (void)total_puzzles;  // the reference's total_puzzles counts groups; nothing to compare reliably
  (void)total_examples;
  return d;
}

int64_t DatasetSplit::num_examples() const {
  int64_t n = 0;
  for (const auto& s : sets_) n += s.num_examples();
  return n;
}
int64_t DatasetSplit::num_puzzles() const {
  int64_t n = 0;
  for (const auto& s : sets_) n += s.num_puzzles();
  return n;
}
int64_t DatasetSplit::num_groups() const {
  int64_t n = 0;
  for (const auto& s : sets_) n += s.num_groups();
  return n;
}

void write_dataset_split(const std::string& split_dir, const DatasetMetadata& metadata,
                         const std::vector<DatasetSetData>& sets) {
  std::error_code ec;
  fs::create_directories(split_dir, ec);
  if (ec) throw mlh::Error(MLH_ERR_IO, "cannot create dataset folder '" + split_dir + "': " + ec.message());
  DatasetMetadata m = metadata;
  m.sets.clear();
  const bool narrow = m.vocab_size <= 256;
  for (const auto& s : sets) {
    m.sets.push_back(s.name);
    const auto file = [&](const char* what) { return (fs::path(split_dir) / (s.name + "__" + what + ".npy")).string(); };
    if (m.seq_len <= 0 || s.inputs.size() % static_cast<size_t>(m.seq_len) != 0 || s.labels.size() != s.inputs.size())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "write_dataset_split: set '" + s.name +
                                                     "': inputs and labels must both hold N * seq_len values");
    const int64_t n = static_cast<int64_t>(s.inputs.size()) / m.seq_len;
    for (const auto* tokens : {&s.inputs, &s.labels}) {
      const std::string path = file(tokens == &s.inputs ? "inputs" : "labels");
      if (narrow) {
        std::vector<uint8_t> b(tokens->size());
        for (size_t i = 0; i < b.size(); ++i) {
          const int32_t v = (*tokens)[i];
          if (v < 0 || v > 255)
            throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "write_dataset_split: '" + path + "': value " + std::to_string(v) +
                                                           " does not fit uint8 (vocab_size <= 256)");
          b[i] = static_cast<uint8_t>(v);
        }
        write_npy(path, DType::kUInt8, {n, m.seq_len}, b.data());
      } else {
        write_npy(path, DType::kInt32, {n, m.seq_len}, tokens->data());
      }
    }
    write_npy(file("puzzle_identifiers"), DType::kInt32, {static_cast<int64_t>(s.puzzle_identifiers.size())},
              s.puzzle_identifiers.data());
    write_npy(file("puzzle_indices"), DType::kInt32, {static_cast<int64_t>(s.puzzle_indices.size())}, s.puzzle_indices.data());
    write_npy(file("group_indices"), DType::kInt32, {static_cast<int64_t>(s.group_indices.size())}, s.group_indices.data());
  }
  const std::string meta_path = (fs::path(split_dir) / "dataset.json").string();
  const std::string text = to_json(m).dump(2) + "\n";
  mlh::AtomicFile f(meta_path);
  f.write(text.data(), text.size());
  f.commit();
  DatasetSplit::open(split_dir);  // validate what was written
}

}  // namespace trm
