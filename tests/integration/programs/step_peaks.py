"""Per-step host peaks from stepscope._memory.HostPeak, against known allocations.

  step_peaks.py            steps whose peaks getrusage() gives
  step_peaks.py after-big  the process first holds 384 MiB and execs itself: the kernel
                           keeps that peak of the old image in the process's record of
                           older peaks (signal->maxrss), which getrusage() reports while
                           it exceeds the current peak; HostPeak must see that and read
                           /proc/self/status instead

Steps 2 and 5 each touch a 256 MiB buffer and free it; the buffer of step 5 is
touched by a thread that exits while it is resident (kernels that record exited threads'
peaks in signal->maxrss too). Prints each step's peak above the resident set at the
start, in MiB, as JSON; exits 77 where clear_refs is not writable.
"""
import json
import mmap
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
from stepscope._memory import HostPeak  # noqa: E402

MIB = 1 << 20


def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def touch(size):
    buffer = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        buffer[offset] = 1
    return buffer


def touched_by_exiting_thread(size):
    held = []
    thread = threading.Thread(target=lambda: held.append(touch(size)))
    thread.start()
    thread.join()  # the thread's exit records the high-water mark in signal->maxrss
    return held[0]


def main():
    if sys.argv[1:] == ["after-big"]:
        held = touch(384 * MIB)  # noqa: F841 - resident until the exec replaces the image
        os.execv(sys.executable, [sys.executable, __file__, "exec-after-big"])
    peak = HostPeak()
    if not peak.per_step:
        sys.exit(77)
    base = resident()
    peak.take()
    above = []
    for step in range(8):
        if step == 2:
            touch(256 * MIB).close()
        elif step == 5:
            touched_by_exiting_thread(256 * MIB).close()
        above.append(round((peak.take() - base) / MIB))
    print(json.dumps(above))


if __name__ == "__main__":
    main()
