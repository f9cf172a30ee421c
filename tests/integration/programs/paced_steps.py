"""A training loop with a known step time: each step sleeps STEP_MS * SLOWDOWN
milliseconds and reports 32 samples through stepscope's explicit API (no
torch). Sleeping rather than spinning keeps the step time steady on a loaded
machine, which is what compare's tests need: a known change, little noise.

usage: paced_steps.py [--steps N] [--step-ms MS] [--slowdown F]
The slowdown may also come from PACED_SLOWDOWN, so that a slower run has the
same command line (compare --baseline last matches runs by command).
"""
import argparse
import os
import time

import stepscope


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--slowdown", type=float, default=float(os.environ.get("PACED_SLOWDOWN", "1")))
    args = parser.parse_args()
    seconds = args.step_ms * args.slowdown / 1000.0
    for _ in range(args.steps):
        with stepscope.range("work"):
            time.sleep(seconds)
        stepscope.step(samples=32, tokens=32 * 128)


if __name__ == "__main__":
    main()
