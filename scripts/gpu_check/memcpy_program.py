"""Host-device copies for the small_memcpy / pageable_memcpy diagnosis rules:

  memcpy_program.py small|batched TRACE.json [--steps N]

`small`: each step copies 40 tensors of 1 KiB from pageable host memory to
the GPU one by one and reads 40 results back one by one (.cpu()): 80 small
pageable copies a step, which the rules must flag. `batched`: the same data
moves as one pinned non_blocking copy each way per step, which they must not.
Both run one matmul a step so the device has kernels too. The steps run under
torch.profiler (schedule wait 1, warmup 1, active N) and the trace is written
to TRACE.json (Kineto's Chrome trace); with TRACE "-" there is no
torch.profiler (for `stepscope record --gpu on`, whose CUPTI subscriber would
share the process with Kineto's). Prints `summary: {json}`.
"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

PIECES, FLOATS = 40, 256  # 40 x 1 KiB


def step(mode, weights, device):
    if mode == "small":
        moved = [torch.randn(FLOATS).to(device) for _ in range(PIECES)]
        back = [t.mul(2).cpu() for t in moved]
    else:
        host = torch.randn(PIECES, FLOATS).pin_memory()
        moved = host.to(device, non_blocking=True)
        back = torch.empty(PIECES, FLOATS).pin_memory()
        back.copy_(moved.mul(2), non_blocking=True)
        torch.cuda.synchronize()
    weights @ weights
    return back


def main():
    mode, out = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 5
    device = torch.device("cuda")
    weights = torch.randn(512, 512, device=device)
    if out == "-":
        for _ in range(steps + 2):
            step(mode, weights, device)
        torch.cuda.synchronize()
        print("summary: " + json.dumps({"mode": mode, "steps": steps + 2}), flush=True)
        return 0
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=steps)) as prof:
        for _ in range(steps + 2):
            step(mode, weights, device)
            prof.step()
    torch.cuda.synchronize()
    prof.export_chrome_trace(out)
    print("summary: " + json.dumps({"mode": mode, "steps": steps, "copies_per_step": 2 * PIECES if mode == "small" else 2}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
