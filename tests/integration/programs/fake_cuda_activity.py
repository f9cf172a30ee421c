"""Stands in for a CUDA program under `record --gpu on` on a machine without
a GPU: it writes what libstepscope-cupti.so would write (docs/gpu-collector.md,
"File format"), implemented here independently with struct, into
$STEPSCOPE_GPU_DIR/PID.gpu. A forked child writes its own file, with the same
CUPTI correlation ids. With --killed, the parent ends with half a record and
SIGKILL, as a process killed mid-write would.

Each process: one cudaLaunchKernel at t0 (5 us) whose kernel "fake_kernel"
runs on device 0, stream 7 from t0+10 us to t0+30 us (correlation 1), one
cudaMemcpyAsync whose 4096-byte HtoD pageable copy runs on stream 7
(correlation 2), and an NVTX range "fake_range" around both.
"""
import os
import signal
import struct
import sys
import time

KIND_STRING, KIND_CLOCK, KIND_API, KIND_KERNEL, KIND_MEMCPY, KIND_MARKER = 1, 2, 4, 5, 6, 10


def record(kind, payload):
    return struct.pack("<IB", len(payload), kind) + payload


def text(kind, ident, value):
    return record(kind, struct.pack("<I", ident) + value.encode())


def activity(kind, start, end, device=0, context=1, track=0, correlation=0, nbytes=0, name=0,
             sub=(0, 0, 0), ident=0):
    return record(kind, struct.pack("<qqIIqIQI3BI", start, end, device, context, track, correlation,
                                    nbytes, name, *sub, ident))


def activity_bytes(pid, tid):
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    out = b"SSGPU1\n\0" + struct.pack("<q", pid)
    out += record(KIND_CLOCK, struct.pack("<qqB", t0, t0, 1))
    out += text(KIND_STRING, 1, "cudaLaunchKernel") + text(KIND_STRING, 2, "fake_kernel")
    out += text(KIND_STRING, 3, "cudaMemcpyAsync") + text(KIND_STRING, 4, "fake_range")
    out += activity(KIND_MARKER, t0, t0, track=tid, name=4, sub=(1, 0, 0), ident=9)
    out += activity(KIND_API, t0, t0 + 5_000, track=tid, correlation=1, name=1, sub=(1, 0, 0))
    out += activity(KIND_KERNEL, t0 + 10_000, t0 + 30_000, track=7, correlation=1, name=2)
    out += activity(KIND_API, t0 + 40_000, t0 + 45_000, track=tid, correlation=2, name=3, sub=(1, 0, 0))
    out += activity(KIND_MEMCPY, t0 + 50_000, t0 + 60_000, track=7, correlation=2, nbytes=4096,
                    sub=(1, 1, 3))
    out += activity(KIND_MARKER, t0 + 70_000, t0 + 70_000, track=tid, sub=(2, 0, 0), ident=9)
    return out


def write_own_file(tail=b""):
    directory = os.environ.get("STEPSCOPE_GPU_DIR")
    if not directory:
        print("no STEPSCOPE_GPU_DIR")
        return
    with open(os.path.join(directory, f"{os.getpid()}.gpu"), "wb") as f:
        f.write(activity_bytes(os.getpid(), os.getpid()) + tail)


def main():
    killed = "--killed" in sys.argv
    child = os.fork()
    if child == 0:
        write_own_file()
        os._exit(0)
    os.waitpid(child, 0)
    partial = activity(KIND_KERNEL, 1, 2)[:20] if killed else b""
    write_own_file(partial)
    time.sleep(0.5)  # the recorder polls the folder while the program runs
    if killed:
        os.kill(os.getpid(), signal.SIGKILL)


main()
