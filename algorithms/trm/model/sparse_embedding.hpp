// The per-puzzle embedding as the reference's CastedSparseEmbedding: the table is a buffer
// (so no dense optimizer, EMA or weight decay ever sees it), and in training each forward
// gathers the batch's rows into a fresh leaf tensor that requires grad. After backward,
// SignSgd (sign_sgd.hpp) reads that leaf's gradient and updates only those rows.
#pragma once

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
  // new leaf (local_weights()) and local_ids() the ids, replacing the previous step's: call
  // forward once per optimizer step (the ACT forward's extra no-grad pass does not count).
  // Otherwise (eval, or no grad) plain rows of the table, recording nothing.
  at::Tensor forward(const at::Tensor& ids);

  at::Tensor weights;  // the buffer "weights"
  const at::Tensor& local_weights() const { return local_weights_; }  // undefined before a training forward
  const at::Tensor& local_ids() const { return local_ids_; }

 private:
  at::Tensor local_weights_, local_ids_;
};
TORCH_MODULE(SparseEmbedding);

}  // namespace trm
