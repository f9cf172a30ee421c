"""Training loops profiled with torch.profiler (CPU), each exported as a
Chrome trace with ProfilerStep#N ranges (a schedule and prof.step()), for the
trace-step analysis and the host rules on traces.

usage: trace_training.py OUTDIR CASE...
  slow    a DataLoader over a Dataset that sleeps 8 ms per item, num_workers=0
  fast    the same loop over a Dataset that does not sleep
  tiny    a loop of hundreds of tiny tensor operations with Python between them
  big     a loop of a few large matrix products

Works with the Kineto profiler of PyTorch 2.x and the legacy autograd
profiler's torch.profiler front end of PyTorch 1.13.
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class ItemsDataset(Dataset):
    def __init__(self, sleep_s):
        self.sleep_s = sleep_s
        self.inputs = [torch.full((8,), float(i)) for i in range(7)]
        self.labels = [torch.tensor(i) for i in range(3)]

    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.inputs[index % 7], self.labels[index % 3]


def loader_loop(sleep_s):
    # Enough compute per step (tens of ms) that loading a batch of in-memory
    # items stays a small part of it even when a loaded machine preempts the
    # process during a load: only the sleeping Dataset is input-bound.
    model = torch.nn.Sequential(torch.nn.Linear(8, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                torch.nn.ReLU(), torch.nn.Linear(2048, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = iter(DataLoader(ItemsDataset(sleep_s), batch_size=8, num_workers=0))

    def step():
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def tiny_loop():
    weight = torch.zeros(4, requires_grad=True)
    opt = torch.optim.SGD([weight], lr=0.01)

    def step():
        x = weight
        for i in range(300):
            # Per-operation Python bookkeeping, as in hand-written loops.
            scale = 1.0 + sum(range(i % 7, 60)) * 1e-7
            x = x * scale + 0.001
        loss = x.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def big_loop():
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(256, 512)

    def step():
        loss = model(data).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


CASES = {"slow": lambda: loader_loop(0.008), "fast": lambda: loader_loop(0), "tiny": tiny_loop, "big": big_loop}


def profile(step, path, steps=10):
    # wait 1, warm-up 1, then `steps` recorded steps, exported when they end.
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=steps, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(steps + 2):
            step()
            prof.step()


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for case in sys.argv[2:]:
        profile(CASES[case](), os.path.join(out, case + ".json"))


main()
