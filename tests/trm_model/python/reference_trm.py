"""Builds the TRM reference's model (its models/, unmodified, from $MLH_REFERENCE_DIR/trm: see
bench/mlh_references.py) with PyTorch,
saves its weights as the reference's pretrain.py does (torch.save of the compiled ACT loss
head's state_dict, so every name carries "_orig_mod.model.", in a file named step_<N>), runs one
evaluation ACT step on a random batch and saves the batch and the outputs for the C++ side:

    python reference_trm.py OUT_DIR

writes, per variant (OUT_DIR/attention, OUT_DIR/mlp_t):
    step_0         the state dict, as the reference writes its checkpoints
    expected.pt    inputs, labels, puzzle_identifiers, logits, q_halt_logits (torch.save)
    config.json    the same model's config in mlhost's names (trm::ModelConfig)
Exit 77 when the reference, torch, pydantic or einops is missing (the test skips, saying why)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import mlh_references  # noqa: E402

mlh_references.use("trm", "reference_trm.py")  # exit 77 without it

try:
    import torch
    import pydantic  # noqa: F401  (the reference's config class)
    import einops  # noqa: F401  (imported by the reference's layers)
except ImportError as e:
    print(f"the TRM reference needs torch, pydantic and einops: {e}", file=sys.stderr)
    sys.exit(77)

from models.losses import ACTLossHead  # noqa: E402
from models.recursive_reasoning.trm import TinyRecursiveReasoningModel_ACTV1  # noqa: E402


def build(out_dir, mlp_t):
    torch.manual_seed(7)
    batch_size, seq_len, vocab, puzzles = 3, 16, 12, 5
    reference = dict(batch_size=batch_size, seq_len=seq_len, puzzle_emb_ndim=64, num_puzzle_identifiers=puzzles,
                     vocab_size=vocab, H_cycles=2, L_cycles=2, H_layers=0, L_layers=2, hidden_size=32, expansion=4,
                     num_heads=2, pos_encodings="rope", halt_max_steps=4, halt_exploration_prob=0.1,
                     forward_dtype="float32", mlp_t=mlp_t, puzzle_emb_len=2, no_ACT_continue=True)
    model = TinyRecursiveReasoningModel_ACTV1(reference)
    with torch.no_grad():  # as if trained: the reference starts the embedding table at zero
        model.inner.puzzle_emb.weights.normal_(0, 0.5)
        model.inner.q_head.weight.normal_(0, 0.1)  # the reference starts it at zero (halt logit -5)
    head = torch.compile(ACTLossHead(model, loss_type="stablemax_cross_entropy"))  # lazy: nothing compiles
    os.makedirs(out_dir, exist_ok=True)
    torch.save(head.state_dict(), os.path.join(out_dir, "step_0"))

    batch = {"inputs": torch.randint(0, vocab, (batch_size, seq_len), dtype=torch.int32),
             "labels": torch.randint(0, vocab, (batch_size, seq_len), dtype=torch.int32),
             "puzzle_identifiers": torch.randint(0, puzzles, (batch_size,), dtype=torch.int32)}
    model.eval()
    with torch.no_grad():
        carry = model.initial_carry(batch)
        carry, outputs = model(carry=carry, batch=batch)
    torch.save({**batch, "logits": outputs["logits"].float().contiguous(),
                "q_halt_logits": outputs["q_halt_logits"].float().contiguous()},
               os.path.join(out_dir, "expected.pt"))
    ours = dict(seq_len=seq_len, vocab_size=vocab, num_puzzle_identifiers=puzzles, puzzle_emb_ndim=64,
                puzzle_emb_len=2, hidden=32, num_heads=2, expansion=4.0, h_cycles=2, l_cycles=2, l_layers=2,
                halt_max_steps=4, halt_exploration_prob=0.1, no_act_continue=True, mlp_t=mlp_t, causal=False,
                rope_theta=10000.0, rms_norm_eps=1e-5)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(ours, f)


out = sys.argv[1]
build(os.path.join(out, "attention"), mlp_t=False)
build(os.path.join(out, "mlp_t"), mlp_t=True)
print(f"torch {torch.__version__}: reference TRM state dicts and outputs in {out}")
