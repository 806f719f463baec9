"""Pickles the ProtoNet reference's model (jakesnell/prototypical-networks, unmodified, from
$MLH_REFERENCE_DIR/protonet: see bench/mlh_references.py; exit 77 without it) as its
train.py saves best_model.pt: torch.save of the whole Protonet module, its classes named by their Python path. Also saves an input batch and the
reference encoder's embeddings of it, in eval mode, with batch-norm statistics that are not
the initial ones. The C++ test (ProtonetReference.*) reads both without Python.

    python reference_protonet.py OUT_DIR   # writes best_model.pt and expected.pt

The files in tests/protonet/fixtures/reference_protonet/ were written by this script with
PyTorch 2.15 (the repo's .venv/): the test runs where no Python is installed."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import mlh_references  # noqa: E402

mlh_references.use("protonet", "reference_protonet.py")  # exit 77 without it
from protonets.models import get_model  # noqa: E402

torch.manual_seed(3)
model = get_model("protonet_conv", {"x_dim": [1, 28, 28], "hid_dim": 8, "z_dim": 8})
model.train()
with torch.no_grad():  # running statistics away from (0, 1), as after training
    for _ in range(5):
        model.encoder(torch.rand(16, 1, 28, 28) * 2 + 0.5)
model.eval()
x = torch.rand(6, 1, 28, 28)
with torch.no_grad():
    z = model.encoder(x)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.save(model, os.path.join(out, "best_model.pt"))
torch.save({"x": x, "z": z}, os.path.join(out, "expected.pt"))
print(f"torch {torch.__version__}: {out}/best_model.pt, embeddings {tuple(z.shape)}")
