"""ProtoNet's embedding networks (algorithms/protonet/model.*): images in, embeddings out.

Inputs are N x C x H x W floats, the pixels divided by 255 (Omniglot's inverted, as the
config's data.invert does). Class prototypes are the mean embedding of each class's support
images; a query's logits are minus its squared Euclidean distance to each prototype (or the
scaled cosine similarity with distance=cosine), as the classify command computes them.
Their sizes have no defaults: a run's weights' metadata holds them (in_channels, width).
"""
import torch
from torch import nn
from torch.nn import functional as F


class Conv4(nn.Module):
    """Snell et al.'s Conv-4: four blocks of 3x3 conv (padding 1) -> batch norm -> ReLU ->
    2x2 max pool, flattened. 28x28x1 embeds to width dims, 84x84x3 to width x 5 x 5."""

    def __init__(self, in_channels, width):
        super().__init__()
        for i in range(4):
            # The names mlhost's model.safetensors uses: block<i>_conv, block<i>_bn.
            self.add_module(f"block{i}_conv", nn.Conv2d(in_channels if i == 0 else width, width, 3, padding=1))
            self.add_module(f"block{i}_bn", nn.BatchNorm2d(width))

    def forward(self, x):
        for i in range(4):
            x = getattr(self, f"block{i}_bn")(getattr(self, f"block{i}_conv")(x))
            x = F.max_pool2d(F.relu(x), 2)
        return x.flatten(1)


class BasicBlock(nn.Module):
    """ResNet-12's block: three 3x3 convs (no bias), each followed by batch norm, LeakyReLU(0.1)
    between them; a 1x1 conv + batch norm shortcut; the sum through LeakyReLU(0.1), then a 2x2
    max pool. DropBlock acts in training only, so inference has none."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv3 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False),
                                        nn.BatchNorm2d(out_channels))

    def forward(self, x):
        h = F.leaky_relu(self.bn1(self.conv1(x)), 0.1)
        h = F.leaky_relu(self.bn2(self.conv2(h)), 0.1)
        h = self.bn3(self.conv3(h))
        return F.max_pool2d(F.leaky_relu(h + self.downsample(x), 0.1), 2)


class ResNet12(nn.Module):
    """ResNet-12: stages layer1..layer4 of one BasicBlock each, widths width x (1, 2.5, 5, 10),
    then global average pooling to width x 10 dims."""

    def __init__(self, in_channels, width):
        super().__init__()
        widths = [width, width * 5 // 2, width * 5, width * 10]
        previous = in_channels
        for i, w in enumerate(widths):
            # layer<i>.0.*: a stage is a sequence of one block, as the exported names say.
            self.add_module(f"layer{i + 1}", nn.Sequential(BasicBlock(previous, w)))
            previous = w

    def forward(self, x):
        for i in range(4):
            x = getattr(self, f"layer{i + 1}")(x)
        return x.mean((2, 3))


def prototypes(support_embeddings, labels, way):
    """The mean embedding of each class (labels 0..way-1): way x D."""
    protos = torch.zeros(way, support_embeddings.size(1), dtype=support_embeddings.dtype)
    protos.index_add_(0, labels, support_embeddings)
    return protos / torch.bincount(labels, minlength=way).clamp_min(1).unsqueeze(1).to(protos.dtype)


def logits(queries, protos, distance="euclidean", cosine_scale=10.0):
    """A query's score for each class: -squared Euclidean distance, or scaled cosine similarity."""
    if distance == "cosine":
        return cosine_scale * F.normalize(queries, dim=1, eps=1e-8) @ F.normalize(protos, dim=1, eps=1e-8).t()
    return -torch.cdist(queries, protos).pow(2)
