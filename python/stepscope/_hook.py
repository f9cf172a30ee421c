"""A hook that can fail: the first exception turns it off with one warning.

Hooks run inside someone else's training loop. Whatever goes wrong in them (an
unexpected batch type, a torch version that changed an internal) must not change the
program's behaviour, so each hook's own code runs through Hook.run, and the wrapped
torch function is always called exactly as it would have been.
"""

import sys


class Hook:
    __slots__ = ("name", "on")

    def __init__(self, name):
        self.name = name
        self.on = True

    def run(self, fn, *args):
        """fn(*args), or None once the hook is off or when fn raises."""
        if not self.on:
            return None
        try:
            return fn(*args)
        except Exception as error:  # noqa: BLE001 - any failure disables the hook
            self.disable(error)
            return None

    def disable(self, error):
        if not self.on:
            return
        self.on = False
        message = "%s: %s" % (type(error).__name__, error)
        try:
            sys.stderr.write("stepscope: hook %s disabled: %s\n" % (self.name, message))
            from . import _channel
            channel = _channel.get()
            if channel is not None:
                channel.send("X %s %s" % (self.name, _channel.clean_name(message)))
        except Exception:  # noqa: BLE001 - a closed stderr must not matter either
            pass
