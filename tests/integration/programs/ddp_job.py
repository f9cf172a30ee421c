"""A data-parallel training job (DDP, gloo, on the CPU) for torchrun: every rank
runs the same model on its own batches; one rank's Dataset can be made slower,
so that the others wait for it in DDP's all-reduce.

  torchrun ... ddp_job.py [--steps S] [--item-ms MS] [--slow-rank R --slow-item-ms MS]
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class PacedDataset(Dataset):
    def __init__(self, item_ms):
        self.item_s = item_ms / 1000

    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        time.sleep(self.item_s)
        return torch.full((64,), float(index % 7)), torch.tensor(index % 3)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--item-ms", type=float, default=0.5)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-item-ms", type=float, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    item_ms = args.slow_item_ms if rank == args.slow_rank else args.item_ms
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(DataLoader(PacedDataset(item_ms), batch_size=16, num_workers=0))
    for _ in range(args.steps):
        x, y = next(batches)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
