// The sparse puzzle embedding (see sparse_embedding.hpp).
#include "model/sparse_embedding.hpp"

#include <ATen/ATen.h>

#include "model/layers.hpp"

namespace trm {

SparseEmbeddingImpl::SparseEmbeddingImpl(int64_t num_embeddings, int64_t dim, double init_std) {
  at::Tensor w = at::empty({num_embeddings, dim});
  trunc_normal_(w, init_std);
  weights = register_buffer("weights", w);
}

at::Tensor SparseEmbeddingImpl::forward(const at::Tensor& input) {
  const at::Tensor ids = (input.dim() > 1 ? input.squeeze(-1) : input).to(at::kLong);
  if (!is_training() || !at::GradMode::is_enabled()) return weights.index_select(0, ids);
  gathered_.push_back({ids, weights.index_select(0, ids).detach().requires_grad_(true)});
  return gathered_.back().weights;
}

}  // namespace trm
