"""``tf.config``: run-time settings of this thread's context."""
from . import config_threading as threading  # noqa: F401 - tf.config.threading
from .device import get_default_device, list_physical_devices, set_default_device  # noqa: F401
from .tracing.function import functions_run_eagerly, run_functions_eagerly  # noqa: F401

__all__ = ["threading", "run_functions_eagerly", "functions_run_eagerly", "list_physical_devices",
           "set_default_device", "get_default_device"]
