"""The channel to the recorder: a Unix datagram socket named by STEPSCOPE_CHANNEL.

Records are short text lines (see docs/steps.md, "Wire format"). They are buffered and
sent several to a datagram: at most one send per _SEND_INTERVAL_NS (or per _MAX_RECORDS
records), so fast steps share a system call and a slow step's records leave at its end.
A send while the program runs never blocks and never raises into the program: while the
recorder's queue is full (it holds 10 datagrams, net.unix.max_dgram_qlen, and the
recorder drains it every 10 ms) the records wait for the next datagram, up to
_MAX_BACKLOG_BYTES; beyond that the oldest are dropped and counted (the count travels in
the next datagram). The last send, at exit, waits up to _EXIT_WAIT_S for room, so a
burst of steps just before exit is not lost. A recorder that is gone turns the channel off.
"""

import os
import socket
import threading
import time

_MAGIC = "SS1"
_MAX_RECORDS = 32             # records buffered before a send
_SEND_INTERVAL_NS = 100_000_000  # records leave at the first record this long after a send
_MAX_NAME = 256               # characters of a range name
_MAX_BACKLOG_BYTES = 32768    # records kept while the recorder's queue is full
_EXIT_WAIT_S = 1.0            # how long the exit's send waits for room in the queue


def now_ns():
    # CLOCK_MONOTONIC on Linux: the clock the recorder stamps the run with.
    return time.monotonic_ns()


class Channel:
    def __init__(self, path):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        self._reset_after_fork()
        try:  # connected once, so that a send does not look the path up again
            self._sock.connect(path)
        except OSError:  # the recorder is gone (or never listened)
            self.open = False
        if hasattr(os, "register_at_fork"):
            # A forked DataLoader worker inherits the socket (fine: datagrams from
            # several processes do not mix) but must not resend its parent's buffer.
            os.register_at_fork(after_in_child=self._reset_after_fork)

    def _reset_after_fork(self):
        self._lock = threading.Lock()
        self._records = []
        self._backlog = 0  # records of _records a full queue refused, waiting for the next send
        self._last_send_ns = 0
        self._dropped = 0
        self._header = "%s %d\n" % (_MAGIC, os.getpid())
        self.open = True

    def send(self, record, flush=False):
        """Queues one record (a line without its newline); sends when due."""
        if not self.open:
            return
        with self._lock:
            self._records.append(record)
            new = len(self._records) - self._backlog
            if flush or new >= _MAX_RECORDS or now_ns() - self._last_send_ns > _SEND_INTERVAL_NS:
                self._flush_locked()

    def flush_at_exit(self):
        """The last send: waits (bounded) while the recorder's queue is full."""
        if not self.open:
            return
        with self._lock:
            self._sock.settimeout(_EXIT_WAIT_S)
            self._flush_locked()

    def _flush_locked(self):
        if not self._records:
            return
        records = self._records + ["N %d" % self._dropped] if self._dropped else self._records
        data = (self._header + "\n".join(records)).encode("utf-8", "replace")
        self._last_send_ns = now_ns()
        try:
            self._sock.send(data)
            self._records = []
            self._backlog = 0
            self._dropped = 0
        except (BlockingIOError, InterruptedError, socket.timeout):  # timeout: only at exit
            self._trim_backlog(len(data))
            self._backlog = len(self._records)  # tried again with the next send that is due
        except OSError:
            # The recorder is gone (or never listened): stop trying, quietly.
            self.open = False

    def _trim_backlog(self, size):
        """Drops the oldest records waiting for the recorder while they exceed the bound."""
        while size > _MAX_BACKLOG_BYTES and self._records:
            size -= len(self._records.pop(0)) + 1
            self._dropped += 1


def clean_name(name):
    """A range name as one field: no newlines, bounded length."""
    text = str(name)
    if len(text) > _MAX_NAME:
        text = text[:_MAX_NAME]
    return text.replace("\n", " ").replace("\r", " ")


_channel = None
_channel_lock = threading.Lock()


def get():
    """The process's channel, or None when not recording (or it cannot be opened)."""
    global _channel
    if _channel is not None:
        return _channel if _channel.open else None
    path = os.environ.get("STEPSCOPE_CHANNEL")
    if not path:
        return None
    with _channel_lock:
        if _channel is None:
            try:
                _channel = Channel(path)
                _announce(_channel)
            except Exception:
                return None
    return _channel if _channel.open else None


def _announce(channel):
    """Process facts the report needs: the rank (torchrun), the Python version."""
    import sys
    facts = [("python", "%d.%d.%d" % sys.version_info[:3])]
    for key, env in (("rank", "RANK"), ("local_rank", "LOCAL_RANK"), ("world_size", "WORLD_SIZE")):
        value = os.environ.get(env, "")
        if value.isdigit():
            facts.append((key, value))
    for key, value in facts:
        channel.send("P %s %s" % (key, value))
    import atexit
    atexit.register(channel.flush_at_exit)
