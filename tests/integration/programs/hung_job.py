"""A data-parallel job (DDP, gloo, on the CPU) for torchrun that goes wrong on purpose,
for `stepscope dump` and `report DUMP.json...`:

  --hang-rank R --at-step S   rank R blocks for good in wait_for_lock(), outside any
                              collective, at step S; the others wait in DDP's all-reduce
  --extra-rank R --at-step S  rank R calls one all_reduce of a second process group that
                              the others never call; they go on into the next all-reduce
                              of the default group: each waits for the other
  --crash-rank R              rank R raises before init_process_group; the others wait
                              for it there

Each rank writes READY_DIR/rank.R when it reaches the point of no return, so the test
knows when to dump. The process group's timeout is an hour: the job hangs until killed.
"""
import argparse
import datetime
import os
import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def mark_ready(ready_dir, rank):
    with open(os.path.join(ready_dir, "rank.%d" % rank), "w") as out:
        out.write(str(os.getpid()))


def wait_for_lock():
    """Blocks for good, outside any collective (a deadlock in the user's code)."""
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


def train(args, rank):
    model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                                        torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    side_group = dist.new_group()
    for step in range(args.steps):
        if step == args.at_step and rank in (args.hang_rank, args.extra_rank):
            mark_ready(args.ready_dir, rank)
            if rank == args.hang_rank:
                wait_for_lock()
            dist.all_reduce(torch.ones(3), group=side_group)
        elif step == args.at_step:
            mark_ready(args.ready_dir, rank)
        x = torch.randn(8, 32)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.01)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ready_dir")
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--at-step", type=int, default=5)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--extra-rank", type=int, default=-1)
    p.add_argument("--crash-rank", type=int, default=-1)
    args = p.parse_args()
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    if rank == args.crash_rank:
        mark_ready(args.ready_dir, rank)
        raise ValueError("rank %d cannot read its shard" % rank)
    if args.crash_rank >= 0:
        mark_ready(args.ready_dir, rank)
    dist.init_process_group("gloo", timeout=datetime.timedelta(hours=1))
    train(args, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
