"""The Python references of mlhost's three algorithms, timed in PyTorch on one device.

Each measurement prints one JSON line:

  {"workload": "trm", "variant": "eager", "precision": "fp32", "items_per_s": ..., "unit": "samples",
   "median_ms": ..., "iterations": ..., "benchmark": "train_default_h512_H3_L6_fp32", ...}

"benchmark" names the row of `host --algorithm A --benchmark --json` it stands beside
(bench/peer_bench.sh matches them). A measurement that fails prints a line with "error" in
place of the figures, and the script goes on with the next one. Timing: warm-up steps, then
steps until --seconds have passed (at least --min-iterations), the median step time; on CUDA
each step ends with torch.cuda.synchronize() before the clock is read.

Workloads (--workload, default all):

  trm       the TRM reference's training step (SamsungSAILMontreal/TinyRecursiveModels, read from
            $MLH_REFERENCE_DIR/trm, default ../shared/reference beside the checkout; without it
            one line with "error" saying so): TinyRecursiveReasoningModel_ACTV1 inside its ACTLossHead
            (stablemax cross-entropy + 0.5 x q-halt BCE), on Sudoku-shaped random batches (sequence
            81, vocabulary 11, no puzzle embedding: the shape algorithms/trm/benchmark.cpp times), at
            the benchmark's two sizes: small_h128_H2_L2 (hidden 128, 4 heads, H_cycles 2, L_cycles 2)
            and default_h512_H3_L6 (hidden 512, 8 heads, H 3, L 6), both with 2 L-layers, expansion
            4, RoPE, halt_max_steps 16, exploration 0.1. One step = one ACT step as pretrain.py's
            train_batch runs it: the carry made on the first step and kept after, forward with the
            loss head, backward of loss / batch, optimizer step, zero_grad.
            DEVIATION: the reference optimizes with AdamATan2 (a CUDA extension, adam-atan2, not on
            PyPI for every platform); here torch.optim.AdamW with the reference's lr 1e-4, weight
            decay 0.1 and betas (0.9, 0.95), mlhost's defaults too. Precision bf16 is the
            reference's forward_dtype="bfloat16" (fp32 weights cast in each layer); fp32 is
            forward_dtype="float32". Variants: eager, and compiled: torch.compile of the loss head
            (with the model inside it), as pretrain.py does.
  protonet  the ProtoNet reference's training episode (bench/protonet_reference.py: Conv-4, squared
            Euclidean distances to the prototypes, NLL, Adam lr 1e-3), 5-way 5-shot 15-query and
            60-way 5-shot 5-query on 28x28 one-channel images; bf16 by autocast. Variants: eager;
            compiled (torch.compile of the loss); on CUDA cuda_graph: the whole step (forward,
            backward, Adam with capturable=True) captured once with torch.cuda.graph and replayed,
            each episode's images copied into the static inputs first.
  ppo       CleanRL's ppo.py on CartPole-v1 with mlhost's PPO defaults (algorithms/ppo/config.hpp):
            4 envs x 128 steps, 4 epochs of 4 minibatches, the 64-64 tanh actor and critic with
            orthogonal init, Adam lr 2.5e-4 eps 1e-5 with linear annealing, GAE (0.99, 0.95), the
            clipped policy and value losses, entropy 0.01, value 0.5, gradient norm 0.5, advantage
            normalization. The environments: CartPole-v1 vectorized in numpy (gymnasium's dynamics,
            rewards, termination and 500-step truncation, reset into the next observation as
            gymnasium 0.29's SyncVectorEnv does), the agent in torch on --device. One iteration =
            collect + update, in env steps/s, with torch's threads and with one (the host's
            cartpole_iteration_<N>threads and _1thread rows). fp32 only: the host keeps PPO in fp32.
  ppo_continuous
            CleanRL's ppo_continuous_action.py, one whole training run on Pendulum-v1 (not a timed
            step: "all" leaves it out, it takes minutes on a CPU), with rl-baselines3-zoo's PPO
            Pendulum-v1 settings without gSDE as the --pc-* defaults: 4 envs x 1024 steps, 10 epochs
            of 64 minibatches, Adam lr 1e-3 eps 1e-5 annealed linearly to 0 over the run, GAE (0.9,
            0.95), clip 0.2, entropy 0, value 0.5, gradient norm 0.5, 200000 steps (rounded down
            to whole iterations: 48 x 4096 = 196608), seed 1. The agent: separate 64-64 tanh actor
            mean and critic with orthogonal init (sqrt 2; actor output 0.01, critic 1), a
            state-independent log std (0 at first), Normal(mean, exp(log std)) with log-prob and
            entropy summed over the action dims; the sampled action stored unclipped, clipped to
            [-2, 2] on its way to the env (ClipAction). The environments: Pendulum-v1 vectorized in
            numpy (gymnasium's dynamics and rewards, 200-step truncation, reset as CartPoleVec),
            behind gymnasium 0.29.1's NormalizeObservation (+ clip to [-10, 10]) and NormalizeReward
            (+ clip to [-10, 10]). DEVIATION: one set of normalization statistics for the whole
            vector, as mlhost keeps; CleanRL's per-env wrappers keep one set per env (the same when
            --pc-envs is 1). Truncation ends the episode with no bootstrap, as in ppo and CleanRL.
            One line: env steps/s over the whole run's wall time (collect + update), the mean raw
            return of the last 100 finished episodes ("final_return") and after each iteration
            ("returns_at": [[global_step, mean], ...]), with torch's threads (or --threads).
  ppo_gymnasium
            CleanRL's ppo.py as a user runs it, one whole training run (not a timed step: "all"
            leaves it out) on gymnasium's own environments: gymnasium.vector.SyncVectorEnv of
            gymnasium.make(--pg-env-id, default CartPole-v1) each inside RecordEpisodeStatistics
            (CleanRL's make_env), reset with seed --pg-seed + i for env i on the first reset; the
            same Agent, collect, GAE and update code as ppo (one loop, ppo_discrete_fn), with
            CleanRL ppo.py's defaults as the --pg-* defaults: 4 envs x 128 steps, 4 epochs of 4
            minibatches, Adam lr 2.5e-4 eps 1e-5 annealed linearly to 0 over the run, GAE (0.99,
            0.95), clip 0.2, entropy 0.01, value 0.5, gradient norm 0.5, advantage normalization and
            the clipped value loss on, 100000 steps (rounded down to whole iterations: 195 x 512 =
            99840), seed 1. Autoreset: CleanRL's ppo.py was written for gymnasium 0.29's same-step
            autoreset (the step that ends an episode returns the next episode's first observation);
            gymnasium 1.0 changed SyncVectorEnv to next-step autoreset (the step after the end
            returns the reset observation with reward 0, not a transition), so on gymnasium >= 1.1
            this passes autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP, which restores
            0.29's semantics (infos["final_obs"], and the final step's infos under
            infos["final_info"]); on 0.x it uses the native same-step mode; on 1.0 (next-step only)
            it prints a line with "error". Episode returns: RecordEpisodeStatistics's, read from
            infos["final_info"]["episode"]["r"] where infos["final_info"]["_episode"] (1.x same-step).
            Discrete action spaces only (else a line with "error"); without gymnasium, a line with
            "error" saying so. One line: env steps/s over the whole run's wall time (collect +
            update, from the first reset, as CleanRL's SPS), the mean return of the last 100 finished
            episodes ("final_return") and after each iteration ("returns_at"), "episodes",
            "gymnasium" (its version), "autoreset" (the mode used), with torch's threads (or
            --threads). Truncation ends the episode with no bootstrap, as in CleanRL.

  python bench/peers.py [--workload trm|protonet|ppo|ppo_continuous|ppo_gymnasium|all] [--device cpu|cuda]
                        [--precision fp32,bf16] [--variant eager,compiled,cuda_graph]
                        [--batch N] [--trm-size small,default] [--seconds S] [--tiny] [--threads N] [--profile DIR]
                        [--pc-envs 4] [--pc-steps 1024] [--pc-minibatches 64] [--pc-epochs 10]
                        [--pc-lr 1e-3] [--pc-gamma 0.9] [--pc-gae-lambda 0.95] [--pc-clip 0.2]
                        [--pc-ent 0.0] [--pc-vf 0.5] [--pc-max-grad-norm 0.5]
                        [--pc-total-timesteps 200000] [--pc-seed 1]
                        [--pg-env-id CartPole-v1] [--pg-envs 4] [--pg-steps 128] [--pg-minibatches 4]
                        [--pg-epochs 4] [--pg-lr 2.5e-4] [--pg-gamma 0.99] [--pg-gae-lambda 0.95]
                        [--pg-clip 0.2] [--pg-ent 0.01] [--pg-vf 0.5] [--pg-max-grad-norm 0.5]
                        [--pg-total-timesteps 100000] [--pg-seed 1]

--tiny: small sizes (TRM small at batch 4, ProtoNet 5-way 5-shot 15-query only, PPO as always)
for a test; a second of steps, eager only unless --variant says otherwise.
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # protonet_reference
import mlh_references  # noqa: E402  (where the TRM reference is: bench/mlh_references.py)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


# ------------------------------------------------------------------------------------------- timing

class Timer:
    """Runs step() for warm-up, then until `seconds` have passed; the median step time."""

    def __init__(self, device, seconds, warmup, min_iterations):
        self.device, self.seconds, self.warmup, self.min_iterations = device, seconds, warmup, min_iterations

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def run(self, step):
        for i in range(self.warmup):
            step(i)
        self.sync()
        times, start = [], time.perf_counter()
        while len(times) < self.min_iterations or time.perf_counter() - start < self.seconds:
            t = time.perf_counter()
            step(len(times))
            self.sync()
            times.append(time.perf_counter() - t)
        return statistics.median(times), len(times)


def profile_steps(args, base, step, steps=3):
    """A few more steps under torch.profiler, as a Chrome trace beside ours (MLH_PROFILE_DIR):
    <dir>/<benchmark>[_<precision>]_<variant>.trace.json; bench/profile_summary.py --calls compares
    them."""
    from torch.profiler import ProfilerActivity, profile
    os.makedirs(args.profile, exist_ok=True)
    name = base.get("benchmark", base["workload"])
    if not name.endswith("_" + base["precision"]):
        name += "_" + base["precision"]
    path = os.path.join(args.profile, f"{name}_{base['variant']}.trace.json")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
    with profile(activities=activities) as prof:
        for i in range(steps):
            step(i)
        Timer(torch.device(args.device), 0, 0, 0).sync()
    prof.export_chrome_trace(path)
    return path


def emit(record):
    print(json.dumps(record), flush=True)


def measure(args, base, items, unit, make_step, warmup=1):
    """Builds the step (make_step() -> step(i)), times it and prints its JSON line; on any error
    prints the line with "error" instead."""
    record = dict(base, device=args.device, torch=torch.__version__, threads=torch.get_num_threads())
    try:
        step = make_step()
        median, n = Timer(torch.device(args.device), args.seconds, warmup, args.min_iterations).run(step)
        record.update(items_per_s=items / median, unit=unit, median_ms=1000 * median, iterations=n)
        if args.profile:
            record.update(trace=profile_steps(args, base, step))
    except Exception as e:  # noqa: BLE001  (a failed variant is a row with its reason)
        record.update(error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    emit(record)
    if args.device == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------- TRM

TRM_SIZES = {  # algorithms/trm/benchmark.cpp's sizes: hidden, heads, H_cycles, L_cycles
    "small": ("small_h128_H2_L2", 128, 4, 2, 2),
    "default": ("default_h512_H3_L6", 512, 8, 3, 6),
}


def trm_step(args, size, precision, variant, batch_size):
    from models.losses import ACTLossHead
    from models.recursive_reasoning.trm import TinyRecursiveReasoningModel_ACTV1

    _, hidden, heads, h_cycles, l_cycles = TRM_SIZES[size]
    device = torch.device(args.device)
    seq_len, vocab = 81, 11
    # The same keys as tests/trm_model/python/reference_trm.py's config, at the benchmark's shape.
    config = dict(batch_size=batch_size, seq_len=seq_len, puzzle_emb_ndim=0, num_puzzle_identifiers=1,
                  vocab_size=vocab, H_cycles=h_cycles, L_cycles=l_cycles, H_layers=0, L_layers=2,
                  hidden_size=hidden, expansion=4, num_heads=heads, pos_encodings="rope", halt_max_steps=16,
                  halt_exploration_prob=0.1, forward_dtype={"fp32": "float32", "bf16": "bfloat16",
                                                            "fp16": "float16"}[precision],
                  mlp_t=False, puzzle_emb_len=0, no_ACT_continue=True)
    torch.manual_seed(0)
    with torch.device(device):  # as pretrain.py builds it
        model = TinyRecursiveReasoningModel_ACTV1(config)
        head = ACTLossHead(model, loss_type="stablemax_cross_entropy")
    head.train()
    optimizer = torch.optim.AdamW(head.parameters(), lr=1e-4, weight_decay=0.1, betas=(0.9, 0.95))
    loss_head = torch.compile(head) if variant == "compiled" else head
    g = torch.Generator().manual_seed(0)
    batch = {"inputs": torch.randint(1, vocab, (batch_size, seq_len), dtype=torch.int32, generator=g),
             "labels": torch.randint(2, vocab, (batch_size, seq_len), dtype=torch.int32, generator=g),
             "puzzle_identifiers": torch.zeros(batch_size, dtype=torch.int32)}
    batch = {k: v.to(device) for k, v in batch.items()}
    state = {"carry": None}

    def step(_):
        if state["carry"] is None:
            with torch.device(device):
                state["carry"] = head.initial_carry(batch)
        state["carry"], loss, _, _, _ = loss_head(carry=state["carry"], batch=batch, return_keys=[])
        ((1 / batch_size) * loss).backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def run_trm(args):
    # The reference's "models" package, read from outside the checkout; without it, one row saying why.
    if mlh_references.find("trm") is None:
        emit({"workload": "trm", "error": mlh_references.why_absent("trm")})
        return
    mlh_references.use("trm")
    sizes = args.trm_size or (["small"] if args.tiny else ["small", "default"])
    batch = args.batch or (4 if args.tiny else 32)
    for size in sizes:
        name = TRM_SIZES[size][0]
        for precision in args.precision:
            for variant in args.variant:
                if variant == "cuda_graph":
                    continue
                base = dict(workload="trm", variant=variant, precision=precision,
                            benchmark=f"train_{name}_{precision}", batch=batch)
                # The compiled step compiles during its first steps: more warm-up.
                measure(args, base, batch, "samples", lambda: trm_step(args, size, precision, variant, batch),
                        warmup=3 if variant == "compiled" else 1)


# ----------------------------------------------------------------------------------------- ProtoNet

def protonet_step(args, way, shot, query, precision, variant):
    import protonet_reference as ref

    device = torch.device(args.device)
    torch.manual_seed(0)
    net = ref.encoder().to(device)
    dtype = DTYPES[precision]
    graph = variant == "cuda_graph"
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, capturable=graph)
    episodes = [(torch.rand(way, shot, 1, 28, 28).to(device), torch.rand(way, query, 1, 28, 28).to(device))
                for _ in range(4)]
    loss_fn = torch.compile(ref.episode_loss) if variant == "compiled" else ref.episode_loss

    def train(xs, xq):
        # torch.device(...): the reference's episode_loss makes its targets with torch.arange.
        with torch.device(device), torch.autocast(device.type, dtype=dtype, enabled=precision != "fp32",
                                                  cache_enabled=not graph):
            loss = loss_fn(net, xs, xq)
        loss.backward()
        optimizer.step()
        return loss

    if not graph:
        def step(i):
            xs, xq = episodes[i % len(episodes)]
            optimizer.zero_grad()
            train(xs, xq)
        return step

    if not torch.cuda.is_available() or device.type != "cuda":
        raise RuntimeError("cuda_graph needs --device cuda")
    static_xs, static_xq = episodes[0][0].clone(), episodes[0][1].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graph's docs ask
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            train(static_xs, static_xq)
    torch.cuda.current_stream().wait_stream(side)
    graph_ = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph_):
        train(static_xs, static_xq)

    def step(i):
        xs, xq = episodes[i % len(episodes)]
        static_xs.copy_(xs)
        static_xq.copy_(xq)
        graph_.replay()

    return step


def run_protonet(args):
    shapes = [(5, 5, 15)] if args.tiny else [(5, 5, 15), (60, 5, 5)]
    for way, shot, query in shapes:
        for precision in args.precision:
            for variant in args.variant:
                if variant == "cuda_graph" and args.device != "cuda":
                    continue
                base = dict(workload="protonet", variant=variant, precision=precision,
                            benchmark=f"train_episode_{way}way_{shot}shot_{query}query_28x28")
                measure(args, base, 1, "episodes",
                        lambda: protonet_step(args, way, shot, query, precision, variant),
                        warmup=3 if variant == "compiled" else 2)


# ---------------------------------------------------------------------------------------------- PPO

class CartPoleVec:
    """N CartPole-v1 environments stepped together in numpy: gymnasium's CartPoleEnv (Euler
    integration, force 10, pole half-length 0.5, tau 0.02; done past 2.4 m or 12 degrees; reward 1
    each step) under TimeLimit(500), reset into the returned observation on the same step as
    gymnasium 0.29's SyncVectorEnv (CleanRL's) does."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    total_mass = masspole + masscart
    polemass_length = masspole * length
    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    max_episode_steps = 500
    obs_shape, n_actions = (4,), 2

    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, size=(n, 4))
        self.elapsed = np.zeros(n, dtype=np.int64)

    def reset(self):
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(action == 1, self.force_mag, -self.force_mag)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * theta_dot ** 2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = np.stack([x, x_dot, theta, theta_dot], axis=1)
        self.elapsed += 1
        terminated = (x < -self.x_threshold) | (x > self.x_threshold) | (theta < -self.theta_threshold) | (
            theta > self.theta_threshold)
        truncated = (self.elapsed >= self.max_episode_steps) & ~terminated
        reward = np.ones(self.n, dtype=np.float32)
        done = terminated | truncated
        if done.any():
            self.state[done] = self.rng.uniform(-0.05, 0.05, size=(int(done.sum()), 4))
            self.elapsed[done] = 0
        return self.state.astype(np.float32), reward, terminated, truncated


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """CleanRL ppo.py's Agent."""

    def __init__(self, obs_dim=4, actions=2):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                    nn.Tanh(), layer_init(nn.Linear(64, 1), std=1.0))
        self.actor = nn.Sequential(layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                   nn.Tanh(), layer_init(nn.Linear(64, actions), std=0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        probs = torch.distributions.Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


# CleanRL ppo.py's defaults (mlhost's PPO defaults too, algorithms/ppo/config.hpp).
PPO_SETTINGS = dict(num_envs=4, num_steps=128, num_minibatches=4, update_epochs=4, lr=2.5e-4, gamma=0.99,
                    gae_lambda=0.95, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5)


def ppo_update_epochs(agent, optimizer, b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values,
                      batch_size, minibatch_size, update_epochs, clip_coef, ent_coef, vf_coef, max_grad_norm):
    """CleanRL's PPO update, for either agent: update_epochs passes of shuffled minibatches, the
    clipped surrogate and value losses, the entropy bonus, per-minibatch advantage
    normalization and gradient-norm clipping; and the explained variance CleanRL logs."""
    b_inds = np.arange(batch_size)
    clipfracs = []
    for _ in range(update_epochs):
        np.random.shuffle(b_inds)
        for start in range(0, batch_size, minibatch_size):
            mb_inds = b_inds[start:start + minibatch_size]
            _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
            logratio = newlogprob - b_logprobs[mb_inds]
            ratio = logratio.exp()
            with torch.no_grad():
                old_approx_kl = (-logratio).mean()  # noqa: F841  (CleanRL logs it)
                approx_kl = ((ratio - 1) - logratio).mean()  # noqa: F841
                clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]
            mb_advantages = b_advantages[mb_inds]
            mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
            pg_loss1 = -mb_advantages * ratio
            pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
            pg_loss = torch.max(pg_loss1, pg_loss2).mean()
            newvalue = newvalue.view(-1)
            v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
            v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -clip_coef, clip_coef)
            v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
            v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
            entropy_loss = entropy.mean()
            loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
            optimizer.step()
    y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
    var_y = np.var(y_true)
    _ = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y  # explained variance, logged


def ppo_discrete_fn(device, make_envs, seed, num_iterations, num_envs, num_steps, num_minibatches, update_epochs,
                    lr, gamma, gae_lambda, clip_coef, ent_coef, vf_coef, max_grad_norm):
    """CleanRL ppo.py's setup (seeds, envs = make_envs(), Agent, Adam, buffers) and loop body
    (collect, GAE, update; LR annealed linearly over num_iterations; advantage normalization and
    the clipped value loss on). The envs: reset() -> obs and step(actions) -> (obs, reward,
    terminated, truncated), reset into obs on the step an episode ends (same-step autoreset), with
    obs_shape and n_actions. The first iterate() resets the envs (CleanRL resets them after
    start_time). Returns (iterate(i) for i = 0, 1, ..., env steps per iteration, envs)."""
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    envs = make_envs()
    obs_shape = tuple(envs.obs_shape)
    agent = Agent(int(np.prod(obs_shape)), envs.n_actions).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs) + obs_shape).to(device)
    actions = torch.zeros((num_steps, num_envs)).to(device)
    logprobs = torch.zeros((num_steps, num_envs)).to(device)
    rewards = torch.zeros((num_steps, num_envs)).to(device)
    dones = torch.zeros((num_steps, num_envs)).to(device)
    values = torch.zeros((num_steps, num_envs)).to(device)
    state = {"next_obs": None, "next_done": torch.zeros(num_envs).to(device)}

    def iterate(i):
        if state["next_obs"] is None:
            state["next_obs"] = torch.Tensor(envs.reset()).to(device)
        iteration = i + 1
        frac = 1.0 - (iteration - 1.0) / num_iterations
        optimizer.param_groups[0]["lr"] = frac * lr
        next_obs, next_done = state["next_obs"], state["next_done"]
        for step in range(num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, terminations, truncations = envs.step(action.cpu().numpy())
            next_done = np.logical_or(terminations, truncations)
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs).to(device), torch.Tensor(next_done).to(device)
        state["next_obs"], state["next_done"] = next_obs, next_done
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values
        b_obs = obs.reshape((-1,) + obs_shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        ppo_update_epochs(agent, optimizer, b_obs, b_actions.long(), b_logprobs, b_advantages, b_returns, b_values,
                          batch_size, minibatch_size, update_epochs, clip_coef, ent_coef, vf_coef, max_grad_norm)

    return iterate, batch_size, envs


def ppo_iteration_fn(args):
    """CleanRL ppo.py's loop body on CartPoleVec with mlhost's defaults (seed 1); returns
    (iterate(i), env steps per iteration)."""
    s = PPO_SETTINGS
    # num_iterations 1 << 20: the annealed LR stays positive, as the host benchmark's.
    iterate, batch_size, _ = ppo_discrete_fn(torch.device(args.device), lambda: CartPoleVec(s["num_envs"], seed=1),
                                             seed=1, num_iterations=1 << 20, **s)
    return iterate, batch_size


def run_ppo(args):
    if "fp32" not in args.precision or "eager" not in args.variant:
        return  # CleanRL's ppo.py runs eagerly in fp32
    # With torch's threads and with one, as the host's cartpole_iteration_<N>threads and
    # cartpole_iteration_1thread rows: the tiny ops of a 64-wide MLP can run slower on more.
    default_threads = torch.get_num_threads()
    for threads in dict.fromkeys([default_threads, 1]):
        torch.set_num_threads(threads)
        name = f"cartpole_iteration_{threads}thread" + ("s" if threads > 1 else "")
        base = dict(workload="ppo", variant="eager", precision="fp32", benchmark=name)
        measure(args, base, 512, "env_steps", lambda: ppo_iteration_fn(args)[0])
    torch.set_num_threads(default_threads)


# ------------------------------------------------------------------------------------ PPO, gymnasium

class GymnasiumVec:
    """CleanRL ppo.py's environments: gymnasium.vector.SyncVectorEnv of make_env's thunks
    (gymnasium.make(env_id) inside RecordEpisodeStatistics; no video), seeded seed + i on the
    first reset, behind the interface ppo_discrete_fn steps (CartPoleVec's). Autoreset on the same
    step, as gymnasium 0.29 (CleanRL's) does it: on gymnasium >= 1.1 with autoreset_mode=
    AutoresetMode.SAME_STEP; 0.x has only that; 1.0 has only next-step autoreset, which this loop
    would take for transitions, so it raises. The returns of the finished episodes, in order, from
    RecordEpisodeStatistics: infos["final_info"]["episode"]["r"] where infos["final_info"]["_episode"]
    (1.x same-step: the final step's infos are under "final_info"; the top level holds the reset's),
    or each infos["final_info"][i]["episode"]["r"] (0.x)."""

    def __init__(self, gym, env_id, n, seed):
        def make_env(env_id):
            def thunk():
                env = gym.make(env_id)
                env = gym.wrappers.RecordEpisodeStatistics(env)
                return env
            return thunk

        major, minor = (int(x) for x in gym.__version__.split(".")[:2])
        if hasattr(gym.vector, "AutoresetMode"):
            kwargs, self.autoreset = dict(autoreset_mode=gym.vector.AutoresetMode.SAME_STEP), "same_step"
        elif major == 0:
            kwargs, self.autoreset = {}, "same_step (gymnasium 0.x)"
        else:
            raise RuntimeError(f"gymnasium {gym.__version__} has only next-step autoreset; "
                               "CleanRL's ppo.py needs same-step (gymnasium >= 1.1 or 0.29)")
        self.envs = gym.vector.SyncVectorEnv([make_env(env_id) for _ in range(n)], **kwargs)
        if not isinstance(self.envs.single_action_space, gym.spaces.Discrete):
            self.envs.close()
            raise ValueError(f"{env_id}: only discrete action spaces are supported, "
                             f"not {self.envs.single_action_space}")
        self.obs_shape = self.envs.single_observation_space.shape
        self.n_actions = int(self.envs.single_action_space.n)
        self.seed = seed
        self.finished = []  # the returns of the finished episodes, in order

    def reset(self):
        obs, _ = self.envs.reset(seed=self.seed)
        return obs

    def step(self, action):
        obs, reward, terminations, truncations, infos = self.envs.step(action)
        final = infos.get("final_info")
        if isinstance(final, dict):  # 1.x: batched infos, masks under "_<key>"
            if "episode" in final:
                self.finished.extend(float(r) for r, m in zip(final["episode"]["r"], final["_episode"]) if m)
        elif final is not None:  # 0.x: one info dict (or None) per env
            self.finished.extend(float(np.asarray(info["episode"]["r"]).item()) for info in final
                                 if info and "episode" in info)
        return obs, reward, terminations, truncations


def ppo_gymnasium_train(args, gym):
    """CleanRL ppo.py's whole run on GymnasiumVec with the --pg-* settings; returns the record's figures."""
    settings = dict(num_envs=args.pg_envs, num_steps=args.pg_steps, num_minibatches=args.pg_minibatches,
                    update_epochs=args.pg_epochs, lr=args.pg_lr, gamma=args.pg_gamma, gae_lambda=args.pg_gae_lambda,
                    clip_coef=args.pg_clip, ent_coef=args.pg_ent, vf_coef=args.pg_vf,
                    max_grad_norm=args.pg_max_grad_norm)
    batch_size = args.pg_envs * args.pg_steps
    num_iterations = args.pg_total_timesteps // batch_size
    if num_iterations < 1 or batch_size // args.pg_minibatches < 1:
        raise ValueError(f"--pg-total-timesteps {args.pg_total_timesteps} is under one iteration's "
                         f"{batch_size} steps, or --pg-minibatches is over {batch_size}")
    device = torch.device(args.device)
    iterate, batch_size, envs = ppo_discrete_fn(
        device, lambda: GymnasiumVec(gym, args.pg_env_id, args.pg_envs, args.pg_seed), seed=args.pg_seed,
        num_iterations=num_iterations, **settings)

    def mean_last_100():
        return float(np.mean(envs.finished[-100:])) if envs.finished else None

    returns_at = []
    global_step = 0
    try:
        start_time = time.perf_counter()
        for i in range(num_iterations):
            iterate(i)
            global_step += batch_size
            returns_at.append([global_step, mean_last_100()])
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - start_time
    finally:
        envs.envs.close()
    return dict(items_per_s=global_step / wall, unit="steps", total_timesteps=global_step, wall_s=wall,
                final_return=mean_last_100(), episodes=len(envs.finished), returns_at=returns_at,
                autoreset=envs.autoreset)


def run_ppo_gymnasium(args):
    if "fp32" not in args.precision or "eager" not in args.variant:
        return  # CleanRL's ppo.py runs eagerly in fp32
    record = dict(workload="ppo_gymnasium", env=args.pg_env_id, variant="eager", precision="fp32",
                  device=args.device, torch=torch.__version__, threads=torch.get_num_threads(),
                  settings=dict(envs=args.pg_envs, steps=args.pg_steps, minibatches=args.pg_minibatches,
                                epochs=args.pg_epochs, lr=args.pg_lr, gamma=args.pg_gamma,
                                gae_lambda=args.pg_gae_lambda, clip=args.pg_clip, ent=args.pg_ent, vf=args.pg_vf,
                                max_grad_norm=args.pg_max_grad_norm, anneal_lr=True, norm_adv=True,
                                clip_vloss=True, seed=args.pg_seed))
    try:
        import gymnasium as gym
    except ImportError as e:
        record.update(error=f"gymnasium is not importable ({type(e).__name__}: {e}); pip install 'gymnasium>=1.1'"[:300])
        emit(record)
        return
    record.update(gymnasium=gym.__version__)
    deterministic = torch.backends.cudnn.deterministic
    torch.backends.cudnn.deterministic = True  # CleanRL's --torch-deterministic (default on)
    try:
        record.update(ppo_gymnasium_train(args, gym))
    except Exception as e:  # noqa: BLE001  (a failed run is a line with its reason)
        record.update(error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    finally:
        torch.backends.cudnn.deterministic = deterministic
    emit(record)


# ------------------------------------------------------------------------------ PPO, continuous actions

class PendulumVec:
    """N Pendulum-v1 environments stepped together in numpy: gymnasium's PendulumEnv (max_speed 8,
    max_torque 2, dt 0.05, g 10, m 1, l 1; reset theta ~ U[-pi, pi], theta_dot ~ U[-1, 1]; obs
    (cos theta, sin theta, theta_dot); reward -(angle_normalize(theta)^2 + 0.1 theta_dot^2 +
    0.001 u^2), u clipped to [-2, 2]; never terminates) under TimeLimit(200), reset into the
    returned observation on the same step as CartPoleVec. step() also returns the observations the
    steps ended on (the final ones where an episode ended), for the observation statistics."""

    max_speed, max_torque, dt, g, m, l = 8.0, 2.0, 0.05, 10.0, 1.0, 1.0
    max_episode_steps = 200
    action_low, action_high = -max_torque, max_torque  # the action space, Box(-2, 2, (1,))

    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.state = self._initial_states(n)
        self.elapsed = np.zeros(n, dtype=np.int64)

    def _initial_states(self, k):
        return self.rng.uniform(low=[-math.pi, -1.0], high=[math.pi, 1.0], size=(k, 2))

    def _obs(self):
        th, thdot = self.state.T
        return np.stack([np.cos(th), np.sin(th), thdot], axis=1).astype(np.float32)

    def reset(self):
        return self._obs()

    def step(self, action):
        th, thdot = self.state.T
        u = np.clip(np.asarray(action, dtype=np.float32).reshape(self.n), -self.max_torque, self.max_torque)
        angle = ((th + math.pi) % (2 * math.pi)) - math.pi  # angle_normalize
        costs = angle ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
        newthdot = thdot + (3 * self.g / (2 * self.l) * np.sin(th) + 3.0 / (self.m * self.l ** 2) * u) * self.dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * self.dt
        self.state = np.stack([newth, newthdot], axis=1)
        self.elapsed += 1
        terminated = np.zeros(self.n, dtype=bool)
        truncated = self.elapsed >= self.max_episode_steps
        stepped = self._obs()
        done = terminated | truncated
        if done.any():
            self.state[done] = self._initial_states(int(done.sum()))
            self.elapsed[done] = 0
        return self._obs(), -costs, terminated, truncated, stepped


class RunningMeanStd:
    """gymnasium 0.29's RunningMeanStd: mean 0, variance 1 and count 1e-4 at first, batches merged
    by the parallel algorithm, in float64."""

    def __init__(self, shape=()):
        self.mean, self.var, self.count = np.zeros(shape, np.float64), np.ones(shape, np.float64), 1e-4

    def update(self, x):
        batch_mean, batch_var, batch_count = np.mean(x, axis=0), np.var(x, axis=0), x.shape[0]
        delta = batch_mean - self.mean
        tot_count = self.count + batch_count
        self.mean = self.mean + delta * batch_count / tot_count
        m2 = self.var * self.count + batch_var * batch_count + np.square(delta) * self.count * batch_count / tot_count
        self.var, self.count = m2 / tot_count, tot_count


class NormalizedVec:
    """CleanRL ppo_continuous_action.py's wrapper stack (gymnasium 0.29.1) over a whole vector:
    RecordEpisodeStatistics (the raw rewards' episode returns), ClipAction, NormalizeObservation
    (epsilon 1e-8) then a clip to [-10, 10], NormalizeReward (the running variance of the discounted
    return with gamma, reset where an episode terminates, not where it is truncated, as 0.29.1 does;
    reward / sqrt(var + 1e-8)) then a clip to [-10, 10]. One set of statistics for all the envs
    of the vector (mlhost's way; CleanRL's per-env wrappers keep one set per env): each step
    updates the observation statistics with the observations the steps ended on, then with the
    reset observations of the envs that started a new episode, as each env's wrapper would."""

    def __init__(self, env, gamma, epsilon=1e-8):
        self.env, self.gamma, self.epsilon = env, gamma, epsilon
        self.obs_rms, self.return_rms = RunningMeanStd(shape=(3,)), RunningMeanStd(shape=())
        self.returns = np.zeros(env.n)
        self.episode_returns = np.zeros(env.n)
        self.finished = []  # the raw returns of the finished episodes, in order

    def _normalize_obs(self, obs):
        return np.clip((obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + self.epsilon), -10, 10).astype(np.float32)

    def reset(self):
        obs = self.env.reset()
        self.obs_rms.update(obs)
        return self._normalize_obs(obs)

    def step(self, action):
        action = np.clip(action, self.env.action_low, self.env.action_high)  # ClipAction
        obs, reward, terminated, truncated, stepped = self.env.step(action)
        done = terminated | truncated
        self.episode_returns += reward
        if done.any():
            self.finished.extend(self.episode_returns[done].tolist())
            self.episode_returns[done] = 0.0
        self.obs_rms.update(stepped)
        if done.any():
            self.obs_rms.update(obs[done])
        self.returns = self.returns * self.gamma * (1 - terminated) + reward
        self.return_rms.update(self.returns)
        reward = np.clip(reward / np.sqrt(self.return_rms.var + self.epsilon), -10, 10)
        return self._normalize_obs(obs), reward, terminated, truncated


class ContinuousAgent(nn.Module):
    """CleanRL ppo_continuous_action.py's Agent: the critic and the actor's mean, 64-64 tanh with
    orthogonal init, and a state-independent log standard deviation, 0 at first."""

    def __init__(self, obs_dim=3, action_dim=1):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                    nn.Tanh(), layer_init(nn.Linear(64, 1), std=1.0))
        self.actor_mean = nn.Sequential(layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(), layer_init(nn.Linear(64, 64)),
                                        nn.Tanh(), layer_init(nn.Linear(64, action_dim), std=0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, action_dim))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        action_mean = self.actor_mean(x)
        action_std = torch.exp(self.actor_logstd.expand_as(action_mean))
        probs = torch.distributions.Normal(action_mean, action_std)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def ppo_continuous_train(args):
    """CleanRL ppo_continuous_action.py's whole run (collect, GAE, update; LR annealed over the
    run) on PendulumVec with the --pc-* settings; returns the record's figures."""
    num_envs, num_steps = args.pc_envs, args.pc_steps
    num_minibatches, update_epochs = args.pc_minibatches, args.pc_epochs
    lr, gamma, gae_lambda, clip_coef = args.pc_lr, args.pc_gamma, args.pc_gae_lambda, args.pc_clip
    ent_coef, vf_coef, max_grad_norm = args.pc_ent, args.pc_vf, args.pc_max_grad_norm
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    num_iterations = args.pc_total_timesteps // batch_size
    if num_iterations < 1 or minibatch_size < 1:
        raise ValueError(f"--pc-total-timesteps {args.pc_total_timesteps} is under one iteration's "
                         f"{batch_size} steps, or --pc-minibatches is over {batch_size}")
    obs_dim, action_dim = 3, 1
    device = torch.device(args.device)
    random.seed(args.pc_seed)
    np.random.seed(args.pc_seed)
    torch.manual_seed(args.pc_seed)
    envs = NormalizedVec(PendulumVec(num_envs, seed=args.pc_seed), gamma)
    agent = ContinuousAgent(obs_dim, action_dim).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    obs = torch.zeros((num_steps, num_envs, obs_dim)).to(device)
    actions = torch.zeros((num_steps, num_envs, action_dim)).to(device)
    logprobs = torch.zeros((num_steps, num_envs)).to(device)
    rewards = torch.zeros((num_steps, num_envs)).to(device)
    dones = torch.zeros((num_steps, num_envs)).to(device)
    values = torch.zeros((num_steps, num_envs)).to(device)

    def mean_last_100():
        return float(np.mean(envs.finished[-100:])) if envs.finished else None

    returns_at = []
    global_step = 0
    start_time = time.perf_counter()
    next_obs = torch.Tensor(envs.reset()).to(device)
    next_done = torch.zeros(num_envs).to(device)
    for iteration in range(1, num_iterations + 1):
        frac = 1.0 - (iteration - 1.0) / num_iterations
        optimizer.param_groups[0]["lr"] = frac * lr
        for step in range(num_steps):
            global_step += num_envs
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action  # unclipped; the env clips it to the action bounds
            logprobs[step] = logprob
            next_obs, reward, terminations, truncations = envs.step(action.cpu().numpy())
            next_done = np.logical_or(terminations, truncations)
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs).to(device), torch.Tensor(next_done).to(device)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values
        b_obs = obs.reshape((-1, obs_dim))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1, action_dim))
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        ppo_update_epochs(agent, optimizer, b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values,
                          batch_size, minibatch_size, update_epochs, clip_coef, ent_coef, vf_coef, max_grad_norm)
        returns_at.append([global_step, mean_last_100()])
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - start_time
    return dict(items_per_s=global_step / wall, unit="steps", total_timesteps=global_step, wall_s=wall,
                final_return=mean_last_100(), episodes=len(envs.finished), returns_at=returns_at)


def run_ppo_continuous(args):
    if "fp32" not in args.precision or "eager" not in args.variant:
        return  # CleanRL's ppo_continuous_action.py runs eagerly in fp32
    # One run with torch's threads (or --threads): a training run, not a repeated step.
    record = dict(workload="ppo_continuous", env="Pendulum-v1", variant="eager", precision="fp32",
                  device=args.device, torch=torch.__version__, threads=torch.get_num_threads(),
                  settings=dict(envs=args.pc_envs, steps=args.pc_steps, minibatches=args.pc_minibatches,
                                epochs=args.pc_epochs, lr=args.pc_lr, gamma=args.pc_gamma,
                                gae_lambda=args.pc_gae_lambda, clip=args.pc_clip, ent=args.pc_ent, vf=args.pc_vf,
                                max_grad_norm=args.pc_max_grad_norm, anneal_lr=True, seed=args.pc_seed))
    try:
        record.update(ppo_continuous_train(args))
    except Exception as e:  # noqa: BLE001  (a failed run is a line with its reason)
        record.update(error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    emit(record)


# --------------------------------------------------------------------------------------------- main

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", default="all",
                   help="trm, protonet, ppo, ppo_continuous, ppo_gymnasium or all (trm, protonet, ppo; "
                        "comma-separated)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--precision", default="fp32,bf16", help="comma-separated: fp32, bf16")
    p.add_argument("--variant", default=None,
                   help="comma-separated: eager, compiled, cuda_graph (default: all that apply; --tiny: eager)")
    p.add_argument("--batch", type=int, default=0, help="TRM batch (default 32; --tiny 4)")
    p.add_argument("--trm-size", default=None, help="comma-separated: small, default (default both; --tiny small)")
    p.add_argument("--seconds", type=float, default=None, help="timed seconds per measurement (default 3; --tiny 1)")
    p.add_argument("--min-iterations", type=int, default=None, help="at least this many timed steps (5; --tiny 2)")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--tiny", action="store_true", help="small sizes for a test")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="after each measurement, 3 more steps under torch.profiler as a Chrome trace in DIR")
    pc = p.add_argument_group("ppo_continuous (rl-baselines3-zoo's PPO Pendulum-v1 without gSDE)")
    pc.add_argument("--pc-envs", type=int, default=4, help="environments (4)")
    pc.add_argument("--pc-steps", type=int, default=1024, help="steps per env per iteration (1024)")
    pc.add_argument("--pc-minibatches", type=int, default=64, help="minibatches per epoch (64)")
    pc.add_argument("--pc-epochs", type=int, default=10, help="update epochs per iteration (10)")
    pc.add_argument("--pc-lr", type=float, default=1e-3, help="Adam learning rate, annealed linearly (1e-3)")
    pc.add_argument("--pc-gamma", type=float, default=0.9, help="discount (0.9)")
    pc.add_argument("--pc-gae-lambda", type=float, default=0.95, help="GAE lambda (0.95)")
    pc.add_argument("--pc-clip", type=float, default=0.2, help="surrogate and value clip (0.2)")
    pc.add_argument("--pc-ent", type=float, default=0.0, help="entropy coefficient (0.0)")
    pc.add_argument("--pc-vf", type=float, default=0.5, help="value loss coefficient (0.5)")
    pc.add_argument("--pc-max-grad-norm", type=float, default=0.5, help="gradient norm clip (0.5)")
    pc.add_argument("--pc-total-timesteps", type=int, default=200000,
                    help="env steps (200000), rounded down to whole iterations of envs x steps")
    pc.add_argument("--pc-seed", type=int, default=1, help="seed (1)")
    pg = p.add_argument_group("ppo_gymnasium (CleanRL ppo.py's defaults)")
    pg.add_argument("--pg-env-id", default="CartPole-v1", help="gymnasium environment id, discrete actions (CartPole-v1)")
    pg.add_argument("--pg-envs", type=int, default=4, help="environments (4)")
    pg.add_argument("--pg-steps", type=int, default=128, help="steps per env per iteration (128)")
    pg.add_argument("--pg-minibatches", type=int, default=4, help="minibatches per epoch (4)")
    pg.add_argument("--pg-epochs", type=int, default=4, help="update epochs per iteration (4)")
    pg.add_argument("--pg-lr", type=float, default=2.5e-4, help="Adam learning rate, annealed linearly (2.5e-4)")
    pg.add_argument("--pg-gamma", type=float, default=0.99, help="discount (0.99)")
    pg.add_argument("--pg-gae-lambda", type=float, default=0.95, help="GAE lambda (0.95)")
    pg.add_argument("--pg-clip", type=float, default=0.2, help="surrogate and value clip (0.2)")
    pg.add_argument("--pg-ent", type=float, default=0.01, help="entropy coefficient (0.01)")
    pg.add_argument("--pg-vf", type=float, default=0.5, help="value loss coefficient (0.5)")
    pg.add_argument("--pg-max-grad-norm", type=float, default=0.5, help="gradient norm clip (0.5)")
    pg.add_argument("--pg-total-timesteps", type=int, default=100000,
                    help="env steps (100000), rounded down to whole iterations of envs x steps")
    pg.add_argument("--pg-seed", type=int, default=1, help="seed (1); env i is reset with seed + i")
    args = p.parse_args(argv)
    args.precision = [s for s in args.precision.split(",") if s]
    args.variant = ([s for s in args.variant.split(",") if s] if args.variant else
                    ["eager"] if args.tiny else ["eager", "compiled"] + (["cuda_graph"] if args.device == "cuda" else []))
    args.trm_size = [s for s in args.trm_size.split(",") if s] if args.trm_size else None
    args.seconds = args.seconds if args.seconds is not None else (1.0 if args.tiny else 3.0)
    args.min_iterations = args.min_iterations or (2 if args.tiny else 5)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        emit({"workload": args.workload, "error": "--device cuda: torch.cuda.is_available() is false"})
        return 1
    for precision in args.precision:
        if precision not in ("fp32", "bf16"):
            emit({"workload": args.workload, "precision": precision, "error": "the peers measure fp32 and bf16"})
    args.precision = [s for s in args.precision if s in ("fp32", "bf16")]
    runners = {"trm": run_trm, "protonet": run_protonet, "ppo": run_ppo, "ppo_continuous": run_ppo_continuous,
               "ppo_gymnasium": run_ppo_gymnasium}
    # "all" leaves out ppo_continuous and ppo_gymnasium: whole training runs, minutes on a CPU.
    workloads = ["trm", "protonet", "ppo"] if args.workload == "all" else [w for w in args.workload.split(",") if w]
    for w in workloads:
        if w not in runners:
            p.error(f"--workload {w}: one of {', '.join(runners)} or all")
    for w in workloads:
        runners[w](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
