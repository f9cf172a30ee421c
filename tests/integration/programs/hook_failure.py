"""Breaks what stepscope's memory hook calls (torch.cuda.is_initialized) and trains a
few steps: under record, the hook turns itself off with one warning on stderr, steps are
still recorded, and the program's output and exit status do not change."""
import sys

import torch


def broken():
    raise RuntimeError("monkeypatched to fail")


torch.set_num_threads(1)
torch.manual_seed(0)
torch.cuda.is_initialized = broken
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    loss = model(torch.ones(3, 4)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", step, round(loss.item(), 3))
sys.exit(3)
