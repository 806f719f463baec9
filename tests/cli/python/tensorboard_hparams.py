"""Reads runs' TensorBoard event files with TensorBoard's own reader (the plugin event
accumulator behind its dashboards, which also applies its data-class migrations) and prints,
per run folder, the hparams plugin's session start (hyperparameters) and end (status), and the
last value of each scalar: what the HParams dashboard puts in one row of its table.
    python tensorboard_hparams.py RUN_DIR...    (each RUN_DIR's event files, or its tensorboard/ folder's)
    python tensorboard_hparams.py --runs LOGDIR  (the runs `tensorboard --logdir LOGDIR` lists, by name)
Exit 77 when the tensorboard package is missing."""
import json
import os
import sys

try:
    from tensorboard.backend.event_processing import plugin_event_accumulator, plugin_event_multiplexer
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util
except ImportError as e:  # the test skips, saying why
    print(f"tensorboard is not installed: {e}", file=sys.stderr)
    sys.exit(77)


def value_of(v):
    kind = v.WhichOneof("kind")
    return {"number_value": v.number_value, "string_value": v.string_value, "bool_value": v.bool_value}.get(kind)


def read_run(run_dir):
    events = os.path.join(run_dir, "tensorboard")
    if not os.path.isdir(events):
        events = run_dir
    acc = plugin_event_accumulator.EventAccumulator(events)
    acc.Reload()
    out = {"hparams": None, "status": None, "scalars": {}}
    for tag, content in acc.PluginTagToContent("hparams").items():
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
        if data.HasField("session_start_info"):
            out["hparams"] = {k: value_of(v) for k, v in data.session_start_info.hparams.items()}
        if data.HasField("session_end_info"):
            out["status"] = plugin_data_pb2.HParamsPluginData.DESCRIPTOR.fields_by_name[
                "session_end_info"].message_type.fields_by_name["status"].enum_type.values_by_number[
                data.session_end_info.status].name
    # Scalars are tensors in this reader (as the dashboards see them after migration).
    for tag in acc.Tags().get("tensors", []):
        if tag.startswith("_hparams_/"):
            continue
        events = acc.Tensors(tag)
        if events:
            out["scalars"][tag] = float(tensor_util.make_ndarray(events[-1].tensor_proto))
    return out


if sys.argv[1:2] == ["--runs"]:
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(sys.argv[2])
    print(json.dumps(sorted(multiplexer.Runs())))
else:
    print(json.dumps({d: read_run(d) for d in sys.argv[1:]}))
