"""A plain Python loop (no torch) that marks its steps and a range with stepscope's
explicit API; run with python/ on PYTHONPATH (record adds it)."""
import sys
import time

import stepscope

for i in range(6):
    with stepscope.range("work <phase>"):
        time.sleep(0.01)
    stepscope.step(samples=32, tokens=32 * 128)
print("torch imported:", "torch" in sys.modules)
