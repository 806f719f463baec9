// Episodes: N-way K-shot Q-query tasks drawn from an ImageSet, and their tensors.
//
// The sampler picks N distinct classes among those with at least K+Q images, and K+Q
// distinct images of each, so no class or image appears twice in one episode. It draws from
// the generator it is given (the runtime's host_rng() in training, so a seed reproduces the
// episodes and a checkpoint resumes them); drawing is cheap and runs on the training thread,
// assembling the tensors (assemble_episode) is what the prefetcher's workers do.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/image_set.hpp"

namespace protonet {

// Which images make up an episode: indices into the ImageSet, the N*K support images first
// (class by class, K each), then the N*Q query images (class by class, Q each).
struct EpisodeIndices {
  int way = 0, shot = 0, query = 0;
  std::vector<int32_t> classes;  // the N dataset labels, in episode-class order
  std::vector<int64_t> images;   // N*(K+Q)
};

struct Episode {
  int way = 0, shot = 0, query = 0;
  at::Tensor images;          // N*(K+Q) x C x H x W float in [0, 1]: support, then query
  at::Tensor support;         // images[0, N*K): class-major, K per class
  at::Tensor query_images;    // images[N*K, N*(K+Q)): class-major, Q per class
  at::Tensor query_targets;   // N*Q int64: the episode class (0..N-1) of each query image
  std::vector<int32_t> classes;
};

class EpisodeSampler {
 public:
  explicit EpisodeSampler(const ImageSet& set);

  // Classes with at least `per_class` images.
  int eligible_classes(int per_class) const;
  // Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) when fewer than `way` classes have shot+query images.
  EpisodeIndices sample(int way, int shot, int query, std::mt19937_64& rng) const;

 private:
  std::vector<std::vector<int64_t>> by_class_;  // image indices per label
};

// Uniform integer in [0, n) from the generator, the same on every platform (unlike
// std::uniform_int_distribution, whose algorithm the standard leaves open).
uint64_t uniform_index(std::mt19937_64& rng, uint64_t n);

// The episode's tensors (CPU). Safe to call from several threads at once.
Episode assemble_episode(const ImageSet& set, const EpisodeIndices& indices);

// The images of `set` at `indices`, as n x C x H x W float in [0, 1].
at::Tensor images_to_tensor(const ImageSet& set, const std::vector<int64_t>& indices);

}  // namespace protonet
