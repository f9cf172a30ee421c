"""Per-thread state of the hooks: the thread's native id, and the nesting of its
forward, backward and optimizer calls.

The id is read once per thread: threading.get_native_id() is a system call each time,
and the hooks name the thread in every record. A forked child (a DataLoader worker) has
a new id, so the forking thread's state is dropped in the child.
"""

import os
import threading

local = threading.local()


class ThreadState:
    __slots__ = ("tid", "fwd", "bwd", "opt", "fwd_start", "opt_start")

    def __init__(self):
        self.tid = threading.get_native_id()
        self.fwd = self.bwd = self.opt = 0  # nested calls in progress
        self.fwd_start = self.opt_start = 0  # the outermost call's start (the global hooks', the optimizer's)


def current():
    """This thread's state. Hot paths read `local.state` first and call this only on a miss."""
    state = getattr(local, "state", None)
    if state is None:
        state = local.state = ThreadState()
    return state


def _forget_after_fork():
    local.__dict__.pop("state", None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
