"""Step boundaries of this process, shared by the torch hooks and the explicit API.

A step runs from the end of the previous one (or, for the first, from the first
activity seen: a data wait, a forward, a range) to the next optimizer step or
stepscope.step() call. Its samples and tokens are those of the batches fetched during
it, unless the caller of stepscope.step() says otherwise.
"""

import threading

from . import _channel
from ._memory import Memory


class StepTracker:
    def __init__(self, channel):
        self.channel = channel
        self.memory = Memory()
        self.explicit = False  # once stepscope.step() is called, optimizer steps no longer end steps
        self.start = None
        self.samples = -1
        self.tokens = -1
        self.step_ended = None  # called after each step's end (the forward hooks' schedule)
        self.steps = 0          # steps ended so far
        channel.send("P rss_peak %s" % self.memory.mode())

    def activity(self, ts):
        if self.start is None:
            self.start = ts

    def batch(self, samples, tokens):
        if samples >= 0:
            self.samples = samples + max(self.samples, 0)
        if tokens >= 0:
            self.tokens = tokens + max(self.tokens, 0)

    def end(self, ts, samples=None, tokens=None):
        start = self.start if self.start is not None else ts
        samples = self.samples if samples is None else int(samples)
        tokens = self.tokens if tokens is None else int(tokens)
        host = self.memory.host.take() if self.memory.host is not None else -1
        device = self.memory.device_peak() if self.memory.device_peak is not None else -1
        self.channel.send("S %d %d %d %d %d %d %d" % (threading.get_native_id(), start, ts,
                                                     samples, tokens, host, device), flush=True)
        self.start = ts
        self.samples = -1
        self.tokens = -1
        self.steps += 1
        if self.step_ended is not None:
            self.step_ended()


_tracker = None
_lock = threading.Lock()


def tracker():
    """This process's tracker, or None when not recording."""
    global _tracker
    if _tracker is None:
        channel = _channel.get()
        if channel is None:
            return None
        with _lock:
            if _tracker is None:
                _tracker = StepTracker(channel)
    return _tracker
