"""The in-process half of the steps: what the hooks note at each place of a step.

The places of a step (a batch fetched, the outermost forward, backward and optimizer
step, a stepscope.step() call) each append one record to the channel's list
(docs/steps.md, "Wire format"): the thread, the times, and for a batch its size, for an
optimizer step which optimizer. What they make (data waits, phases, evaluation, steps,
rounds of several optimizers) the recorder assembles from them, in order
(src/collectors/hooks/step_assembly.hpp). Inside a training step, where the caches hold
the model, that bookkeeping in Python cost about 45 us a step on the AMD EPYC VM, a
third of the hooks' time (bench/README.md, "The step assembly moved into the
recorder"); a place now pays a tuple, an append and a comparison.

A place compares its time with `due_ns`: at or after it the tracker ticks: the channel
sends what is queued (at most once per _SEND_INTERVAL_NS), and the forward hooks hear
how many steps ended since the last tick (optimizer steps and stepscope.step() calls:
`step_ends`), which paces their search for the model's root modules. While they search
(`eager`), every place ticks, so each step's end is seen at once.

The peaks of host and device memory are read at an optimizer step or stepscope.step()
once _PEAK_INTERVAL_NS has passed since the last read (`peaks_due_ns`), and sent as a
record at that place's time: each read is the peak since the one before, and the
recorder gives it to the step that ends there (or the next to end), so steps faster
than that share one. A read costs two system calls, 12 to 40 us inside a training step
(bench/README.md, "The memory peaks once per 100 ms"). At exit, the peaks since the last
read are read once more if a step ended since, for the last step, so the run's peak is
the same as with a read at every step.
"""

import threading

from . import _channel, _threads
from ._memory import Memory

_PEAK_INTERVAL_NS = 100_000_000
_SEND_INTERVAL_NS = 100_000_000

# The places' records: a batch fetched (samples, tokens), the outermost forward,
# backward and optimizer step (which optimizer), a step GradScaler skipped (which
# optimizer), a range begun, stepscope.step() (samples, tokens; -1: the batches'), the
# memory peaks read (host, device).
FETCHED, FORWARD, BACKWARD, OPTIMIZER, SKIPPED, ACTIVITY, EXPLICIT, PEAKS = map(ord, "DFBOKASM")


class StepTracker:
    def __init__(self, channel):
        self.channel = channel
        self.memory = Memory()
        self.records = channel.records  # the places append their records, tuples of eight ints
        self.due_ns = 0          # a place at or after this time ticks
        self.peaks_due_ns = 0    # a step's end at or after this time reads the memory peaks
        self.eager = False       # tick at every place (while the forward hooks search)
        self.step_ends = 0       # optimizer steps and stepscope.step() calls; GradScaler's hook compares it
        self.steps_ended = None  # (function, its Hook): told at a tick how many steps ended
        self._ticked_step_ends = 0
        self._read_step_ends = 0  # step_ends at the last read of the peaks
        self._send_due_ns = 0
        channel.send("P rss_peak %s" % self.memory.mode())

    def set_eager(self, eager):
        """While eager, every place ticks."""
        self.eager = eager
        if eager:
            self.due_ns = 0

    def tick(self, at_step_end=False):
        """At a place at or after due_ns: sends what is queued when the send is due, and
        tells the forward hooks how many steps ended since the last tick, and whether this
        place ends one (an optimizer step or stepscope.step())."""
        now = _channel.now_ns()
        if now >= self._send_due_ns:
            self._send_due_ns = now + _SEND_INTERVAL_NS
            self.channel.flush()
        self.due_ns = 0 if self.eager else self._send_due_ns
        ended = self.step_ends - self._ticked_step_ends
        self._ticked_step_ends += ended
        if ended and self.steps_ended is not None:
            function, hook = self.steps_ended
            if hook.on:
                try:
                    function(ended, at_step_end)
                except Exception as error:  # noqa: BLE001 - its hook turns off, as Hook.run does
                    hook.disable(error)

    def step_ended_here(self, tid, ts):
        """At a place that may end a step (an optimizer step, stepscope.step()), once
        the memory peaks or a tick are due."""
        if ts >= self.peaks_due_ns:
            self.read_peaks(tid, ts)
        if ts >= self.due_ns:
            self.tick(at_step_end=True)

    def read_peaks(self, tid, ts):
        """The peaks since the last read, sent for the step that ends at `ts`."""
        self.peaks_due_ns = ts + _PEAK_INTERVAL_NS
        self._read_step_ends = self.step_ends
        memory = self.memory
        host = memory.host.take() if memory.host is not None else -1
        device = memory.device_peak() if memory.device_peak is not None else -1
        self.channel.post((PEAKS, tid, ts, ts, host, device, 0, 0))

    def finish(self):
        """At exit: the peaks of the steps since the last read."""
        if self.step_ends != self._read_step_ends:
            self.read_peaks(_threads.current().tid, _channel.now_ns())


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
