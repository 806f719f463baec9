#include "evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include <ATen/ATen.h>
#include <mlh/format.hpp>

#include "env/cartpole.hpp"
#include "env/puzzle_source.hpp"
#include "trainer.hpp"

namespace ppo {

EpisodeEval evaluate_episodes(ActorCritic& net, Env& env, int64_t episodes, uint64_t seed, bool deterministic,
                              bool mask) {
  EpisodeEval r;
  std::mt19937_64 rng(seed), sampler(seed + 1);
  const mlh::ActionBounds bounds = env.action_bounds();
  const bool continuous = bounds.size() > 0;
  const int actions = continuous ? bounds.size() : env.num_actions();
  std::vector<float> obs(static_cast<size_t>(env.observation_size())), logits(actions), action(actions), log_std;
  if (continuous) {
    const at::Tensor l = net.log_std().detach().to(at::kCPU, at::kFloat).contiguous();
    log_std.assign(l.data_ptr<float>(), l.data_ptr<float>() + actions);
  }
  std::vector<uint8_t> masks(actions, 1);
  float value;
  // One step of the policy: the mean (deterministic) or a sample of a continuous action,
  // clipped to the bounds as in training; the most probable or a sampled discrete one.
  auto step = [&]() -> StepResult {
    float lp;
    if (continuous) {
      if (deterministic) std::copy(logits.begin(), logits.end(), action.begin());
      else sample_gaussian(logits.data(), log_std.data(), actions, sampler, action.data());
      for (int d = 0; d < actions; ++d) action[d] = std::clamp(action[d], bounds.low[d], bounds.high[d]);
      return env.step_continuous(action.data(), obs.data());
    }
    if (mask) env.action_mask(masks.data());
    const uint8_t* m = mask ? masks.data() : nullptr;
    const int a = deterministic ? greedy_action(logits.data(), m, actions)
                                : sample_action(logits.data(), m, actions, sampler, &lp);
    return env.step(a, obs.data());
  };
  for (int64_t e = 0; e < episodes; ++e) {
    env.reset(rng, obs.data());
    double ret = 0;
    for (;;) {
      net.infer(obs.data(), 1, logits.data(), &value);
      const StepResult s = step();
      ret += s.reward;
      if (s.terminated || s.truncated) {
        r.solved += s.solved ? 1 : 0;
        break;
      }
    }
    r.returns.push_back(ret);
  }
  for (double v : r.returns) r.mean_return += v;
  r.mean_return /= static_cast<double>(episodes);
  for (double v : r.returns) r.std_return += (v - r.mean_return) * (v - r.mean_return);
  r.std_return = std::sqrt(r.std_return / static_cast<double>(episodes));
  return r;
}

PuzzleEval evaluate_puzzles(ActorCritic* net, const std::vector<Puzzle>& puzzles, const PuzzleEnvOptions& options,
                            bool deterministic, bool mask, uint64_t seed) {
  PuzzleEval r;
  if (puzzles.empty()) return r;
  auto source = std::make_shared<PuzzleListSource>(puzzles, false);
  std::mt19937_64 rng(seed);
  const int64_t chunk = 64;
  int64_t steps_sum = 0, ratio_count = 0;
  double ratio_sum = 0;
  for (size_t first = 0; first < puzzles.size(); first += chunk) {
    const int64_t k = std::min<int64_t>(chunk, static_cast<int64_t>(puzzles.size() - first));
    std::vector<std::unique_ptr<PuzzleEnv>> envs;
    const int64_t O = PuzzleEnv::kNumPlanes * options.obs_size * options.obs_size;
    std::vector<float> obs(static_cast<size_t>(k * O)), batch(static_cast<size_t>(k * O)),
        logits(static_cast<size_t>(k * kNumMoves)), values(static_cast<size_t>(k));
    std::vector<int64_t> active;
    for (int64_t j = 0; j < k; ++j) {
      envs.push_back(std::make_unique<PuzzleEnv>(source, options));
      envs.back()->start(puzzles[first + j], obs.data() + j * O);
      active.push_back(j);
    }
    while (!active.empty()) {
      const int64_t n = static_cast<int64_t>(active.size());
      if (net) {
        for (int64_t a = 0; a < n; ++a) std::copy_n(obs.data() + active[a] * O, O, batch.data() + a * O);
        net->infer(batch.data(), n, logits.data(), values.data());
      }
      std::vector<int64_t> still;
      for (int64_t a = 0; a < n; ++a) {
        PuzzleEnv& env = *envs[active[a]];
        uint8_t m[kNumMoves];
        env.action_mask(m);
        int move;
        if (net) {
          float lp;
          move = deterministic ? greedy_action(logits.data() + a * kNumMoves, mask ? m : nullptr, kNumMoves)
                               : sample_action(logits.data() + a * kNumMoves, mask ? m : nullptr, kNumMoves, rng, &lp);
        } else {
          int valid[kNumMoves], nv = 0;
          for (int i = 0; i < kNumMoves; ++i)
            if (!mask || m[i]) valid[nv++] = i;
          move = nv ? valid[rng() % nv] : static_cast<int>(rng() % kNumMoves);
        }
        const StepResult s = env.step(move, obs.data() + active[a] * O);
        if (s.terminated || s.truncated) {
          const PuzzleEpisode& e = env.last_episode();
          ++r.puzzles;
          if (e.solved) {
            ++r.solved;
            steps_sum += e.steps;
            if (e.optimal > 0) {
              ratio_sum += static_cast<double>(e.steps) / e.optimal;
              ++ratio_count;
            }
          }
        } else {
          still.push_back(active[a]);
        }
      }
      active.swap(still);
    }
  }
  r.solve_rate = static_cast<double>(r.solved) / static_cast<double>(r.puzzles);
  r.mean_steps = r.solved ? static_cast<double>(steps_sum) / static_cast<double>(r.solved) : std::nan("");
  r.mean_ratio = ratio_count ? ratio_sum / static_cast<double>(ratio_count) : std::nan("");
  return r;
}

std::string solved_mean_text(double mean, int precision) {
  return std::isnan(mean) ? "n/a (none solved)" : mlh::fixed(mean, precision);
}

PlayResult play_puzzle(ActorCritic& net, const Puzzle& puzzle, const PuzzleEnvOptions& options, bool mask,
                       bool deterministic, uint64_t seed, const std::function<void(const std::string&)>& out) {
  PlayResult r;
  auto source = std::make_shared<PuzzleListSource>(std::vector<Puzzle>{puzzle}, false);
  PuzzleEnv env(source, options);
  std::vector<float> obs(static_cast<size_t>(PuzzleEnv::kNumPlanes * options.obs_size * options.obs_size));
  env.start(puzzle, obs.data());
  std::mt19937_64 rng(seed);
  out("puzzle " + std::to_string(puzzle.size) + "x" + std::to_string(puzzle.size) + ", " +
      std::to_string(puzzle.tiles.size()) + " tile(s)" +
      (puzzle.optimal >= 0 ? ", optimal " + std::to_string(puzzle.optimal) + " moves" : std::string()) + ":\n" +
      render(puzzle, env.state()));
  for (;;) {
    float logits[kNumMoves], value, lp;
    net.infer(obs.data(), 1, logits, &value);
    uint8_t m[kNumMoves];
    env.action_mask(m);
    const int move = deterministic ? greedy_action(logits, mask ? m : nullptr, kNumMoves)
                                   : sample_action(logits, mask ? m : nullptr, kNumMoves, rng, &lp);
    const StepResult s = env.step(move, obs.data());
    r.moves.push_back(move);
    r.move_names.push_back(move_name(move));
    const bool done = s.terminated || s.truncated;
    out("move " + std::to_string(r.moves.size()) + ": " + move_name(move) + (s.invalid_move ? " (invalid)" : "") +
        (s.solved ? " - solved" : "") + "\n" + render(puzzle, env.state()));
    if (done) {
      r.solved = s.solved;
      break;
    }
  }
  out(r.solved ? "solved in " + std::to_string(r.moves.size()) + " moves" +
                     (puzzle.optimal > 0 ? " (optimal " + std::to_string(puzzle.optimal) + ")" : std::string())
               : "not solved within " + std::to_string(options.max_steps) + " moves");
  return r;
}

}  // namespace ppo
