// The prototypical loss: prototypes are the mean support embeddings of each class; a query's
// logits are the negative distances to the prototypes (squared Euclidean, or cosine:
// scale * cosine similarity); the loss is the NLL of their log-softmax.
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

namespace protonet {

enum class Distance { kEuclidean, kCosine };
Distance parse_distance(const std::string& name);  // "euclidean" or "cosine"

// support: N*K x D, class-major (K rows per class) -> N x D.
at::Tensor prototypes(const at::Tensor& support, int64_t way);

// query: M x D, protos: N x D -> M x N logits (-squared distance, or scale * cosine).
at::Tensor proto_logits(const at::Tensor& query, const at::Tensor& protos, Distance distance,
                        double cosine_scale = 10.0);

struct ProtoLoss {
  at::Tensor loss;           // scalar, differentiable
  at::Tensor log_probs;      // M x N
  // The share of queries whose nearest prototype is their class: a scalar float tensor on the
  // loss's device, read when needed (reading it waits for the step; a captured step cannot).
  at::Tensor accuracy;
};

// targets: M int64 class indices in [0, N).
ProtoLoss proto_loss(const at::Tensor& support, const at::Tensor& query, const at::Tensor& targets,
                     int64_t way, Distance distance, double cosine_scale = 10.0);

}  // namespace protonet
