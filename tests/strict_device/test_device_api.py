"""tf.device and tf.config.list_physical_devices: the current device, and clear errors
where CuPy or a GPU is missing (CuPy's import is monkeypatched: no GPU is needed here)."""
import sys
import threading
import types

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend
from tapeflow.core.context import context
from tapeflow.device import GPUUnavailableError, parse_device


@pytest.fixture
def no_cupy(monkeypatch):
    """A machine without CuPy: its import fails as it would there."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    cupy, error = backend._import_cupy()
    assert cupy is None and isinstance(error, ImportError)
    monkeypatch.setattr(backend, "_cupy", None)
    monkeypatch.setattr(backend, "_cupy_error", error)
    monkeypatch.setattr(backend, "_GPU_XP", None)
    monkeypatch.setattr(backend, "_GPU_TYPE", None)
    monkeypatch.setattr(backend, "_GPU_STAND_IN", False)


@pytest.fixture
def cupy_without_gpu(monkeypatch):
    """CuPy installed on a machine with no GPU."""
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 0)
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime), ndarray=type("fake", (), {}))
    monkeypatch.setattr(backend, "_cupy", fake)
    monkeypatch.setattr(backend, "_GPU_XP", fake)
    monkeypatch.setattr(backend, "_GPU_TYPE", fake.ndarray)
    monkeypatch.setattr(backend, "_GPU_STAND_IN", False)


def test_cpu_is_listed_and_is_the_default():
    assert tf.config.list_physical_devices("CPU") == [("/physical_device:CPU:0", "CPU")]
    assert tf.config.list_physical_devices("CPU")[0].device_type == "CPU"
    seen = []
    thread = threading.Thread(target=lambda: seen.append((context().device, context().xp)))
    thread.start()
    thread.join()
    # a new thread starts on the default device: the CPU, unless set_default_device chose
    # another (the strict test run makes the stand-in the default)
    default = tf.config.get_default_device()
    assert seen == [("CPU:0", np)] if default == "CPU:0" else seen[0][0] == default


def test_clear_session_inside_a_device_block_keeps_the_device():
    with tf.device("/CPU:0"):
        tf.keras.backend.clear_session()
        assert context().device == "CPU:0"


def test_without_cupy_no_gpu_is_listed_and_asking_for_one_says_cupy_is_missing(no_cupy):
    assert tf.config.list_physical_devices("GPU") == []
    assert [d.device_type for d in tf.config.list_physical_devices()] == ["CPU"]
    with pytest.raises(GPUUnavailableError, match="CuPy is not installed.*tapeflow\\[gpu\\]"):
        tf.device("/GPU:0")


def test_with_cupy_but_no_gpu_the_error_says_the_gpu_is_missing(cupy_without_gpu):
    assert tf.config.list_physical_devices("GPU") == []
    with pytest.raises(GPUUnavailableError, match="CuPy is installed but this machine has no GPU"):
        tf.device("GPU:0")


def test_the_messages_are_the_trainers(no_cupy):
    # the CLI's refusal (training/run.py check_device) names the same missing piece
    assert backend.gpu_missing() == ("CuPy is not installed; install it with pip install "
                                     "'tapeflow[gpu]' (needs an NVIDIA GPU and CUDA 12)")


def test_cpu_device_scope_makes_numpy_tensors_and_restores():
    before = context().device
    with tf.device("/CPU:0"):
        assert context().device == "CPU:0"
        assert type(tf.zeros([2])._value) is np.ndarray
        assert type(tf.random.normal([2])._value) is np.ndarray
    assert context().device == before


@pytest.mark.parametrize("name", ["/GPU:0", "GPU:0", "gpu", "/device:GPU:0",
                                  "/job:localhost/replica:0/task:0/device:GPU:0"])
def test_device_names_parse(name):
    assert parse_device(name) == ("GPU", 0)


@pytest.mark.parametrize("name, error", [("/TPU:0", ValueError), ("cuda", ValueError),
                                         (0, TypeError), ("/CPU:1", ValueError)])
def test_bad_device_names_are_one_clear_error(name, error):
    with pytest.raises(error, match="device"):
        tf.device(name)


def test_unknown_device_type_is_refused():
    with pytest.raises(ValueError, match="device type"):
        tf.config.list_physical_devices("TPU")


def test_the_cpu_install_pulls_no_cuda_package_and_the_gpu_extra_adds_cupy():
    import pathlib
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text())
    project = project["project"]
    cuda = ("cupy", "cuda", "nvidia", "torch", "jax")
    assert not [d for d in project["dependencies"] if d.lower().startswith(cuda)]
    assert any(d.startswith("cupy-cuda") for d in project["optional-dependencies"]["gpu"])
