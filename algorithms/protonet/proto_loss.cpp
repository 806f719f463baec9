#include "proto_loss.hpp"

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>

namespace protonet {

Distance parse_distance(const std::string& name) {
  if (name == "euclidean") return Distance::kEuclidean;
  if (name == "cosine") return Distance::kCosine;
  throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "unknown distance '" + name + "' (euclidean or cosine)");
}

at::Tensor prototypes(const at::Tensor& support, int64_t way) {
  return support.reshape({way, -1, support.size(-1)}).mean(1);
}

at::Tensor proto_logits(const at::Tensor& query, const at::Tensor& protos, Distance distance,
                        double cosine_scale) {
  const at::Tensor q = query.to(at::kFloat), p = protos.to(at::kFloat);
  if (distance == Distance::kCosine) {
    const at::Tensor qn = q / q.norm(2, {1}, true).clamp_min(1e-8);
    const at::Tensor pn = p / p.norm(2, {1}, true).clamp_min(1e-8);
    return at::mm(qn, pn.t()) * cosine_scale;
  }
  // ||q - p||^2 = ||q||^2 - 2 q.p + ||p||^2, without the M x N x D difference tensor.
  const at::Tensor d = q.pow(2).sum(1, true) - 2 * at::mm(q, p.t()) + p.pow(2).sum(1).unsqueeze(0);
  return -d.clamp_min(0);
}

ProtoLoss proto_loss(const at::Tensor& support, const at::Tensor& query, const at::Tensor& targets,
                     int64_t way, Distance distance, double cosine_scale) {
  ProtoLoss r;
  const at::Tensor logits = proto_logits(query, prototypes(support, way), distance, cosine_scale);
  r.log_probs = at::log_softmax(logits, 1);
  r.loss = at::nll_loss(r.log_probs, targets);
  r.accuracy = r.log_probs.argmax(1).eq(targets).to(at::kFloat).mean();
  return r;
}

}  // namespace protonet
