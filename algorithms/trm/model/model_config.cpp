// ModelConfig's checks and JSON form.
#include "model/model_config.hpp"
#include "model/shape_rules.hpp"

#include <functional>
#include <map>
#include <string>

#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

namespace trm {
namespace {

[[noreturn]] void fail(const std::string& field, const std::string& why) {
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "TRM model config: '" + field + "' " + why);
}

void require_positive(int64_t value, const char* field) {
  if (value < 1) fail(field, "must be >= 1, got " + std::to_string(value));
}

}  // namespace

int64_t resolved_puzzle_emb_len(const ModelConfig& c) {
  if (c.puzzle_emb_ndim <= 0) return 0;
  if (c.puzzle_emb_len != 0) return c.puzzle_emb_len;
  return c.hidden > 0 ? (c.puzzle_emb_ndim + c.hidden - 1) / c.hidden : 0;
}

int64_t total_seq_len(const ModelConfig& c) { return c.seq_len + resolved_puzzle_emb_len(c); }

void validate(const ModelConfig& c) {
  require_positive(c.seq_len, "seq_len");
  require_positive(c.vocab_size, "vocab_size");
  require_positive(c.num_puzzle_identifiers, "num_puzzle_identifiers");
  require_positive(c.hidden, "hidden");
  require_positive(c.num_heads, "num_heads");
  require_positive(c.h_cycles, "h_cycles");
  require_positive(c.l_cycles, "l_cycles");
  require_positive(c.l_layers, "l_layers");
  require_positive(c.halt_max_steps, "halt_max_steps");
  if (c.puzzle_emb_ndim < 0) fail("puzzle_emb_ndim", "must be >= 0, got " + std::to_string(c.puzzle_emb_ndim));
  if (c.puzzle_emb_len < 0) fail("puzzle_emb_len", "must be >= 0, got " + std::to_string(c.puzzle_emb_len));
  if (const std::string problem = prefix_problem(c.puzzle_emb_len, c.hidden, c.puzzle_emb_ndim); !problem.empty())
    fail("puzzle_emb_len", problem);
  if (!(c.expansion > 0)) fail("expansion", "must be > 0");
  if (!(c.halt_exploration_prob >= 0 && c.halt_exploration_prob <= 1))
    fail("halt_exploration_prob", "must be in [0, 1], got " + std::to_string(c.halt_exploration_prob));
  if (!(c.rope_theta > 0)) fail("rope_theta", "must be > 0");
  if (!(c.rms_norm_eps > 0)) fail("rms_norm_eps", "must be > 0");
  if (!c.mlp_t) {
    // The sequence-axis MLP has no heads; attention's heads must split hidden for RoPE.
    if (const std::string problem = heads_problem(c.hidden, c.num_heads); !problem.empty()) fail("num_heads", problem);
  } else if (c.causal) {
    // The sequence-axis MLP mixes every position into every other one.
    fail("causal", "cannot be used with mlp_t");
  }
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"seq_len", c.seq_len},
          {"vocab_size", c.vocab_size},
          {"num_puzzle_identifiers", c.num_puzzle_identifiers},
          {"puzzle_emb_ndim", c.puzzle_emb_ndim},
          {"puzzle_emb_len", c.puzzle_emb_len},
          {"hidden", c.hidden},
          {"num_heads", c.num_heads},
          {"expansion", c.expansion},
          {"h_cycles", c.h_cycles},
          {"l_cycles", c.l_cycles},
          {"l_layers", c.l_layers},
          {"halt_max_steps", c.halt_max_steps},
          {"halt_exploration_prob", c.halt_exploration_prob},
          {"no_act_continue", c.no_act_continue},
          {"mlp_t", c.mlp_t},
          {"causal", c.causal},
          {"rope_theta", c.rope_theta},
          {"rms_norm_eps", c.rms_norm_eps}};
}

ModelConfig model_config_from_json(const nlohmann::json& json) {
  if (!json.is_object()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "TRM model config: expected a JSON object");
  ModelConfig c{};
  using Setter = std::function<void(const nlohmann::json&, const std::string&)>;
  auto integer = [](int64_t& out) -> Setter {
    return [&out](const nlohmann::json& v, const std::string& key) {
      if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
      out = v.get<int64_t>();
    };
  };
  auto number = [](double& out) -> Setter {
    return [&out](const nlohmann::json& v, const std::string& key) {
      if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
      out = v.get<double>();
    };
  };
  auto boolean = [](bool& out) -> Setter {
    return [&out](const nlohmann::json& v, const std::string& key) {
      if (!v.is_boolean()) fail(key, "must be true or false, got " + v.dump());
      out = v.get<bool>();
    };
  };
  const std::map<std::string, Setter> setters{
      {"seq_len", integer(c.seq_len)},
      {"vocab_size", integer(c.vocab_size)},
      {"num_puzzle_identifiers", integer(c.num_puzzle_identifiers)},
      {"puzzle_emb_ndim", integer(c.puzzle_emb_ndim)},
      {"puzzle_emb_len", integer(c.puzzle_emb_len)},
      {"hidden", integer(c.hidden)},
      {"num_heads", integer(c.num_heads)},
      {"expansion", number(c.expansion)},
      {"h_cycles", integer(c.h_cycles)},
      {"l_cycles", integer(c.l_cycles)},
      {"l_layers", integer(c.l_layers)},
      {"halt_max_steps", integer(c.halt_max_steps)},
      {"halt_exploration_prob", number(c.halt_exploration_prob)},
      {"no_act_continue", boolean(c.no_act_continue)},
      {"mlp_t", boolean(c.mlp_t)},
      {"causal", boolean(c.causal)},
      {"rope_theta", number(c.rope_theta)},
      {"rms_norm_eps", number(c.rms_norm_eps)}};
  for (auto it = json.begin(); it != json.end(); ++it) {
    auto setter = setters.find(it.key());
    if (setter == setters.end()) fail(it.key(), "is not a model field");
    setter->second(it.value(), it.key());
  }
  for (const auto& [key, setter] : setters)
    if (!json.contains(key)) fail(key, "is missing (model.json records every model field)");
  // How a machine runs the model, not what it is: the plan of the process that loads it decides.
  c.gradient_checkpointing = false;
  validate(c);
  return c;
}

}  // namespace trm
