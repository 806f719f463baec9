"""mlhost's trained networks in PyTorch: a module for each (protonet, ppo, trm) and
load_run(run_dir), which rebuilds a trained run's network from its folder."""
from . import ppo, protonet, trm
from .run import load_run

__all__ = ["load_run", "ppo", "protonet", "trm"]
