// chargpt: a character-level GPT in the style of nanoGPT, written as a third party would
// write an mlhost algorithm plugin: against the installed SDK only (mlh/plugin.hpp and the
// training runtime mlh/runtime/*), built out of tree with find_package(mlhost).
//
//   train   learns next-character prediction on `text_file` (90% train, 10% validation);
//           the plan's precision (autocast and, for fp16, the gradient scaler) and batch
//           size; on a TrainingSession: checkpoints every `checkpoint_every` steps, the best by
//           validation loss; --resume continues; Ctrl-C saves and stops; data-parallel over
//           the ranks of --nproc-per-node; model.safetensors at the end
//   sample  loads the best checkpoint and prints `max_new_tokens` characters continuing
//           `prompt`, with temperature and top-k
//
// The vocabulary (the text's distinct characters, UTF-8 code points) is saved in each
// checkpoint, so sampling needs only the run folder.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include <ATen/ATen.h>
#include <mlh/command_table.hpp>
#include <mlh/plugin.hpp>
#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/seed.hpp>
#include <mlh/runtime/throughput.hpp>
#include <mlh/runtime/training_session.hpp>
#include <mlh/runtime/trained_run.hpp>
#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "gpt.hpp"

namespace {

using nlohmann::json;

const char* kSchema = R"({
  "type": "object", "additionalProperties": false,
  "properties": {
    "text_file": {"type": "string", "description": "UTF-8 text to learn, for train"},
    "block_size": {"type": "integer", "minimum": 2, "maximum": 4096, "description": "context length"},
    "n_layer": {"type": "integer", "minimum": 1, "maximum": 48},
    "n_head": {"type": "integer", "minimum": 1, "maximum": 64},
    "n_embd": {"type": "integer", "minimum": 8, "maximum": 4096, "description": "a multiple of n_head"},
    "dropout": {"type": "number", "minimum": 0, "maximum": 0.9},
    "batch_size": {"type": "integer", "minimum": 0, "description": "0: the plan's batch size"},
    "max_iters": {"type": "integer", "minimum": 1},
    "lr": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "eval_interval": {"type": "integer", "minimum": 1},
    "eval_iters": {"type": "integer", "minimum": 1},
    "checkpoint_every": {"type": "integer", "minimum": 1},
    "seed": {"type": "integer"},
    "prompt": {"type": "string", "description": "sample: text to continue"},
    "max_new_tokens": {"type": "integer", "minimum": 1, "maximum": 100000},
    "temperature": {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
    "top_k": {"type": "integer", "minimum": 0, "description": "0: all characters"}
  }
})";

const char* kDefaults = R"({"text_file": "", "block_size": 64, "n_layer": 2, "n_head": 4, "n_embd": 128,
  "dropout": 0.0, "batch_size": 0, "max_iters": 500, "lr": 0.001, "eval_interval": 100, "eval_iters": 10,
  "checkpoint_every": 100, "seed": 1337, "prompt": "\n", "max_new_tokens": 300, "temperature": 0.8, "top_k": 0})";

// The plan's preset picks the model size; "$parameters" is what the host prints in the plan.
const char* kPresets = R"({
  "full": {"n_layer": 6, "n_head": 6, "n_embd": 384, "block_size": 256, "$parameters": 10700000},
  "reduced": {"n_layer": 2, "n_head": 4, "n_embd": 128, "block_size": 64, "$parameters": 410000}})";

// UTF-8 text split into characters (code points, kept as their UTF-8 bytes).
std::vector<std::string> split_characters(const std::string& text, const std::string& file) {
  std::vector<std::string> chars;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size())
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "'" + file + "' is not UTF-8 text (byte " + std::to_string(i) + ")");
    chars.push_back(text.substr(i, n));
    i += n;
  }
  return chars;
}

struct Corpus {
  std::vector<std::string> vocab;  // index -> character
  at::Tensor train, val;           // token ids (int64)
};

Corpus load_corpus(const std::string& file, int64_t block_size) {
  if (file.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'text_file' is required for train");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw mlh::Error(MLH_ERR_IO, "cannot read text_file '" + file + "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<std::string> chars = split_characters(text, file);
  Corpus c;
  c.vocab = chars;
  std::sort(c.vocab.begin(), c.vocab.end());
  c.vocab.erase(std::unique(c.vocab.begin(), c.vocab.end()), c.vocab.end());
  std::vector<int64_t> ids(chars.size());
  for (size_t i = 0; i < chars.size(); ++i)
    ids[i] = std::lower_bound(c.vocab.begin(), c.vocab.end(), chars[i]) - c.vocab.begin();
  const auto n = static_cast<int64_t>(ids.size()), n_train = n * 9 / 10;
  if (n_train <= block_size + 1 || n - n_train <= block_size + 1)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "text_file '" + file + "' has " + std::to_string(n) +
                                                   " characters: too short for block_size " + std::to_string(block_size));
  const at::Tensor all = at::tensor(ids, at::kLong);
  c.train = all.narrow(0, 0, n_train);
  c.val = all.narrow(0, n_train, n - n_train);
  return c;
}

// A random batch of windows: inputs and the same windows shifted by one character.
std::pair<at::Tensor, at::Tensor> get_batch(const at::Tensor& data, int64_t batch, int64_t block, at::Device device) {
  const at::Tensor starts = at::randint(data.size(0) - block - 1, {batch}, at::kLong);
  const at::Tensor offsets = at::arange(block, at::kLong);
  const at::Tensor index = starts.unsqueeze(1) + offsets.unsqueeze(0);
  return {data.index_select(0, index.flatten()).view({batch, block}).to(device),
          data.index_select(0, (index + 1).flatten()).view({batch, block}).to(device)};
}

chargpt::GptConfig model_config(const json& cfg, int64_t vocab_size) {
  chargpt::GptConfig g;
  g.vocab_size = vocab_size;
  g.block_size = cfg.at("block_size");
  g.n_layer = cfg.at("n_layer");
  g.n_head = cfg.at("n_head");
  g.n_embd = cfg.at("n_embd");
  g.dropout = cfg.at("dropout");
  if (g.n_embd % g.n_head != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'n_embd' (" + std::to_string(g.n_embd) +
                                                   ") must be a multiple of 'n_head' (" + std::to_string(g.n_head) + ")");
  return g;
}

void train(mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan) {
  const Corpus corpus = load_corpus(cfg.at("text_file"), cfg.at("block_size"));
  mlh::rt::TrainingSession session(ctx, plan, {3, mlh::rt::Goal::Minimize, cfg.at("checkpoint_every").get<int64_t>()});
  mlh::rt::Distributed& dist = session.dist();
  mlh::rt::seed_everything(dist.seed_for_rank(cfg.at("seed")));  // each rank its own batches
  chargpt::Gpt model(model_config(cfg, static_cast<int64_t>(corpus.vocab.size())));
  model->to(plan.device);
  session.init_weights(*model);   // --init-from
  dist.broadcast_module(*model);  // rank 0's initial weights everywhere
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(cfg.at("lr").get<double>()));
  mlh::rt::GradScaler scaler(65536.0, 2.0, 0.5, 2000, plan.precision == mlh::rt::Precision::kFp16);
  const int64_t block = cfg.at("block_size"), iters = session.step_limit(cfg.at("max_iters"));  // --max-steps
  const int64_t batch = cfg.at("batch_size").get<int64_t>() > 0 ? cfg.at("batch_size").get<int64_t>()
                                                                 : std::min<int64_t>(plan.batch_size.value_or(32), 64);
  int64_t step = 0;
  auto state = [&] {  // what a checkpoint holds; the vocabulary lets sample rebuild the model
    mlh::rt::TrainingState s;
    s.add("model", *model).add("optimizer", optimizer);
    s.values = {{"step", step}, {"vocab", corpus.vocab}, {"scaler", scaler.state()}};
    return s;
  };
  auto loss_of = [&](const at::Tensor& x, const at::Tensor& y) {
    mlh::rt::AutocastScope autocast(plan.precision, plan.device);
    const at::Tensor logits = model->forward(x).to(at::kFloat);
    return at::cross_entropy_loss(logits.view({-1, logits.size(-1)}), y.view({-1}));
  };
  auto validation_loss = [&] {  // the same on every rank: it ranks the checkpoints
    torch::NoGradGuard no_grad;
    model->eval();
    double sum = 0;
    for (int64_t i = 0; i < cfg.at("eval_iters"); ++i) {
      auto [x, y] = get_batch(corpus.val, batch, block, plan.device);
      sum += loss_of(x, y).item<double>();
    }
    model->train();
    return dist.mean(sum / cfg.at("eval_iters").get<double>());
  };

  mlh::rt::TrainingState saved = state();
  session.resume(saved, [&](const mlh::rt::LoadedCheckpoint& checkpoint) {
    step = checkpoint.values.at("step");
    scaler.load_state(checkpoint.values.at("scaler"));
    return "at step " + std::to_string(step);
  });
  ctx.info("vocabulary " + std::to_string(corpus.vocab.size()) + " characters, " +
           std::to_string(corpus.train.size(0)) + " training characters, batch " + std::to_string(batch) + " x " +
           std::to_string(block) + (dist.world_size() > 1 ? " x " + std::to_string(dist.world_size()) + " ranks" : "") +
           ", precision " + mlh::rt::to_string(plan.precision));
  mlh::rt::ThroughputMeter speed(ctx);
  double val = validation_loss();
  ctx.metric("val/loss", val, step);
  while (step < iters) {
    auto [x, y] = get_batch(corpus.train, batch, block, plan.device);
    optimizer.zero_grad();
    const at::Tensor loss = loss_of(x, y);
    scaler.scale(loss).backward();
    dist.average_gradients(model->parameters());
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    ++step;
    speed.record_step(batch * block, step);
    ctx.metric("train/loss", loss.item<double>(), step);
    ctx.progress(step, iters, "steps");
    if (step % cfg.at("eval_interval").get<int64_t>() == 0 || step == iters) {
      val = validation_loss();
      ctx.metric("val/loss", val, step);
    }
    session.after_step(step, [&] { session.save(state(), step, val); }, /*save_now=*/step == iters);
  }
  speed.flush();
  session.export_weights(*model);
  session.finish(*model, {{"val_loss", val}, {"steps", iters}, {"vocab_size", corpus.vocab.size()}});
}

void sample(mlh::RunContext& ctx, const json& cfg, const mlh::rt::RuntimePlan& plan) {
  mlh::rt::seed_everything(cfg.at("seed").get<uint64_t>());  // the same text for the same seed
  // The vocabulary, and so the model's shape, come from the checkpoint: read it first.
  mlh::rt::TrainingState probe;
  const std::vector<std::string> vocab = mlh::rt::load_trained(ctx, probe, at::kCPU).values.at("vocab");
  chargpt::Gpt model(model_config(cfg, static_cast<int64_t>(vocab.size())));
  mlh::rt::TrainingState s;
  s.add("model", *model);
  const mlh::rt::LoadedCheckpoint loaded = mlh::rt::load_trained(ctx, s, plan.device);
  model->eval();

  std::vector<int64_t> context;
  for (const std::string& ch : split_characters(cfg.at("prompt"), "prompt")) {
    auto it = std::lower_bound(vocab.begin(), vocab.end(), ch);
    if (it == vocab.end() || *it != ch)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'prompt': character '" + ch + "' is not in the vocabulary");
    context.push_back(it - vocab.begin());
  }
  if (context.empty()) context.push_back(0);
  torch::NoGradGuard no_grad;
  const int64_t block = cfg.at("block_size"), top_k = cfg.at("top_k");
  const double temperature = cfg.at("temperature");
  std::string out = cfg.at("prompt");
  for (int64_t i = 0; i < cfg.at("max_new_tokens").get<int64_t>(); ++i) {
    const int64_t from = std::max<int64_t>(0, static_cast<int64_t>(context.size()) - block);
    const at::Tensor x = at::tensor(std::vector<int64_t>(context.begin() + from, context.end()), at::kLong)
                             .unsqueeze(0).to(plan.device);
    at::Tensor logits = model->forward(x).select(1, x.size(1) - 1).squeeze(0).to(at::kFloat) / temperature;
    if (top_k > 0 && top_k < logits.size(0)) {
      const at::Tensor kth = std::get<0>(logits.topk(top_k)).select(0, top_k - 1);
      logits = logits.masked_fill(logits < kth, -INFINITY);
    }
    const int64_t next = at::multinomial(at::softmax(logits, 0), 1).item<int64_t>();
    context.push_back(next);
    out += vocab[static_cast<size_t>(next)];
  }
  ctx.info("sample from " + loaded.path + ":\n" + out);
  ctx.summary(json{{"text", out}, {"checkpoint", loaded.path}}.dump());
}

const mlh::CommandTable<mlh::RunContext&, const json&, const mlh::rt::RuntimePlan&>& commands() {
  static const mlh::CommandTable<mlh::RunContext&, const json&, const mlh::rt::RuntimePlan&> table{{"train", train},
                                                                                                {"sample", sample}};
  return table;
}

class CharGpt : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {  // summary, commands, config schema, defaults, presets
    return {"character-level GPT (nanoGPT style): train on a text file, sample text", commands().names(), kSchema,
            kDefaults, kPresets};
  }

  // Each command seeds its random streams itself (train: each rank its own).
  void run(mlh::RunContext& ctx) override {
    const mlh::rt::RuntimePlan plan = mlh::rt::RuntimePlan::parse(ctx.plan_json());
    mlh::rt::apply_plan(plan);
    commands().run(ctx.command(), ctx, json::parse(ctx.config_json()), plan);
  }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(CharGpt)
