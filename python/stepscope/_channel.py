"""The channel to the recorder: a Unix datagram socket named by STEPSCOPE_CHANNEL.

Records are described in docs/steps.md, "Wire format". Those of numbers alone (the
places of a step, gc pauses, worker batches) are eight int64 each, sent as binary
datagrams (`SS2`): a place of a step appends a tuple of its eight numbers to `records`
(0.1 us; packing it there cost 0.3 us, extending an array('q') with it 0.7), and a send
packs all it takes in one call. Records with text (facts, ranges, notes) are text lines
(`SS1`). Records are sent several to a datagram: at most one send per _SEND_INTERVAL_NS
(or per _MAX_RECORDS records posted), so fast steps share a system call; the places of a
step do not send themselves, they ask the tracker when due (_steps.py). A send while the
program runs never blocks and never raises into the program: while the recorder's queue is full (it holds 10
datagrams, net.unix.max_dgram_qlen, and the recorder drains it every 10 ms) the records
wait for the next send, up to _MAX_BACKLOG_BYTES of each kind (of text: characters);
beyond that the oldest are dropped and counted (the count travels in the next datagram).
The last send, at exit, waits up to _EXIT_WAIT_S for room, so a burst of steps just
before exit is not lost. A recorder that is gone turns the channel off.
"""

import itertools
import os
import socket
import struct
import threading
import time

_MAX_RECORDS = 256               # records queued before a send
_SEND_INTERVAL_NS = 100_000_000  # records leave at the first record this long after a send
_DATAGRAM_RECORDS = 768          # binary records a datagram carries: 48 KiB, under the recorder's 64 KiB
_DATAGRAM_CHARS = 12288          # characters of a text datagram: at most 48 KiB of UTF-8
_MAX_NAME = 256                  # characters of a range name
_MAX_BACKLOG_BYTES = 32768       # records kept while the recorder's queue is full
_EXIT_WAIT_S = 1.0               # how long the exit's send waits for room in the queue

# A binary record: its type (the text record's letter), then seven values (0: none),
# each a native int64 (the recorder runs on this machine).
WORKER_BATCH, GC_PAUSE = map(ord, "WG")  # the places' types are _steps.py's
_RECORD = struct.Struct("=8q")
_VALUES = 8  # a record's int64 values
_MAX_BACKLOG_RECORDS = _MAX_BACKLOG_BYTES // _RECORD.size

# CLOCK_MONOTONIC on Linux: the clock the recorder stamps the run with. The C function
# itself, not a Python function around it: the hooks read it several times a step.
now_ns = time.monotonic_ns


class Channel:
    def __init__(self, path):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)
        # The binary records, tuples of eight ints. One list for the process's life: the
        # places hold its append method; a forked child empties it.
        self.records = []
        self._reset_after_fork()
        try:  # connected once, so that a send does not look the path up again
            self._sock.connect(path)
        except OSError:  # the recorder is gone (or never listened)
            self.open = False
        if hasattr(os, "register_at_fork"):
            # A forked DataLoader worker inherits the socket (fine: datagrams from
            # several processes do not mix) but must not resend its parent's records.
            os.register_at_fork(after_in_child=self._reset_after_fork)

    def _reset_after_fork(self):
        self._lock = threading.Lock()
        # Appended to without the lock (list.append is atomic); a send takes records
        # from the front only, so one appended meanwhile waits for the next.
        self._lines = []
        del self.records[:]
        self._waiting = 0  # records a full queue refused, waiting for the next send
        self._last_send_ns = 0
        self._dropped = 0
        self._headers = tuple(("%s %d\n" % (magic, os.getpid())).encode() for magic in ("SS1", "SS2"))
        self.open = True

    def send(self, line, flush=False):
        """Queues one text record (a line without its newline); sends when due."""
        if not self.open:
            return
        self._lines.append(line)
        self._send_if_due(flush)

    def post(self, record, flush=False):
        """Queues one record of numbers (eight, the type first); sends when due. A bad
        value raises before anything is queued (a trial pack: the send packs records
        many at a time, and one bad value there would lose them all)."""
        if not self.open:
            return
        _RECORD.pack(*record)
        self.records.append(record)
        self._send_if_due(flush)

    def flush(self):
        """Sends what is queued now."""
        if self.open:
            with self._lock:
                self._flush_locked()

    def _send_if_due(self, flush):
        queued = len(self._lines) + len(self.records) - self._waiting
        if flush or queued >= _MAX_RECORDS or now_ns() - self._last_send_ns > _SEND_INTERVAL_NS:
            with self._lock:
                self._flush_locked()

    def flush_at_exit(self):
        """The last send: waits (bounded) while the recorder's queue is full."""
        if not self.open:
            return
        with self._lock:
            self._sock.settimeout(_EXIT_WAIT_S)
            self._flush_locked()

    def _flush_locked(self):
        self._last_send_ns = now_ns()
        self._send_binary()
        self._send_lines()
        self._waiting = len(self._lines) + len(self.records)
        if self._waiting:
            self._trim_backlog()

    def _send_binary(self):
        records = self.records
        count = len(records)
        sent = 0
        while sent < count and self.open:
            chunk = records[sent:sent + min(count - sent, _DATAGRAM_RECORDS)]
            try:
                packed = struct.pack("=%dq" % (_VALUES * len(chunk)), *itertools.chain.from_iterable(chunk))
            except struct.error:  # a place appended a value out of range: drop its chunk, counted
                self._dropped += len(chunk)
                sent += len(chunk)
                continue
            if not self._send(self._headers[1] + packed):
                break
            sent += len(chunk)
        del records[:sent]

    def _send_lines(self):
        lines = self._lines
        count = len(lines)
        sent = 0
        while (sent < count or self._dropped) and self.open:
            end, size = sent, 0
            while end < count and (end == sent or size + len(lines[end]) < _DATAGRAM_CHARS):
                size += len(lines[end]) + 1
                end += 1
            batch = lines[sent:end] + ["N %d" % self._dropped] if self._dropped else lines[sent:end]
            if not self._send(self._headers[0] + "\n".join(batch).encode("utf-8", "replace")):
                break
            self._dropped = 0
            sent = end
        del lines[:sent]

    def _send(self, datagram):
        """True once sent; False while the recorder's queue is full, or when it is gone."""
        try:
            self._sock.send(datagram)
            return True
        except (BlockingIOError, InterruptedError, socket.timeout):  # timeout: only at exit
            return False
        except OSError:
            # The recorder is gone (or never listened): stop trying, quietly.
            self.open = False
            self._lines.clear()
            del self.records[:]
            return False

    def _trim_backlog(self):
        """Drops the oldest records waiting for the recorder while they exceed the bound."""
        records = self.records
        extra_records = len(records) - _MAX_BACKLOG_RECORDS
        if extra_records > 0:
            del records[:extra_records]
            self._dropped += extra_records
        lines = self._lines
        size = sum(len(line) + 1 for line in lines)
        dropped = 0
        while size > _MAX_BACKLOG_BYTES and dropped < len(lines):
            size -= len(lines[dropped]) + 1
            dropped += 1
        del lines[:dropped]
        self._dropped += dropped
        self._waiting = len(lines) + len(records)


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
