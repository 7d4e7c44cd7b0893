import os
import pathlib

import matplotlib

matplotlib.use("Agg")

# The California housing cache file lives in ../shared (no network on these machines).
_DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scikit_learn_data"
if _DATA.is_dir():
    os.environ.setdefault("SCIKIT_LEARN_DATA", str(_DATA))
if os.environ.get("SCIKIT_LEARN_DATA"):  # absolute, for commands run from other directories
    os.environ["SCIKIT_LEARN_DATA"] = os.path.abspath(os.environ["SCIKIT_LEARN_DATA"])

# CI runs the property-based tests on a fixed sequence of examples, so a submission's result
# does not depend on the draw; on a developer's machine they explore new examples each run.
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption("--device", choices=["cpu", "strict"], default="cpu",
                     help="run every test on this device: 'strict' is a CPU stand-in for a GPU "
                          "(tests/strict_device) whose arrays refuse implicit host conversion")


def pytest_configure(config):
    if config.getoption("--device") == "strict":
        from tapeflow import backend
        from strict_device.strict_array import MODULE, StrictArray
        backend.use_gpu_module(MODULE, StrictArray)


@pytest.fixture(autouse=True)
def _fresh_context(request):
    """Every test starts with a fresh context: layer names, random state, no tapes (Keras's
    clear_session), and runs on the device ``--device`` names."""
    import tapeflow as tf
    tf.keras.backend.clear_session()
    if request.config.getoption("--device") == "strict":
        with tf.device("/GPU:0"):
            yield
    else:
        yield
