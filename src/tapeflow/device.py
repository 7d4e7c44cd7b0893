"""Device selection, as TensorFlow's: ``with tf.device("/GPU:0"):`` and ``tf.config.list_physical_devices``.

The current device is part of the thread's context (``Context.device`` and its array module
``Context.xp``); tensors made from nothing (zeros, initial weights, random draws) are born
on it, and every op follows its inputs' arrays (``tapeflow.backend``).  A GPU is CuPy's;
asking for one where CuPy or a device is missing is one error saying which.
"""
import collections
import re

import numpy as np

from . import backend
from .core import context as context_module
from .core.context import PER_THREAD

__all__ = ["device", "PhysicalDevice", "list_physical_devices", "parse_device", "GPUUnavailableError",
           "set_default_device", "get_default_device"]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])

# "/GPU:0", "GPU:0", "gpu", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:GPU:0"
_DEVICE = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?"
                     r"(?P<kind>cpu|gpu)(?::(?P<index>\d+))?$", re.IGNORECASE)


class GPUUnavailableError(RuntimeError):
    """A GPU was asked for where CuPy or a GPU is missing (the message says which)."""


def parse_device(name):
    """("CPU" or "GPU", index) of a device name; a ValueError naming the name when it is not one."""
    if not isinstance(name, str):
        raise TypeError(f"a device name must be a string such as '/GPU:0', not {type(name).__name__}")
    match = _DEVICE.match(name.strip())
    if match is None:
        raise ValueError(f"unknown device {name!r}; use '/CPU:0' or '/GPU:0'")
    return match["kind"].upper(), int(match["index"] or 0)


def _resolve(name):
    """(canonical name, array module) of a device name, checking that the device exists."""
    kind, index = parse_device(name)
    if kind == "CPU":
        if index != 0:
            raise ValueError(f"device {name!r}: this machine has one CPU device, '/CPU:0'")
        return "CPU:0", np
    missing = backend.gpu_missing()
    if missing is not None:
        raise GPUUnavailableError(f"device gpu: {missing}")
    if index >= backend.gpu_count():
        raise ValueError(f"device {name!r}: only {backend.gpu_count()} GPU(s) are visible")
    return f"GPU:{index}", backend.gpu_module()


class device:  # noqa: N801 - TensorFlow's name, used as a statement
    """``with tf.device("/GPU:0"):`` makes tensors created in the block on that device."""

    def __init__(self, device_name):
        self._name, self._xp = _resolve(device_name)

    def __enter__(self):
        ctx = PER_THREAD.context
        self._saved = (ctx.device, ctx.xp)
        ctx.device, ctx.xp = self._name, self._xp
        return self

    def __exit__(self, *exc):
        ctx = PER_THREAD.context
        ctx.device, ctx.xp = self._saved
        return False


def list_physical_devices(device_type=None):
    """The devices of ``device_type`` ("CPU" or "GPU"; None for all) this machine has."""
    kinds = ("CPU", "GPU") if device_type is None else (str(device_type).upper(),)
    for kind in kinds:
        if kind not in ("CPU", "GPU"):
            raise ValueError(f"unknown device type {device_type!r}; use 'CPU' or 'GPU'")
    found = []
    if "CPU" in kinds:
        found.append(PhysicalDevice("/physical_device:CPU:0", "CPU"))
    if "GPU" in kinds and backend.gpu_missing() is None:
        found += [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(backend.gpu_count())]
    return found


def set_default_device(device_name):
    """Make ``device_name`` the device of code outside any ``tf.device`` block, in this thread
    and in threads started later: one line at the top of a program picks its GPU."""
    name, xp = _resolve(device_name)
    context_module.DEFAULT_DEVICE = (name, xp)
    ctx = PER_THREAD.context
    ctx.device, ctx.xp = name, xp


def get_default_device():
    """The device ``set_default_device`` chose ("CPU:0" unless it was called)."""
    return context_module.DEFAULT_DEVICE[0]
