"""What `stepscope dump` asks a rank of a hung job, and what a rank leaves when it exits.

A hung rank's main thread is blocked in a collective (or wherever it hangs), so the
answer must not need it: once the process group exists, a daemon thread listens on a
Unix socket `flight.PID` in the recorder's private folder (the folder of
STEPSCOPE_CHANNEL, mode 0700: only this user can connect) and answers each connection
with torch's Flight Recorder state as JSON. torch releases the GIL while a collective
waits, so this thread runs. The recorder's folder goes away with the recorder.

A rank that exits leaves `exit.PID.json` in the same folder (its rank and, for an
uncaught exception, status 1 and the exception), so a dump of the ranks still running
can say which rank is gone and why (docs/jobs.md, "Hangs").
"""

import json
import os
import socket
import sys
import threading

_FR_DEFAULT_ENTRIES = "2000"  # torch's own suggestion for TORCH_FR_BUFFER_SIZE
_MAX_EXCEPTION = 512


def folder():
    path = os.environ.get("STEPSCOPE_CHANNEL", "")
    return os.path.dirname(path) if path else ""


def enable_flight_recorder():
    """Turns torch's Flight Recorder on unless the user chose its size (0 keeps it off)."""
    if "TORCH_FR_BUFFER_SIZE" not in os.environ and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in os.environ:
        os.environ["TORCH_FR_BUFFER_SIZE"] = _FR_DEFAULT_ENTRIES


def flight_recorder_json():
    """torch's Flight Recorder state as JSON bytes, or a JSON object saying why there is none."""
    try:
        from torch._C import _distributed_c10d as c10d
        dump = getattr(c10d, "_dump_fr_trace_json", None) or getattr(c10d, "_dump_nccl_trace_json")
        answer = dump(includeCollectives=True, onlyActive=False)
        return answer if isinstance(answer, bytes) else answer.encode("utf-8", "replace")
    except Exception as error:  # noqa: BLE001 - the answer says what went wrong
        return json.dumps({"stepscope_problem": "%s: %s" % (type(error).__name__, error)}).encode()


class _Server:
    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.unlink(path)
        except OSError:
            pass
        self.sock.bind(path)
        self.sock.listen(4)
        thread = threading.Thread(target=self._serve, name="stepscope-flight", daemon=True)
        thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.sendall(flight_recorder_json())
                except OSError:
                    pass


_server = None
_server_lock = threading.Lock()


def serve():
    """Starts answering dumps in this process (once; again in a forked child)."""
    global _server
    base = folder()
    if not base:
        return
    with _server_lock:
        if _server is not None and _server.path.endswith(".%d" % os.getpid()):
            return
        _server = _Server(os.path.join(base, "flight.%d" % os.getpid()))


def note_exit_of_ranks():
    """Leaves exit.PID.json when this process, a rank of a job, exits."""
    if not folder() or not os.environ.get("RANK", "").isdigit():
        return
    import atexit
    previous = sys.excepthook
    exception = []

    def excepthook(kind, value, traceback):
        exception.append("%s: %s" % (kind.__name__, value))
        previous(kind, value, traceback)

    sys.excepthook = excepthook
    atexit.register(_write_exit_note, exception, os.getpid())


def _write_exit_note(exception, pid):
    if pid != os.getpid():  # a forked child exiting is not the rank
        return
    import multiprocessing
    if multiprocessing.parent_process() is not None:  # nor is a spawned one (a DataLoader worker)
        return
    note = {"pid": pid, "status": 1 if exception else None,
            "exception": exception[0][:_MAX_EXCEPTION] if exception else None}
    for key, env in (("rank", "RANK"), ("local_rank", "LOCAL_RANK"), ("world_size", "WORLD_SIZE")):
        value = os.environ.get(env, "")
        note[key] = int(value) if value.isdigit() else None
    path = os.path.join(folder(), "exit.%d.json" % pid)
    try:
        with open(path + ".tmp", "w") as out:
            json.dump(note, out)
        os.replace(path + ".tmp", path)
    except OSError:
        pass
