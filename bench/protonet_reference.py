"""ProtoNet's training episode as the Python reference runs it, timed.

The model, loss and step of Snell et al.'s reference code (github.com/jakesnell/
prototypical-networks: protonets/models/few_shot.py, utils.py, engine.py): Conv-4 (conv 3x3,
batch norm, ReLU, max-pool 2, four times, 64 filters), prototypes as mean support embeddings,
squared Euclidean distances by broadcasting, NLL of log-softmax, Adam; one optimizer step per
episode. Written here from that description so that the benchmark needs only PyTorch (the
reference also needs torchnet, which PyPI does not carry). Run by bench/protonet_reference.sh.

  python3 protonet_reference.py WAY SHOT QUERY PRECISION SECONDS
prints one JSON line: {"episodes_per_s": ..., "median_ms": ..., "iterations": ...}
"""
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))


def encoder(channels=1, width=64):
    return nn.Sequential(conv_block(channels, width), conv_block(width, width), conv_block(width, width),
                         conv_block(width, width), nn.Flatten())


def episode_loss(net, xs, xq):
    way, shot, query = xs.size(0), xs.size(1), xq.size(1)
    z = net(torch.cat([xs.reshape(way * shot, *xs.shape[2:]), xq.reshape(way * query, *xq.shape[2:])], 0))
    prototypes = z[:way * shot].view(way, shot, -1).mean(1)
    zq = z[way * shot:]
    dists = (zq.unsqueeze(1) - prototypes.unsqueeze(0)).pow(2).sum(2)
    log_p = F.log_softmax(-dists.float(), dim=1).view(way, query, -1)
    target = torch.arange(way).view(way, 1, 1).expand(way, query, 1)
    return -log_p.gather(2, target).squeeze(-1).mean()


def main():
    way, shot, query, precision, seconds = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                                            float(sys.argv[5]))
    torch.manual_seed(0)
    net = encoder()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    episodes = [(torch.rand(way, shot, 1, 28, 28), torch.rand(way, query, 1, 28, 28)) for _ in range(4)]

    def step(i):
        xs, xq = episodes[i % len(episodes)]
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = episode_loss(net, xs, xq)
        loss.backward()
        optimizer.step()

    for i in range(2):  # warm-up
        step(i)
    times, start = [], time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        step(len(times))
        times.append(time.perf_counter() - t)
    median = statistics.median(times)
    print(json.dumps({"episodes_per_s": 1.0 / median, "median_ms": 1000 * median, "iterations": len(times),
                      "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
