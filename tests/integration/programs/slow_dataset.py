"""A training loop whose Dataset is deliberately slow (a sleep per item), so that
without DataLoader workers most of each step is data wait, and with workers less.

  slow_dataset.py --num-workers N [--steps S]
"""
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        time.sleep(0.004)
        return torch.full((8,), float(index % 7)), torch.tensor(index % 3)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--steps", type=int, default=12)
    args = p.parse_args()
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(SlowDataset(), batch_size=4, num_workers=args.num_workers)
    batches = iter(loader)
    # The program's own throughput: from the first batch asked for to the last step.
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        # The device's share of the step, which workers can overlap with the
        # next batches' loading. The host waits for it as it waits for a GPU,
        # asleep: a busy loop would take one of a 2-core machine's cores from
        # the workers and measure CPU contention instead of the loader.
        time.sleep(0.02)
        opt.step()
    wall = time.perf_counter() - start
    print("summary: " + json.dumps({"steps": step, "samples_per_s": 4 * step / wall}))


if __name__ == "__main__":
    main()
