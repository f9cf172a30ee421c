#!/usr/bin/env python3
"""Step-time overhead of stepscope's in-process hooks, and of hooks + the sampler.

Runs one training loop of ~5 ms steps (a small MLP on the CPU, a DataLoader over an
in-memory dataset, AdamW) in three settings, interleaved round by round so that
machine noise hits all of them alike:

  bare      plain python
  hooks     the hooks on, sending to a socket this script drains (no sampler)
  sampled   under `stepscope record --rate 100` (hooks + sampler)

and prints each setting's median step time and its ratio to bare.

  bench/hooks_overhead.py [--stepscope build/stepscope] [--rounds 5] [--steps 400]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LOOP = r"""
import json, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.set_num_threads(1)
torch.manual_seed(0)
steps, width = int(sys.argv[1]), int(sys.argv[2])
data = TensorDataset(torch.randn(64 * (steps + 60), 256), torch.randint(0, 10, (64 * (steps + 60),)))
model = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                            torch.nn.ReLU(), torch.nn.Linear(width, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
times = []
last = time.perf_counter()
for x, y in DataLoader(data, batch_size=64):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    now = time.perf_counter()
    times.append(now - last)
    last = now
    if len(times) == steps + 50:
        break
times = times[50:]  # warm-up
print("RESULT " + json.dumps({"median_ms": 1e3 * sorted(times)[len(times) // 2],
                              "mean_ms": 1e3 * sum(times) / len(times)}))
"""


def drain(sock, stop):
    sock.settimeout(0.1)
    while not stop.is_set():
        try:
            sock.recv(65536)
        except socket.timeout:
            pass


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stepscope", default=os.path.join(ROOT, "build", "stepscope"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--width", type=int, default=512, help="hidden width: sets the step time")
    args = p.parse_args()

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "hooks.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    stop = threading.Event()
    threading.Thread(target=drain, args=(sock, stop), daemon=True).start()

    base = dict(os.environ)
    base.pop("STEPSCOPE_CHANNEL", None)
    hooked = dict(base, STEPSCOPE_CHANNEL=path,
                  PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python", "stepscope_boot"),
                                              os.path.join(ROOT, "python")]))
    loop = [args.python, "-c", LOOP, str(args.steps), str(args.width)]
    settings = {
        "bare": (loop, base),
        "hooks": (loop, hooked),
        "sampled": ([args.stepscope, "record", "--rate", "100", "-o", os.path.join(tmp, "run.db"), "--"] + loop, base),
    }
    results = {name: [] for name in settings}
    for _ in range(args.rounds):
        for name, (cmd, env) in settings.items():
            results[name].append(run(cmd, env)["median_ms"])
    stop.set()

    bare = statistics.median(results["bare"])
    print("%-8s %10s %8s   rounds (median ms per step)" % ("setting", "step ms", "ratio"))
    for name, values in results.items():
        median = statistics.median(values)
        print("%-8s %10.3f %8.4f   %s" % (name, median, median / bare, " ".join("%.3f" % v for v in values)))


if __name__ == "__main__":
    main()
