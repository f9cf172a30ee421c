"""Peak memory over one step: the process's resident set, and CUDA's allocator.

ru_maxrss only ever grows, so it cannot give a step's own peak. Linux keeps the same
high-water mark as VmHWM in /proc/self/status, and writing "5" to /proc/self/clear_refs
resets it to the current RSS: read, then reset, once a step. Both files stay open (a
pread and a write per step, a few microseconds). Where clear_refs cannot be written the
peak is the process's peak so far, and `rss_peak` says `monotone`.
"""

import os


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

    def take(self):
        """Bytes of peak RSS since the last call (or ever, when it cannot reset)."""
        data = os.pread(self._status, 4096, 0)
        at = data.find(b"VmHWM:")
        if at < 0:
            return -1
        end = data.find(b"kB", at)
        peak = int(data[at + 6:end]) * 1024
        if self._clear >= 0:
            os.write(self._clear, b"5")
        return peak


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
