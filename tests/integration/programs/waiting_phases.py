"""A thread that sleeps in three functions, one after the other, while the
main thread waits for it. A sleeping thread's stack is kept from sample to
sample without being read again while the thread has not run: a profile of
this program shows whether each sample still has the stack the thread had
then (a stack kept too long would show a phase after it ended)."""
import sys
import threading
import time


def first_wait(seconds):
    time.sleep(seconds)


def second_wait(seconds):
    time.sleep(seconds)


def third_wait(seconds):
    time.sleep(seconds)


def phases(seconds):
    first_wait(seconds)
    second_wait(seconds)
    third_wait(seconds)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4
    thread = threading.Thread(target=phases, args=(seconds,), name="phases")
    thread.start()
    thread.join()


if __name__ == "__main__":
    main()
