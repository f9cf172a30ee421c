"""A program whose work happens in child processes: a forked child and a
multiprocessing worker started with 'spawn' (as DataLoader workers can be),
plus an idle thread in the parent. Each child burns CPU in a function named
after how it was started, so a profile can tell them apart."""
import multiprocessing
import os
import threading
import time


def burn(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(i * i for i in range(1000))


def forked_child_work():
    burn(1.5)


def spawned_worker_work():
    burn(1.5)


def idle_waiter(event):
    event.wait()


def main():
    event = threading.Event()
    waiter = threading.Thread(target=idle_waiter, args=(event,), name="idle-waiter")
    waiter.start()
    pid = os.fork()
    if pid == 0:
        forked_child_work()
        os._exit(0)
    worker = multiprocessing.get_context("spawn").Process(target=spawned_worker_work)
    worker.start()
    worker.join()
    os.waitpid(pid, 0)
    event.set()
    waiter.join()


if __name__ == "__main__":
    main()
