"""Gymnasium environments of a user's own for mlhost's tests (config env=gymnasium,
gymnasium.id=mlh_test_envs:CLASS, gymnasium.pythonpath=this folder).

  Corridor         a 1-D walk to the right end: +1 there, -0.01 a step (discrete actions)
  RaisesAtStep     Corridor whose step raises ValueError at its `at`-th step in all
  KilledAtStep     Corridor whose process kills itself with SIGKILL at its `at`-th step
  NanAtStep        Corridor whose observation holds NaN at its `at`-th step
  DictObservation  an observation space PPO cannot take
(mlh_test_broken_env.py beside it holds a syntax error.)
"""
import math
import os
import signal

import gymnasium
import numpy as np


class Corridor(gymnasium.Env):
    def __init__(self, length=6):
        self.length = length
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (length,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.steps = 0

    def _obs(self):
        obs = np.zeros(self.length, np.float32)
        obs[self.position] = 1.0
        return obs

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.position = int(self.np_random.integers(0, self.length - 1))
        return self._obs(), {}

    def step(self, action):
        self.steps += 1
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position == self.length - 1
        return self._obs(), 1.0 if done else -0.01, done, False, {}


class RaisesAtStep(Corridor):
    def __init__(self, at=300):
        super().__init__()
        self.at = at

    def step(self, action):
        if self.steps + 1 == self.at:
            raise ValueError(f"the corridor broke at step {self.at}")
        return super().step(action)


class KilledAtStep(RaisesAtStep):
    def step(self, action):
        if self.steps + 1 == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
        return Corridor.step(self, action)


class NanAtStep(RaisesAtStep):
    def step(self, action):
        obs, reward, terminated, truncated, info = Corridor.step(self, action)
        if self.steps == self.at:
            obs[0] = math.nan
        return obs, reward, terminated, truncated, info


class DictObservation(Corridor):
    def __init__(self):
        super().__init__()
        self.observation_space = gymnasium.spaces.Dict({"position": self.observation_space})
