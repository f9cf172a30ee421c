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

The peaks of host and device memory are read at a step's end once _PEAK_INTERVAL_NS has
passed since the last read: each read is the peak since the one before, so steps faster
than that share one, sent with the last of them (the others send -1, not read). A read
costs two system calls, 12 to 40 us inside a training step, where the caches hold the
model (bench/README.md, "The memory peaks once per 100 ms"): once per 100 ms that is at
most 0.04 % of the time, where once per 10 ms a 6-9 ms step read them every other step
(15-20 us a step). At exit, the peaks since the last read are read once more and sent for
the last step that went without (a `M` record), so the run's peak is the same as with a
read at every step.
"""

import threading

from . import _channel, _threads
from ._memory import Memory

_PEAK_INTERVAL_NS = 100_000_000

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
        self.step_ended = None  # (function, its Hook) called after each step's end
        self._peaks_read_ns = None  # when the memory peaks were last read
        self._unread_step = None    # (tid, end) of the last step sent without its peaks
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
        """At exit: the step of a round that never closed, what was held, and the memory
        peaks of the steps since the last read."""
        if self._round_end is not None and not self.explicit:
            self.end(self._round_end)
            self._round_end = None
        if self._segment.forwards:
            self._send_evaluation()
        else:
            self.trained()
        if self._unread_step is not None:
            tid, ts = self._unread_step
            host, device = self._read_peaks(ts)
            self.channel.post((_channel.PEAKS, tid, ts, ts, host, device, 0, 0))

    def fetched(self, tid, start, end, samples, tokens):
        """A DataLoader batch: the step's, once a backward or optimizer step follows."""
        if self.start is None:
            self.start = start
        if self._segment.forwards and not self.explicit:
            self._send_evaluation()
        if self._round:
            self._close_round()
        self._segment.batches.append((tid, start, end, samples, tokens))
        if self.explicit or len(self._segment.batches) > _MAX_HELD_BATCHES:
            self.trained()

    def forward(self, tid, start, end):
        if self.start is None:
            self.start = start
        self._segment.forwards.append((tid, start, end))
        if self.explicit:
            self.trained()

    def trained(self):
        """A backward or an optimizer step: what the segment held was the step's."""
        if not self._segment.batches and not self._segment.forwards:
            return  # the optimizer step after a backward: nothing since
        for tid, start, end, samples, tokens in self._segment.batches:
            if samples >= 0:
                self.samples = samples + max(self.samples, 0)
            if tokens >= 0:
                self.tokens = tokens + max(self.tokens, 0)
            self.channel.post((_channel.DATA_WAIT, tid, start, end, samples, tokens, 0, 0))
        for tid, start, end in self._segment.forwards:
            self.channel.post((_channel.FORWARD, tid, start, end, 0, 0, 0, 0))
        self._segment.clear()

    def _send_evaluation(self):
        tid, start, end = self._segment.bounds()
        self.channel.post((_channel.EVALUATION, tid, start, end, 0, 0, 0, 0))
        self._segment.clear()

    def end(self, ts, samples=None, tokens=None):
        start = self.start if self.start is not None else ts
        samples = self.samples if samples is None else int(samples)
        tokens = self.tokens if tokens is None else int(tokens)
        state = getattr(_threads.local, "state", None) or _threads.current()
        if self._peaks_read_ns is None or ts - self._peaks_read_ns >= _PEAK_INTERVAL_NS:
            host, device = self._read_peaks(ts)
            self._unread_step = None
        else:
            host = device = -1
            self._unread_step = (state.tid, ts)
        self.channel.post((_channel.STEP, state.tid, start, ts, samples, tokens, host, device))
        self.start = ts
        self.samples = -1
        self.tokens = -1
        if self.step_ended is not None:
            function, hook = self.step_ended
            if hook.on:
                try:
                    function()
                except Exception as error:  # noqa: BLE001 - its hook turns off, as Hook.run does
                    hook.disable(error)

    def _read_peaks(self, ts):
        """(host, device) peaks since the last read."""
        self._peaks_read_ns = ts
        memory = self.memory
        host = memory.host.take() if memory.host is not None else -1
        device = memory.device_peak() if memory.device_peak is not None else -1
        return host, device


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
