"""PPO's actor-critic networks (algorithms/ppo/networks): observations in, (logits, value) out.

Each takes the network description a run records (network.json, and model.safetensors'
metadata "network") as keyword arguments. Their sizes have no defaults here: a run's
description holds every one (the C++ side writes all of NetworkSpec's fields), and the run's
config (for the residual tower, the plan's preset) decided them; a default here could only
disagree with it. Observations are float32 [batch, *observation_shape]:
CartPole's 4 numbers for mlp; a puzzle's planes x size x size board for recursive and resnet.

Two settings of the description add to any kind (make_network):
  continuous_actions      the first output is the mean of a Gaussian over num_actions values;
                          its log standard deviation is the parameter `actor_logstd`
  normalize_observations  forward() takes raw observations and normalizes them with the
                          running statistics training saved (buffers obs_mean, obs_var,
                          obs_count): clip((x - mean) / sqrt(var + 1e-8), -10, 10)
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from . import user_module


def _trunk(sizes):
    """Linear layers named 0, 1, ... (tanh between them in forward), as mlhost's mlp names them."""
    return nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))


def normalized(module, observations):
    """The observations as the network was trained on them (unchanged without normalization):
    what to feed your own module (network.kind=python), whose forward takes them normalized."""
    mean = getattr(module, "obs_mean", None)
    if mean is None:
        return observations
    flat = observations.reshape(observations.shape[0], -1)
    scale = torch.rsqrt(module.obs_var + 1e-8).to(flat.dtype)
    return ((flat - mean.to(flat.dtype)) * scale).clamp(-10.0, 10.0).reshape(observations.shape)


def _run_trunk(layers, x):
    for i, layer in enumerate(layers):
        x = layer(x)
        if i + 1 < len(layers):
            x = torch.tanh(x)
    return x


class MlpActorCritic(nn.Module):
    """Separate actor and critic MLPs with tanh: actor.<i>, critic.<i>."""

    def __init__(self, observation_shape, num_actions, *, mlp_hidden, **_):
        super().__init__()
        features = int(observation_shape[0])
        self.actor = _trunk([features, *mlp_hidden, num_actions])
        self.critic = _trunk([features, *mlp_hidden, 1])

    def forward(self, observations):
        observations = normalized(self, observations)
        return _run_trunk(self.actor, observations), _run_trunk(self.critic, observations).squeeze(1)


class RecursiveActorCritic(nn.Module):
    """3x3 conv stem + ReLU -> H*W tokens plus a learned position embedding -> one pre-norm
    transformer block applied num_recursive_steps times with the same weights -> final
    LayerNorm -> mean over tokens -> linear policy and value heads."""

    def __init__(self, observation_shape, num_actions, *, hidden_dim, num_heads, num_recursive_steps, **_):
        super().__init__()
        planes, height, width = (int(s) for s in observation_shape)
        d = hidden_dim
        self.num_heads, self.steps = num_heads, num_recursive_steps
        self.stem = nn.Conv2d(planes, d, 3, padding=1)
        self.position = nn.Parameter(torch.zeros(height * width, d))
        self.norm1, self.norm2, self.norm_final = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.attn_out = nn.Linear(d, d)
        self.mlp_in = nn.Linear(d, 4 * d)
        self.mlp_out = nn.Linear(4 * d, d)
        self.policy = nn.Linear(d, num_actions)
        self.value = nn.Linear(d, 1)

    def block(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, t, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # [B, heads, T, dh]
        attention = torch.softmax(q @ k.transpose(-2, -1) * (d // self.num_heads) ** -0.5, -1)
        h = x + self.attn_out((attention @ v).transpose(1, 2).reshape(b, t, d))
        return h + self.mlp_out(F.gelu(self.mlp_in(self.norm2(h))))

    def forward(self, observations):
        observations = normalized(self, observations)
        x = F.relu(self.stem(observations)).flatten(2).transpose(1, 2) + self.position
        for _ in range(self.steps):
            x = self.block(x)
        x = self.norm_final(x).mean(1)
        return self.policy(x), self.value(x).squeeze(1)


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN plus the input, ReLU; convolutions without bias."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + x)


class ResnetActorCritic(nn.Module):
    """AlphaZero's residual tower: stem conv-BN-ReLU, `blocks` residual blocks, a policy head
    (1x1 conv to 2, BN, ReLU, linear) and a value head (1x1 conv to 1, BN, ReLU, linear to
    value_hidden, ReLU, linear to 1)."""

    def __init__(self, observation_shape, num_actions, *, blocks, channels, value_hidden, **_):
        super().__init__()
        planes, height, width = (int(s) for s in observation_shape)
        cells = height * width
        self.stem = nn.Conv2d(planes, channels, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(channels)
        self.blocks = blocks
        for i in range(blocks):
            self.add_module(f"block{i}", ResidualBlock(channels))
        self.policy_conv = nn.Conv2d(channels, 2, 1, bias=False)
        self.policy_bn = nn.BatchNorm2d(2)
        self.policy = nn.Linear(2 * cells, num_actions)
        self.value_conv = nn.Conv2d(channels, 1, 1, bias=False)
        self.value_bn = nn.BatchNorm2d(1)
        self.value_hidden = nn.Linear(cells, value_hidden)
        self.value = nn.Linear(value_hidden, 1)

    def forward(self, observations):
        observations = normalized(self, observations)
        x = F.relu(self.stem_bn(self.stem(observations)))
        for i in range(self.blocks):
            x = getattr(self, f"block{i}")(x)
        p = F.relu(self.policy_bn(self.policy_conv(x))).flatten(1)
        v = F.relu(self.value_bn(self.value_conv(x))).flatten(1)
        return self.policy(p), self.value(F.relu(self.value_hidden(v))).squeeze(1)


NETWORKS = {"mlp": MlpActorCritic, "recursive": RecursiveActorCritic, "resnet": ResnetActorCritic}


def make_network(spec):
    """The module a network description (network.json's dict) names, untrained. For
    network.kind=python it is your own class, built as training built it."""
    kind = spec["kind"]
    if kind == "python":
        net = user_module.build(spec["module"], {**spec.get("kwargs", {}), "observation_shape": spec["observation_shape"],
                                                 "num_actions": spec["num_actions"]})
    elif kind not in NETWORKS:
        raise ValueError(f"unknown PPO network kind {kind!r}: expected one of {', '.join(NETWORKS)}, python")
    else:
        extras = ("kind", "continuous_actions", "normalize_observations", "module", "kwargs")
        net = NETWORKS[kind](**{k: v for k, v in spec.items() if k not in extras})
    # continuous_actions, normalize_observations, module and kwargs came after the first runs:
    # a description without them is an older run's, which had neither (hence .get).
    if spec.get("continuous_actions"):
        net.actor_logstd = nn.Parameter(torch.zeros(int(spec["num_actions"])))
    if spec.get("normalize_observations"):
        size = math.prod(int(s) for s in spec["observation_shape"])
        net.register_buffer("obs_mean", torch.zeros(size, dtype=torch.float64))
        net.register_buffer("obs_var", torch.ones(size, dtype=torch.float64))
        net.register_buffer("obs_count", torch.full((1,), 1e-4, dtype=torch.float64))
    return net
