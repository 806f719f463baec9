#include "trained_data.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <vector>

#include <mlh/plugin.hpp>

namespace trm {
namespace fs = std::filesystem;
namespace {

struct Wanted {
  const char* field;  // the config field that names other data
  const char* what;   // in errors: "dataset folder", "text file"
  std::function<bool(const std::string&)> found;
};

std::string normal(const fs::path& p) { return p.lexically_normal().string(); }

std::string trained_path(const std::string& now, const std::string& recorded, const std::optional<std::string>& config,
                         const std::string& trained_run_dir, const Wanted& wanted) {
  // An older model.json has no config value: there training's data.dir was recorded as given
  // (or as <run>/data), so the recorded path is what an unchanged config still says.
  const std::string trained_with = config ? *config : recorded;
  if (!now.empty() && now != trained_with) return now;  // other data, named by this command
  if (recorded.empty())
    throw mlh::DataError(std::string("model.json in '") + trained_run_dir + "' records no " + wanted.what +
                         "; name one with --set " + wanted.field + "=PATH");
  std::vector<std::string> tried;
  auto try_path = [&](const fs::path& p) {
    const std::string s = normal(p);
    if (std::find(tried.begin(), tried.end(), s) == tried.end()) tried.push_back(s);
  };
  const fs::path r(recorded);
  if (r.is_absolute()) {
    try_path(r);
    if (!trained_with.empty() && fs::path(trained_with).is_relative()) try_path(fs::current_path() / trained_with);
  } else {
    // Relative to the directory training ran in, which model.json does not say: the current
    // directory, then the run folder's parent and each folder above it (a run made as
    // `--run-dir runs/x` beside `data.dir=data/y` has the data two levels up).
    try_path(fs::current_path() / r);
    const fs::path run = fs::absolute(trained_run_dir).lexically_normal();
    for (fs::path up = run.parent_path(); !up.empty(); up = up.parent_path()) {
      try_path(up / r);
      if (up == up.root_path()) break;
    }
  }
  for (const std::string& p : tried)
    if (wanted.found(p)) return p;
  std::string list;
  for (const std::string& p : tried) list += (list.empty() ? "'" : ", '") + p + "'";
  throw mlh::DataError(std::string("the ") + wanted.what + " this run trained on is not found: model.json in '" +
                       trained_run_dir + "' records '" + recorded + "'" +
                       (r.is_absolute() ? std::string() : " (relative to the directory training ran in)") + "; tried " +
                       list + "; name it with --set " + wanted.field + "=PATH");
}

}  // namespace

std::string trained_dataset_dir(const Config& cfg, const ModelRecord& record, const std::string& trained_run_dir) {
  return trained_path(cfg.data.dir, record.data_dir, record.data_dir_config, trained_run_dir,
                      {"data.dir", "dataset folder", [](const std::string& p) { return holds_dataset(p); }});
}

std::string trained_text_file(const Config& cfg, const ModelRecord& record, const std::string& trained_run_dir) {
  return trained_path(cfg.data.text_file, record.text_file, record.text_file_config, trained_run_dir,
                      {"data.text_file", "text file", [](const std::string& p) { return fs::is_regular_file(p); }});
}

DatasetSplit open_test_split_for(const std::string& dir, const ModelConfig& model) {
  DatasetSplit test = DatasetSplit::open(dir + "/test");
  const DatasetMetadata& m = test.metadata();
  const bool identifiers_fit = model.puzzle_emb_ndim == 0 || m.num_puzzle_identifiers <= model.num_puzzle_identifiers;
  if (m.seq_len != model.seq_len || m.vocab_size != model.vocab_size || !identifiers_fit)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "config field 'data.dir': the dataset '" + dir + "' does not fit this run's model: seq_len " +
                         std::to_string(m.seq_len) + ", vocab_size " + std::to_string(m.vocab_size) +
                         ", num_puzzle_identifiers " + std::to_string(m.num_puzzle_identifiers) +
                         "; the model takes seq_len " + std::to_string(model.seq_len) + ", vocab_size " +
                         std::to_string(model.vocab_size) + ", num_puzzle_identifiers " +
                         std::to_string(model.num_puzzle_identifiers));
  return test;
}

}  // namespace trm
