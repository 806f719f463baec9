"""A PPO policy written in PyTorch: mlhost trains it with network.kind=python and
network.module=examples/pytorch/my_policy.py:MlpPolicy (docs/your-network-in-pytorch.md).

mlhost builds the class with observation_shape (a list), num_actions and the keyword
arguments of network.kwargs; forward takes observations [batch, *observation_shape] and
returns (logits [batch, num_actions], values [batch]). With continuous actions the first
output is the mean of each action value (mlhost keeps the log standard deviation).
"""
import math

import torch
from torch import nn


def layer(n_in, n_out, gain):
    """A linear layer initialised as CleanRL's ppo.py does (orthogonal, bias 0)."""
    linear = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(linear.weight, gain)
    nn.init.zeros_(linear.bias)
    return linear


class MlpPolicy(nn.Module):
    """CleanRL's Agent: separate actor and critic MLPs with tanh."""

    def __init__(self, observation_shape, num_actions, hidden=64):
        super().__init__()
        features = math.prod(observation_shape)
        self.actor = nn.Sequential(layer(features, hidden, math.sqrt(2)), nn.Tanh(),
                                   layer(hidden, hidden, math.sqrt(2)), nn.Tanh(), layer(hidden, num_actions, 0.01))
        self.critic = nn.Sequential(layer(features, hidden, math.sqrt(2)), nn.Tanh(),
                                    layer(hidden, hidden, math.sqrt(2)), nn.Tanh(), layer(hidden, 1, 1.0))

    def forward(self, observations):
        x = observations.flatten(1)
        return self.actor(x), self.critic(x).squeeze(1)


class ConvPolicy(nn.Module):
    """For observations of planes ([planes, height, width]: the puzzles' boards): a small
    convolutional trunk shared by the policy and value heads."""

    def __init__(self, observation_shape, num_actions, channels=32):
        super().__init__()
        planes, height, width = observation_shape
        self.trunk = nn.Sequential(nn.Conv2d(planes, channels, 3, padding=1), nn.ReLU(),
                                   nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(), nn.Flatten())
        features = channels * height * width
        self.policy = layer(features, num_actions, 0.01)
        self.value = layer(features, 1, 1.0)

    def forward(self, observations):
        x = self.trunk(observations)
        return self.policy(x), self.value(x).squeeze(1)
