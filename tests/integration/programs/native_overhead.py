"""A training loop for `record --native`'s python_overhead: with `python`, the
model's forward computes a feature in a Python loop over plain floats before
one small tensor operation (the interpreter paces the step); with `large`, a
few large matrix products (libtorch's kernels do).
Usage: native_overhead.py python|large STEPS"""
import sys

import torch

torch.manual_seed(0)
torch.set_num_threads(1)


class PythonFeature(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        feature = 0.0
        for i in range(20000):
            feature = feature * 0.999 + (i % 7) * 0.001
        return (x * self.scale * feature).sum()


class LargeOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(768, 768)

    def forward(self, x):
        for _ in range(4):
            x = self.layer(x)
        return x.sum()


def main():
    case, steps = sys.argv[1], int(sys.argv[2])
    model = PythonFeature() if case == "python" else LargeOps()
    batch = torch.randn(4) if case == "python" else torch.randn(512, 768)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    for _ in range(steps):
        optimizer.zero_grad()
        model(batch).backward()
        optimizer.step()


if __name__ == "__main__":
    main()
