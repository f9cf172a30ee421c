"""Small training loops, each with one mechanism the diagnosis rules look for.

  diagnosis_cases.py host        logs formatted tensors with `logging` every step, steps
                                 AdamW's for-loop implementation over 402 small tensors, and
                                 calls gc.collect() every step with many live objects
  diagnosis_cases.py saturated   two DataLoader workers doing CPU work on every core
  diagnosis_cases.py checkpoint  saves a checkpoint of a 12 MB model with torch.save every step

Each runs --steps optimizer steps with one torch thread and prints `summary: {json}`.
"""
import argparse
import gc
import json
import logging
import os
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader, Dataset

log = logging.getLogger("train")


class Spin(Dataset):
    """Items that cost CPU time in the worker: a busy loop in Python."""

    def __init__(self, cost_s):
        self.cost_s = cost_s

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        end = time.perf_counter() + self.cost_s
        x = 0
        while time.perf_counter() < end:
            x += 1
        return torch.full((16,), float(index % 5)), torch.tensor(index % 4)


def model_for(case):
    if case == "host":
        # Hundreds of tiny parameter tensors: per-tensor overhead dominates.
        return torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(200)], torch.nn.Linear(16, 4))
    if case == "checkpoint":
        # 12 MB of parameters, most of them in one layer the step does not use.
        return torch.nn.Sequential(torch.nn.Linear(16, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 4),
                                   torch.nn.Embedding(3000, 1000))
    return torch.nn.Sequential(torch.nn.Linear(16, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))


def loader_for(case, batch):
    if case == "saturated":
        # Workers need 2 x 4 x 10 ms of CPU per 10 ms step: both cores stay busy.
        return DataLoader(Spin(0.010), batch_size=batch, num_workers=2, persistent_workers=True)
    return DataLoader(Spin(0.0), batch_size=batch, num_workers=0)


def compute(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Work(torch.nn.Module):
    """The model's own work, a steady 10 ms of its forward."""

    def forward(self, x):
        compute(0.010)
        return x


def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["host", "saturated", "checkpoint"])
    p.add_argument("--steps", type=int, default=40)
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.case == "host":
        logging.basicConfig(stream=open(os.devnull, "w"), level=logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    model = model_for(args.case)
    forward = torch.nn.Sequential(Work(), model if args.case != "checkpoint" else model[:3])
    checkpoint = os.path.join(tempfile.mkdtemp(), "model.pt")
    # foreach=False: the for-loop implementation, whatever this torch's default.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    batches = iter(loader_for(args.case, 4))
    # Long-lived objects each full collection has to traverse: torch's own are
    # frozen out of the collector, so the cost is this list's, the same anywhere.
    gc.freeze()
    live = [[i] for i in range(100_000)] if args.case == "host" else []
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(forward(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.case == "host":
            for name, param in list(model.named_parameters())[:4]:
                log.info("step %d %s %s grad %s", step, name, param.data, param.grad)
            gc.collect()
        if args.case == "checkpoint":
            save_checkpoint(model, checkpoint)
    wall = time.perf_counter() - start
    print("summary: " + json.dumps({"steps": args.steps, "wall_s": round(wall, 3), "live": len(live)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
