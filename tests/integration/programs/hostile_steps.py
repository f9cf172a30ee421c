"""A plain Python loop (no torch) with explicit steps whose busy work runs in
functions named like markup, for the HTML report's escaping test; run with
python/ on PYTHONPATH (record adds it)."""
import time
import types

import stepscope

HOSTILE_NAMES = ["<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>"]


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def renamed(function, name):
    """`function` under another name, as the sampler reads it (co_name, co_qualname)."""
    fields = {"co_name": name}
    if hasattr(function.__code__, "co_qualname"):
        fields["co_qualname"] = name
    return types.FunctionType(function.__code__.replace(**fields), globals(), name)


hostile = [renamed(spin, name) for name in HOSTILE_NAMES]
for i in range(12):
    with stepscope.range("load <batch>"):
        spin(0.01)
    for function in hostile:
        function(0.04)
    stepscope.step(samples=16, tokens=16 * 64)
