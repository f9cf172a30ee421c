"""Handing CUPTI to torch.profiler.

CUDA allows one CUPTI client per process. Under `stepscope record --gpu`, the
library that CUDA injects (libstepscope-cupti.so, CUDA_INJECTION64_PATH) takes
CUPTI when CUDA starts, so a torch.profiler started later in the program would
get no device events at all. The user asked torch.profiler for them in this
very program, so it wins: just before it prepares, stepscope's library
flushes what it recorded and detaches, and the run says from when on the GPU
activity is in torch.profiler's trace instead (docs/gpu-collector.md).
"""

import ctypes
import os

_CLIENT = "torch.profiler"
_YIELD = "STEPSCOPE_GPU_YIELD"


def wants_device(activities):
    """Whether torch.profiler's activities include CUDA's (ProfilerActivity.CUDA)."""
    return any(getattr(activity, "name", None) == "CUDA" for activity in activities or ())


def hand_over(torch):
    """Releases stepscope's hold on CUPTI in this process; returns what undoes the
    environment change once torch.profiler has taken CUPTI (or None)."""
    library_path = os.environ.get("CUDA_INJECTION64_PATH")
    if not library_path or not os.environ.get("STEPSCOPE_GPU_DIR"):
        return None  # not recording GPU activity
    try:
        library = ctypes.CDLL(library_path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
    except OSError:
        # CUDA has not started here yet, so the library is not loaded: tell it,
        # should the profiler's own start of CUDA load it, to leave CUPTI alone.
        os.environ[_YIELD] = _CLIENT
        return lambda: os.environ.pop(_YIELD, None)
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()  # CUPTI asks for a quiet device before a detach
    library.stepscope_release_cupti(_CLIENT.encode())
    return None
