"""Calls the test's C extension, whose outer -> inner call a Python callback
that spins. Usage: native_extension_loop.py BUILD_DIR SECONDS"""
import sys
import time

sys.path.insert(0, sys.argv[1])
import native_extension  # noqa: E402


def callback():
    spin = 0
    for i in range(20000):
        spin += i
    return 1


def run(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        native_extension.call_through(callback)


if __name__ == "__main__":
    run(float(sys.argv[2]))
