"""Automatic step anatomy for PyTorch programs, installed when `torch` is imported.

What each hook measures (docs/steps.md has the whole story):
  optimizer   global optimizer step pre/post hooks (2.x), or each optimizer's step
              wrapped at construction (1.13): the optimizer span, and the step's end
  data wait   DataLoader iterators' __next__: the wait, the batch size and tokens
  forward     global module forward pre/post hooks, outermost module calls only
  backward    torch.autograd.backward (which Tensor.backward calls)
  worker      in DataLoader workers, the dataset fetch of each batch
  memory      per step: peak RSS, and CUDA's allocator peak when CUDA is in use
  gc          gc.callbacks: each collection of Python's cyclic garbage collector
  profiler    torch.profiler asking for CUDA activity: stepscope's GPU collector
              hands CUPTI over to it first (_cupti.py)

Every hook is a Hook: its first exception turns it off with one warning.
"""

import gc
import importlib
import importlib.abc
import sys
import threading

from . import _channel, _cupti, _steps
from ._hook import Hook

_get_tid = threading.get_native_id
_now = _channel.now_ns

optimizer_hook = Hook("optimizer")
data_hook = Hook("dataloader")
forward_hook = Hook("forward")
backward_hook = Hook("backward")
worker_hook = Hook("worker_batch")
memory_hook = Hook("cuda_memory")
gc_hook = Hook("gc")
profiler_hook = Hook("profiler")

# Per thread: nesting of module forwards, backward calls and optimizer steps, so only
# the outermost call of each makes a span (a model's submodules, Tensor.backward
# calling autograd.backward, an LR scheduler wrapping step).
_depth = threading.local()


def _nesting(name):
    return getattr(_depth, name, 0)


def _enter(name):
    """One more nested call of `name` on this thread; the outermost notes its start."""
    depth = _nesting(name) + 1
    setattr(_depth, name, depth)
    if depth == 1:
        setattr(_depth, name + "_start", _now())


def _leave(name):
    """One nested call of `name` less: the outermost call's start once it ends, else None."""
    depth = max(0, _nesting(name) - 1)
    setattr(_depth, name, depth)
    return None if depth else getattr(_depth, name + "_start", None)


# --------------------------------------------------------------------------- steps

def _optimizer_start():
    _enter("opt")


def _optimizer_end():
    start = _leave("opt")
    if start is None:
        return
    end = _now()
    tracker = _steps.tracker()
    tracker.channel.send("O %d %d %d" % (_get_tid(), start, end))
    if not tracker.explicit:
        tracker.end(end)
    # A forward that raised never ran its post hook: start every step clean.
    _depth.fwd = 0


def _pre_step(optimizer, args, kwargs):
    optimizer_hook.run(_optimizer_start)


def _post_step(optimizer, args, kwargs):
    optimizer_hook.run(_optimizer_end)


def _install_optimizer_hooks(torch):
    opt_module = importlib.import_module("torch.optim.optimizer")
    if hasattr(opt_module, "register_optimizer_step_pre_hook"):
        opt_module.register_optimizer_step_pre_hook(_pre_step)
        opt_module.register_optimizer_step_post_hook(_post_step)
    else:
        _install_legacy_optimizer_hooks(torch.optim.Optimizer)


def _install_legacy_optimizer_hooks(optimizer_class):
    """1.13 has no global optimizer hooks: wrap each optimizer's step when it is built."""
    original_init = optimizer_class.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        optimizer_hook.run(_wrap_instance_step, self)

    optimizer_class.__init__ = __init__


def _wrap_instance_step(optimizer):
    step = optimizer.step  # bound; an instance attribute shadows the class's method

    def wrapped_step(*args, **kwargs):
        optimizer_hook.run(_optimizer_start)
        try:
            return step(*args, **kwargs)
        finally:
            optimizer_hook.run(_optimizer_end)

    optimizer.step = wrapped_step


# ------------------------------------------------------------------------ data wait

def _batch_size(batch, torch):
    """(samples, tokens) of a batch: the first tensor's first dimension, and for an
    integer [batch, seq] tensor its element count; -1 when unknown."""
    for _ in range(4):  # descend into (inputs, targets), {"input_ids": ...}, [x, ...]
        if isinstance(batch, torch.Tensor):
            break
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return -1, -1
    if not isinstance(batch, torch.Tensor) or batch.dim() == 0:
        return -1, -1
    shape = batch.shape
    integer = not batch.dtype.is_floating_point and not batch.dtype.is_complex and batch.dtype != torch.bool
    tokens = shape[0] * shape[1] if integer and len(shape) == 2 else -1
    return int(shape[0]), int(tokens)


def _record_batch(torch, start, batch):
    end = _now()
    samples, tokens = _batch_size(batch, torch)
    tracker = _steps.tracker()
    tracker.activity(start)
    tracker.batch(samples, tokens)
    tracker.channel.send("D %d %d %d %d %d" % (_get_tid(), start, end, samples, tokens))


def _install_dataloader_hooks(torch):
    iterator_class = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
    original_next = iterator_class.__next__

    def __next__(self):
        if not data_hook.on:
            return original_next(self)
        start = _now()
        batch = original_next(self)  # StopIteration and errors pass through untouched
        data_hook.run(_record_batch, torch, start, batch)
        return batch

    iterator_class.__next__ = __next__


# -------------------------------------------------------------- DataLoader workers

def _install_worker_hooks(torch):
    fetch_module = importlib.import_module("torch.utils.data._utils.fetch")
    get_worker_info = importlib.import_module("torch.utils.data").get_worker_info
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        fetcher_class = getattr(fetch_module, name, None)
        if fetcher_class is not None:
            fetcher_class.fetch = _timed_fetch(fetcher_class.fetch, get_worker_info, torch)


def _timed_fetch(original_fetch, get_worker_info, torch):
    def fetch(self, possibly_batched_index):
        # In the main process (no workers) the fetch is already inside a data wait.
        if not worker_hook.on or get_worker_info() is None:
            return original_fetch(self, possibly_batched_index)
        start = _now()
        batch = original_fetch(self, possibly_batched_index)
        worker_hook.run(_send_worker_batch, torch, start, batch)
        return batch

    return fetch


def _send_worker_batch(torch, start, batch):
    samples, _ = _batch_size(batch, torch)
    channel = _channel.get()
    if channel is not None:
        # Flushed at once: workers leave through os._exit, which skips atexit.
        channel.send("W %d %d %d %d" % (_get_tid(), start, _now(), samples), flush=True)


# ------------------------------------------------------------------ forward/backward

def _forward_pre(module, args):
    depth = _nesting("fwd")
    _depth.fwd = depth + 1
    # Forwards re-run inside backward (activation checkpointing) belong to backward.
    if depth == 0 and not _nesting("bwd"):
        _depth.fwd_start = start = _now()
        _steps.tracker().activity(start)


def _forward_post(module, args, output):
    depth = _nesting("fwd") - 1
    _depth.fwd = max(depth, 0)
    if depth == 0 and not _nesting("bwd"):
        _steps.tracker().channel.send("F %d %d %d" % (_get_tid(), _depth.fwd_start, _now()))


def _on_forward_pre(module, args):
    if forward_hook.on:
        forward_hook.run(_forward_pre, module, args)


def _on_forward(module, args, output):
    if forward_hook.on:
        forward_hook.run(_forward_post, module, args, output)


def _install_forward_hooks(torch):
    module_module = importlib.import_module("torch.nn.modules.module")
    module_module.register_module_forward_pre_hook(_on_forward_pre)
    try:  # 2.x: the post hook runs even when forward raises, keeping the depth right
        module_module.register_module_forward_hook(_on_forward, always_call=True)
    except TypeError:
        module_module.register_module_forward_hook(_on_forward)


def _backward_start():
    _enter("bwd")


def _backward_end():
    start = _leave("bwd")
    if start is not None:
        _steps.tracker().channel.send("B %d %d %d" % (_get_tid(), start, _now()))


def _install_backward_hooks(torch):
    autograd = importlib.import_module("torch.autograd")
    original_backward = autograd.backward

    def backward(*args, **kwargs):
        if not backward_hook.on:
            return original_backward(*args, **kwargs)
        backward_hook.run(_backward_start)
        try:
            return original_backward(*args, **kwargs)
        finally:
            backward_hook.run(_backward_end)

    backward.__wrapped__ = original_backward
    backward.__doc__ = original_backward.__doc__
    autograd.backward = backward


# -------------------------------------------------------------------------- memory

def _install_memory_hooks(torch):
    cuda = torch.cuda

    def device_peak():
        return memory_hook.run(_cuda_peak, cuda) or -1

    _steps.tracker().memory.device_peak = device_peak


def _cuda_peak(cuda):
    # Only when the program itself started CUDA: asking earlier would initialize it.
    if not cuda.is_initialized():
        return -1
    peak = cuda.max_memory_allocated()
    cuda.reset_peak_memory_stats()
    return int(peak)


# ------------------------------------------------------------------------------ gc

# The start of the collection in progress. Collections never nest (the collector
# is not reentrant), and they run with the GIL held, so one slot is enough.
_gc_start = [0]


def _install_gc_hooks(torch):
    gc.callbacks.append(_on_gc)


def _on_gc(phase, info):
    if gc_hook.on:
        gc_hook.run(_note_gc, phase, info)


def _note_gc(phase, info):
    if phase == "start":
        _gc_start[0] = _now()
        return
    start, _gc_start[0] = _gc_start[0], 0
    channel = _channel.get()
    if start and channel is not None:
        channel.send("G %d %d %d %d" % (_get_tid(), start, _now(), info.get("generation", -1)))


# ------------------------------------------------------------------------ profiler

def _install_profiler_hooks(torch):
    # Every torch.profiler entry (profile, _KinetoProfile, autograd's profile,
    # 1.13 and 2.x) prepares Kineto through this module-level function.
    module = importlib.import_module("torch.autograd.profiler")
    original_prepare = module._prepare_profiler

    def prepare_profiler(config, activities, *args, **kwargs):
        undo = None
        if profiler_hook.on and _cupti.wants_device(activities):
            undo = profiler_hook.run(_cupti.hand_over, torch)
        try:
            return original_prepare(config, activities, *args, **kwargs)
        finally:
            if undo is not None:
                undo()

    prepare_profiler.__wrapped__ = original_prepare
    module._prepare_profiler = prepare_profiler


# ------------------------------------------------------------------------- install

_INSTALLERS = (
    (optimizer_hook, _install_optimizer_hooks),
    (data_hook, _install_dataloader_hooks),
    (worker_hook, _install_worker_hooks),
    (forward_hook, _install_forward_hooks),
    (backward_hook, _install_backward_hooks),
    (memory_hook, _install_memory_hooks),
    (gc_hook, _install_gc_hooks),
    (profiler_hook, _install_profiler_hooks),
)


def install(torch):
    tracker = _steps.tracker()
    if tracker is None:
        return
    tracker.channel.send("P torch %s" % _channel.clean_name(getattr(torch, "__version__", "?")).replace(" ", "_"))
    for hook, installer in _INSTALLERS:
        hook.run(installer, torch)


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Waits for `import torch` and installs the hooks once torch has loaded.

    It finds torch's spec through the other finders and wraps that loader's
    exec_module, so torch loads exactly as it would, and the hooks go in after.
    """

    def __init__(self):
        self._busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self._busy:
            return None
        self._busy = True
        try:
            spec = _find_elsewhere(self, name, path, target)
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        if self in sys.meta_path:  # torch loads once; stop watching
            sys.meta_path.remove(self)
        original_exec = spec.loader.exec_module

        def exec_module(module):
            original_exec(module)
            Hook("install").run(install, module)

        spec.loader.exec_module = exec_module
        return spec


def _find_elsewhere(watcher, name, path, target):
    for finder in list(sys.meta_path):
        if finder is watcher or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(name, path, target)
        if spec is not None:
            return spec
    return None


def install_when_imported():
    """Installs the hooks now if torch is loaded, else when it is imported."""
    if _channel.get() is None:
        return
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "optim"):
        Hook("install").run(install, torch)
    else:
        sys.meta_path.insert(0, _TorchWatcher())
