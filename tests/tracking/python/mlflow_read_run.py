"""Reads an MLflow run back through MLflow's own client and prints it as JSON, for
tests/tracking/mlflow_tracking_test.cpp: params, tags, status, times, every metric's history
(step, value, timestamp) and the artifacts' paths and sizes.

Usage: mlflow_read_run.py TRACKING_URI RUN_ID
Exit status 77: the mlflow package cannot be imported (the test skips).
"""
import json
import math
import sys

try:
    from mlflow.tracking import MlflowClient
except ImportError as e:  # pragma: no cover
    print(f"cannot import mlflow: {e}", file=sys.stderr)
    sys.exit(77)


def number(v):
    # JSON has no NaN or infinities: as strings, which the test compares.
    return v if math.isfinite(v) else str(v)


def main():
    uri, run_id = sys.argv[1], sys.argv[2]
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    metrics = {}
    for key in run.data.metrics:
        history = client.get_metric_history(run_id, key)
        metrics[key] = [[m.step, number(m.value), m.timestamp] for m in sorted(history, key=lambda m: (m.step, m.timestamp))]
    artifacts = {a.path: a.file_size for a in client.list_artifacts(run_id)}
    experiment = client.get_experiment(run.info.experiment_id)
    print(json.dumps({
        "params": run.data.params,
        "tags": run.data.tags,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "end_time": run.info.end_time,
        "run_name": run.info.run_name,
        "experiment_name": experiment.name,
        "metrics": metrics,
        "artifacts": artifacts,
    }))


if __name__ == "__main__":
    main()
