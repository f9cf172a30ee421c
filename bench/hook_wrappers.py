#!/usr/bin/env python3
"""What one place of a step hook costs as a Python wrapper and as a C one (issue 32).

The step hooks wrap five places of a training step (the DataLoader's __next__, the root
module's __call__, autograd.backward, the optimizer's step and its hooks); on the AMD EPYC
VM of bench/README.md each costs 20 to 50 us, though the same Python runs in a microsecond
or two in a warm loop: a step's work leaves the hooks' code and data out of the caches.
Before moving the hooks' bookkeeping into C, this measures what C would save at a place:
the same two places of a step (autograd.backward, the optimizer's step) wrapped by

  python  a closure that reads the clock around the call and appends (start, end) to a list,
  c       bench/targets/timed_call.c: a callable object doing the same into a fixed buffer
          (built here against this interpreter, stable ABI),

against the bare step, one step of each setting in turn (the order rotated), on the
182-module model of hooks_overhead.py (its shape). The figure is the median of the per-round
differences from the bare step, with a 90 % bootstrap interval, and per place (half).

usage: .venv/bin/python bench/hook_wrappers.py [--rounds 3000]
Needs torch, a C compiler (CC, default cc) and the interpreter's headers (python3-dev).
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hooks_overhead import paired_bootstrap_interval  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "targets" / "timed_call.c"
PLACES = 2


def build_timed_call(workdir):
    """Compiles timed_call.c for this interpreter and imports it."""
    out = Path(workdir) / "timed_call.abi3.so"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC",
                    "-I" + sysconfig.get_paths()["include"], str(SOURCE), "-o", str(out)], check=True)
    spec = importlib.util.spec_from_file_location("timed_call", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_wrapper(function, spans):
    now = time.monotonic_ns

    def wrapper(*args, **kwargs):
        start = now()
        try:
            return function(*args, **kwargs)
        finally:
            spans.append((start, now()))

    return wrapper


def training_step(torch):
    """The shape of hooks_overhead.py's `blocks` model (182 modules): 60 Linear(32, 32) + ReLU blocks
    and a head, each block a Sequential here, where hooks_overhead.py gives it a class of its own."""
    nn = torch.nn
    torch.set_num_threads(1)
    torch.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(32, 32), nn.ReLU()) for _ in range(60)]
    model = nn.Sequential(*blocks, nn.Linear(32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(torch.randn(64 * 500, 32), torch.randint(0, 10, (64 * 500,)))

    def batches():
        while True:
            yield from torch.utils.data.DataLoader(data, batch_size=64)

    source = batches()

    def step():
        started = time.perf_counter()
        x, y = next(source)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return time.perf_counter() - started

    return step, optimizer


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3000)
    args = parser.parse_args()
    import torch

    with tempfile.TemporaryDirectory(prefix="hook-wrappers-") as tmp:
        timed_call = build_timed_call(tmp)
    step, optimizer = training_step(torch)
    autograd, bare_backward, bare_step = torch.autograd, torch.autograd.backward, optimizer.step
    spans = []
    settings = {
        "bare": (bare_backward, None),
        "python": (python_wrapper(bare_backward, spans), python_wrapper(bare_step, spans)),
        "c": (timed_call.wrap(bare_backward), timed_call.wrap(bare_step)),
    }

    def use(name):
        backward, opt_step = settings[name]
        autograd.backward = backward  # Tensor.backward looks it up at each call
        if opt_step is None:
            optimizer.__dict__.pop("step", None)
        else:
            optimizer.step = opt_step

    for name in settings:  # warm-up: the optimizer's lazy state, the allocator
        use(name)
        for _ in range(50):
            step()
    names = list(settings)
    times = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order if r % 2 == 0 else order[::-1]:
            use(name)
            times[name].append(step())
        if len(spans) > 10000:
            spans.clear()
            timed_call.drain()
    use("bare")
    print(f"{args.rounds} rounds, one step of each setting a round; bare step median "
          f"{1e3 * statistics.median(times['bare']):.3f} ms; torch {torch.__version__}, "
          f"Python {sys.version.split()[0]}")
    for name in ("python", "c"):
        differences = [1e6 * (t - b) for t, b in zip(times[name], times["bare"])]
        low, high = paired_bootstrap_interval(differences, statistics.median)
        median = statistics.median(differences)
        print(f"{name:7s} wrappers at {PLACES} places: {median:+.1f} us a step (90 % interval "
              f"{low:+.1f} … {high:+.1f}), {median / PLACES:+.1f} us a place")


if __name__ == "__main__":
    main()
