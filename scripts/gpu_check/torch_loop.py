"""A small PyTorch CUDA training loop, with an NVTX range per step:

  torch_loop.py STEPS [--json OUT]

An MLP on random data, moved to the GPU each step from pinned memory, so the
run holds kernels, copies, memsets, synchronizations and launches.
"""
import json
import sys
import time

import torch


def main():
    steps = int(sys.argv[1])
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    device = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(256, 512).pin_memory()
    targets = torch.randint(0, 10, (256,))
    start = time.perf_counter()
    for step in range(steps):
        with torch.cuda.nvtx.range(f"step {step}"):
            x = inputs.to(device, non_blocking=True)
            y = targets.to(device)
            optimizer.zero_grad(set_to_none=False)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            loss_value = loss.item()  # a device-to-host copy and a sync each step
    torch.cuda.synchronize()
    summary = {"steps": steps, "loop_s": time.perf_counter() - start, "last_loss": loss_value}
    print(json.dumps(summary))
    if out:
        with open(out, "w") as f:
            json.dump(summary, f)


main()
