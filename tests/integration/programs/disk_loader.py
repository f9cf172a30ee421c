"""A training loop whose DataLoader workers read their items from a file.

  disk_loader.py DATA_FILE [--uncached] [--steps N] [--workers W] [--item-kib K]

Each item is K KiB read at a pseudo-random, K-aligned offset of DATA_FILE
(made of random bytes when it does not exist). With --uncached the workers
read with O_DIRECT, past the page cache, so every read goes to the disk and
the worker waits for it in uninterruptible sleep (D state); where O_DIRECT is
refused, the pages are dropped from the cache before each read
(posix_fadvise POSIX_FADV_DONTNEED: the file is synced, so they are clean).
Without --uncached the same reads are copies out of the page cache, which
the main process locks in memory (mlock of a mapping of the file) where it
may: a machine that reclaims cold page cache on its own (DAMON's proactive
reclaim, on this project's VMs, took three quarters of an unused 16 MiB
file's pages within 30 s) would otherwise
send some of them to the disk. The step itself is 5 ms of CPU. Prints
`summary: {json}`, which says whether the file was locked.
"""
import argparse
import ctypes
import errno
import json
import mmap
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

FILE_MIB = 16


def ensure_file(path):
    if os.path.exists(path):
        return
    with open(path, "wb") as f:
        for _ in range(FILE_MIB):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())


class FileItems(Dataset):
    def __init__(self, path, item_bytes, uncached):
        self.path, self.item_bytes, self.uncached = path, item_bytes, uncached
        self.slots = os.path.getsize(path) // item_bytes
        self.fd = None
        self.drop_pages = False

    def __len__(self):
        return 1_000_000

    def open(self):  # in the worker, after the fork
        self.buffer = mmap.mmap(-1, self.item_bytes)  # page-aligned, as O_DIRECT needs
        if self.uncached:
            try:
                self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
                return
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                self.drop_pages = True
        self.fd = os.open(self.path, os.O_RDONLY)

    def __getitem__(self, index):
        if self.fd is None:
            self.open()
        offset = (index * 7919 % self.slots) * self.item_bytes
        if self.drop_pages:
            os.posix_fadvise(self.fd, offset, self.item_bytes, os.POSIX_FADV_DONTNEED)
        os.preadv(self.fd, [self.buffer], offset)
        return torch.frombuffer(bytearray(self.buffer[:64]), dtype=torch.uint8).float()


def lock_in_memory(path):
    """Maps the file and locks its pages in the page cache; returns the mapping
    (locked while it lives), or None where mlock is refused (RLIMIT_MEMLOCK)."""
    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)  # private: never written back
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    if libc.mlock(address, len(mapping)) != 0:
        return None
    return mapping


def compute(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data_file")
    p.add_argument("--uncached", action="store_true")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--item-kib", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    args = p.parse_args()
    torch.set_num_threads(1)
    ensure_file(args.data_file)
    locked = None if args.uncached else lock_in_memory(args.data_file)
    dataset = FileItems(args.data_file, args.item_kib << 10, args.uncached)
    loader = DataLoader(dataset, batch_size=args.batch, num_workers=args.workers, persistent_workers=True)
    model = torch.nn.Linear(64, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(loader)
    # A few batches before the first step's optimizer call, so they belong to
    # the warm-up step: each worker's first batches fault in code the main
    # process never ran, and on the throttled disk of the tests (which the
    # interpreter and torch are on too) that is seconds of disk wait that no
    # read of DATA_FILE caused.
    for _ in range(2 * args.workers):
        next(batches)
    start = time.perf_counter()
    for _ in range(args.steps):
        x = next(batches)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        compute(0.005)
    wall = time.perf_counter() - start
    print("summary: " + json.dumps({"steps": args.steps, "wall_s": round(wall, 3),
                                    "locked_in_memory": locked is not None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
