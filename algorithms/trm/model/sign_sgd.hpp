// The puzzle embedding's optimizer, as the reference's CastedSparseEmbeddingSignSGD_Distributed
// (one process): after backward, the gradients of the batch's gathered rows are summed per
// unique puzzle identifier and only those rows move:
//   w[ids] = w[ids] * (1 - lr * weight_decay) - lr * sign(summed grad)
// (sign SGD with decoupled weight decay; close to Adam for such sparse gradients). It has no
// moments: a checkpoint needs only the model's state_dict (the table is a buffer of it) and
// the options, which the trainer's config already holds.
#pragma once

#include <ATen/Tensor.h>

#include "model/sparse_embedding.hpp"

namespace mlh::rt {
class Distributed;
}

namespace trm {

class SignSgd {
 public:
  // Keeps a reference to `embedding`, which must outlive this optimizer. lr and weight_decay
  // must be >= 0 (mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming them).
  SignSgd(SparseEmbeddingImpl& embedding, double lr, double weight_decay);

  // Applies the update with learning rate `lr` (the scheduled one) to the rows gathered by
  // the training forwards since zero_grad() (one per micro-batch); does nothing when none got
  // a gradient. Returns whether rows were updated.
  bool step(double lr);
  bool step() { return step(lr_); }
  // Forgets the gathered rows and their gradients (the next step gathers its own).
  void zero_grad();

  // Distributed: every rank's rows and gradients are gathered before the update, as the
  // reference's _Distributed optimizer does, so all ranks move the same rows the same way.
  void share_with(mlh::rt::Distributed& dist) { dist_ = &dist; }
  double lr() const { return lr_; }
  double weight_decay() const { return weight_decay_; }

 private:
  SparseEmbeddingImpl& embedding_;
  double lr_, weight_decay_;
  mlh::rt::Distributed* dist_ = nullptr;
};

}  // namespace trm
