"""A torch Linear layer on the CPU, for `record --native`: libtorch's (or
BLAS's) frames must show under Linear.forward. Usage: native_matmul.py SECONDS"""
import sys
import time

import torch

torch.set_num_threads(1)
layer = torch.nn.Linear(512, 512)
batch = torch.randn(256, 512)


def run(seconds):
    end = time.monotonic() + seconds
    with torch.no_grad():
        while time.monotonic() < end:
            layer(batch)


if __name__ == "__main__":
    run(float(sys.argv[1]))
