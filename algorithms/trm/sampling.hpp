// Choosing the next token from a model's logits for text generation: temperature, then
// top-k, then top-p (nucleus) filtering, then a draw. Free of LibTorch so that it is tested
// on hand-made logits.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace trm {

// TRM's generate.* config fields, without defaults: the config table holds them (top_p 0.95;
// a default here once said 1.0) and sampling_options (config_specs.hpp) sets them from a config.
struct SamplingOptions {
  double temperature;  // 0: the most probable token
  int64_t top_k;       // keep the k most probable (0: all)
  double top_p;        // keep the smallest set whose probability reaches p (1: all)
};

// The probabilities after temperature, top-k and top-p (zero for the tokens filtered out;
// the rest renormalised). temperature 0 puts all mass on the first maximum.
std::vector<double> sampling_distribution(const std::vector<float>& logits, const SamplingOptions& options);

int64_t sample_token(const std::vector<float>& logits, const SamplingOptions& options, std::mt19937_64& rng);

}  // namespace trm
