"""DataLoader workers started again every epoch (persistent_workers off, the default),
each running torch ops per item, for `record --native`: every new worker maps libtorch
and must find its symbol index ready. Usage: native_workers.py SECONDS"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        x = torch.randn(64, 64)
        for _ in range(20):
            x = torch.tanh(x @ x.T / 64)
        return x.sum()


def run(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in DataLoader(Items(), batch_size=8, num_workers=2):
            pass


if __name__ == "__main__":
    torch.set_num_threads(1)
    run(float(sys.argv[1]))
