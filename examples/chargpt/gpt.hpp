// A GPT as in nanoGPT (Karpathy): token and position embeddings, pre-norm blocks of causal
// self-attention and a GELU MLP, a final LayerNorm and a language-model head tied to the
// token embedding.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace chargpt {

struct GptConfig {
  int64_t vocab_size = 0, block_size = 64, n_layer = 2, n_head = 4, n_embd = 128;
  double dropout = 0.0;
};

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const GptConfig& c);
  at::Tensor forward(const at::Tensor& x);

 private:
  at::Tensor attention(const at::Tensor& x);
  int64_t n_head_;
  torch::nn::LayerNorm ln_1_{nullptr}, ln_2_{nullptr};
  torch::nn::Linear c_attn_{nullptr}, attn_proj_{nullptr}, c_fc_{nullptr}, mlp_proj_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(Block);

class GptImpl : public torch::nn::Module {
 public:
  explicit GptImpl(const GptConfig& c);
  // tokens [B, T] (T <= block_size) -> logits [B, T, vocab]
  at::Tensor forward(const at::Tensor& tokens);
  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
  torch::nn::Embedding wte_{nullptr}, wpe_{nullptr};
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace chargpt
