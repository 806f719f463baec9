// PPO's actor-critic networks: shapes, orthogonal initialisation, the recursive block's
// weight sharing, gradient checkpointing, the mlp's fast inference path, save/load, the
// spec's JSON form and validation, and that each net can fit a small target.
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include "config.hpp"
#include "networks/networks.hpp"
#include "no_default.hpp"
#include "trainer.hpp"

namespace {

using nlohmann::json;

using ppo::ActorCritic;
using ppo::NetworkSpec;

// A spec as training makes it (ppo::network_spec): the config table's defaults with `cfg` over
// them, for a task of this observation shape and these actions, under a plan of no preset.
NetworkSpec spec_from_config(const json& cfg, const std::vector<int64_t>& shape, int64_t actions) {
  return ppo::network_spec(ppo::parse_config(cfg), mlh::rt::RuntimePlan{}, shape, static_cast<int>(actions), 0);
}

NetworkSpec mlp_spec(int64_t features = 4, int64_t actions = 2) {
  return spec_from_config(json::object(), {features}, actions);
}

NetworkSpec recursive_spec(int64_t size = 5, int64_t steps = 2) {
  return spec_from_config(
      {{"env", "puzzle"},
       {"network", {{"kind", "recursive"}, {"hidden_dim", 32}, {"num_heads", 4}, {"num_recursive_steps", steps}}}},
      {6, size, size}, 4);
}

NetworkSpec resnet_spec(int64_t size = 5) {
  NetworkSpec s = spec_from_config({{"env", "puzzle"}, {"network", {{"kind", "resnet"}, {"blocks", 2}, {"channels", 16}}}},
                                   {6, size, size}, 4);
  s.value_hidden = 32;  // the tower's own (in no config): small for speed
  return s;
}

at::Tensor observations(const NetworkSpec& s, int64_t batch) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), s.observation_shape.begin(), s.observation_shape.end());
  return at::randn(shape);
}

std::shared_ptr<ActorCritic> build(const NetworkSpec& s, uint64_t seed = 1) {
  at::manual_seed(seed);
  return ppo::make_network(s);
}

std::map<std::string, at::Tensor> params(const ActorCritic& net) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : net.named_parameters()) out[item.key()] = item.value();
  return out;
}

float max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<float>(); }

// W W^T = gain^2 I when W has no more rows than columns, W^T W = gain^2 I otherwise.
void expect_orthogonal(const at::Tensor& weight, double gain, const std::string& name) {
  at::Tensor w = weight.detach().flatten(1);
  at::Tensor g = w.size(0) <= w.size(1) ? at::mm(w, w.t()) : at::mm(w.t(), w);
  at::Tensor expected = at::eye(g.size(0)) * (gain * gain);
  EXPECT_LT(max_diff(g, expected), 1e-4 * std::max(1.0, gain * gain)) << name;
}

// ---- shapes ---------------------------------------------------------------------------

TEST(PpoNetworks, OutputShapes) {
  std::vector<NetworkSpec> specs{mlp_spec(), mlp_spec(8, 5), recursive_spec(4), recursive_spec(5),
                                 recursive_spec(6), resnet_spec(4), resnet_spec(5), resnet_spec(6)};
  for (const auto& s : specs) {
    auto net = build(s);
    for (int64_t batch : {1, 64}) {
      auto out = net->forward(observations(s, batch));
      EXPECT_EQ(out.logits.sizes().vec(), (std::vector<int64_t>{batch, s.num_actions})) << s.kind;
      EXPECT_EQ(out.value.sizes().vec(), (std::vector<int64_t>{batch})) << s.kind;
      EXPECT_TRUE(at::isfinite(out.logits).all().item<bool>()) << s.kind;
      EXPECT_TRUE(at::isfinite(out.value).all().item<bool>()) << s.kind;
    }
    EXPECT_EQ(net->spec().kind, s.kind);
  }
}

TEST(PpoNetworks, WrongObservationShapeThrows) {
  auto net = build(recursive_spec(5));
  EXPECT_THROW(net->forward(at::randn({2, 6, 4, 4})), mlh::Error);
  EXPECT_THROW(build(mlp_spec())->forward(at::randn({2, 5})), mlh::Error);
  EXPECT_THROW(build(resnet_spec())->forward(at::randn({6, 5, 5})), mlh::Error);
}

// ---- initialisation ------------------------------------------------------------------

TEST(PpoNetworks, MlpOrthogonalInit) {
  auto net = build(mlp_spec());
  auto p = params(*net);
  ASSERT_EQ(p.size(), 12u);
  for (const std::string trunk : {"actor", "critic"}) {
    expect_orthogonal(p[trunk + ".0.weight"], std::sqrt(2.0), trunk + ".0");  // 64 x 4
    expect_orthogonal(p[trunk + ".1.weight"], std::sqrt(2.0), trunk + ".1");  // 64 x 64
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(p[trunk + "." + std::to_string(i) + ".bias"].abs().max().item<float>(), 0.0f);
  }
  EXPECT_EQ(p["actor.2.weight"].sizes().vec(), (std::vector<int64_t>{2, 64}));
  expect_orthogonal(p["actor.2.weight"], 0.01, "policy head");
  EXPECT_EQ(p["critic.2.weight"].sizes().vec(), (std::vector<int64_t>{1, 64}));
  expect_orthogonal(p["critic.2.weight"], 1.0, "value head");
}

TEST(PpoNetworks, RecursiveAndResnetInit) {
  auto rec = params(*build(recursive_spec()));
  expect_orthogonal(rec["stem.weight"], std::sqrt(2.0), "stem");
  expect_orthogonal(rec["qkv.weight"], 1.0, "qkv");
  expect_orthogonal(rec["mlp_in.weight"], std::sqrt(2.0), "mlp_in");
  expect_orthogonal(rec["policy.weight"], 0.01, "policy");
  expect_orthogonal(rec["value.weight"], 1.0, "value");
  for (const char* b : {"stem.bias", "qkv.bias", "attn_out.bias", "mlp_in.bias", "mlp_out.bias", "policy.bias", "value.bias"})
    EXPECT_EQ(rec[b].abs().max().item<float>(), 0.0f) << b;
  EXPECT_EQ(rec["position"].sizes().vec(), (std::vector<int64_t>{25, 32}));

  auto res = params(*build(resnet_spec()));
  expect_orthogonal(res["stem.weight"], std::sqrt(2.0), "stem");
  expect_orthogonal(res["block1.conv2.weight"], std::sqrt(2.0), "block1.conv2");
  expect_orthogonal(res["policy.weight"], 0.01, "policy");
  expect_orthogonal(res["value.weight"], 1.0, "value");
  expect_orthogonal(res["value_hidden.weight"], std::sqrt(2.0), "value_hidden");
  EXPECT_EQ(res.count("stem.bias"), 0u);  // batch norm follows
  for (const char* b : {"policy.bias", "value.bias", "value_hidden.bias"})
    EXPECT_EQ(res[b].abs().max().item<float>(), 0.0f) << b;
}

// ---- recursive weight sharing ----------------------------------------------------------

TEST(PpoNetworks, RecursiveBlockIsShared) {
  auto one = build(recursive_spec(5, 1)), three = build(recursive_spec(5, 3)), six = build(recursive_spec(5, 6));
  EXPECT_EQ(one->parameter_count(), three->parameter_count());
  EXPECT_EQ(one->parameter_count(), six->parameter_count());
  // Same seed, so the same weights: only the number of applications differs.
  for (const auto& [name, p] : params(*one)) EXPECT_TRUE(at::equal(p, params(*three).at(name))) << name;
  at::Tensor x = observations(recursive_spec(), 8);
  auto a = one->forward(x), b = three->forward(x), c = six->forward(x);
  EXPECT_GT(max_diff(a.value, b.value), 1e-4);
  EXPECT_GT(max_diff(b.value, c.value), 1e-4);
  EXPECT_GT(max_diff(a.logits, b.logits), 1e-6);
}

// ---- gradient checkpointing --------------------------------------------------------------

void expect_same_gradients(NetworkSpec spec) {
  spec.gradient_checkpointing = false;
  auto plain = build(spec, 7);
  spec.gradient_checkpointing = true;
  auto ckpt = build(spec, 7);
  at::manual_seed(3);
  at::Tensor x = observations(spec, 16);
  at::Tensor targets = at::randn({16});
  auto loss_of = [&](ActorCritic& net) {
    auto out = net.forward(x);
    return (out.logits * 100).pow(2).mean() + (out.value - targets).pow(2).mean();
  };
  at::Tensor lp = loss_of(*plain), lc = loss_of(*ckpt);
  EXPECT_NEAR(lp.item<float>(), lc.item<float>(), 1e-6);
  lp.backward();
  lc.backward();
  auto pp = params(*plain), pc = params(*ckpt);
  for (const auto& [name, p] : pp) {
    ASSERT_TRUE(p.grad().defined()) << name;
    ASSERT_TRUE(pc.at(name).grad().defined()) << name;
    const float scale = std::max(1.0f, p.grad().abs().max().item<float>());
    EXPECT_LT(max_diff(p.grad(), pc.at(name).grad()), 1e-5 * scale) << spec.kind << " " << name;
  }
  // Buffers (BatchNorm running statistics) change once per step in both.
  std::map<std::string, at::Tensor> bp;
  for (const auto& b : plain->named_buffers()) bp[b.key()] = b.value();
  for (const auto& b : ckpt->named_buffers()) EXPECT_LT(max_diff(bp.at(b.key()).to(at::kFloat), b.value().to(at::kFloat)), 1e-6) << b.key();
}

TEST(PpoNetworks, RecursiveCheckpointingSameGradients) { expect_same_gradients(recursive_spec(5, 3)); }
TEST(PpoNetworks, ResnetCheckpointingSameGradients) { expect_same_gradients(resnet_spec(5)); }

// ---- inference paths ----------------------------------------------------------------------

void expect_infer_equals_forward(ActorCritic& net, int64_t batch, float tolerance) {
  const auto& s = net.spec();
  at::Tensor x = observations(s, batch);
  std::vector<float> logits(batch * s.num_actions), values(batch);
  net.infer(x.data_ptr<float>(), batch, logits.data(), values.data());
  at::NoGradGuard no_grad;
  auto out = net.forward(x);
  at::Tensor l = at::from_blob(logits.data(), {batch, s.num_actions});
  at::Tensor v = at::from_blob(values.data(), {batch});
  EXPECT_LT(max_diff(l, out.logits), tolerance) << s.kind << " batch " << batch;
  EXPECT_LT(max_diff(v, out.value), tolerance) << s.kind << " batch " << batch;
}

TEST(PpoNetworks, MlpFastInferenceEqualsForward) {
  for (const auto& s : {mlp_spec(), mlp_spec(8, 5)}) {
    auto net = build(s);
    for (int64_t batch : {1, 4, 64, 128}) expect_infer_equals_forward(*net, batch, 1e-5f);
  }
  // Odd widths (loop tails) and large pre-activations (tanh saturating, its clamp).
  NetworkSpec odd = mlp_spec(13, 3);
  odd.mlp_hidden = {37, 19, 8};
  auto net = build(odd);
  {
    at::NoGradGuard no_grad;
    for (auto& p : net->parameters()) p.normal_(0.0, 0.6);
  }
  for (int64_t batch : {1, 3, 17}) expect_infer_equals_forward(*net, batch, 1e-5f);
  // infer() caches transposed weights: an in-place update (as an optimizer step) refreshes them.
  {
    at::NoGradGuard no_grad;
    for (auto& p : net->parameters()) p.mul_(-0.5);
  }
  expect_infer_equals_forward(*net, 5, 1e-5f);
}

TEST(PpoNetworks, GenericInferEqualsForward) {
  auto rec = build(recursive_spec());
  expect_infer_equals_forward(*rec, 3, 1e-5f);
  auto res = build(resnet_spec());
  res->eval();
  expect_infer_equals_forward(*res, 3, 1e-5f);
}

// ---- save / load -------------------------------------------------------------------------

TEST(PpoNetworks, SaveLoadRoundTrip) {
  for (const auto& s : {mlp_spec(), recursive_spec(), resnet_spec()}) {
    auto net = build(s, 1);
    at::Tensor x = observations(s, 5);
    {
      at::NoGradGuard no_grad;
      net->forward(x);  // moves the resnet's running statistics off their initial values
    }
    net->eval();
    std::stringstream stream;
    torch::save(std::static_pointer_cast<torch::nn::Module>(net), stream);
    auto loaded = build(ppo::network_spec_from_json(ppo::to_json(net->spec())), 2);
    loaded->eval();
    EXPECT_GT(max_diff(net->forward(x).value, loaded->forward(x).value), 1e-6) << s.kind;
    expect_infer_equals_forward(*loaded, 4, 1e-5f);  // fills the mlp's infer() cache
    auto as_module = std::static_pointer_cast<torch::nn::Module>(loaded);
    torch::load(as_module, stream);
    auto a = net->forward(x), b = loaded->forward(x);
    EXPECT_TRUE(at::equal(a.logits, b.logits)) << s.kind;
    EXPECT_TRUE(at::equal(a.value, b.value)) << s.kind;
    expect_infer_equals_forward(*loaded, 4, 1e-5f);  // the mlp's infer() sees the loaded weights
  }
}

// ---- spec JSON and validation ---------------------------------------------------------------

TEST(PpoNetworks, SpecJsonRoundTrip) {
  NetworkSpec s = resnet_spec(6);
  s.mlp_hidden = {32, 16, 8};
  s.hidden_dim = 48;
  s.num_heads = 6;
  s.num_recursive_steps = 5;
  s.blocks = 20;
  s.channels = 128;
  s.value_hidden = 64;
  s.gradient_checkpointing = true;
  nlohmann::json j = ppo::to_json(s);
  NetworkSpec r = ppo::network_spec_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(ppo::to_json(r), j);
  EXPECT_EQ(r.kind, "resnet");
  EXPECT_EQ(r.observation_shape, (std::vector<int64_t>{6, 6, 6}));
  EXPECT_EQ(r.mlp_hidden, (std::vector<int64_t>{32, 16, 8}));
  EXPECT_EQ(r.num_heads, 6);
  EXPECT_EQ(r.blocks, 20);
  EXPECT_EQ(r.channels, 128);
  EXPECT_TRUE(r.gradient_checkpointing);
  // A network.json as the first runs wrote it (without the four later keys) reads as they meant it.
  const NetworkSpec m = mlp_spec();
  json older = ppo::to_json(m);
  for (const char* later : {"continuous_actions", "normalize_observations", "module", "kwargs"}) older.erase(later);
  const NetworkSpec o = ppo::network_spec_from_json(older);
  EXPECT_EQ(ppo::to_json(o), ppo::to_json(m));
  EXPECT_FALSE(o.continuous_actions);
  EXPECT_FALSE(o.normalize_observations);
  EXPECT_EQ(o.kwargs, json::object());
  // Any other key missing, or a wrongly typed one, is an error naming it: the spec has no
  // default to fall back on.
  auto error_of = [](const json& j) {
    try {
      ppo::network_spec_from_json(j);
    } catch (const mlh::Error& e) {
      EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  json no_blocks = ppo::to_json(m);
  no_blocks.erase("blocks");
  EXPECT_NE(error_of(no_blocks).find("no blocks"), std::string::npos) << error_of(no_blocks);
  json big = ppo::to_json(m);
  big["hidden_dim"] = "big";
  EXPECT_NE(error_of(big).find("hidden_dim"), std::string::npos) << error_of(big);
}

// The structured binding names every member, so a member added to NetworkSpec stops this from
// compiling until it is sorted here: from the config, task or plan (no default), or the
// network's own.
TEST(PpoNetworks, SpecDeclaresNoConfigDefault) {
  [[maybe_unused]] const auto [kind, observation_shape, num_actions, continuous_actions, normalize_observations,
                               mlp_hidden, hidden_dim, num_heads, num_recursive_steps, blocks, channels, value_hidden,
                               module, kwargs, gradient_checkpointing] = NetworkSpec{};
  EXPECT_NO_DEFAULT(kind);
  EXPECT_NO_DEFAULT(observation_shape);
  EXPECT_NO_DEFAULT(num_actions);
  EXPECT_NO_DEFAULT(continuous_actions);
  EXPECT_NO_DEFAULT(normalize_observations);
  EXPECT_NO_DEFAULT(mlp_hidden);
  EXPECT_NO_DEFAULT(hidden_dim);
  EXPECT_NO_DEFAULT(num_heads);
  EXPECT_NO_DEFAULT(num_recursive_steps);
  EXPECT_NO_DEFAULT(blocks);
  EXPECT_NO_DEFAULT(channels);
  EXPECT_NO_DEFAULT(module);
  EXPECT_NO_DEFAULT(kwargs);
  EXPECT_NO_DEFAULT(gradient_checkpointing);
  // value_hidden is the residual tower's own, in no config: it keeps its 256.
}

// A spec from the default config holds the table's sizes, and the plan's preset the tower's.
TEST(PpoNetworks, SpecFromTheConfigHoldsTheTablesDefaults) {
  const json d = json::parse(ppo::config_defaults_json())["network"];
  const NetworkSpec s = mlp_spec();
  EXPECT_EQ(s.kind, "mlp");  // auto, on the default cartpole
  EXPECT_EQ(s.mlp_hidden, d["mlp_hidden"].get<std::vector<int64_t>>());
  EXPECT_EQ(s.hidden_dim, d["hidden_dim"].get<int64_t>());
  EXPECT_EQ(s.num_heads, d["num_heads"].get<int64_t>());
  EXPECT_EQ(s.num_recursive_steps, d["num_recursive_steps"].get<int64_t>());
  EXPECT_EQ(s.kwargs, d["kwargs"]);
  EXPECT_EQ(std::make_pair(s.blocks, s.channels), std::make_pair(ppo::kReducedTower.blocks, ppo::kReducedTower.channels));
  mlh::rt::RuntimePlan full;
  full.preset = "full";
  const NetworkSpec f = ppo::network_spec(ppo::parse_config(json::object()), full, {4}, 2, 0);
  EXPECT_EQ(std::make_pair(f.blocks, f.channels), std::make_pair(ppo::kFullTower.blocks, ppo::kFullTower.channels));
  // The presets say the same.
  const json presets = json::parse(ppo::presets_json());
  EXPECT_EQ(presets["full"]["network"]["blocks"], ppo::kFullTower.blocks);
  EXPECT_EQ(presets["full"]["network"]["channels"], ppo::kFullTower.channels);
  EXPECT_EQ(presets["reduced"]["network"]["blocks"], ppo::kReducedTower.blocks);
  EXPECT_EQ(presets["reduced"]["network"]["channels"], ppo::kReducedTower.channels);
}

TEST(PpoNetworks, InvalidSpecsThrowNamingTheField) {
  struct Case {
    NetworkSpec spec;
    std::string field, value;
  };
  std::vector<Case> cases;
  auto add = [&cases](NetworkSpec s, const std::string& field, const std::string& value) { cases.push_back({s, field, value}); };
  NetworkSpec s = mlp_spec();
  s.kind = "transformer";
  add(s, "kind", "transformer");
  s = mlp_spec();
  s.observation_shape = {4, 4};
  add(s, "observation_shape", "[4, 4]");
  s = mlp_spec();
  s.observation_shape = {0};
  add(s, "observation_shape", "[0]");
  s = mlp_spec();
  s.num_actions = 0;
  add(s, "num_actions", "0");
  s = mlp_spec();
  s.mlp_hidden = {64, -1};
  add(s, "mlp_hidden", "[64, -1]");
  s = recursive_spec();
  s.observation_shape = {6, 5};
  add(s, "observation_shape", "[6, 5]");
  s = recursive_spec();
  s.hidden_dim = 30;
  add(s, "hidden_dim", "30");
  s = recursive_spec();
  s.num_heads = 0;
  add(s, "num_heads", "0");
  s = recursive_spec();
  s.num_recursive_steps = 0;
  add(s, "num_recursive_steps", "0");
  s = resnet_spec();
  s.blocks = -2;
  add(s, "blocks", "-2");
  s = resnet_spec();
  s.channels = 0;
  add(s, "channels", "0");
  s = resnet_spec();
  s.value_hidden = 0;
  add(s, "value_hidden", "0");
  for (const auto& c : cases) {
    try {
      ppo::make_network(c.spec);
      ADD_FAILURE() << "no throw for " << c.field;
    } catch (const mlh::Error& e) {
      EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
      const std::string what = e.what();
      EXPECT_NE(what.find(c.field), std::string::npos) << what;
      EXPECT_NE(what.find(c.value), std::string::npos) << what;
    }
  }
}

// ---- fitting a small target -----------------------------------------------------------------

void expect_fits(const NetworkSpec& spec) {
  auto net = build(spec, 11);
  net->train();
  at::manual_seed(5);
  const int64_t n = 16;
  at::Tensor x = observations(spec, n);
  at::Tensor labels = at::randint(spec.num_actions, {n}, at::kLong);
  at::Tensor returns = at::randn({n});
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
  auto loss_of = [&] {
    auto out = net->forward(x);
    return at::cross_entropy_loss(out.logits, labels) + (out.value - returns).pow(2).mean();
  };
  const float initial = loss_of().item<float>();
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    at::Tensor loss = loss_of();
    loss.backward();
    opt.step();
  }
  const float final_loss = loss_of().item<float>();
  EXPECT_LT(final_loss, 0.2f * initial) << spec.kind << ": " << initial << " -> " << final_loss;
}

TEST(PpoNetworks, MlpFitsSmallTarget) { expect_fits(mlp_spec()); }
TEST(PpoNetworks, RecursiveFitsSmallTarget) { expect_fits(recursive_spec(5, 2)); }
TEST(PpoNetworks, ResnetFitsSmallTarget) { expect_fits(resnet_spec(5)); }
TEST(PpoNetworks, CheckpointedResnetFitsSmallTarget) {
  NetworkSpec s = resnet_spec(4);
  s.gradient_checkpointing = true;
  expect_fits(s);
}

}  // namespace
