// TRM's pieces that need no training: the config (defaults, presets, errors naming fields),
// the LR schedule against the reference's formula, token sampling filters, the text corpus
// (UTF-8 check, split, windows, sampler resume), the FLOPs count on a hand-computed model and
// model.json.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "config_specs.hpp"
#include "flops.hpp"
#include "model_record.hpp"
#include "sampling.hpp"
#include "temp_dir.hpp"
#include "text_data.hpp"
#include "trainer.hpp"

namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mlh::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(TrmConfig, DefaultsAreTheReferences) {
  const trm::Config c = trm::parse_config(json::object());
  EXPECT_EQ(c.model.hidden, 512);
  EXPECT_EQ(c.model.num_heads, 8);
  EXPECT_EQ(c.model.h_cycles, 3);
  EXPECT_EQ(c.model.l_cycles, 6);
  EXPECT_EQ(c.model.l_layers, 2);
  EXPECT_EQ(c.model.halt_max_steps, 16);
  EXPECT_EQ(c.batch_size, 768);
  EXPECT_DOUBLE_EQ(c.lr, 1e-4);
  EXPECT_DOUBLE_EQ(c.weight_decay, 0.1);
  EXPECT_DOUBLE_EQ(c.beta2, 0.95);
  EXPECT_DOUBLE_EQ(c.ema_rate, 0.999);
  EXPECT_EQ(c.model.loss, "stablemax");
}

// The model's own checks (validate, in model_config.cpp) accept every value at the table's
// bounds that the config's checks accept: a config that parses never fails when the model is
// built. Each bound of each model.* field is tried in puzzle mode and in text mode.
TEST(TrmConfig, TheModelAcceptsEveryBoundTheTableDeclares) {
  const json fields = json::parse(trm::config_schema_json())["properties"]["model"]["properties"];
  trm::DatasetMetadata sudoku;
  sudoku.seq_len = 81;
  sudoku.vocab_size = 11;
  sudoku.num_puzzle_identifiers = 1;
  int tried = 0;
  for (const auto& [key, field] : fields.items()) {
    std::vector<double> edges;
    if (field.contains("minimum")) edges.push_back(field["minimum"].get<double>());
    if (field.contains("maximum")) edges.push_back(field["maximum"].get<double>());
    if (field.contains("exclusiveMinimum")) edges.push_back(field["exclusiveMinimum"].get<double>() + 1e-3);
    for (const double edge : edges) {
      const json value = field["type"] == "integer" ? json(static_cast<int64_t>(edge)) : json(edge);
      for (const char* mode : {"puzzle", "text"}) {
        trm::Config cfg;
        try {
          cfg = trm::parse_config({{"mode", mode}, {"model", {{key, value}}}});
        } catch (const mlh::Error&) {
          continue;  // a rule between fields refuses it before any model is built
        }
        ++tried;
        EXPECT_NO_THROW(std::string(mode) == "text" ? trm::text_model_config(cfg) : trm::puzzle_model_config(cfg, sudoku))
            << "model." << key << " = " << value.dump() << " (" << mode << ")";
      }
    }
  }
  EXPECT_GE(tried, 12) << "fewer bounds reached the model than the table declares";
}

// The model a run builds takes every config-derived size from the config table (ModelConfig
// has no defaults of its own to fall back on): each model.* field the two share, in both modes.
TEST(TrmConfig, TheModelTakesTheTablesValues) {
  const json table_model = json::parse(trm::config_defaults_json())["model"];
  trm::DatasetMetadata sudoku;
  sudoku.seq_len = 81;
  sudoku.vocab_size = 11;
  sudoku.num_puzzle_identifiers = 3;
  const json puzzle = trm::to_json(trm::puzzle_model_config(trm::parse_config(json::object()), sudoku));
  int shared = 0;
  for (const auto& [key, value] : puzzle.items()) {
    if (!table_model.contains(key)) continue;
    ++shared;
    EXPECT_EQ(value, table_model[key]) << "model." << key;
  }
  EXPECT_GE(shared, 12);
  EXPECT_EQ(puzzle["num_puzzle_identifiers"], 3);  // the data's
  EXPECT_FALSE(puzzle["causal"].get<bool>());
  const trm::Config text_cfg =
      trm::parse_config({{"mode", "text"}, {"model", {{"halt_max_steps", 1}, {"puzzle_emb_ndim", 0}}}});
  const json text = trm::to_json(trm::text_model_config(text_cfg));
  EXPECT_EQ(text["seq_len"], table_model["text_seq_len"]);
  EXPECT_TRUE(text["causal"].get<bool>());
  EXPECT_EQ(text["hidden"], table_model["hidden"]);
}

TEST(TrmConfig, EveryPresetParses) {
  const json presets = json::parse(trm::presets_json());
  for (const auto& [name, preset] : presets.items()) {
    EXPECT_NO_THROW(trm::parse_config(preset)) << name;
  }
  EXPECT_TRUE(trm::parse_config(presets["text"]).text());
}

// full is the reference's model, as the table's defaults are: the preset changes none of them.
TEST(TrmConfig, FullPresetIsTheDefaultModel) {
  const json presets = json::parse(trm::presets_json());
  ASSERT_TRUE(presets["full"].contains("model"));
  const json full = trm::config_table().to_json(trm::parse_config(presets["full"]));
  EXPECT_EQ(full["model"], trm::config_table().to_json(trm::parse_config(json::object()))["model"]);
}

TEST(TrmConfig, ErrorsNameTheField) {
  EXPECT_NE(error_of([] { trm::parse_config({{"model", {{"num_heads", 3}}}}); }).find("model.num_heads"), std::string::npos);
  EXPECT_NE(error_of([] { trm::parse_config({{"build", {{"min_givens", 80}, {"max_givens", 70}}}}); })
                .find("build.max_givens"),
            std::string::npos);
  EXPECT_NE(error_of([] { trm::parse_config({{"mode", "text"}}); }).find("model.halt_max_steps"), std::string::npos);
  EXPECT_NE(error_of([] { trm::parse_config({{"batch_size", "many"}}); }).find("batch_size"), std::string::npos);
  EXPECT_NE(error_of([] { trm::parse_config({{"generate", {{"top_p", 0}}}}); }).find("generate.top_p"), std::string::npos);
  EXPECT_NE(error_of([] { trm::parse_config({{"model", {{"puzzle_emb_ndim", 600}, {"puzzle_emb_len", 1}}}}); })
                .find("model.puzzle_emb_len"),
            std::string::npos);
}

TEST(TrmSchedule, WarmupThenCosineAsTheReference) {
  // Warmup: linear from 0.
  EXPECT_DOUBLE_EQ(trm::scheduled_lr(0, 1.0, 10, 110, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(trm::scheduled_lr(5, 1.0, 10, 110, 0.0), 0.5);
  // Cosine: 1 at the end of warmup, 0.5 half way, min_ratio at the end.
  EXPECT_DOUBLE_EQ(trm::scheduled_lr(10, 2.0, 10, 110, 0.0), 2.0);
  EXPECT_NEAR(trm::scheduled_lr(60, 2.0, 10, 110, 0.0), 1.0, 1e-12);
  EXPECT_NEAR(trm::scheduled_lr(110, 2.0, 10, 110, 0.1), 0.2, 1e-12);
  // min_ratio 1 (the reference's default): constant after warmup.
  EXPECT_DOUBLE_EQ(trm::scheduled_lr(77, 3e-4, 10, 110, 1.0), 3e-4);
}

// Sampling options as generate makes them: the config's generate.* fields (the table's
// defaults under these).
trm::SamplingOptions sampling(const json& generate) {
  return trm::sampling_options(trm::parse_config({{"generate", generate}}));
}

TEST(TrmSampling, TemperatureZeroIsGreedy) {
  const std::vector<double> p =
      trm::sampling_distribution({0.1f, 2.0f, -1.0f, 2.0f}, sampling({{"temperature", 0.0}, {"top_p", 1.0}}));
  EXPECT_EQ(p, (std::vector<double>{0, 1, 0, 0}));
}

TEST(TrmSampling, TopKAndTopPKeepTheMostProbable) {
  // Softmax of log([0.5, 0.3, 0.15, 0.05]) at temperature 1 is those probabilities.
  const std::vector<float> logits{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  const trm::SamplingOptions top_2 = sampling({{"temperature", 1.0}, {"top_k", 2}, {"top_p", 1.0}});
  std::vector<double> p = trm::sampling_distribution(logits, top_2);
  EXPECT_NEAR(p[0], 0.625, 1e-6);
  EXPECT_NEAR(p[1], 0.375, 1e-6);
  EXPECT_EQ(p[2], 0.0);
  p = trm::sampling_distribution(logits, sampling({{"temperature", 1.0}, {"top_k", 0}, {"top_p", 0.9}}));  // 0.5 + 0.3 < 0.9 <= 0.95
  EXPECT_GT(p[2], 0.0);
  EXPECT_EQ(p[3], 0.0);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-9);
  // A draw never picks a filtered token.
  std::mt19937_64 rng(1);
  for (int i = 0; i < 500; ++i) EXPECT_LT(trm::sample_token(logits, top_2, rng), 2);
}

TEST(TrmText, Utf8Validation) {
  const std::string ok = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";
  EXPECT_EQ(trm::first_invalid_utf8(reinterpret_cast<const uint8_t*>(ok.data()), ok.size()), -1);
  auto bad = [](const std::string& s) {
    return trm::first_invalid_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_EQ(bad("ab\xFF"), 2);             // not a lead byte
  EXPECT_EQ(bad("a\xC3"), 1);              // truncated
  EXPECT_EQ(bad("a\xC0\xAF"), 1);          // overlong '/'
  EXPECT_EQ(bad("\xED\xA0\x80"), 0);       // a UTF-16 surrogate
  EXPECT_EQ(bad("xy\xE2\x28\xA1"), 2);     // bad continuation
}

TEST(TrmText, CorpusSplitsAndChecks) {
  TempDir dir;
  const std::string path = dir.str() + "/t.txt";
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + "\n";
  write_file(path, text);
  const trm::TextCorpus c(path, 0.2, 16);
  EXPECT_EQ(c.train().size() + c.eval().size(), text.size());
  EXPECT_EQ(c.eval().size(), static_cast<size_t>(static_cast<double>(text.size()) * 0.2));
  EXPECT_EQ(std::string(c.eval().begin(), c.eval().end()), text.substr(c.train().size()));

  trm::TextSampler s(c, 4, 7);
  const trm::Batch b = s.next();
  ASSERT_EQ(b.inputs.size(), 64u);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t t = 0; t + 1 < 16; ++t) EXPECT_EQ(b.labels[r * 16 + t], b.inputs[r * 16 + t + 1]);  // shifted by one
  // The sampler's state resumes the same windows.
  const json state = s.state();
  const trm::Batch next = s.next();
  trm::TextSampler other(c, 4, 999);
  other.load_state(state);
  EXPECT_EQ(other.next().inputs, next.inputs);
  EXPECT_NE(error_of([&] { other.load_state(json{{"rng", 5}}); }), "(no error)");

  const std::vector<trm::Batch> eval = trm::text_eval_batches(c, 4, 0);
  int64_t windows = 0;
  for (const auto& e : eval) windows += e.valid;
  EXPECT_EQ(windows, (static_cast<int64_t>(c.eval().size()) - 1) / 16);
}

TEST(TrmText, BadFilesNameThePath) {
  TempDir dir;
  EXPECT_NE(error_of([&] { trm::TextCorpus(dir.str() + "/none.txt", 0.1, 8); }).find("none.txt"), std::string::npos);
  write_file(dir.str() + "/bin.txt", std::string(100, 'a') + "\xFF" + std::string(100, 'b'));
  const std::string e = error_of([&] { trm::TextCorpus(dir.str() + "/bin.txt", 0.1, 8); });
  EXPECT_NE(e.find("bin.txt"), std::string::npos) << e;
  EXPECT_NE(e.find("offset 100"), std::string::npos) << e;
  write_file(dir.str() + "/short.txt", "tiny");
  EXPECT_NE(error_of([&] { trm::TextCorpus(dir.str() + "/short.txt", 0.1, 8); }).find("too short"), std::string::npos);
  EXPECT_NE(error_of([&] { trm::TextCorpus("", 0.1, 8); }).find("data.text_file"), std::string::npos);
}

TEST(TrmFlops, HandCountedModel) {
  trm::ModelConfig m{};  // the sizes below are all the count reads
  m.seq_len = 4;
  m.vocab_size = 10;
  m.hidden = 8;
  m.num_heads = 2;
  m.expansion = 4.0;  // SwiGLU width: round(4 * 8 * 2 / 3) = 21 -> 256
  m.h_cycles = 2;
  m.l_cycles = 3;
  m.l_layers = 1;
  m.puzzle_emb_ndim = 0;
  const double attention = 8.0 * 4 * 8 * 8 + 4.0 * 4 * 4 * 8;  // projections, scores and values
  const double mlp = 6.0 * 4 * 8 * 256;
  EXPECT_DOUBLE_EQ(trm::net_call_flops(m), attention + mlp);
  const double heads = 2.0 * 4 * 8 * 10 + 2.0 * 8 * 2;
  EXPECT_DOUBLE_EQ(trm::forward_flops_per_step(m), 8 * (attention + mlp) + heads);
  EXPECT_DOUBLE_EQ(trm::train_flops_per_step(m), 8 * (attention + mlp) + heads + 2 * (4 * (attention + mlp) + heads));
}

TEST(TrmRunModel, RoundTripAndErrors) {
  TempDir dir;
  trm::ModelRecord m;
  m.mode = "text";
  const json text = {{"mode", "text"}, {"model", {{"hidden", 64}, {"num_heads", 4}, {"halt_max_steps", 1}}}};
  m.model = trm::text_model_config(trm::parse_config(text));
  m.model.gradient_checkpointing = true;
  m.text_file = "/some/file.txt";
  trm::write_model_record(dir.path(), m);
  const trm::ModelRecord r = trm::read_model_record(dir.path());
  EXPECT_EQ(r.mode, "text");
  EXPECT_EQ(r.model.hidden, 64);
  EXPECT_TRUE(r.model.causal);
  EXPECT_FALSE(r.model.gradient_checkpointing);  // the plan's, never saved
  EXPECT_EQ(r.text_file, "/some/file.txt");

  TempDir empty;
  EXPECT_NE(error_of([&] { trm::read_model_record(empty.path()); }).find("train first"), std::string::npos);
  write_file(empty.str() + "/model.json", "{\"mode\": \"puzzle\"}");
  EXPECT_NE(error_of([&] { trm::read_model_record(empty.path()); }).find("model.json"), std::string::npos);
}

}  // namespace
