"""A program with a known split of CPU time between two functions.

It alternates between `heavy` and `light` work and measures the CPU time each
really used; at exit it prints {"heavy": share, "light": share} on stdout, the
truth a sampler's profile must agree with.
"""
import json
import sys
import time


def spin(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1
    return x


def heavy():
    spin(0.015)


def light():
    spin(0.005)


def main(duration):
    used = {"heavy": 0.0, "light": 0.0}
    start = time.monotonic()
    while time.monotonic() - start < duration:
        for name, work in (("heavy", heavy), ("light", light)):
            t0 = time.process_time()
            work()
            used[name] += time.process_time() - t0
    total = sum(used.values())
    print(json.dumps({name: value / total for name, value in used.items()}))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
