"""Loaded at interpreter start by every Python process that `stepscope record` runs
(record puts this directory first on PYTHONPATH). It arms stepscope's hooks, which wait
for `import torch`, then runs the sitecustomize this one shadows, if there is one."""


def _arm():
    import os
    if not os.environ.get("STEPSCOPE_CHANNEL"):
        return
    try:
        from stepscope import _flight, _torch_hooks
        _flight.enable_flight_recorder()
        _flight.note_exit_of_ranks()
        _torch_hooks.install_when_imported()
    except Exception as error:  # noqa: BLE001 - never stop the program from starting
        import sys
        sys.stderr.write("stepscope: hooks not installed: %s: %s\n" % (type(error).__name__, error))


def _chain():
    """Imports the next `sitecustomize` on sys.path (Debian's, a virtualenv's)."""
    import importlib
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = list(sys.path)
    ours = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        importlib.import_module("sitecustomize")
    except ImportError as error:
        if error.name != "sitecustomize":
            import traceback
            traceback.print_exc()
        if ours is not None:
            sys.modules["sitecustomize"] = ours
    except Exception:  # noqa: BLE001 - report it as Python itself would, and go on
        import traceback
        traceback.print_exc()
    finally:
        sys.path[:] = saved_path


_arm()
_chain()
