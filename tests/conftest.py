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
    config.addinivalue_line("markers", "child_process: the test runs tapeflow in child processes "
                            "(the CLI, an example, mpiexec), which the strict device does not reach")
    if config.getoption("--device") == "strict":
        os.environ["TAPEFLOW_TESTS_ON_STRICT_DEVICE"] = "1"  # tests/ops/test_gradients.py reads it
        from tapeflow import backend
        from strict_device.strict_array import MODULE, StrictArray
        backend.use_gpu_module(MODULE, StrictArray)
        # tensors made while modules are collected (a test file's constants) are born there too
        import tapeflow as tf
        tf.config.set_default_device("/GPU:0")


def pytest_collection_modifyitems(config, items):
    """Under ``--device strict``, skip tests whose tapeflow runs in child processes: those run on
    numpy whatever this process's device is, so the numpy run already covers them."""
    if config.getoption("--device") != "strict":
        return
    skip = pytest.mark.skip(reason="tapeflow runs in a child process, on numpy: the strict "
                                   "device does not reach it (covered by the numpy run)")
    for item in items:
        if item.get_closest_marker("child_process"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def scratch_registry(monkeypatch):
    """Ops and gradient rules a test registers vanish after it. The registry is global and the
    completeness checks (tests/ops/test_registry_coverage.py) read it, so a test's scratch op
    failed them when it happened to run first (every tapeflow op registers at import)."""
    from tapeflow.core import registry
    monkeypatch.setattr(registry, "_PRIMITIVES", dict(registry._PRIMITIVES))
    monkeypatch.setattr(registry, "_GRADIENTS", dict(registry._GRADIENTS))


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Under ``--device strict``, with TAPEFLOW_LEAK_LOG=path: append where each host leak
    happened (the innermost tapeflow frame) to that file, to see which code leaks most."""
    report = yield
    path = os.environ.get("TAPEFLOW_LEAK_LOG")
    if path and call.excinfo is not None and call.excinfo.typename == "HostLeak":
        frames = [e for e in call.excinfo.traceback if "src/tapeflow" in str(e.path)]
        where = (f"{str(frames[-1].path).split('src/')[-1]}:{frames[-1].lineno + 1}"
                 if frames else "tests")
        with open(path, "a") as log:
            log.write(f"{where}\t{item.nodeid}\n")
    return report
