"""torch.profiler with CUDA activity inside a process that stepscope records:

  profiler_program.py cuda-first|profiler-first TRACE.json

`cuda-first`: 10 matrix products on the GPU, then 5 more under torch.profiler
(CPU and CUDA activities); stepscope's collector holds CUPTI when the profiler
starts and must hand it over. `profiler-first`: the profiler starts before any
CUDA use, so it must get CUPTI from the start. Either way the profiler's trace
is written to TRACE.json and checked here: its kernels, and that each kernel
starts after the launch call it is correlated with (a clock the hand-over had
left changed would break that). Prints `summary: {json}`.
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def products(x, n):
    for _ in range(n):
        x = (x @ x).clamp_(-1, 1)
    torch.cuda.synchronize()
    return x


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "cuda-first":
        x = products(torch.randn(1024, 1024, device="cuda"), 10)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        if mode == "profiler-first":
            x = torch.randn(1024, 1024, device="cuda")
        products(x, 5)
    prof.export_chrome_trace(out)
    events = json.load(open(out))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    paired = [(k, launches[k["args"]["correlation"]]) for k in kernels if k["args"].get("correlation") in launches]
    early = [k["name"] for k, launch in paired if float(k["ts"]) < float(launch["ts"])]
    print("summary: " + json.dumps({"mode": mode, "kernels": len(kernels), "paired_with_launch": len(paired),
                                     "kernel_before_its_launch": len(early),
                                     "yield_env_left": "STEPSCOPE_GPU_YIELD" in os.environ}))


main()
