"""A target for the sampler benchmarks: a 30-frame-deep Python stack that spins.

`<module>` calls `level(28)`, which recurses down to `level(0)`: 30 Python
frames in all, then spins there (pure Python bytecode, no calls), as a
training loop keeps its stack while it runs. Runs until killed, or for
argv[1] seconds.
"""
import sys
import time


def level(n, until):
    if n == 0:
        x = 0
        while time.monotonic() < until:
            for _ in range(10000):
                x += 1
        return x
    return level(n - 1, until)


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1e9
    level(28, time.monotonic() + seconds)  # level(28) .. level(0) and <module>: 30 frames
