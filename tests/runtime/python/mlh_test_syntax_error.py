"""A module file that does not parse (python_module_test.cpp)."""
import torch


class Broken(torch.nn.Module:
    pass
