"""A torch-free training-like loop for the wheel's install test: it imports stepscope as
user code does (the wheel's package), spins a little per step and marks each step.

    python wheel_loop.py STEPS [READY_FILE]

With READY_FILE it creates the file after its first step and goes on until killed (for
`dump --pid`)."""
import os
import sys

import stepscope


def work(n):
    return sum(i * i for i in range(n))


steps = int(sys.argv[1])
ready = sys.argv[2] if len(sys.argv) > 2 else None
step = 0
while step < steps or ready:
    with stepscope.range("work"):
        work(30000)
    stepscope.step(samples=16)
    step += 1
    if ready and step == 1:
        open(ready, "w").close()
print(f"{step} steps; stepscope from {os.path.dirname(stepscope.__file__)}")
