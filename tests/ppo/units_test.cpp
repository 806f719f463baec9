// PPO's parts on hand-made inputs: GAE against a hand-computed example (termination,
// truncation bootstrap, mid-rollout boundaries, last-step bootstrap), the loss pieces
// (clipping active and inactive, clipped value loss, entropy sign), the LR schedule, action
// masking and sampling, and config errors naming the field.
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "fake_graph_recorder.hpp"
#include "gae.hpp"
#include "mlp_fast.hpp"
#include "tasks.hpp"
#include "ppo_update.hpp"
#include "trainer.hpp"

namespace {

using nlohmann::json;

// The loss settings of the default config (CleanRL's).
ppo::LossOptions default_loss() { return ppo::update_options(ppo::parse_config(json::object())).loss; }

TEST(PpoGae, HandComputedTwoEnvs) {
  // [T=3][N=2], gamma 0.9, lambda 0.8.
  // env 0: rewards 1,1,1; values .5,.6,.7; terminated at t=1; V(next) = .8
  // env 1: rewards 0,2,-1; values 1,2,.5; truncated at t=0 with V(final obs) = 3; V(next) = 1.5
  float rewards[6] = {1, 0, 1, 2, 1, -1};
  const float values[6] = {0.5f, 1.0f, 0.6f, 2.0f, 0.7f, 0.5f};
  const uint8_t terminated[6] = {0, 0, 1, 0, 0, 0};
  const uint8_t truncated[6] = {0, 1, 0, 0, 0, 0};
  const float final_values[6] = {0, 3.0f, 0, 0, 0, 0};
  uint8_t ends[6];
  for (int k = 0; k < 6; ++k) ends[k] = terminated[k] || truncated[k];
  const float next_values[2] = {0.8f, 1.5f};
  ppo::bootstrap_truncated(rewards, truncated, final_values, 3, 2, 0.9);
  EXPECT_FLOAT_EQ(rewards[1], 2.7f);  // 0 + 0.9 * 3
  float adv[6], ret[6];
  ppo::compute_gae(rewards, values, ends, next_values, 3, 2, 0.9, 0.8, adv, ret);
  // env 0: A2 = 1 + .9*.8 - .7 = 1.02 (last step bootstraps from V(next));
  //        A1 = 1 - .6 = .4 (terminated: no bootstrap, recursion cut);
  //        A0 = (1 + .9*.6 - .5) + .72 * .4 = 1.328
  EXPECT_NEAR(adv[4], 1.02, 1e-5);
  EXPECT_NEAR(adv[2], 0.4, 1e-5);
  EXPECT_NEAR(adv[0], 1.328, 1e-5);
  // env 1: A2 = -1 + .9*1.5 - .5 = -.15; A1 = (2 + .9*.5 - 2) + .72 * -.15 = .342;
  //        A0 = 2.7 - 1 = 1.7 (truncated: bootstrapped through the reward, recursion cut)
  EXPECT_NEAR(adv[5], -0.15, 1e-5);
  EXPECT_NEAR(adv[3], 0.342, 1e-5);
  EXPECT_NEAR(adv[1], 1.7, 1e-5);
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(ret[k], adv[k] + values[k], 1e-6);
}

TEST(PpoGae, LambdaOneIsDiscountedReturn) {
  // One env, no episode end: with lambda 1 the return is the discounted sum plus gamma^T V(next).
  const float rewards[4] = {1, 2, 3, 4}, values[4] = {0.3f, -0.2f, 0.9f, 0.1f};
  const uint8_t ends[4] = {0, 0, 0, 0};
  const float next = 2.0f;
  float adv[4], ret[4];
  ppo::compute_gae(rewards, values, ends, &next, 4, 1, 0.5, 1.0, adv, ret);
  EXPECT_NEAR(ret[0], 1 + 0.5 * 2 + 0.25 * 3 + 0.125 * 4 + 0.0625 * 2, 1e-5);
  EXPECT_NEAR(ret[3], 4 + 0.5 * 2, 1e-5);
}

ppo::LossTerms example_loss(double ent_coef, bool clip_vloss) {
  // Two samples, two actions, uniform new policy (logprob ln .5). Sample 0: old prob 1/3 ->
  // ratio 1.5 (clipped for its positive advantage); sample 1: ratio 1 (not clipped).
  const at::Tensor logits = at::zeros({2, 2});
  const at::Tensor new_values = at::tensor({1.0f, 0.0f});
  const at::Tensor actions = at::tensor({int64_t{0}, int64_t{1}});
  const at::Tensor old_logprobs = at::tensor({std::log(1.0f / 3.0f), std::log(0.5f)});
  const at::Tensor adv = at::tensor({1.0f, -2.0f});
  const at::Tensor returns = at::tensor({2.0f, 1.0f});
  const at::Tensor old_values = at::tensor({0.0f, 0.0f});
  ppo::LossOptions o = default_loss();
  o.clip_coef = 0.2;
  o.norm_adv = false;
  o.ent_coef = ent_coef;
  o.vf_coef = 0.5;
  o.clip_vloss = clip_vloss;
  return ppo::ppo_loss(logits, new_values, actions, old_logprobs, adv, returns, old_values, o);
}

TEST(PpoLoss, ClippedSurrogateValueAndEntropy) {
  const ppo::LossTerms t = example_loss(0.01, true);
  // pg: max(-A r, -A clip(r)) = max(-1.5, -1.2) = -1.2 and max(2, 2) = 2 -> mean .4
  EXPECT_NEAR(t.pg_loss.item<double>(), 0.4, 1e-6);
  EXPECT_NEAR(t.clipfrac.item<double>(), 0.5, 1e-6);
  // v: sample 0 clipped to 0 + .2 -> (0.2 - 2)^2 = 3.24 > (1 - 2)^2; sample 1: 1 -> .5 * mean = 1.06
  EXPECT_NEAR(t.v_loss.item<double>(), 1.06, 1e-6);
  EXPECT_NEAR(t.entropy.item<double>(), std::log(2.0), 1e-6);
  EXPECT_NEAR(t.loss.item<double>(), 0.4 - 0.01 * std::log(2.0) + 0.5 * 1.06, 1e-6);
  // approx_kl = mean((r - 1) - log r) = ((.5 - ln 1.5) + 0) / 2
  EXPECT_NEAR(t.approx_kl.item<double>(), (0.5 - std::log(1.5)) / 2, 1e-6);
  // Unclipped value loss: .5 * mean(1, 1) = .5
  EXPECT_NEAR(example_loss(0.01, false).v_loss.item<double>(), 0.5, 1e-6);
  // The entropy bonus lowers the loss (maximises entropy).
  EXPECT_LT(example_loss(0.05, true).loss.item<double>(), example_loss(0.0, true).loss.item<double>());
}

TEST(PpoLoss, ClippingBlocksTheGradient) {
  // Ratio 1.5 with a positive advantage: the clipped term is constant, so no policy gradient.
  at::Tensor logits = at::zeros({1, 2}).requires_grad_();
  ppo::LossOptions o = default_loss();
  o.norm_adv = false;
  o.ent_coef = 0;
  o.vf_coef = 0;
  ppo::ppo_loss(logits, at::zeros({1}), at::tensor({int64_t{0}}), at::tensor({std::log(1.0f / 3.0f)}),
                at::tensor({1.0f}), at::zeros({1}), at::zeros({1}), o)
      .loss.backward();
  EXPECT_NEAR(logits.grad().abs().sum().item<double>(), 0.0, 1e-7);
  // Ratio 1 (inside the clip range): the gradient raises the action's logit.
  at::Tensor logits2 = at::zeros({1, 2}).requires_grad_();
  ppo::ppo_loss(logits2, at::zeros({1}), at::tensor({int64_t{0}}), at::tensor({std::log(0.5f)}), at::tensor({1.0f}),
                at::zeros({1}), at::zeros({1}), o)
      .loss.backward();
  EXPECT_LT(logits2.grad()[0][0].item<double>(), 0.0);
}

TEST(PpoLoss, AdvantageNormalisation) {
  ppo::LossOptions o = default_loss();
  o.norm_adv = true;
  o.ent_coef = 0;
  o.vf_coef = 0;
  // Ratio 1 everywhere: pg_loss = -mean(normalised adv) = 0.
  const at::Tensor lp = at::full({3}, std::log(0.5f));
  const auto t = ppo::ppo_loss(at::zeros({3, 2}), at::zeros({3}), at::zeros({3}, at::kLong), lp,
                               at::tensor({1.0f, 5.0f, 9.0f}), at::zeros({3}), at::zeros({3}), o);
  EXPECT_NEAR(t.pg_loss.item<double>(), 0.0, 1e-6);
}

TEST(PpoSchedule, LinearAnnealing) {
  EXPECT_DOUBLE_EQ(ppo::annealed_lr(2.5e-4, 1, 100), 2.5e-4);
  EXPECT_NEAR(ppo::annealed_lr(2.5e-4, 51, 100), 1.25e-4, 1e-12);
  EXPECT_NEAR(ppo::annealed_lr(2.5e-4, 100, 100), 2.5e-6, 1e-12);
}

TEST(PpoMasking, MaskedActionsGetNoProbability) {
  const at::Tensor logits = at::tensor({5.0f, 1.0f, 2.0f, 0.0f}).view({1, 4});
  const at::Tensor mask = at::tensor({0.0f, 1.0f, 1.0f, 0.0f}).view({1, 4}).to(at::kBool);
  const at::Tensor p = at::softmax(ppo::mask_logits(logits, mask), 1);
  EXPECT_NEAR(p[0][0].item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(p[0][3].item<double>(), 0.0, 1e-12);
  EXPECT_NEAR((p[0][1] + p[0][2]).item<double>(), 1.0, 1e-6);
  // The loss stays finite with masked logits (entropy over the valid actions only).
  ppo::LossOptions o = default_loss();
  const auto t = ppo::ppo_loss(ppo::mask_logits(logits, mask), at::zeros({1}), at::tensor({int64_t{2}}),
                               at::tensor({-1.0f}), at::tensor({1.0f}), at::zeros({1}), at::zeros({1}), o);
  EXPECT_TRUE(std::isfinite(t.loss.item<double>()));
  const double p1 = std::exp(1.0) / (std::exp(1.0) + std::exp(2.0)), p2 = 1 - p1;
  EXPECT_NEAR(t.entropy.item<double>(), -(p1 * std::log(p1) + p2 * std::log(p2)), 1e-5);

  // The C++ sampler never picks a masked action and matches the probabilities.
  const float l[4] = {5, 1, 2, 0};
  const uint8_t m[4] = {0, 1, 1, 0};
  std::mt19937_64 rng(3);
  int counts[4] = {0, 0, 0, 0};
  for (int i = 0; i < 20000; ++i) {
    float lp;
    const int a = ppo::sample_action(l, m, 4, rng, &lp);
    ++counts[a];
    EXPECT_NEAR(lp, std::log(a == 1 ? p1 : p2), 1e-5);
  }
  EXPECT_EQ(counts[0] + counts[3], 0);
  EXPECT_NEAR(counts[1] / 20000.0, p1, 0.02);
  EXPECT_EQ(ppo::greedy_action(l, m, 4), 2);
  EXPECT_EQ(ppo::greedy_action(l, nullptr, 4), 0);
}

// A random CartPole-shaped rollout of `n` transitions (4 observations, 2 actions).
ppo::Batch cartpole_batch(int64_t n) {
  ppo::Batch b;
  b.obs = at::randn({n, 4});
  b.actions = at::randint(0, 2, {n}, at::kLong);
  b.logprobs = at::full({n}, std::log(0.5f));
  b.advantages = at::randn({n});
  b.returns = at::randn({n});
  b.values = at::zeros({n});
  return b;
}

// CartPole's mlp as training makes it: the default config's network for 4 numbers, 2 actions.
ppo::NetworkSpec cartpole_mlp_spec() {
  return ppo::network_spec(ppo::parse_config(json::object()), mlh::rt::RuntimePlan{}, {4}, 2, 0);
}

TEST(PpoUpdate, FlatParametersKeepTheModuleWorking) {
  // The module's parameters become views of one buffer; backward fills the flat gradient.
  const ppo::NetworkSpec spec = cartpole_mlp_spec();
  auto net = ppo::make_network(spec);
  const at::Tensor x = at::randn({8, 4});
  const at::Tensor before = net->forward(x).logits.detach().clone();
  ppo::FlatParameters flat(*net);
  EXPECT_TRUE(at::allclose(net->forward(x).logits, before));
  EXPECT_EQ(flat.numel(), net->parameter_count());
  flat.grad().zero_();
  net->forward(x).value.sum().backward();
  EXPECT_GT(flat.grad().abs().sum().item<double>(), 0.0);
  { at::NoGradGuard g; flat.flat().add_(0.5); }
  EXPECT_FALSE(at::allclose(net->forward(x).logits, before));
}

TEST(PpoUpdate, InferMatchesForwardThroughUpdates) {
  // Both update paths (plain C++ and LibTorch autograd) keep the mlp's fast inference in
  // step with its parameters.
  for (bool use_fast : {true, false}) {
  const ppo::NetworkSpec spec = cartpole_mlp_spec();
  auto net = ppo::make_network(spec);
  ppo::UpdateOptions o = ppo::update_options(ppo::parse_config(json::object()));
  o.num_minibatches = 2;
  ppo::PpoUpdater updater(net, 1e-2, o, at::kCPU, use_fast);
  EXPECT_EQ(updater.fast(), use_fast);
  auto check = [&] {
    const at::Tensor x = at::randn({8, 4});
    std::vector<float> logits(16), values(8);
    net->infer(x.data_ptr<float>(), 8, logits.data(), values.data());
    const auto out = net->forward(x);
    EXPECT_TRUE(at::allclose(out.logits, at::from_blob(logits.data(), {8, 2}), 1e-4, 1e-5));
    EXPECT_TRUE(at::allclose(out.value, at::from_blob(values.data(), {8}), 1e-4, 1e-5));
  };
  check();
  const ppo::Batch b = cartpole_batch(16);
  std::mt19937_64 rng(1);
  const at::Tensor before = net->forward(b.obs).value.detach().clone();
  updater.update(b, rng);
  EXPECT_FALSE(at::allclose(net->forward(b.obs).value, before));
  check();
  }
}

TEST(PpoUpdate, PlainCppMlpStepMatchesAutograd) {
  // The hand-written loss and gradient equal ppo_loss + autograd, with clipping active for
  // some samples (ratios and value changes beyond clip_coef).
  const ppo::NetworkSpec spec = cartpole_mlp_spec();
  auto net = ppo::make_network(spec);
  ppo::FlatParameters flat(*net);
  auto fast = ppo::FastMlpStep::create(*net, flat);
  ASSERT_TRUE(fast);
  const int64_t B = 64;
  const at::Tensor obs = at::randn({B, 4}) * 2;
  const at::Tensor actions = at::randint(0, 2, {B}, at::kLong);
  at::Tensor old_logprobs, old_values;
  {
    at::NoGradGuard g;
    const auto out = net->forward(obs);
    old_logprobs = at::log_softmax(out.logits, 1).gather(1, actions.view({-1, 1})).view(-1) + at::randn({B}) * 0.3;
    old_values = out.value + at::randn({B}) * 0.4;
  }
  const at::Tensor adv = at::randn({B}) * 3, returns = at::randn({B}) * 2;
  for (bool clip_vloss : {true, false}) {
    ppo::LossOptions o = default_loss();
    o.clip_vloss = clip_vloss;
    o.ent_coef = 0.05;
    const ppo::FastLoss f = fast->loss_and_grad(obs.data_ptr<float>(), actions.data_ptr<int64_t>(),
                                                old_logprobs.data_ptr<float>(), adv.data_ptr<float>(),
                                                returns.data_ptr<float>(), old_values.data_ptr<float>(), B, o);
    const at::Tensor fast_grad = flat.grad().clone();
    flat.grad().zero_();
    const auto out = net->forward(obs);
    const ppo::LossTerms t = ppo::ppo_loss(out.logits, out.value, actions, old_logprobs, adv, returns, old_values, o);
    t.loss.backward();
    EXPECT_NEAR(f.loss, t.loss.item<double>(), 1e-4);
    EXPECT_NEAR(f.pg_loss, t.pg_loss.item<double>(), 1e-4);
    EXPECT_NEAR(f.v_loss, t.v_loss.item<double>(), 1e-4);
    EXPECT_NEAR(f.entropy, t.entropy.item<double>(), 1e-5);
    EXPECT_NEAR(f.clipfrac, t.clipfrac.item<double>(), 1e-6);
    EXPECT_GT(f.clipfrac, 0.0);
    EXPECT_NEAR(f.approx_kl, t.approx_kl.item<double>(), 1e-5);
    EXPECT_LT((fast_grad - flat.grad()).abs().max().item<double>(), 1e-4 * (1 + flat.grad().abs().max().item<double>()));
  }
}

std::string config_error(const json& j) {
  try {
    ppo::parse_config(j);
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

TEST(PpoConfig, DefaultsAreCleanRlCartPole) {
  const ppo::Config c = ppo::parse_config(json::object());
  EXPECT_EQ(c.env, "cartpole");
  EXPECT_EQ(c.num_envs, 4);
  EXPECT_EQ(c.num_steps, 128);
  EXPECT_EQ(c.batch_size(), 512);
  EXPECT_EQ(c.minibatch_size(), 128);
  EXPECT_EQ(c.num_iterations(), 976);
  EXPECT_DOUBLE_EQ(c.lr, 2.5e-4);
  EXPECT_EQ(c.network_kind(), "mlp");
  EXPECT_FALSE(c.target_kl.has_value());
  EXPECT_EQ(ppo::parse_config({{"env", "puzzle"}}).network_kind(), "recursive");
  EXPECT_DOUBLE_EQ(*ppo::parse_config({{"target_kl", 0.02}}).target_kl, 0.02);
}

TEST(PpoConfig, ErrorsNameTheField) {
  EXPECT_NE(config_error({{"num_minibatches", 3}}).find("'num_minibatches'"), std::string::npos);
  EXPECT_NE(config_error({{"lr", "fast"}}).find("'lr'"), std::string::npos);
  EXPECT_NE(config_error({{"env", "pong"}}).find("'env'"), std::string::npos);
  EXPECT_NE(config_error({{"network", {{"kind", "resnet"}}}}).find("'network.kind'"), std::string::npos);
  EXPECT_NE(config_error({{"network", {{"num_heads", 3}}}}).find("'network.num_heads'"), std::string::npos);
  EXPECT_NE(config_error({{"puzzle", {{"min_moves", 5}, {"max_moves", 2}}}}).find("'puzzle.max_moves'"),
            std::string::npos);
  EXPECT_NE(config_error({{"total_timesteps", 100}}).find("'total_timesteps'"), std::string::npos);
  EXPECT_NE(config_error({{"puzzle", {{"curriculum", {{"window", "x"}}}}}}).find("'puzzle.curriculum.window'"),
            std::string::npos);
  // The schema and defaults are valid JSON and agree on the fields.
  const json schema = json::parse(ppo::config_schema_json());
  const json defaults = json::parse(ppo::config_defaults_json());
  for (const auto& [key, value] : defaults.items()) EXPECT_TRUE(schema["properties"].contains(key)) << key;
  const json presets = json::parse(ppo::presets_json());
  for (const auto& [name, preset] : presets.items()) {
    json p = preset;
    p.erase("$parameters");
    EXPECT_NO_THROW(ppo::parse_config(p)) << name;
  }
}

// Levels are puzzles, a share mixes levels in, and each network takes its own environment.
// Every bound the table declares for the puzzle generator is one the generator accepts, and one
// step past it the table refuses: a config that passes the host's check never fails when
// training starts.
TEST(PpoConfig, ThePuzzleBoundsOfTheTableAreTheGenerators) {
  const json schema = json::parse(ppo::config_schema_json())["properties"]["puzzle"]["properties"];
  auto bound = [&](const char* field, const char* key) { return schema[field][key].get<double>(); };
  const int max_size = static_cast<int>(bound("size", "maximum"));
  const std::vector<json> edges = {
      {{"size", bound("size", "minimum")}, {"tiles", 1}, {"blocked_density", 0.0}},
      {{"size", max_size}, {"tiles", bound("tiles", "maximum")}, {"blocked_density", bound("blocked_density", "maximum")}},
      {{"size", 4}, {"tiles", 8}, {"min_moves", bound("min_moves", "minimum")}, {"max_moves", 1}}};
  for (const json& puzzle : edges) {
    const ppo::Config c = ppo::parse_config({{"env", "puzzle"}, {"puzzle", puzzle}});
    EXPECT_NO_THROW(ppo::generator_spec(c)) << puzzle.dump();
  }
  for (const auto& [field, past] : std::vector<std::pair<std::string, json>>{
           {"size", max_size + 1}, {"tiles", bound("tiles", "maximum") + 1},
           {"blocked_density", bound("blocked_density", "maximum") + 0.01}, {"size", bound("size", "minimum") - 1}}) {
    EXPECT_THROW(ppo::parse_config({{"env", "puzzle"}, {"puzzle", {{field, past}}}}), mlh::Error) << field << past;
  }
  // The rule between two fields is the generator's too: at most half the cells hold tiles.
  EXPECT_NO_THROW(ppo::generator_spec(ppo::parse_config({{"env", "puzzle"}, {"puzzle", {{"size", 3}, {"tiles", 4}}}})));
  EXPECT_THROW(ppo::parse_config({{"env", "puzzle"}, {"puzzle", {{"size", 3}, {"tiles", 5}}}}), mlh::Error);
}

TEST(PpoConfig, LevelsNeedPuzzlesAShareNeedsLevelsAndMlpIsCartPolesAlone) {
  EXPECT_NE(config_error({{"puzzle", {{"train_levels", "mine.txt"}}}}).find("'puzzle.train_levels'"),
            std::string::npos);
  EXPECT_NE(config_error({{"env", "puzzle"}, {"puzzle", {{"train_levels_share", 0.5}}}})
                .find("'puzzle.train_levels_share'"),
            std::string::npos);
  for (double share : {0.0, 1.5})
    EXPECT_NE(config_error({{"env", "puzzle"}, {"puzzle", {{"train_levels", "x"}, {"train_levels_share", share}}}})
                  .find("'puzzle.train_levels_share'"),
              std::string::npos)
        << share;
  const std::string mlp = config_error({{"env", "puzzle"}, {"network", {{"kind", "mlp"}}}});
  EXPECT_NE(mlp.find("'network.kind'"), std::string::npos) << mlp;
  EXPECT_NE(mlp.find("use recursive"), std::string::npos) << mlp;
  EXPECT_NE(mlp.find("resnet"), std::string::npos) << mlp;
  EXPECT_NE(config_error({{"network", {{"kind", "recursive"}}}}).find("use mlp"), std::string::npos);
  const ppo::Config c = ppo::parse_config({{"env", "puzzle"}, {"puzzle", {{"train_levels", "mine.txt"}}}});
  EXPECT_EQ(c.puzzle.train_levels, "mine.txt");
  EXPECT_DOUBLE_EQ(c.puzzle.train_levels_share, 1.0);
}

}  // namespace

// The update's minibatches through the step graph, with a recorder that runs on the CPU
// (fake_graph_recorder.hpp): each minibatch copied into the graph's static tensors, Adam with
// its count and annealed learning rate on the device, one capture for the run; the network
// ends where the eager update's does, with the same statistics. On a GPU the same code
// captures CUDA graphs (the plan's cuda_graphs).
TEST(PpoUpdate, MinibatchesThroughTheStepGraphUpdateAsTheEagerStep) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // the same reduction order in both updates
  const ppo::NetworkSpec spec = cartpole_mlp_spec();
  torch::manual_seed(11);
  auto eager_net = ppo::make_network(spec);
  torch::manual_seed(11);
  auto graphed_net = ppo::make_network(spec);
  ppo::UpdateOptions o = ppo::update_options(ppo::parse_config(json::object()));
  o.num_minibatches = 2;
  o.update_epochs = 3;
  ppo::PpoUpdater eager(eager_net, 1e-2, o, at::kCPU, /*use_fast=*/false);
  ppo::PpoUpdater graphed(graphed_net, 1e-2, o, at::kCPU, /*use_fast=*/false);
  std::vector<std::string> log;
  graphed.use_graph(
      mlh::rt::StepGraph(std::make_unique<FakeGraphRecorder>(), [&](const std::string& line) { log.push_back(line); }));
  std::mt19937_64 eager_rng(3), graphed_rng(3);
  for (int iteration = 1; iteration <= 3; ++iteration) {
    const ppo::Batch b = cartpole_batch(16);
    const double lr = ppo::annealed_lr(1e-2, iteration, 3);
    eager.set_lr(lr);
    graphed.set_lr(lr);
    const ppo::UpdateStats a = eager.update(b, eager_rng), g = graphed.update(b, graphed_rng);
    EXPECT_EQ(g.minibatches, a.minibatches);
    for (auto [x, y, name] : {std::tuple{a.pg_loss, g.pg_loss, "pg_loss"}, {a.v_loss, g.v_loss, "v_loss"},
                              {a.entropy, g.entropy, "entropy"}, {a.approx_kl, g.approx_kl, "approx_kl"},
                              {a.grad_norm, g.grad_norm, "grad_norm"}, {a.clipfrac, g.clipfrac, "clipfrac"}})
      EXPECT_NEAR(y, x, 1e-5 * (1 + std::abs(x))) << name << " in update " << iteration;
  }
  EXPECT_TRUE(at::allclose(graphed.parameters().flat(), eager.parameters().flat(), 1e-5, 1e-7))
      << (graphed.parameters().flat() - eager.parameters().flat()).abs().max().item<double>();
  EXPECT_EQ(graphed.graph().captures(), 1) << "the annealed rate is read from the device: one capture";
  EXPECT_EQ(graphed.graph().replays(), 3 * 3 * 2 - 3);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("captured (minibatch of 8)"), std::string::npos) << log[0];
  at::set_num_threads(threads);
}
