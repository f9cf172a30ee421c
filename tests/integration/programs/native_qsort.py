"""libc's qsort through ctypes with a Python comparator that spins: under
`record --native` its samples must read run (Python) -> qsort (native) ->
cmp (Python). Usage: native_qsort.py SECONDS"""
import ctypes
import sys
import time

libc = ctypes.CDLL(None)
Comparator = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def cmp(a, b):
    spin = 0
    for i in range(3000):
        spin += i
    return a[0] - b[0]


def run(seconds):
    comparator = Comparator(cmp)
    values = (ctypes.c_int * 32)()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for i in range(32):
            values[i] = 32 - i
        libc.qsort(values, 32, ctypes.sizeof(ctypes.c_int), comparator)


if __name__ == "__main__":
    run(float(sys.argv[1]))
