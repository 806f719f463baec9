#include "gpt.hpp"

#include <cmath>

#include <ATen/ATen.h>
#include <torch/nn/init.h>

namespace chargpt {

BlockImpl::BlockImpl(const GptConfig& c) : n_head_(c.n_head) {
  ln_1_ = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd})));
  c_attn_ = register_module("c_attn", torch::nn::Linear(c.n_embd, 3 * c.n_embd));
  attn_proj_ = register_module("attn_proj", torch::nn::Linear(c.n_embd, c.n_embd));
  ln_2_ = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd})));
  c_fc_ = register_module("c_fc", torch::nn::Linear(c.n_embd, 4 * c.n_embd));
  mlp_proj_ = register_module("mlp_proj", torch::nn::Linear(4 * c.n_embd, c.n_embd));
  dropout_ = register_module("dropout", torch::nn::Dropout(c.dropout));
  // GPT-2's scaled init of the residual projections.
  const double std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  for (auto* proj : {&attn_proj_, &mlp_proj_}) torch::nn::init::normal_((*proj)->weight, 0.0, std);
}

at::Tensor BlockImpl::attention(const at::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / n_head_;
  auto qkv = c_attn_->forward(x).split(C, 2);
  auto heads = [&](const at::Tensor& t) { return t.view({B, T, n_head_, hs}).transpose(1, 2); };
  const at::Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  at::Tensor att = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hs));
  const at::Tensor future = at::ones({T, T}, x.options().dtype(at::kBool)).triu(1);
  att = dropout_->forward(at::softmax(att.masked_fill(future, -INFINITY), -1));
  const at::Tensor y = at::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C});
  return dropout_->forward(attn_proj_->forward(y));
}

at::Tensor BlockImpl::forward(const at::Tensor& x) {
  at::Tensor h = x + attention(ln_1_->forward(x));
  return h + dropout_->forward(mlp_proj_->forward(at::gelu(c_fc_->forward(ln_2_->forward(h)))));
}

GptImpl::GptImpl(const GptConfig& c) : config_(c) {
  wte_ = register_module("wte", torch::nn::Embedding(c.vocab_size, c.n_embd));
  wpe_ = register_module("wpe", torch::nn::Embedding(c.block_size, c.n_embd));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) blocks_->push_back(Block(c));
  ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd})));
  torch::nn::init::normal_(wte_->weight, 0.0, 0.02);
  torch::nn::init::normal_(wpe_->weight, 0.0, 0.02);
}

at::Tensor GptImpl::forward(const at::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  const at::Tensor positions = at::arange(T, tokens.options().dtype(at::kLong));
  at::Tensor x = wte_->forward(tokens) + wpe_->forward(positions);
  for (const auto& block : *blocks_) x = block->as<Block>()->forward(x);
  // The head shares the token embedding's weights (weight tying), as nanoGPT does.
  return at::linear(ln_f_->forward(x), wte_->weight);
}

}  // namespace chargpt
