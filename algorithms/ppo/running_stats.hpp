// Running mean and variance (Gymnasium's RunningMeanStd): the normalization statistics of
// observations (networks/make_network.cpp) and of discounted returns (trainer.cpp's
// RewardScaler), merged a batch at a time with Chan et al.'s parallel formula.
#pragma once

namespace ppo {

struct RunningMeanStd {
  double mean = 0, var = 1;
  double count = 1e-4;  // the prior (0, 1) weighs almost nothing: the first batch replaces it

  // Merges a batch of `n` values whose population mean and variance are given.
  void update(double batch_mean, double batch_var, double n) {
    const double delta = batch_mean - mean, total = count + n;
    mean += delta * n / total;
    var = (var * count + batch_var * n + delta * delta * count * n / total) / total;
    count = total;
  }
};

}  // namespace ppo
