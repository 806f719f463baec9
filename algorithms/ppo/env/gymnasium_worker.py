"""One Gymnasium environment in a Python process of its own, stepped by mlhost's PPO.

PPO (env=gymnasium) starts one of these per environment of its vector, runs the PPO loop in
C++ and talks to each over a Unix socket (fd 3) and a shared-memory block (fd 4): the
observation and the action never pass through the socket. mlhost embeds this file in the ppo
plugin (gymnasium_env.cpp starts `python -c <this file> <spec>`); it is not imported.

The spec (argv[1], JSON): {"id": a registered id ("Pendulum-v1") or "module:Class",
"kwargs": {...} for gymnasium.make or the class, "wrappers": [{"name": ..., kwargs}],
"pythonpath": [folders]}. A wrapper's name is a class of gymnasium.wrappers or "module:Class".

The protocol (little-endian):
  worker -> host  b"J" u32 n, n bytes of JSON: the spaces, or {"error": ...}
  host -> worker  b"M" u64 size: map the shared block (fd 4) of that size
                  b"R" u64 seed: reset(seed=seed), the observation into the block
                  b"S": step(action from the block), the observation into the block
                  b"Q": exit
  worker -> host  b"K" after M and R; b"K" f64 reward u8 terminated u8 truncated after S;
                  b"E" u32 n, n bytes: the error's text (the host stops the run with it)
Block layout: the observation (float32, its size) at 0, the action at `action_offset` (the
spaces' JSON says it): an int64 for Discrete, float32s for Box.
"""
import importlib
import json
import mmap
import os
import signal
import socket
import struct
import sys
import traceback

SOCKET_FD, BLOCK_FD = 3, 4


def send(sock, data):
    sock.sendall(data)


def send_text(sock, tag, text):
    data = text.encode("utf-8", "replace")
    send(sock, tag + struct.pack("<I", len(data)) + data)


def receive(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:  # the host is gone: nothing left to do
            sys.exit(0)
        data += chunk
    return data


class Refusal(Exception):
    """What this worker refuses, said as it is (no exception type, no frame)."""


def is_users(filename):
    """Whether a frame's file is the user's: not this worker or a frozen module (<...>), not
    gymnasium or numpy, not Python's standard library (an installed package is the user's)."""
    if filename.startswith("<"):
        return False
    for name in ("gymnasium", "numpy"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            if filename.startswith(os.path.dirname(module.__file__) + os.sep):
                return False
    installed = os.sep + "site-packages" + os.sep in filename or os.sep + "dist-packages" + os.sep in filename
    return installed or not filename.startswith(os.path.dirname(os.__file__) + os.sep)


def where(error):
    """The exception's type and message, and the innermost frame of the user's code."""
    if isinstance(error, Refusal):
        return str(error)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_users(f.filename)]
    text = f"{type(error).__name__}: {error}"
    if frames:
        f = frames[-1]
        text += f' (File "{f.filename}", line {f.lineno}, in {f.name})'
    return text


def load(name, what):
    """'module:Attribute' -> the attribute."""
    module, _, attribute = name.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as e:
        raise Refusal(f"{what} '{name}': {where(e)}") from None


def make(spec):
    import gymnasium
    kwargs = spec.get("kwargs") or {}
    env_id = spec["id"]
    if ":" in env_id and not env_id.startswith("gymnasium"):
        env = load(env_id, "gymnasium.id")(**kwargs)
        if not isinstance(env, gymnasium.Env):
            raise Refusal(f"gymnasium.id '{env_id}' made a {type(env).__name__}, not a gymnasium.Env")
    else:
        try:
            env = gymnasium.make(env_id, **kwargs)
        except gymnasium.error.Error as e:
            raise Refusal(f"gymnasium.id '{env_id}': {type(e).__name__}: {e}") from None
    for wrapper in spec.get("wrappers") or []:
        name, args = wrapper["name"], {k: v for k, v in wrapper.items() if k != "name"}
        if ":" in name:
            cls = load(name, "gymnasium.wrappers")
        else:
            cls = getattr(gymnasium.wrappers, name, None)
            if cls is None:
                raise Refusal(f"gymnasium.wrappers: '{name}' is not one of gymnasium.wrappers' "
                                 "(or give 'module:Class')")
        env = cls(env, **args)
    return env


def spaces(env):
    import gymnasium
    import numpy as np
    obs, act = env.observation_space, env.action_space
    if not isinstance(obs, gymnasium.spaces.Box):
        raise Refusal(f"its observation space is {obs}, not a Box: PPO takes arrays of numbers "
                         "(a wrapper such as FlattenObservation makes one)")
    described = {"name": env.spec.id if env.spec is not None else type(env.unwrapped).__name__,
                 "observation_shape": [int(d) for d in obs.shape]}
    if isinstance(act, gymnasium.spaces.Discrete):
        described["num_actions"], described["start"] = int(act.n), int(act.start)
    elif isinstance(act, gymnasium.spaces.Box):
        described["low"] = [float(x) for x in np.asarray(act.low, dtype=np.float64).reshape(-1)]
        described["high"] = [float(x) for x in np.asarray(act.high, dtype=np.float64).reshape(-1)]
        described["action_shape"] = [int(d) for d in act.shape]
    else:
        raise Refusal(f"its action space is {act}: PPO takes Discrete or Box actions")
    size = int(np.prod(obs.shape))
    described["action_offset"] = (size * 4 + 7) // 8 * 8
    return described


def main():
    # A signal sent to every process of a job (a scheduler's SIGTERM, a kill of the training
    # worker's process group) is the host's to act on: it stops the run, saving it, and then
    # closes the socket, which ends this worker. Ending at the signal would fail that save.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sock = socket.socket(fileno=SOCKET_FD)
    spec = json.loads(sys.argv[1])
    sys.path[:0] = spec.get("pythonpath") or []
    try:
        import numpy as np
        env = make(spec)
        described = spaces(env)
    except ImportError as e:
        send_text(sock, b"J", json.dumps({"error": f"{sys.executable} cannot import what it needs: {where(e)}"}))
        return
    except Exception as e:  # the user's code: any exception is a refusal to report
        send_text(sock, b"J", json.dumps({"error": where(e)}))
        return
    send_text(sock, b"J", json.dumps(described))
    size = int(np.prod(described["observation_shape"]))
    discrete = "num_actions" in described
    action_shape = described.get("action_shape", [])
    block = observation = action = None
    while True:
        op = receive(sock, 1)
        try:
            if op == b"M":
                (length,) = struct.unpack("<Q", receive(sock, 8))
                block = mmap.mmap(BLOCK_FD, length)
                observation = np.frombuffer(block, dtype=np.float32, count=size, offset=0)
                action = np.frombuffer(block, dtype=np.int64 if discrete else np.float32,
                                       count=1 if discrete else max(1, len(described["low"])),
                                       offset=described["action_offset"])
                send(sock, b"K")
            elif op == b"R":
                (seed,) = struct.unpack("<Q", receive(sock, 8))
                obs, _ = env.reset(seed=seed)
                observation[:] = np.asarray(obs, dtype=np.float32).reshape(-1)
                send(sock, b"K")
            elif op == b"S":
                a = int(action[0]) + described["start"] if discrete else action.reshape(action_shape).copy()
                obs, reward, terminated, truncated, _ = env.step(a)
                observation[:] = np.asarray(obs, dtype=np.float32).reshape(-1)
                send(sock, b"K" + struct.pack("<dBB", float(reward), bool(terminated), bool(truncated)))
            elif op == b"Q":
                env.close()
                return
            else:
                send_text(sock, b"E", f"unknown command {op!r}")
                return
        except Exception as e:  # the environment's own error: the host names the step
            send_text(sock, b"E", where(e))
            return


if __name__ == "__main__":
    main()
