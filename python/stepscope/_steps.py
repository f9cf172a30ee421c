"""Step boundaries of this process, shared by the torch hooks and the explicit API.

A step runs from the end of the previous one (or, for the first, from the first
activity seen: a data wait, a forward, a range) to the next optimizer step or
stepscope.step() call. Its samples and tokens are those of the batches fetched during
it, unless the caller of stepscope.step() says otherwise.

Several optimizers that step in turn (a GAN's discriminator and generator) make one
step: the optimizer steps between two batches are a round, and a step ends at the last
optimizer step of a round. How many optimizers a round has is learned from the rounds
before; until then (the first round, or a round with fewer optimizer steps) the step
ends when the round does: at the next batch, at an optimizer that steps again, or at
exit, with the time of the round's last optimizer step.

Evaluation inside training is not the step's forward or data wait, and its batches are
not the step's samples: the batches and forwards since the last backward or optimizer
step are held (a segment) until a backward or an optimizer step says they trained. A
segment that ran a forward and is closed by the next batch (or by the exit) instead
trained nothing: it is sent as one evaluation span. A segment of batches alone stays
open, so a loader that fetches a batch ahead (Lightning, accelerate) still counts it.
With explicit steps (stepscope.step()) nothing is held: the caller says what a step is.
"""

import threading

from . import _channel
from ._memory import Memory

# Batches a segment holds before it no longer waits for a forward (a loop that only
# reads its DataLoader): they are sent as data waits then.
_MAX_HELD_BATCHES = 8


class _Segment:
    """The batches and forwards since the last backward or optimizer step."""

    def __init__(self):
        self.batches = []   # (tid, start, end, samples, tokens)
        self.forwards = []  # (tid, start, end)

    def clear(self):
        self.batches.clear()
        self.forwards.clear()

    def bounds(self):
        spans = self.batches + self.forwards
        return spans[0][0], min(span[1] for span in spans), max(span[2] for span in spans)


class StepTracker:
    def __init__(self, channel):
        self.channel = channel
        self.memory = Memory()
        self.explicit = False  # once stepscope.step() is called, optimizer steps no longer end steps
        self.start = None
        self.samples = -1
        self.tokens = -1
        self.step_ended = None  # called after each step's end (the forward hooks' schedule)
        self.optimizer_steps = 0
        self._round = set()     # the optimizers that stepped since the last batch
        self._round_size = 0    # optimizers in a round, from the last one (0: not known yet)
        self._round_end = None  # the round's last optimizer step, while its step is open
        self._segment = _Segment()
        channel.send("P rss_peak %s" % self.memory.mode())

    def activity(self, ts):
        if self.start is None:
            self.start = ts

    def optimizer_stepped(self, optimizer, ts):
        """An optimizer step ended at `ts`: it ends the step once the round is complete."""
        self.optimizer_steps += 1
        self.trained()
        if self.explicit:
            return
        if optimizer in self._round:  # it steps again: the round before was complete
            self._close_round()
        self._round.add(optimizer)
        self._round_end = ts
        if self._round_size and len(self._round) == self._round_size:
            self.end(ts)
            self._round_end = None

    def _close_round(self):
        if self._round_end is not None and not self.explicit:
            self.end(self._round_end)
            self._round_end = None
        if self._round:
            self._round_size = len(self._round)
            self._round = set()

    def finish(self):
        """At exit: the step of a round that never closed, and what was held."""
        if self._round_end is not None and not self.explicit:
            self.end(self._round_end)
            self._round_end = None
        if self._segment.forwards:
            self._send_evaluation()
        else:
            self.trained()

    def fetched(self, tid, start, end, samples, tokens):
        """A DataLoader batch: the step's, once a backward or optimizer step follows."""
        if self._segment.forwards and not self.explicit:
            self._send_evaluation()
        self._close_round()
        self._segment.batches.append((tid, start, end, samples, tokens))
        if self.explicit or len(self._segment.batches) > _MAX_HELD_BATCHES:
            self.trained()

    def forward(self, tid, start, end):
        self._segment.forwards.append((tid, start, end))
        if self.explicit:
            self.trained()

    def trained(self):
        """A backward or an optimizer step: what the segment held was the step's."""
        for tid, start, end, samples, tokens in self._segment.batches:
            if samples >= 0:
                self.samples = samples + max(self.samples, 0)
            if tokens >= 0:
                self.tokens = tokens + max(self.tokens, 0)
            self.channel.send("D %d %d %d %d %d" % (tid, start, end, samples, tokens))
        for tid, start, end in self._segment.forwards:
            self.channel.send("F %d %d %d" % (tid, start, end))
        self._segment.clear()

    def _send_evaluation(self):
        tid, start, end = self._segment.bounds()
        self.channel.send("E %d %d %d" % (tid, start, end))
        self._segment.clear()

    def end(self, ts, samples=None, tokens=None):
        start = self.start if self.start is not None else ts
        samples = self.samples if samples is None else int(samples)
        tokens = self.tokens if tokens is None else int(tokens)
        host = self.memory.host.take() if self.memory.host is not None else -1
        device = self.memory.device_peak() if self.memory.device_peak is not None else -1
        self.channel.send("S %d %d %d %d %d %d %d" % (threading.get_native_id(), start, ts,
                                                     samples, tokens, host, device))
        self.start = ts
        self.samples = -1
        self.tokens = -1
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
                import atexit
                atexit.register(_tracker.finish)
    return _tracker
