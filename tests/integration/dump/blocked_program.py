"""A Python program with known stacks, for `stepscope dump` tests.

The main thread blocks in outer -> inner -> threading.Event.wait; a thread
named "spinner" spins in `spin`, holding the GIL; a forked child sleeps in
`child_wait`. Once everything is in place, the spinner writes what the
interpreter itself reports about those stacks (sys._current_frames) to the
JSON file named by argv[1], then spins forever.
"""
import ctypes
import json
import os
import sys
import threading
import time


def child_wait(expected):
    expected["child_line"] = sys._getframe().f_lineno + 1
    time.sleep(600)


def name_this_thread(name):
    """Sets the OS thread name (/proc/PID/task/TID/comm), like torch does."""
    libc = ctypes.CDLL(None)
    PR_SET_NAME = 15
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()), 0, 0, 0)


def function_name(code):
    return getattr(code, "co_qualname", code.co_name)  # 3.11+ reports qualified names


def stack_of(frame):
    frames = []
    while frame is not None:
        frames.append({"function": function_name(frame.f_code), "file": frame.f_code.co_filename,
                       "line": frame.f_lineno})
        frame = frame.f_back
    return frames


def spin():
    x = 0
    while True:
        x += 1


def report_then_spin(path, main_ident, child_pid):
    name_this_thread("spinner")
    while True:  # until the main thread is blocked in inner -> Event.wait
        frame = sys._current_frames()[main_ident]
        if frame.f_code.co_name == "wait" and frame.f_back.f_back.f_code.co_name == "inner":
            break
        time.sleep(0.01)
    expected = {"main": stack_of(frame), "spinner_tid": threading.get_native_id(),
                "child_pid": child_pid, "spin_code_lines": [spin.__code__.co_firstlineno + i for i in (1, 2, 3)],
                "version": "%d.%d" % sys.version_info[:2]}
    with open(path + ".tmp", "w") as f:
        json.dump(expected, f)
    os.rename(path + ".tmp", path)
    spin()


def inner(event):
    event.wait()


def outer(event):
    inner(event)


def main():
    child_pid = os.fork()  # before any thread starts, as fork() with threads is unsafe
    if child_pid == 0:
        child_wait({})
        os._exit(0)
    threading.Thread(target=report_then_spin, name="spinner", daemon=True,
                     args=(sys.argv[1], threading.get_ident(), child_pid)).start()
    outer(threading.Event())


main()
