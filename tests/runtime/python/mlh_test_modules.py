"""Modules for python_module_test.cpp: the embedded Python's contract with the runtime."""
import torch
from torch import nn


class Nested(nn.Module):
    """Parameters and buffers at depth two: body.0.weight, body.1.running_mean, ..."""

    def __init__(self, features=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 2), nn.BatchNorm1d(2))

    def forward(self, x):
        return self.body(x)


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((3,), 2.0))

    def forward(self, x):
        return x * self.scale, (x * self.scale).sum(1)


class DropoutOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("this module refuses its input")


class ReturnsANumber(nn.Module):
    def forward(self, x):
        return 3


class TakesNoArguments(nn.Module):
    def __init__(self):
        super().__init__()


class NotAModule:
    pass
