#!/usr/bin/env python3
"""Writes tests/fixtures/gymnasium_continuous_control.json, the trajectories that
continuous_control_test.cpp checks ppo::Pendulum and ppo::MountainCarContinuous against.

Each episode is played by gymnasium itself (gymnasium.make, so its TimeLimit truncates):
reset, then the state set through env.unwrapped.state (and the TimeLimit's step count where
an episode starts late), then a fixed sequence of float32 actions, some out of bounds, as a
policy's float32 actions reach the C++ environments. Gymnasium holds MountainCarContinuous's
state as float64 from reset to the first step and as float32 after it, so an episode that
starts late gets a float32 state, as it would have had there.

Run with the repository's venv, after `.venv/bin/pip install gymnasium`:
    .venv/bin/python tests/ppo_env/gymnasium_classic_control.py
"""
import json
import pathlib

import gymnasium
import numpy as np

OUTPUT = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "gymnasium_continuous_control.json"


def record(env_id, state, actions, steps=0):
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    dtype = np.float32 if env_id.startswith("MountainCar") and steps > 0 else np.float64
    env.unwrapped.state = np.array(state, dtype=dtype)
    env._elapsed_steps = steps  # the outermost wrapper is the TimeLimit
    actions = [np.float32(a) for a in actions]
    episode = {"state": [float(v) for v in env.unwrapped.state], "steps": steps,
               "actions": [float(a) for a in actions],
               "observations": [], "rewards": [], "terminated": [], "truncated": []}
    for action in actions:
        observation, reward, terminated, truncated, _ = env.step(np.array([action], dtype=np.float32))
        episode["observations"].append([float(v) for v in observation])
        episode["rewards"].append(float(reward))
        episode["terminated"].append(bool(terminated))
        episode["truncated"].append(bool(truncated))
        if terminated or truncated:
            break
    assert len(episode["observations"]) == len(actions), f"{env_id} from {state}: the episode ended early"
    env.close()
    return episode


def main():
    torques = [3.5, -7.0, 0.0, 1.37, -2.0, 2.0, -0.73, 0.41, -1.53, 2.5]
    pendulum = [
        # Swings up and over the top several times (theta reaches ~12): angle wrapping, the
        # torque clip, and the 200-step truncation on the last step.
        record("Pendulum-v1", [3.0, -0.5], [torques[(i // 20) % len(torques)] for i in range(200)]),
        # Fast and far below -pi: the angular-velocity clip at -8 and the wrapping of negative angles.
        record("Pendulum-v1", [-9.5, -7.9], [-7.0, -3.5, -2.0, -1.0, 0.0, 1.0, 2.0, 3.5, -0.25, 0.125]),
    ]
    car = [
        # Near the goal pushing right beyond the bounds: terminates with reward 100 - 0.1 * 1.5^2.
        record("MountainCarContinuous-v0", [0.4, 0.03], [1.5, 1.5]),
        # Past the right end: the position clip at 0.6, terminating there.
        record("MountainCarContinuous-v0", [0.59, 0.05], [1.0]),
        # Into the left wall: the position clip at -1.2 zeroes the velocity; then back up.
        record("MountainCarContinuous-v0", [-1.15, -0.06], [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 0.75, -0.25, 1.0]),
        # Down the slope at nearly top speed: the velocity clip at 0.07.
        record("MountainCarContinuous-v0", [-0.7, 0.069], [1.0, 1.2, 0.9, -0.3, 0.6]),
        # A start as reset draws it, a policy's mixed actions for 150 steps.
        record("MountainCarContinuous-v0", [-0.5234567, 0.0],
               [float(np.sin(0.37 * i)) * 1.3 for i in range(150)]),
        # The same dynamics late in an episode: float32 state, truncation at step 999.
        record("MountainCarContinuous-v0", [-0.31, 0.012], [0.8, -0.6, 0.4], steps=996),
    ]
    fixture = {
        "generator": "tests/ppo_env/gymnasium_classic_control.py",
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "pendulum": pendulum,
        "mountain_car_continuous": car,
    }
    OUTPUT.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
