"""A target that measures its own throughput, for the sampler slowdown benchmark.

It builds a 10-frame-deep stack, stays busy for `warmup` seconds (time for a
sampler to attach), then runs a fixed piece of pure-Python work in a loop for
`seconds` seconds, counting iterations in consecutive windows of `window`
seconds. At the end it prints one JSON line on stdout: iterations per wall-clock
second and per CPU second over the whole measured part, and the windows as
[start, end, iterations] with times from time.monotonic() (CLOCK_MONOTONIC, the
clock the benchmark driver uses to pause and resume the sampler).

usage: throughput.py SECONDS [WARMUP] [WINDOW]
"""
import json
import sys
import time


def work():
    total = 0
    for i in range(100):
        total += i * i
    return total


def measure(seconds, window):
    windows = []
    iterations = 0
    cpu0 = time.process_time()
    start = now = time.monotonic()
    end = start + seconds
    while now < end:
        window_start, count = now, 0
        window_end = min(now + window, end)
        while now < window_end:
            for _ in range(50):
                work()
            count += 50
            now = time.monotonic()
        windows.append([window_start, now, count])
        iterations += count
    wall, cpu = now - start, time.process_time() - cpu0
    return {"per_wall_s": iterations / wall, "per_cpu_s": iterations / cpu, "wall_s": wall,
            "cpu_s": cpu, "windows": windows}


def nest(depth, seconds, warmup, window):
    if depth > 0:
        return nest(depth - 1, seconds, warmup, window)
    busy_until = time.monotonic() + warmup
    while time.monotonic() < busy_until:  # warm, and busy while the sampler attaches
        work()
    return measure(seconds, window)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    warmup = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    window = float(sys.argv[3]) if len(sys.argv) > 3 else seconds
    print(json.dumps(nest(8, seconds, warmup, window)), flush=True)
