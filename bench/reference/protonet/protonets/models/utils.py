# Vendored from jakesnell/prototypical-networks, commit c9bb4d258267c11cb6e23f0a19242d24ca98ad8a,
# protonets/models/utils.py, unchanged below this header. Copyright (c) 2017 Jake Snell; MIT License, see
# bench/reference/protonet/LICENSE. tests/protonet/python/reference_protonet.py pickles the
# reference model with it, as its train.py saves best_model.pt, for the --init-from test.
import torch

def euclidean_dist(x, y):
    # x: N x D
    # y: M x D
    n = x.size(0)
    m = y.size(0)
    d = x.size(1)
    assert d == y.size(1)

    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)

    return torch.pow(x - y, 2).sum(2)
