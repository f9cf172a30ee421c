"""Automatic step anatomy for PyTorch programs, installed when `torch` is imported.

What each hook measures (docs/steps.md has the whole story):
  optimizer   global optimizer step pre/post hooks (2.x), or each optimizer's step
              wrapped at construction (1.13): the optimizer span, and the step's end;
              GradScaler.step, which skips optimizer.step after an overflow, says so
              then
  data wait   DataLoader iterators' __next__: the wait, the batch size and tokens
  forward     the outermost module calls (_ForwardSpans); with the data waits, the
              recorder holds them until a backward or optimizer step says they trained,
              else they are evaluation (src/collectors/hooks/step_assembly.hpp)
  backward    torch.autograd.backward (which Tensor.backward calls)
  worker      in DataLoader workers, the dataset fetch of each batch
  memory      at a step's end, at most once per 100 ms (_steps.py): peak RSS, and CUDA's
              allocator peak when CUDA is in use
  gc          gc.callbacks: each collection of Python's cyclic garbage collector
  profiler    torch.profiler asking for CUDA activity: stepscope's GPU collector
              hands CUPTI over to it first (_cupti.py)
  distributed init_process_group: from then on the process answers `stepscope dump`
              with torch's Flight Recorder state (_flight.py)

The hooks at the places of a step (optimizer, data wait, forward, backward) only read
the clock and append a record to the channel's list; the recorder makes steps of them
(_steps.py). Every hook is a Hook: its first exception turns it off with one
warning. The code that runs at every step catches that exception itself (Hook.disable)
rather than going through Hook.run: each Python call costs a microsecond or two inside a
training step, where the caches hold the model, not the hooks (bench/README.md, "The
step hooks").
"""

import functools
import gc
import importlib
import importlib.abc
import random
import sys
import threading

from . import _channel, _cupti, _flight, _steps, _threads
from ._hook import Hook

_now = _channel.now_ns
# The places' record types, as globals of this module (one lookup at each place).
_FETCHED, _FORWARD, _BACKWARD, _OPTIMIZER = (_steps.FETCHED, _steps.FORWARD, _steps.BACKWARD,
                                             _steps.OPTIMIZER)
_thread_local = _threads.local
_thread_state = _threads.current

optimizer_hook = Hook("optimizer")
data_hook = Hook("dataloader")
forward_hook = Hook("forward")
backward_hook = Hook("backward")
worker_hook = Hook("worker_batch")
memory_hook = Hook("cuda_memory")
gc_hook = Hook("gc")
profiler_hook = Hook("profiler")
distributed_hook = Hook("distributed")

# Per thread (_threads.ThreadState): nesting of module forwards, backward calls and
# optimizer steps, so only the outermost call of each makes a span (a model's
# submodules, Tensor.backward calling autograd.backward, an LR scheduler wrapping step).

# --------------------------------------------------------------------------- steps

def _tick(tracker, hook):
    """The tracker's tick, when a place finds it due; a failure turns that place's hook
    off."""
    try:
        tracker.tick()
    except Exception as error:  # noqa: BLE001 - any failure turns the hook off
        hook.disable(error)


def _optimizer_step_hooks(tracker):
    """The (pre, post) hooks of every optimizer step: torch's global hooks (2.x), or the
    1.13 wrapper's calls. The outermost step's pre hook notes its start; its post hook
    appends the step's record (the recorder ends the step when the round of optimizers is
    complete) and reads the memory peaks when due."""
    append = tracker.records.append

    def pre_step(optimizer, args, kwargs):
        if optimizer_hook.on:
            state = getattr(_thread_local, "state", None) or _thread_state()
            if not state.opt:
                state.opt_start = _now()
            state.opt += 1

    def post_step(optimizer, args, kwargs):
        if not optimizer_hook.on:
            return
        state = getattr(_thread_local, "state", None) or _thread_state()
        if state.opt != 1:  # nested, or its pre hook ran before the hooks were in
            state.opt = max(state.opt - 1, 0)
            return
        state.opt = 0
        # A forward that raised never ran its post hook: start every step clean.
        state.fwd = 0
        end = _now()
        tracker.step_ends += 1
        append((_OPTIMIZER, state.tid, state.opt_start, end, id(optimizer), 0, 0, 0))
        if end >= tracker.peaks_due_ns or end >= tracker.due_ns:
            try:
                tracker.step_ended_here(state.tid, end)
            except Exception as error:  # noqa: BLE001 - any failure turns the hook off
                optimizer_hook.disable(error)

    return pre_step, post_step


def _install_optimizer_hooks(torch):
    opt_module = importlib.import_module("torch.optim.optimizer")
    pre_step, post_step = _optimizer_step_hooks(_steps.tracker())
    if not hasattr(opt_module, "register_optimizer_step_pre_hook"):
        return _install_legacy_optimizer_hooks(torch.optim.Optimizer, pre_step, post_step)
    handles = (opt_module.register_optimizer_step_pre_hook(pre_step),
               opt_module.register_optimizer_step_post_hook(post_step))
    return lambda: [handle.remove() for handle in handles]


def _install_legacy_optimizer_hooks(optimizer_class, pre_step, post_step):
    """1.13 has no global optimizer hooks: wrap each optimizer's step when it is built."""
    original_init = optimizer_class.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        optimizer_hook.run(_wrap_instance_step, self, pre_step, post_step)

    return _replace(optimizer_class, "__init__", __init__)


def _wrap_instance_step(optimizer, pre_step, post_step):
    step = optimizer.step  # bound; an instance attribute shadows the class's method

    def wrapped_step(*args, **kwargs):
        pre_step(optimizer, args, kwargs)
        try:
            return step(*args, **kwargs)
        finally:
            post_step(optimizer, args, kwargs)

    optimizer.step = wrapped_step


def _install_grad_scaler_hooks(torch):
    """A mixed-precision step whose gradients overflowed is still a step: GradScaler.step
    skips optimizer.step then, so the step ends when GradScaler.step returns."""
    amp = getattr(torch, "amp", None)
    scaler_class = getattr(amp, "GradScaler", None) or torch.cuda.amp.GradScaler  # 1.13: cuda only
    original_step = scaler_class.step

    def step(self, optimizer, *args, **kwargs):
        tracker = _steps.tracker()
        steps_before = tracker.step_ends
        result = original_step(self, optimizer, *args, **kwargs)
        if optimizer_hook.on and tracker.step_ends == steps_before:
            optimizer_hook.run(_skipped_step, tracker, optimizer)
        return result

    return _replace(scaler_class, "step", step)


def _skipped_step(tracker, optimizer):
    ts = _now()
    tracker.step_ends += 1
    tracker.channel.post((_steps.SKIPPED, _thread_state().tid, ts, ts, id(optimizer), 0, 0, 0))


# ------------------------------------------------------------------------ data wait

_DESCENTS = (1, 2, 3, 4)  # levels of nesting searched for the first tensor


def _batch_size(batch, torch):
    """(samples, tokens) of a batch: the first tensor's first dimension, and for an
    integer [batch, seq] tensor its element count; -1 when unknown."""
    tensor_class = torch.Tensor
    for _ in _DESCENTS:  # descend into (inputs, targets), {"input_ids": ...}, [x, ...]
        if isinstance(batch, tensor_class):
            break
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return -1, -1
    if not isinstance(batch, tensor_class):
        return -1, -1
    shape = batch.shape
    if not shape:
        return -1, -1
    if len(shape) != 2:
        return int(shape[0]), -1
    dtype = batch.dtype
    integer = not (dtype.is_floating_point or dtype.is_complex) and dtype != torch.bool
    return int(shape[0]), int(shape[0] * shape[1]) if integer else -1


def _install_dataloader_hooks(torch):
    iterator_class = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
    original_next = iterator_class.__next__
    tracker = _steps.tracker()
    append = tracker.records.append

    def __next__(self):
        if not data_hook.on:
            return original_next(self)
        start = _now()
        batch = original_next(self)  # StopIteration and errors pass through untouched
        end = _now()
        try:
            samples, tokens = _batch_size(batch, torch)
            state = getattr(_thread_local, "state", None) or _thread_state()
        except Exception as error:  # noqa: BLE001 - any failure turns the hook off
            data_hook.disable(error)
            return batch
        append((_FETCHED, state.tid, start, end, samples, tokens, 0, 0))
        if end >= tracker.due_ns:
            _tick(tracker, data_hook)
        return batch

    return _replace(iterator_class, "__next__", __next__)


_MAX_LOADER_SETTINGS = 2  # a training and an evaluation loader: under clean_name's 256 characters


def _loader_settings(loader):
    return ",".join("%s=%s" % (name, getattr(loader, name, "?")) for name in (
        "batch_size", "num_workers", "pin_memory", "prefetch_factor", "persistent_workers"))


def _install_dataloader_settings_hooks(torch):
    """Sends the settings of each DataLoader iterated (fact `dataloader`: the distinct
    ones, first seen first, `; ` between them), for `stepscope mlflow`'s parameters."""
    iterator_class = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
    original_init = iterator_class.__init__
    seen = []

    def note(loader):
        settings = _loader_settings(loader)
        if settings in seen or len(seen) >= _MAX_LOADER_SETTINGS:
            return
        seen.append(settings)
        tracker = _steps.tracker()
        if tracker is not None:
            tracker.channel.send("P dataloader %s" % _channel.clean_name("; ".join(seen)))

    def __init__(self, loader, *args, **kwargs):
        original_init(self, loader, *args, **kwargs)
        if data_hook.on:
            data_hook.run(note, loader)

    return _replace(iterator_class, "__init__", __init__)


# -------------------------------------------------------------- DataLoader workers

def _install_worker_hooks(torch):
    fetch_module = importlib.import_module("torch.utils.data._utils.fetch")
    get_worker_info = importlib.import_module("torch.utils.data").get_worker_info
    undos = []
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        fetcher_class = getattr(fetch_module, name, None)
        if fetcher_class is not None:
            undos.append(_replace(fetcher_class, "fetch",
                                  _timed_fetch(fetcher_class.fetch, get_worker_info, torch)))
    return lambda: [undo() for undo in undos]


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
        channel.post((_channel.WORKER_BATCH, _thread_state().tid, start, _now(), samples, 0, 0, 0), flush=True)


# ------------------------------------------------------------------ forward/backward

class _ForwardSpans:
    """The forward span: the outermost module call on a thread.

    Global module hooks make every call of every module take the slow path of
    Module._call_impl: on a model of 182 small modules the hooks cost 0.83 ms a step
    that way, 0.10 ms without (bench/README.md). Only the outermost call is wanted,
    so the global hooks serve only to find the classes of the modules called
    outermost, the roots. Each root class's __call__ is then wrapped (on the class,
    so nothing is added to the modules, which pickle, copy and script as before), and
    the global hooks come off at the end of the first step that found no new root. They come back for a step
    every 50 to 150 steps, at random so that no periodic pattern hides a module from
    them: a module first called outermost later (an EMA copy, a second network) is
    counted from that step on. A class that cannot be wrapped keeps the global hooks on,
    and so does, on torch 1.13 (whose post hooks do not run when a forward raises), a
    forward that raised.

    Inside a region torch.compile traces, the hooks and wrappers do nothing: Dynamo
    would trace them too (a lock, a clock, a socket), and break the graph there.
    """

    def __init__(self, module_module, compiling):
        self._module_module = module_module
        self._compiling = compiling     # torch.compiler.is_compiling, or never
        self._global_handles = None     # the global hooks' handles while they are on
        self._wrapped = {}              # root class -> its own __call__ before, or None
        self._found = set()             # classes found outermost since the last step end
        self._pinned = False            # a root class refused its wrapper: stay global
        self._in_flight = 0             # calls the global hooks entered and not yet left
        self._lock = threading.Lock()   # no class is wrapped, and no hook removed, mid-call
        self._random = random.Random()  # not the program's random state
        self._steps_to_discovery = 0

    def install(self):
        self._discover()
        _steps.tracker().steps_ended = (self.steps_ended, forward_hook)
        return self.uninstall

    def uninstall(self):
        _steps.tracker().steps_ended = None
        self._stop_discovering()
        for cls, own_call in self._wrapped.items():
            if own_call is None:
                del cls.__call__
            else:
                cls.__call__ = own_call
        self._wrapped.clear()

    # Discovery: global hooks that note the classes of outermost calls.

    def _discover(self):
        # Discovery ends at the end of the first step that found no new root: the
        # tracker ticks at every place meanwhile, so each step's end is heard at once.
        _steps.tracker().set_eager(True)
        m = self._module_module
        pre = m.register_module_forward_pre_hook(self._on_global_pre)
        try:  # 2.x: the post hook runs even when forward raises, keeping the depth right
            post = m.register_module_forward_hook(self._on_global_post, always_call=True)
        except TypeError:
            post = m.register_module_forward_hook(self._on_global_post)
        self._global_handles = (pre, post)

    def _stop_discovering(self):
        for handle in self._global_handles or ():
            handle.remove()
        self._global_handles = None
        _steps.tracker().set_eager(False)

    def _on_global_pre(self, module, args):
        if forward_hook.on and not self._compiling():
            forward_hook.run(self._global_enter, module)

    def _on_global_post(self, module, args, output):
        if forward_hook.on and not self._compiling():
            forward_hook.run(self._global_leave, module)

    # A wrapped class's calls are the wrapper's to count. No class is wrapped while a
    # call the global hooks entered is in flight, so its post hook sees what its pre
    # hook saw.
    def _global_enter(self, module):
        with self._lock:
            if _is_wrapped(type(module)):
                return
            self._in_flight += 1
        if _forward_enter():
            self._found.add(type(module))

    def _global_leave(self, module):
        with self._lock:
            if _is_wrapped(type(module)):
                return
            self._in_flight -= 1
        _forward_leave()

    def steps_ended(self, count, at_step_end):
        """After steps ended (`count` of them; one at a time while discovering), told at a
        tick, which may be at a step's end or at any place after it: wraps the roots
        found, or ends or starts discovery."""
        if self._global_handles is None:
            # Not discovering, so no call is in flight and no root was found: no lock,
            # only a count down to the next discovery.
            self._steps_to_discovery -= count
            if self._steps_to_discovery > 0:
                return
            if at_step_end:  # discovery sees the whole of the next step
                with self._lock:
                    self._discover()
            else:  # mid-step: start at the next step's end, which the tracker then ticks at
                _steps.tracker().set_eager(True)
            return
        with self._lock:
            if self._in_flight > 0:  # a forward on another thread: wait for the next step
                return
            found, self._found = self._found, set()
            if found:
                for cls in found:
                    self._wrap(cls)
            elif not self._pinned:
                self._stop_discovering()
                self._steps_to_discovery = self._random.randint(50, 150)

    def _wrap(self, cls):
        if cls in self._wrapped or _is_wrapped(cls):
            return
        if cls is self._module_module.Module:  # wrapping it would wrap every module
            self._pinned = True
            return
        own_call = cls.__dict__.get("__call__")
        try:
            cls.__call__ = _root_call(cls.__call__, self._compiling, _steps.tracker())
        except (TypeError, AttributeError):
            self._pinned = True
            return
        self._wrapped[cls] = own_call


def _is_wrapped(cls):
    return getattr(cls.__call__, "_stepscope_root", False)


def _root_call(call, compiling, tracker):
    """A root class's __call__: the outermost call on a thread makes the forward span."""

    append = tracker.records.append

    def __call__(module, *args, **kwargs):
        if not forward_hook.on or compiling():  # first: Dynamo must not trace the rest
            return call(module, *args, **kwargs)
        state = getattr(_thread_local, "state", None) or _thread_state()
        if state.fwd or state.bwd:
            return call(module, *args, **kwargs)
        state.fwd = 1
        start = _now()
        try:
            return call(module, *args, **kwargs)
        finally:
            state.fwd = 0
            end = _now()
            append((_FORWARD, state.tid, start, end, 0, 0, 0, 0))
            if end >= tracker.due_ns:
                _tick(tracker, forward_hook)

    __call__._stepscope_root = True
    __call__.__wrapped__ = call
    return __call__


def _forward_enter():
    """One more module call on this thread (the global hooks'); True when it is the
    outermost that counts."""
    state = _thread_state()
    depth = state.fwd
    state.fwd = depth + 1
    # Forwards re-run inside backward (activation checkpointing) belong to backward.
    if depth == 0 and not state.bwd:
        state.fwd_start = _now()
        return True
    return False


def _forward_leave():
    state = _thread_state()
    depth = state.fwd - 1
    state.fwd = max(depth, 0)
    if depth == 0 and not state.bwd:
        tracker = _steps.tracker()
        end = _now()
        tracker.records.append((_FORWARD, state.tid, state.fwd_start, end, 0, 0, 0, 0))
        if end >= tracker.due_ns:
            tracker.tick()


def _install_forward_hooks(torch):
    compiler = getattr(torch, "compiler", None)
    compiling = getattr(compiler, "is_compiling", None) or (lambda: False)  # 2.3+; 1.13 has no Dynamo
    return _ForwardSpans(importlib.import_module("torch.nn.modules.module"), compiling).install()


def _install_backward_hooks(torch):
    autograd = importlib.import_module("torch.autograd")
    original_backward = autograd.backward
    tracker = _steps.tracker()
    append = tracker.records.append

    def backward(*args, **kwargs):
        if not backward_hook.on:
            return original_backward(*args, **kwargs)
        state = getattr(_thread_local, "state", None) or _thread_state()
        if state.bwd:  # Tensor.backward calling autograd.backward, or one inside another
            return original_backward(*args, **kwargs)
        state.bwd = 1
        start = _now()
        try:
            return original_backward(*args, **kwargs)
        finally:
            state.bwd = 0
            end = _now()
            append((_BACKWARD, state.tid, start, end, 0, 0, 0, 0))
            if end >= tracker.due_ns:
                _tick(tracker, backward_hook)

    backward.__wrapped__ = original_backward
    backward.__doc__ = original_backward.__doc__
    return _replace(autograd, "backward", backward)


# -------------------------------------------------------------------------- memory

def _install_memory_hooks(torch):
    cuda = torch.cuda

    def device_peak():
        return memory_hook.run(_cuda_peak, cuda) or -1

    memory = _steps.tracker().memory
    memory.device_peak = device_peak
    return lambda: setattr(memory, "device_peak", None)


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
    return lambda: gc.callbacks.remove(_on_gc)


def _on_gc(phase, info):
    if not gc_hook.on:
        return
    if phase == "start":
        _gc_start[0] = _now()
        return
    try:
        start, _gc_start[0] = _gc_start[0], 0
        channel = _channel.get()
        if start and channel is not None:
            state = getattr(_thread_local, "state", None) or _thread_state()
            channel.post((_channel.GC_PAUSE, state.tid, start, _now(), info.get("generation", -1), 0, 0, 0))
    except Exception as error:  # noqa: BLE001 - any failure turns the hook off
        gc_hook.disable(error)


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
    return _replace(module, "_prepare_profiler", prepare_profiler)


def _install_distributed_hooks(torch):
    distributed = torch.distributed
    if not distributed.is_available():
        return None
    original_init = distributed.init_process_group

    @functools.wraps(original_init)
    def init_process_group(*args, **kwargs):
        result = original_init(*args, **kwargs)
        distributed_hook.run(_flight.serve)
        return result

    return _replace(distributed, "init_process_group", init_process_group)


# ------------------------------------------------------------------------- install

_INSTALLERS = (
    (optimizer_hook, _install_optimizer_hooks),
    (optimizer_hook, _install_grad_scaler_hooks),
    (data_hook, _install_dataloader_hooks),
    (data_hook, _install_dataloader_settings_hooks),
    (worker_hook, _install_worker_hooks),
    (forward_hook, _install_forward_hooks),
    (backward_hook, _install_backward_hooks),
    (memory_hook, _install_memory_hooks),
    (gc_hook, _install_gc_hooks),
    (profiler_hook, _install_profiler_hooks),
    (distributed_hook, _install_distributed_hooks),
)


def _replace(owner, name, replacement):
    """Sets owner.name to replacement; returns what puts the original back."""
    own = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, replacement)
    return lambda: delattr(owner, name) if own is _MISSING else setattr(owner, name, own)


_MISSING = object()

# What puts torch back as it was, one function per installed hook, newest last.
_installed = []


def install(torch):
    tracker = _steps.tracker()
    if tracker is None or _installed:
        return
    tracker.channel.send("P torch %s" % _channel.clean_name(getattr(torch, "__version__", "?")).replace(" ", "_"))
    for hook, installer in _INSTALLERS:
        undo = hook.run(installer, torch)
        if undo is not None:
            _installed.append(undo)


def uninstall():
    """Puts torch back as it was before install(); the hooks' benchmark (bench/) takes
    them out and puts them back between blocks of steps."""
    while _installed:
        _installed.pop()()


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
