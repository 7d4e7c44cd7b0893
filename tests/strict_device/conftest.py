import pytest

from tapeflow import backend
from strict_device.strict_array import MODULE, StrictArray


@pytest.fixture
def strict_gpu():
    """The strict stand-in as this test's "GPU" (it already is under ``pytest --device strict``)."""
    previous = backend.use_gpu_module(MODULE, StrictArray)
    yield
    backend.use_gpu_module(*previous)
