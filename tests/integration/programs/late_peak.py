"""Fast explicit steps (no torch), one of them near the end touching 64 MiB and freeing
it. The hooks read the memory peaks at most once per 100 ms, so the whole loop, well
under that after the first step's read, has no other read: that step's peak reaches the
run only through the read at exit (record `M`), given to the last step.
"""
import mmap

import stepscope

MIB = 1 << 20


def touch_and_free(size):
    buffer = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        buffer[offset] = 1
    buffer.close()


for step in range(20):
    if step == 15:
        touch_and_free(64 * MIB)
    stepscope.step(samples=1)
