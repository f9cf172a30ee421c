"""Holds MIB mebibytes of resident memory for SECONDS, then exits.

  hold_memory.py MIB SECONDS

Every page is written, so the memory is resident (not the shared zero page).
Prints `summary: {json}` with the process's own peak resident size (VmHWM)
for the test to compare with what the recorder saw. No torch: a memory
cgroup's limit counts every byte, and an import of torch alone is ~300 MiB.
"""
import json
import sys
import time


def vm_hwm_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def main():
    mib, seconds = int(sys.argv[1]), float(sys.argv[2])
    held = bytearray(b"\x01") * (mib << 20)  # repeated copy: each page written
    time.sleep(seconds)
    print("summary: " + json.dumps({"held_bytes": len(held), "vm_hwm_bytes": vm_hwm_bytes()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
