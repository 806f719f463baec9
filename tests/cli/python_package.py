#!/usr/bin/env python3
"""mlhost's Python package (python/) against mlhost itself, for every network mlhost trains.

  python_package.py SOURCE_DIR BUILD_DIR

The package is installed with pip from the checkout into a temporary target (no
dependencies: .venv's torch and safetensors serve). For each entry of NETWORKS: a tiny real
training run (a few steps), random inputs, the host's forward command on them
(`--resume --command forward --set forward.inputs=...`), and mlhost.load_run() of the run
folder on the same inputs; every output must agree within float tolerance; for PPO and TRM,
the export command of the same checkpoint, whose folder load_run reads as training's weights,
bit for bit; for the networks written in PyTorch (examples/pytorch), load_run gives back the
user's own class, and its torch.onnx.export, run by onnx's reference evaluator, gives the
module's outputs. Then the forward
command's failure paths: a missing tensor, a wrong shape, a wrong dtype, a tensor the network
does not take, each a non-zero exit naming the file and the tensor, and a file that is not there.
Before any of it: no network class of the package gives a size a default of its own (a run's
records hold every size; a default could only disagree with the config table that chose them).

Runs with .venv's Python (MLH_TORCH_VENV or SOURCE_DIR/.venv, as docs_commands.py): started
with another, it runs itself again with that one. Exit 0: all agree; 1: a mismatch or a
failure; 77: skipped, saying why (no .venv with torch and safetensors: the pypi stage of
scripts/test.sh makes it).

Adding a network is one entry in NETWORKS: its host arguments and its inputs.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# Relative to each output's scale: the host's fused CPU kernels sum in another order than ATen.
RTOL = 1e-4


def images(meta_shape):
    return lambda torch: {"images": torch.rand(*meta_shape)}


def observations(shape):
    return lambda torch: {"observations": torch.rand(*shape)}


def tokens(rows, seq_len, vocab, puzzles=0):
    def make(torch):
        t = {"inputs": torch.randint(0, vocab, (rows, seq_len), dtype=torch.int32)}
        if puzzles:
            t["puzzle_identifiers"] = torch.randint(0, puzzles, (rows,), dtype=torch.int32)
        return t
    return make


TRM_SMALL = ["--set", "model.hidden=32", "--set", "model.num_heads=2", "--set", "model.h_cycles=2",
             "--set", "model.l_cycles=2", "--set", "model.halt_max_steps=2", "--set", "batch_size=8"]

# name: (host arguments of the training run, the inputs)
NETWORKS = {
    "protonet-conv4": (["--algorithm", "protonet", "--set", "width=8"], images((4, 1, 28, 28))),
    "protonet-resnet12": (["--algorithm", "protonet", "--set", "model.encoder=resnet12", "--set", "width=4"],
                          images((3, 1, 28, 28))),
    "ppo-mlp": (["--algorithm", "ppo", "--set", "checkpoint=latest"], observations((5, 4))),
    "ppo-pendulum": (["--algorithm", "ppo", "--set", "preset=pendulum", "--set", "num_steps=64",
                      "--set", "num_minibatches=4", "--set", "checkpoint=latest"], observations((5, 3))),
    "ppo-recursive": (["--algorithm", "ppo", "--set", "preset=puzzle4", "--set", "network.kind=recursive",
                       "--set", "network.hidden_dim=16", "--set", "network.num_heads=2",
                       "--set", "network.num_recursive_steps=2", "--set", "checkpoint=latest"],
                      observations((5, 8, 4, 4))),
    "ppo-resnet": (["--algorithm", "ppo", "--set", "preset=puzzle4", "--set", "network.kind=resnet",
                    "--set", "network.blocks=2", "--set", "network.channels=8", "--set", "checkpoint=latest"],
                   observations((5, 8, 4, 4))),
    # Networks written in PyTorch (docs/your-network-in-pytorch.md): load_run gives back the class.
    "protonet-python": (["--algorithm", "protonet", "--set", "model.encoder=python",
                         "--set", "model.module=EXAMPLES/my_encoder.py:SmallConvEncoder",
                         "--set", 'model.kwargs={"width": 8}'], images((4, 1, 28, 28))),
    "ppo-python": (["--algorithm", "ppo", "--set", "network.kind=python",
                    "--set", "network.module=EXAMPLES/my_policy.py:MlpPolicy", "--set", "checkpoint=latest"],
                   observations((5, 4))),
    "ppo-python-pendulum": (["--algorithm", "ppo", "--set", "preset=pendulum", "--set", "num_steps=64",
                             "--set", "num_minibatches=4", "--set", "network.kind=python",
                             "--set", "network.module=EXAMPLES/my_policy.py:MlpPolicy",
                             "--set", 'network.kwargs={"hidden": 32}', "--set", "checkpoint=latest"],
                            observations((5, 3))),
    "ppo-python-planes": (["--algorithm", "ppo", "--set", "preset=puzzle4", "--set", "network.kind=python",
                           "--set", "network.module=EXAMPLES/my_policy.py:ConvPolicy",
                           "--set", 'network.kwargs={"channels": 8}', "--set", "checkpoint=latest"],
                          observations((5, 8, 4, 4))),
    "trm-puzzle-mlp_t": (["--algorithm", "trm", "--set", "preset=sudoku-easy", "--set", "checkpoint=latest",
                          *TRM_SMALL], tokens(3, 81, 11)),
    "trm-puzzle-attention": (["--algorithm", "trm", "--set", "preset=sudoku-easy", "--set", "model.mlp_t=false",
                              "--set", "model.puzzle_emb_ndim=32", "--set", "checkpoint=latest", *TRM_SMALL],
                             tokens(3, 81, 11, puzzles=1)),
    "trm-text": (["--algorithm", "trm", "--set", "preset=text", "--set", "data.text_file=TEXT_FILE",
                  "--set", "checkpoint=latest", "--set", "model.text_seq_len=32", *TRM_SMALL[:4], "--set", "batch_size=4"],
                 tokens(2, 32, 256)),
}


# The networks written in PyTorch (examples/pytorch) and the class load_run must give back.
OWN_CLASS = {"protonet-python": "SmallConvEncoder", "ppo-python": "MlpPolicy", "ppo-python-pendulum": "MlpPolicy",
             "ppo-python-planes": "ConvPolicy"}


def compare_onnx(name, module, inputs, got, torch):
    """torch.onnx.export of the user's module as load_run gave it, run by onnx's reference
    evaluator on the same inputs: the outputs agree with the module's (None), or a failure."""
    import importlib.util
    if importlib.util.find_spec("onnx") is None or importlib.util.find_spec("onnxscript") is None:
        print(f"{name}: ONNX skipped: no onnx and onnxscript in this Python")
        return None
    from onnx.reference import ReferenceEvaluator
    key = "images" if "images" in inputs else "observations"
    example = inputs[key]
    if key == "observations" and hasattr(module, "obs_mean"):
        example = __import__("mlhost").ppo.normalized(module, example)
    path = os.path.join(os.path.dirname(module.mlhost["weights"]), "module.onnx")
    torch.onnx.export(module, (example,), path, input_names=[key], dynamo=True, external_data=False)
    outputs = ReferenceEvaluator(path).run(None, {key: example.numpy()})
    # The module's outputs in its order: embeddings, or (logits or the Gaussian's mean, value).
    want = [got["embeddings"]] if key == "images" else [got.get("logits", got.get("mean")), got["value"]]
    if len(outputs) != len(want):
        return f"{name}: the ONNX export has {len(outputs)} outputs, the module {len(want)}"
    for out, w in zip(outputs, want):
        if not torch.allclose(torch.from_numpy(out), w, rtol=RTOL, atol=RTOL * max(1.0, w.abs().max().item())):
            return f"{name}: the ONNX export's output differs from the module's (max |diff| " \
                   f"{(torch.from_numpy(out) - w).abs().max().item():g})"
    print(f"{name}: its ONNX export gives the module's outputs")
    return None


def venv_python(source):
    venv = os.environ.get("MLH_TORCH_VENV") or os.path.join(source, ".venv")
    return os.path.join(venv, "bin", "python")


def host(build, args, work, **kwargs):
    env = dict(os.environ, MLH_NO_CALIBRATE="1", XDG_CACHE_HOME=os.path.join(work, "cache"),
               XDG_CONFIG_HOME=os.path.join(work, "config"))
    for name in ("MLH_PLUGIN_PATH", "MLH_HARDWARE_CONFIG", "MLFLOW_TRACKING_URI", "MLH_MAX_STEPS"):
        env.pop(name, None)
    return subprocess.run([os.path.join(build, "bin", "host"), *args], cwd=work, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)


def checked_host(build, args, work):
    r = host(build, args, work)
    if r.returncode != 0:
        raise RuntimeError(f"host {' '.join(args)}: exit {r.returncode}\n{r.stdout[-3000:]}")
    return r


def install_package(source, work):
    """pip install of python/ from a copy (the build leaves files beside the sources)."""
    copy = os.path.join(work, "python-src")
    shutil.copytree(os.path.join(source, "python"), copy)
    target = os.path.join(work, "site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", target, copy], check=True)
    sys.path.insert(0, target)


def text_file(work):
    path = os.path.join(work, "text.txt")
    with open(path, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 200)
    return path


def compare(name, args, make_inputs, build, work, torch, mlhost, save_file, load_file):
    run = os.path.join(work, name)
    checked_host(build, args + ["--run-dir", run, "--max-steps", "3"], work)
    inputs_path = os.path.join(work, name + "-inputs.safetensors")
    inputs = make_inputs(torch)
    save_file(inputs, inputs_path)
    checkpoint = [a for a in args if a.startswith("checkpoint=")]
    r = checked_host(build, ["--algorithm", args[1], "--run-dir", run, "--resume", "--command", "forward",
                             "--set", "forward.inputs=" + inputs_path] + sum((["--set", c] for c in checkpoint), []), work)
    summary = json.load(open(os.path.join(run, "commands", "forward-1", "summary.json")))
    expected = load_file(summary["result"]["outputs"])
    module = mlhost.load_run(run)
    if module.mlhost["algorithm"] != args[1] or module.mlhost["network"] != args[1]:
        return f"{name}: load_run says algorithm {module.mlhost['algorithm']}, network {module.mlhost['network']}"
    if name in OWN_CLASS and type(module).__name__ != OWN_CLASS[name]:
        return f"{name}: load_run gave a {type(module).__name__}, not the run's own {OWN_CLASS[name]}"
    with torch.no_grad():
        if "images" in inputs:
            got = {"embeddings": module(inputs["images"])}
        elif "observations" in inputs:
            observations = inputs["observations"]
            if json.loads(module.mlhost["metadata"].get("network", "{}")).get("kind") == "python":
                observations = mlhost.ppo.normalized(module, observations)  # your forward takes them normalized
            logits, value = module(observations)
            got = {"logits": logits, "value": value}
            if hasattr(module, "actor_logstd"):  # continuous actions: a Gaussian's mean
                got = {"mean": logits, "log_std": module.actor_logstd, "value": value}
        else:
            logits, q_halt, q_continue = module(inputs["inputs"], inputs.get("puzzle_identifiers"))
            got = {"logits": logits, "q_halt_logits": q_halt, "q_continue_logits": q_continue}
    if sorted(got) != sorted(expected):
        return f"{name}: the host wrote {sorted(expected)}, the module gives {sorted(got)}"
    worst = 0.0
    for key, want in expected.items():
        scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
        if got[key].shape != want.shape or not torch.allclose(got[key], want, rtol=RTOL, atol=RTOL * scale):
            diff = (got[key] - want).abs().max().item() if got[key].shape == want.shape else float("nan")
            return f"{name}: '{key}' differs (shapes {tuple(got[key].shape)} / {tuple(want.shape)}, max |diff| {diff:g})"
        worst = max(worst, (got[key] - want).abs().max().item())
    if name in OWN_CLASS:
        failure = compare_onnx(name, module, inputs, got, torch)
        if failure:
            return failure
    exported = ""
    if args[1] in ("ppo", "trm"):
        failure = compare_export(name, args[1], run, checkpoint, module, build, work, torch, mlhost)
        if failure:
            return failure
        exported = "; the export command's weights equal them"
    print(f"{name}: {', '.join(f'{k} {tuple(v.shape)}' for k, v in sorted(expected.items()))} agree "
          f"(max |diff| {worst:.2e}); {r.stdout.count('forward outputs')} forward{exported}")
    return None


def compare_export(name, algorithm, run, checkpoint, module, build, work, torch, mlhost):
    """`--command export` of the checkpoint the forward command used (checkpoint=latest: the
    weights training ended with, which model.safetensors holds): load_run reads the command
    folder, and its weights and metadata are training's, bit for bit."""
    checked_host(build, ["--algorithm", algorithm, "--run-dir", run, "--resume", "--command", "export"] +
                 sum((["--set", c] for c in checkpoint), []), work)
    folder = os.path.join(run, "commands", "export-1")
    summary = json.load(open(os.path.join(folder, "summary.json")))["result"]
    exported = mlhost.load_run(folder)
    if exported.mlhost["metadata"] != module.mlhost["metadata"]:
        return f"{name}: export's metadata {exported.mlhost['metadata']} differs from training's {module.mlhost['metadata']}"
    want, got = module.state_dict(), exported.state_dict()
    if sorted(want) != sorted(got):
        return f"{name}: export holds {sorted(got)}, training wrote {sorted(want)}"
    for key in want:
        if not torch.equal(want[key], got[key]):
            return f"{name}: exported '{key}' differs from model.safetensors' (checkpoint {summary['checkpoint']})"
    return None


def failure_paths(build, work, torch, save_file):
    """Bad input files: each a non-zero exit naming the file and the tensor."""
    run = os.path.join(work, "ppo-mlp")
    cases = {"missing": ({"other": torch.rand(2, 4)}, "'observations' is missing"),
             "shape": ({"observations": torch.rand(2, 5)}, "'observations' is [2, 5], want [batch, 4]"),
             "dtype": ({"observations": torch.zeros(2, 4, dtype=torch.int64)}, "'observations' is Long"),
             "extra": ({"observations": torch.rand(2, 4), "obsevations": torch.rand(2, 4)},
                       "'obsevations' is not an input of this network"),
             "no file": (None, "")}
    failures = []
    for case, (tensors, message) in cases.items():
        path = os.path.join(work, f"bad-{case}.safetensors")
        if tensors is not None:
            save_file(tensors, path)
        r = host(build, ["--algorithm", "ppo", "--run-dir", run, "--resume", "--command", "forward",
                         "--set", "forward.inputs=" + path], work)
        if r.returncode == 0 or path not in r.stdout or message not in r.stdout:
            failures.append(f"bad inputs ({case}): exit {r.returncode}, want non-zero and '{path}' ... "
                            f"{message}; output:\n{r.stdout[-1500:]}")
        else:
            print(f"bad inputs ({case}): exit {r.returncode}, names the file" + (" and the tensor" if message else ""))
    return failures


def size_defaults(mlhost):
    """Each network class's constructor arguments that have a default: its sizes must come from
    the run's records (network.json, the weights' metadata), so none may."""
    import inspect
    classes = [mlhost.ppo.MlpActorCritic, mlhost.ppo.RecursiveActorCritic, mlhost.ppo.ResnetActorCritic,
               mlhost.protonet.Conv4, mlhost.protonet.ResNet12, mlhost.trm.Trm]
    return [f"{c.__module__}.{c.__name__}: argument {p.name} defaults to {p.default!r}: it is the run's to say"
            for c in classes for p in inspect.signature(c.__init__).parameters.values()
            if p.default is not inspect.Parameter.empty]


def main(argv):
    source, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    python = venv_python(source)
    try:
        import torch  # noqa: F401
        from safetensors.torch import load_file, save_file
    except ImportError:
        if not os.environ.get("MLH_PYPKG_REEXEC") and os.access(python, os.X_OK):
            env = dict(os.environ, MLH_PYPKG_REEXEC="1")
            return subprocess.run([python, os.path.abspath(__file__), *argv[1:]], env=env).returncode
        print(f"python_package: SKIPPED: no {python} with torch and safetensors "
              "(bash scripts/torch-venv.sh --peers makes .venv/)")
        return 77
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="mlhost-pypkg-")
    failures = []
    try:
        install_package(source, work)
        import mlhost
        failures += size_defaults(mlhost)
        text = text_file(work)
        for name, (args, make_inputs) in NETWORKS.items():
            args = [a.replace("TEXT_FILE", text).replace("EXAMPLES", os.path.join(source, "examples", "pytorch"))
                    for a in args]
            try:
                failure = compare(name, args, make_inputs, build, work, torch, mlhost, save_file, load_file)
            except RuntimeError as e:
                failure = f"{name}: {e}"
            if failure:
                failures.append(failure)
        failures += failure_paths(build, work, torch, save_file)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("\nFAILED " + f)
    print(f"python_package: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
