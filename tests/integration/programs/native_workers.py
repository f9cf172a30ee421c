"""DataLoader workers started again every epoch (persistent_workers off, the default),
each running torch ops per item, for `record --native`: every new worker maps libtorch
and must find its symbol index ready. Prints the epochs it ran (bench/native_worker_churn.py
reads them). Runs for SECONDS, and at least MIN_EPOCHS epochs.
Usage: native_workers.py SECONDS [ITEMS_PER_EPOCH [MIN_EPOCHS]]"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        x = torch.randn(64, 64)
        for _ in range(20):
            x = torch.tanh(x @ x.T / 64)
        return x.sum()


def run(seconds, items, min_epochs):
    end = time.monotonic() + seconds
    epochs = 0
    while time.monotonic() < end or epochs < min_epochs:
        for _ in DataLoader(Items(items), batch_size=8, num_workers=2):
            pass
        epochs += 1
    return epochs


if __name__ == "__main__":
    torch.set_num_threads(1)
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    min_epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    print(run(float(sys.argv[1]), items, min_epochs))
