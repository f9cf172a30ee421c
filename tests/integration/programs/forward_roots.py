"""Forward spans from the classes of outermost module calls (docs/steps.md, "forward").

A model of nested blocks and a loss module run every step; from step LATE on, a
module of a new class (Aux) runs outermost too. Every step sleeps a little so that
the recorder keeps up on a loaded machine. At exit it prints, as JSON, what the hooks
did to torch: which classes are wrapped, whether a pickled or copied model carries
anything of stepscope's, whether the model still scripts, and whether
_torch_hooks.uninstall() gives back torch as it was (the hooks' benchmark relies on it).
"""
import copy
import gc
import importlib
import io
import json
import sys
import time

import torch

nn = torch.nn
STEPS, LATE = 300, 100


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.linear(x))


class Aux(nn.Module):
    def forward(self, x):
        return x * 2


def wrapped(cls):
    return getattr(cls.__call__, "_stepscope_root", False)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(4)])
    loss_fn, aux = nn.MSELoss(), Aux()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        x = torch.randn(4, 8)
        if step >= LATE:
            x = aux(x)
        loss = loss_fn(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.002)

    buffer = io.BytesIO()
    torch.save(model, buffer)
    facts = {
        "wrapped": sorted(c.__name__ for c in (nn.Sequential, nn.MSELoss, Aux, Block, nn.Linear) if wrapped(c)),
        "pickle_mentions_stepscope": b"stepscope" in buffer.getvalue(),
        "copy_runs": bool(copy.deepcopy(model)(torch.randn(1, 8)).shape == (1, 8)),
        "scripts": torch.jit.script(model) is not None,
    }
    from stepscope import _torch_hooks
    if "restore" in sys.argv:
        module_module = importlib.import_module("torch.nn.modules.module")
        optimizer_module = importlib.import_module("torch.optim.optimizer")
        _torch_hooks.uninstall()
        facts["after_uninstall"] = {
            "wrapped": [c.__name__ for c in (nn.Sequential, nn.MSELoss, Aux) if wrapped(c)],
            "global_module_hooks": len(module_module._global_forward_pre_hooks)
            + len(module_module._global_forward_hooks),
            "optimizer_hooks": len(optimizer_module._global_optimizer_pre_hooks)
            + len(optimizer_module._global_optimizer_post_hooks),
            "backward_wrapped": hasattr(torch.autograd.backward, "__wrapped__"),
            "gc_callbacks": sum(getattr(c, "__module__", "").startswith("stepscope") for c in gc.callbacks),
            "next_wrapped": "stepscope" in torch.utils.data.dataloader._BaseDataLoaderIter.__next__.__module__,
            "scaler_wrapped": "stepscope" in torch.amp.GradScaler.step.__module__,
        }
        _torch_hooks.install(torch)  # and back in: the steps go on being recorded
        for _ in range(5):
            loss = loss_fn(model(torch.randn(4, 8)), torch.zeros(4, 8))
            opt.zero_grad()
            loss.backward()
            opt.step()
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
