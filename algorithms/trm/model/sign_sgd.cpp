// Sign SGD over the sparse puzzle embedding (see sign_sgd.hpp).
#include "model/sign_sgd.hpp"

#include <mlh/runtime/distributed.hpp>

#include <string>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

namespace trm {

SignSgd::SignSgd(SparseEmbeddingImpl& embedding, double lr, double weight_decay)
    : embedding_(embedding), lr_(lr), weight_decay_(weight_decay) {
  if (!(lr >= 0)) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "SignSgd: lr must be >= 0, got " + std::to_string(lr));
  if (!(weight_decay >= 0))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "SignSgd: weight_decay must be >= 0, got " + std::to_string(weight_decay));
}

bool SignSgd::step(double lr) {
  if (!(lr >= 0)) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "SignSgd: lr must be >= 0, got " + std::to_string(lr));
  // Every micro-batch's rows that got a gradient.
  std::vector<at::Tensor> grads, id_parts;
  for (const auto& g : embedding_.gathered())
    if (g.weights.grad().defined()) {
      grads.push_back(g.weights.grad());
      id_parts.push_back(g.ids.reshape({-1}));
    }
  if (grads.empty()) return false;
  at::NoGradGuard no_grad;
  at::Tensor grad_rows = grads.size() == 1 ? grads[0] : at::cat(grads);
  at::Tensor local_ids = id_parts.size() == 1 ? id_parts[0] : at::cat(id_parts);
  if (dist_ && dist_->enabled()) {
    grad_rows = at::cat(dist_->all_gather(grad_rows.contiguous()));
    local_ids = at::cat(dist_->all_gather(local_ids.contiguous()));
  }
  // Sum the gradients of repeated identifiers: one update per row of the table.
  const auto unique = at::_unique(local_ids, /*sorted=*/true, /*return_inverse=*/true);
  const at::Tensor& ids = std::get<0>(unique);
  const at::Tensor& inverse = std::get<1>(unique);
  at::Tensor grad = at::zeros({ids.size(0), grad_rows.size(1)}, grad_rows.options());
  grad.index_add_(0, inverse, grad_rows);
  at::Tensor& weights = embedding_.weights;
  const at::Tensor rows = weights.index_select(0, ids);
  const at::Tensor updated = rows * (1.0 - lr * weight_decay_) - lr * at::sign(grad).to(rows.scalar_type());
  weights.index_copy_(0, ids, updated);
  return true;
}

void SignSgd::zero_grad() { embedding_.clear_gathered(); }

}  // namespace trm
