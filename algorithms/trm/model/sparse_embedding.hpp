// The per-puzzle embedding as the reference's CastedSparseEmbedding: the table is a buffer
// (so no dense optimizer, EMA or weight decay ever sees it), and in training each forward
// gathers the batch's rows into a fresh leaf tensor that requires grad. After backward,
// SignSgd (sign_sgd.hpp) reads that leaf's gradient and updates only those rows.
#pragma once

#include <vector>

#include <cstdint>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace trm {

class SparseEmbeddingImpl : public torch::nn::Module {
 public:
  // weights [num_embeddings, dim], trunc-normal std init_std (the reference uses 0: zeros).
  SparseEmbeddingImpl(int64_t num_embeddings, int64_t dim, double init_std = 0.0);

  // ids [B] (or [B, 1]) -> rows [B, dim]. In training mode with grad mode on, the rows are a
  // new leaf that requires grad, kept with its ids until clear_gathered(): a step in
  // micro-batches (oom_backoff.hpp) calls forward once per micro-batch, and SignSgd updates
  // the rows of all of them (the ACT forward's extra no-grad pass records nothing).
  // Otherwise (eval, or no grad) plain rows of the table, recording nothing.
  at::Tensor forward(const at::Tensor& ids);

  struct Gathered {
    at::Tensor ids;      // int64 [B]
    at::Tensor weights;  // the leaf [B, dim]
  };
  const std::vector<Gathered>& gathered() const { return gathered_; }
  void clear_gathered() { gathered_.clear(); }

  at::Tensor weights;  // the buffer "weights"
  // The last training forward's leaf and ids (undefined before one).
  at::Tensor local_weights() const { return gathered_.empty() ? at::Tensor() : gathered_.back().weights; }
  at::Tensor local_ids() const { return gathered_.empty() ? at::Tensor() : gathered_.back().ids; }

 private:
  std::vector<Gathered> gathered_;
};
TORCH_MODULE(SparseEmbedding);

}  // namespace trm
