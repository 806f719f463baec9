#include "sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <mlh/plugin.hpp>

namespace trm {

std::vector<double> sampling_distribution(const std::vector<float>& logits, const SamplingOptions& options) {
  if (logits.empty()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "sampling: no logits");
  std::vector<double> p(logits.size(), 0.0);
  if (options.temperature <= 0) {
    p[static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin())] = 1.0;
    return p;
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  for (size_t i = 0; i < logits.size(); ++i) p[i] = std::exp((logits[i] - top) / options.temperature);
  // Tokens by probability, highest first (ties by index, so the filter is deterministic).
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  size_t keep = order.size();
  if (options.top_k > 0) keep = std::min(keep, static_cast<size_t>(options.top_k));
  if (options.top_p < 1.0) {
    const double total = std::accumulate(p.begin(), p.end(), 0.0);
    double mass = 0;
    for (size_t n = 0; n < keep; ++n) {
      mass += p[order[n]] / total;
      if (mass >= options.top_p) {
        keep = n + 1;
        break;
      }
    }
  }
  for (size_t n = keep; n < order.size(); ++n) p[order[n]] = 0.0;
  const double kept = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& v : p) v /= kept;
  return p;
}

int64_t sample_token(const std::vector<float>& logits, const SamplingOptions& options, std::mt19937_64& rng) {
  const std::vector<double> p = sampling_distribution(logits, options);
  std::discrete_distribution<int64_t> draw(p.begin(), p.end());
  return draw(rng);
}

}  // namespace trm
