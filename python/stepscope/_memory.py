"""Peak memory over one step: the process's resident set, and CUDA's allocator.

ru_maxrss only ever grows, so it cannot give a step's own peak. Linux keeps the same
high-water mark as VmHWM in /proc/self/status, and writing "5" to /proc/self/clear_refs
resets it to the current RSS: read, then reset, at a step's end (at most once per 10 ms,
_steps.py). Where clear_refs cannot be written the peak is the process's peak so far,
and `rss_peak` says `monotone`.

Reading /proc/self/status costs about 24 us inside a training step (the kernel writes
all of its 50 lines); getrusage(RUSAGE_THREAD) costs 1 to 4. Not RUSAGE_SELF: it adds up
the CPU time of every thread first, which in a process with torch's thread pools took 2 to
10 ms a call on a 2-vCPU VM (Linux 6.18; found with `record --native`), while Linux gives
both the same ru_maxrss. Its ru_maxrss is the larger of the reset
high-water mark and the process's record of older peaks (signal->maxrss), which the
kernel sets only at exec (the peak of the image it replaced) and when the whole process
exits. So once, right after the first reset, ru_maxrss bounds that record from above;
afterwards a ru_maxrss above the bound is the step's peak itself, and a step whose
ru_maxrss is not above it reads /proc/self/status instead.
"""

import os
import resource

# Linux's getrusage(RUSAGE_THREAD) reports the process's ru_maxrss, without the
# cost of summing every thread's CPU time.
_RUSAGE = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


class HostPeak:
    def __init__(self):
        self.per_step = False
        self._status = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._clear = os.open("/proc/self/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
            os.write(self._clear, b"5")
            self.per_step = True
        except OSError:
            self._clear = -1
        # Not below the record of older peaks: the larger of it and the peak just reset.
        self._older_peaks_bound = resource.getrusage(_RUSAGE).ru_maxrss

    def take(self):
        """Bytes of peak RSS since the last call (or ever, when it cannot reset)."""
        if self._clear < 0:
            return self._status_peak()
        maxrss = resource.getrusage(_RUSAGE).ru_maxrss
        peak = maxrss * 1024 if maxrss > self._older_peaks_bound else self._status_peak()
        os.write(self._clear, b"5")
        return peak

    def _status_peak(self):
        data = os.pread(self._status, 4096, 0)
        at = data.find(b"VmHWM:")
        if at < 0:
            return -1
        end = data.find(b"kB", at)
        return int(data[at + 6:end]) * 1024


class Memory:
    """Host peak always; device peak when the torch hooks plug a reader in."""

    def __init__(self):
        try:
            self.host = HostPeak()
        except OSError:
            self.host = None
        self.device_peak = None  # a function returning bytes or -1, set by the torch hooks

    def mode(self):
        if self.host is None:
            return "none"
        return "per_step" if self.host.per_step else "monotone"
