"""stepscope's explicit API, for what the automatic hooks cannot infer.

    import stepscope
    for batch in batches:
        ...
        stepscope.step(samples=len(batch), tokens=n_tokens)   # a step ends here

    with stepscope.range("augment"):
        ...

Both are no-ops unless the program runs under `stepscope record` (which sets
STEPSCOPE_CHANNEL), and neither needs torch. Once step() is called in a process, it
alone ends steps there (optimizer steps no longer do).
"""

from . import _channel, _threads
from ._hook import Hook

__all__ = ["step", "range"]

_step_hook = Hook("stepscope.step")
_range_hook = Hook("stepscope.range")


def _end_step(samples, tokens):
    from . import _steps
    tracker = _steps.tracker()
    if tracker is not None:
        samples = -1 if samples is None else int(samples)  # -1: the batches' (docs/steps.md)
        tokens = -1 if tokens is None else int(tokens)
        tid, ts = _threads.current().tid, _channel.now_ns()
        tracker.step_ends += 1
        tracker.channel.post((_steps.EXPLICIT, tid, ts, ts, samples, tokens, 0, 0))
        tracker.step_ended_here(tid, ts)


def step(samples=None, tokens=None):
    """Marks the end of a training step; samples and tokens it processed are optional."""
    _step_hook.run(_end_step, samples, tokens)


class range:  # noqa: A001 - named like the API it mirrors (torch.profiler.record_function)
    """`with stepscope.range("name"):` records a named span on this thread."""

    __slots__ = ("name", "start")

    def __init__(self, name):
        self.name = name
        self.start = None

    def __enter__(self):
        if _channel.get() is not None:
            self.start = _channel.now_ns()
            _range_hook.run(_note_activity, self.start)
        return self

    def __exit__(self, *exc):
        if self.start is not None:
            _range_hook.run(_send_range, self.name, self.start, _channel.now_ns())
        return False


def _note_activity(ts):
    from . import _steps
    tracker = _steps.tracker()
    if tracker is not None:
        tracker.channel.post((_steps.ACTIVITY, _threads.current().tid, ts, ts, 0, 0, 0, 0))


def _send_range(name, start, end):
    channel = _channel.get()
    if channel is not None:
        channel.send("R %d %d %d %s" % (_threads.current().tid, start, end, _channel.clean_name(name)))


