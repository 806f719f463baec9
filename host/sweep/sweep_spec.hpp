// What a sweep runs (host --sweep): its parameters, each a list of values or a distribution
// to draw from; a grid over the lists or a number of random draws (--sweep-random N); and
// the seeds every configuration runs with (--seeds). Expanded once into trials, each an
// ordinary run with its own --set assignments, and kept in the sweep folder's sweep.json so
// that a resumed sweep runs exactly the trials it started with.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlhost {

// A sweep spec that does not parse or does not fit the algorithm; the message names it.
class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One --sweep KEY=VALUES: "lr=0.1,0.01" (a list: the grid's axis, or what a random trial picks
// from), "lr=loguniform(1e-4,1e-1)", "dropout=uniform(0,0.5)" or "width=randint(32,256)" (a
// distribution: random sweeps only).
struct SweepParameter {
  std::string key;                  // the dotted config key, as --set takes it
  std::vector<std::string> values;  // a list's values as written; each becomes --set key=value
  std::string distribution;         // "", "uniform", "loguniform" or "randint"
  double low = 0, high = 0;         // the distribution's bounds (randint: both included)
  std::string text;                 // as given on the command line
};

struct SweepSpec {
  std::vector<SweepParameter> parameters;
  int random_count = 0;         // --sweep-random N; 0: the grid of every list
  std::vector<uint64_t> seeds;  // --seeds: the config's "seed" for each; empty: the config's own

  nlohmann::json to_json() const;
};

// One trial: a configuration (its values, in the parameters' order) with one seed.
struct SweepTrial {
  int index = 0;                                            // 1-based, in run order
  std::vector<std::pair<std::string, std::string>> values;  // key, value as --set takes it
  std::optional<uint64_t> seed;

  std::string name() const;          // "trial-003": its run folder in the sweep folder
  std::string configuration() const;  // "lr=0.1 width=64": the same for every seed
  std::vector<std::string> sets() const;  // "lr=0.1", ..., "seed=2"
  nlohmann::json to_json() const;
  static SweepTrial from_json(const nlohmann::json& j);
};

// Parses one --sweep argument. Throws SweepError naming it.
SweepParameter parse_sweep_parameter(const std::string& text);
// --seeds: "N" for the seeds 1 to N, or a list "0,7,42". Throws SweepError.
std::vector<uint64_t> parse_seeds(const std::string& text);

// Checks the spec as a whole (a key given twice, "seed" swept beside --seeds, a distribution
// in a grid) and expands it: the grid's configurations in order (the last parameter varies
// fastest), or random_count draws from `random_seed`; each configuration once per seed, its
// seeds one after another. Throws SweepError.
std::vector<SweepTrial> expand_trials(const SweepSpec& spec, uint64_t random_seed = 0);

// The most trials one sweep may hold: a grid that big is a mistake in the spec.
constexpr size_t kMaxSweepTrials = 10000;

}  // namespace mlhost
