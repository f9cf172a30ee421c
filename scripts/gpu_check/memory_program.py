"""GPU memory near capacity, for the memory_pressure diagnosis rule:

  memory_program.py FRACTION TRACE.json

Holds FRACTION of the GPU's memory (torch.cuda.mem_get_info's total; at most
what is free less 512 MiB, for the context and the profiler) in 1 GiB
tensors, under torch.profiler with profile_memory=True, and writes the trace
(Kineto's Chrome trace, with "[memory]" events and deviceProperties) to
TRACE.json; with TRACE "-" there is no profiler (for `stepscope record`,
whose NVML counters see the memory too). Prints `summary: {json}`.
"""
import json
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

GIB = 1 << 30


def hold(fraction):
    free, total = torch.cuda.mem_get_info()
    want = min(int(fraction * total), free - 512 * (1 << 20))
    held = [torch.empty(GIB, dtype=torch.uint8, device="cuda") for _ in range(want // GIB)]
    held.append(torch.empty(want % GIB, dtype=torch.uint8, device="cuda"))
    for t in held:
        t.fill_(1)
    torch.cuda.synchronize()
    time.sleep(1.0)
    return want, total, held


def main():
    fraction, out = float(sys.argv[1]), sys.argv[2]
    if out == "-":
        want, total, held = hold(fraction)
    else:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
            want, total, held = hold(fraction)
        prof.export_chrome_trace(out)
    print("summary: " + json.dumps({"held_bytes": want, "total_bytes": total, "share": want / total}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
