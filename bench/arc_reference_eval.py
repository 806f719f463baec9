#!/usr/bin/env python3
"""Scores saved TRM predictions with the TRM reference's own ARC evaluator.

  arc_reference_eval.py DATA_DIR PREDICTIONS [SAVE_DIR]

DATA_DIR is an ARC dataset folder (build-data with build.kind=arc, or the reference's
build_arc_dataset.py); PREDICTIONS a file of `host --algorithm trm --command eval --set
eval_save_predictions=true` (step_<N>_all_preds.0 in the command's folder) or of the reference's
pretrain.py with eval_save_outputs. Runs the reference's evaluators/arc.py, unmodified, from
$MLH_REFERENCE_DIR/trm (default ../shared/reference beside the checkout; bench/mlh_references.py)
as pretrain.py does: begin_eval, update_batch with the saved inputs,
puzzle_identifiers, preds and q_halt_logits, then result() in a one-rank process group. Prints
its pass@K as one JSON object; with SAVE_DIR it also writes its submission.json there.
Needs torch, numpy, numba, pydantic and argdantic (scripts/py-peers.txt in .venv); exits 77
when one, or the reference, is missing.
"""
import json
import os
import sys

import mlh_references  # beside this file

mlh_references.use("trm", "arc_reference_eval")  # exit 77 without it: the tests read it as "skipped"

try:
    import torch
    import torch.distributed as dist
    from dataset.common import PuzzleDatasetMetadata
    from evaluators.arc import ARC
except ImportError as e:  # exit 77: the tests read it as "skipped", with this reason
    print(f"arc_reference_eval: SKIPPED: {e} (pip install torch -r scripts/py-peers.txt into the venv)")
    sys.exit(77)


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    data_dir, predictions = argv[1], argv[2]
    save_dir = argv[3] if len(argv) == 4 else None
    with open(os.path.join(data_dir, "test", "dataset.json")) as f:
        metadata = PuzzleDatasetMetadata(**json.load(f))
    saved = torch.load(predictions, map_location="cpu")  # PyTorch's default: weights only
    evaluator = ARC(data_path=data_dir, eval_metadata=metadata)
    evaluator.begin_eval()
    evaluator.update_batch({k: saved[k] for k in ("inputs", "puzzle_identifiers")},
                           {k: saved[k] for k in ("preds", "q_halt_logits")})
    # result() gathers every rank's votes over torch.distributed: here one rank.
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        if save_dir:
            os.makedirs(save_dir, exist_ok=True)
        print(json.dumps(evaluator.result(save_dir, rank=0, world_size=1)))
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
