#!/usr/bin/env python3
"""`stepscope mlflow` against MLflow's own Python client logging the same run.

Starts a real `mlflow server` (SQLite store, artifact proxy) on loopback, records
tests/integration/programs/metrics_training.py for --steps steps once, then logs that
run --rounds times each way, interleaved, to the same server:

  stepscope   `stepscope mlflow run.db`: builds the report, renders report.html,
              flamegraph.svg and report.json, and logs params, tags, every metric point
              and the four artifacts.
  python      a script as a user would write it with `mlflow.MlflowClient`: reads the
              per-step figures from a report.json made beforehand (not timed), logs the
              same metric points with log_batch (1000 a request), the same params and
              tags, and uploads the same four files (rendered beforehand, not timed)
              with log_artifact.

Prints wall time (whole process, as a user waits for it) and peak RSS of each, medians
over the rounds, and the ratio.

  bench/mlflow_upload.py [--rounds 5] [--steps 1000]
"""
import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv", "bin")
STEPSCOPE = os.path.join(ROOT, "build", "stepscope")

PEER = r'''
import json, sys, time
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
uri, report_path, artifacts = sys.argv[1], sys.argv[2], sys.argv[3:]
report = json.load(open(report_path))
steps = report["steps"]
start = report["steps"]["per_step"][0]["start_ns"]
now = int(time.time() * 1000)
metrics = []
for number, s in enumerate(steps["per_step"], 1):
    t = s["time_ns"]
    for key, value in (("step_time_ms", t / 1e6), ("data_wait_ms", s["data_wait_ns"] / 1e6),
                       ("data_wait_share", s["data_wait_ns"] / t), ("forward_share", s["forward_ns"] / t),
                       ("backward_share", s["backward_ns"] / t), ("optimizer_share", s["optimizer_ns"] / t),
                       ("other_share", s["other_ns"] / t), ("samples_per_sec", s["samples"] / (t / 1e9)),
                       ("tokens_per_sec", s["tokens"] / (t / 1e9)), ("peak_host_memory_bytes", s["peak_host_bytes"])):
        metrics.append(Metric(key, value, now, number))
for key in ("p50", "p90", "p99", "mean"):
    metrics.append(Metric("summary/step_time_%s_ms" % key, steps["step_time_ms"][key], now, 0))
client = MlflowClient(uri)
run = client.create_run("0")
run_id = run.info.run_id
params = [Param("command", "python train.py"), Param("host", "vm"), Param("python", "3.11.2")]
tags = [RunTag("stepscope.verdict", "x"), RunTag("stepscope.top_finding", "step_overhead")]
for i in range(0, len(metrics), 1000):
    client.log_batch(run_id, metrics=metrics[i:i + 1000], params=params if i == 0 else [], tags=tags if i == 0 else [])
for path in artifacts:
    client.log_artifact(run_id, path)
client.set_terminated(run_id)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(command, env=None):
    """Wall seconds and peak RSS (MiB) of one command, which must succeed."""
    before = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - before
    stderr = process.stderr.read().decode()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("failed: %s\n%s" % (" ".join(command), stderr))
    return wall, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        uri = "http://127.0.0.1:%d" % port
        server = subprocess.Popen([os.path.join(VENV, "mlflow"), "server", "--backend-store-uri",
                                   "sqlite:///%s/mlflow.db" % work, "--artifacts-destination", work + "/artifacts",
                                   "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                  cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(240):
                try:
                    urllib.request.urlopen(uri + "/health", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.5)
            run = os.path.join(work, "run.db")
            env = dict(os.environ, STEPSCOPE_PYTHON_DIR=os.path.join(ROOT, "python"))
            subprocess.run([STEPSCOPE, "record", "-o", run, "--", os.path.join(VENV, "python"),
                            os.path.join(ROOT, "tests/integration/programs/metrics_training.py"),
                            "--steps", str(args.steps), "--linger", "0"], env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            artifacts = [os.path.join(work, name) for name in ("report.json", "report.html", "flamegraph.svg")]
            subprocess.run([STEPSCOPE, "report", "--json", run, "-o", artifacts[0]], check=True)
            subprocess.run([STEPSCOPE, "report", run, "--html", artifacts[1]], check=True)
            subprocess.run([STEPSCOPE, "export", run, "--format", "svg", "-o", artifacts[2]], check=True)
            peer = os.path.join(work, "peer.py")
            with open(peer, "w") as f:
                f.write(PEER)
            results = {"stepscope": [], "python": []}
            for _ in range(args.rounds):
                results["stepscope"].append(timed([STEPSCOPE, "mlflow", run, "--tracking-uri", uri]))
                results["python"].append(timed([os.path.join(VENV, "python"), peer, uri, artifacts[0], *artifacts, run]))
        finally:
            server.terminate()
            server.wait()
    points = args.steps * 10
    print("one run of %d steps (%d metric points, 4 artifacts), %d rounds, medians:" % (args.steps, points, args.rounds))
    median = {name: (statistics.median(w for w, _ in r), statistics.median(m for _, m in r)) for name, r in results.items()}
    for name, (wall, rss) in median.items():
        print("  %-10s %7.3f s wall  %7.1f MiB peak RSS" % (name, wall, rss))
    print("  python / stepscope: %.1fx the time, %.1fx the memory" % (
        median["python"][0] / median["stepscope"][0], median["python"][1] / median["stepscope"][1]))


if __name__ == "__main__":
    main()
