"""A ProtoNet encoder written in PyTorch: mlhost trains it with model.encoder=python and
model.module=examples/pytorch/my_encoder.py:SmallConvEncoder (docs/your-network-in-pytorch.md).

mlhost builds the class with in_channels (from the data) and the keyword arguments of
model.kwargs; forward takes images [batch, in_channels, height, width] and returns embeddings
[batch, D].
"""
from torch import nn


class SmallConvEncoder(nn.Module):
    """Snell et al.'s Conv-4 written as a researcher would: four conv-BN-ReLU-pool blocks."""

    def __init__(self, in_channels, width=64, blocks=4):
        super().__init__()
        layers = []
        for i in range(blocks):
            layers += [nn.Conv2d(in_channels if i == 0 else width, width, 3, padding=1), nn.BatchNorm2d(width),
                       nn.ReLU(), nn.MaxPool2d(2)]
        self.body = nn.Sequential(*layers)

    def forward(self, images):
        return self.body(images).flatten(1)
