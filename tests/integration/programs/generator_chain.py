"""A DataLoader-shaped loop whose innermost work is a generator expression that
C code (tuple) resumes again and again: the generator's frame links to its caller
only while it runs, so a sampler that reads it just after it yields sees a stack
of that one frame unless it notices (test_record_pythons.sh).

  generator_chain.py SECONDS
"""
import sys
import time


class Dataset:
    def __init__(self):
        self.columns = (list(range(100)), list(range(100)))

    def __getitem__(self, i):
        return tuple(column[i] * 2 for column in self.columns)


class Fetcher:
    def __init__(self, dataset):
        self.dataset = dataset

    def fetch(self, indices):
        return [self.dataset[i] for i in indices]


def wrapped(fetch):
    def fetch_through_wrapper(self, indices):
        return fetch(self, indices)
    return fetch_through_wrapper


Fetcher.fetch = wrapped(Fetcher.fetch)


def main(seconds):
    fetcher = Fetcher(Dataset())
    indices = list(range(64))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        fetcher.fetch(indices)


main(float(sys.argv[1]))
