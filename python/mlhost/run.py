"""load_run(): a trained mlhost run folder's network as a PyTorch module, weights loaded.

A run folder holds config.json (the config it trained with) and model.safetensors (the
trained weights; their metadata says which network they are). The module's `mlhost`
attribute keeps what was read: algorithm (the plugin whose run it is, from plan.json),
network (protonet, ppo or trm: the family the module was built as), metadata, config.
"""
import json
import os

from safetensors import safe_open
from safetensors.torch import load_file

from . import ppo, protonet, trm, user_module


def _protonet(meta, path):
    if meta["model"] == "protonet-python":  # your encoder: your class, as training built it
        return user_module.build(meta["module"], {**json.loads(meta["kwargs"]), "in_channels": int(meta["in_channels"])})
    encoders = {"protonet-conv4": protonet.Conv4, "protonet-resnet12": protonet.ResNet12}
    if meta["model"] not in encoders:
        raise ValueError(f"{path}: unknown ProtoNet model {meta['model']!r} (expected {', '.join(encoders)}, "
                         "protonet-python)")
    return encoders[meta["model"]](int(meta["in_channels"]), int(meta["width"]))


def _ppo(meta, path):
    return ppo.make_network(json.loads(meta["network"]))


def _trm(meta, path):
    return trm.Trm(**json.loads(meta["model"]))


def _algorithm(meta):
    """Which algorithm wrote the weights, from their metadata."""
    if meta.get("model", "").startswith("protonet-"):
        return "protonet"
    if "network" in meta:
        return "ppo"
    if "model" in meta and "mode" in meta:
        return "trm"
    return None


BUILDERS = {"protonet": _protonet, "ppo": _ppo, "trm": _trm}


def load_run(run_dir, weights="model.safetensors"):
    """The run's network in eval mode with `weights` (a file of the run folder) loaded.

    Raises FileNotFoundError when the folder has no such file (the run did not finish
    training) and ValueError when its metadata names no network this package knows.
    """
    path = os.path.join(run_dir, weights)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no trained weights (a run writes them when training ends)")
    with safe_open(path, "pt") as f:
        meta = f.metadata() or {}
    algorithm = _algorithm(meta)
    if algorithm is None:
        raise ValueError(f"{path}: its metadata ({sorted(meta)}) names no mlhost network")
    config_path = os.path.join(run_dir, "config.json")
    config = {}
    if os.path.isfile(config_path):
        with open(config_path) as f:
            config = json.load(f)
    module = BUILDERS[algorithm](meta, path)
    module.load_state_dict(load_file(path), strict=True)
    module.eval()
    module.mlhost = {"algorithm": _trained_by(run_dir) or algorithm, "network": algorithm, "metadata": meta,
                     "config": config, "weights": path}
    return module


def _trained_by(run_dir):
    """The algorithm plugin whose run this is, as its plan.json names it (a copy of protonet
    has its own name); None where the folder has no plan.json or it names none."""
    path = os.path.join(run_dir, "plan.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        plan = json.load(f)
    return plan.get("algorithm") if isinstance(plan, dict) else None
