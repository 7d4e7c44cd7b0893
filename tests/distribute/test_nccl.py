"""MPIStrategy's NCCL path, with no GPU: which summer a buffer gets (MPI for host arrays, NCCL
for device ones, on the strict GPU stand-in) and the NCCL id drawn by rank 0 alone and
broadcast (a stand-in ``nccl`` module; its id's broadcast also on 2 real MPI ranks).  The
ncclAllReduce itself needs a GPU and CuPy and runs in no test here."""
import json

import numpy as np
import pytest

import tapeflow as tf
from strict_device.strict_array import MODULE, StrictArray
from tapeflow import backend
from tapeflow.distribute import nccl as nccl_module

from .mpi_script import FakeNccl
from .test_mpi_strategy import _mpiexec, _run


@pytest.fixture
def fake_nccl(monkeypatch):
    _mpiexec()
    fake = FakeNccl()
    monkeypatch.setattr(nccl_module, "import_nccl", lambda: fake)
    return fake


@pytest.fixture
def strict_gpu():
    previous = backend.use_gpu_module(MODULE, StrictArray)
    yield
    backend.use_gpu_module(*previous)


def test_host_gradients_go_through_mpi(fake_nccl):
    strategy = tf.distribute.MPIStrategy()
    with tf.device("/CPU:0"):
        host = tf.constant([1.0, 2.0])
    got = strategy.all_reduce([host])
    np.testing.assert_allclose(got[0].numpy(), [1.0, 2.0])
    assert strategy._summer(np) is strategy._comm
    assert fake_nccl.ids_drawn == 0 and fake_nccl.made == []


def test_device_gradients_go_through_nccl_and_stay_on_the_device(fake_nccl, strict_gpu):
    strategy = tf.distribute.MPIStrategy()
    with tf.device("/GPU:0"):
        grads = [tf.constant([[1.0, 2.0]]), None, tf.constant(3.0)]
    for _ in range(2):  # one communicator, made at the first device all-reduce
        got = strategy.all_reduce(grads, "SUM")
        assert got[1] is None
        assert all(isinstance(g._value, StrictArray) for g in (got[0], got[2]))
        np.testing.assert_allclose(got[0].numpy(), [[1.0, 2.0]])
        assert float(got[2].numpy()) == 3.0
    assert isinstance(strategy._summer(MODULE), nccl_module.NcclSum)
    assert fake_nccl.ids_drawn == 1 and fake_nccl.made == [(1, (7, 8, 9), 0)]


def test_without_cupy_the_nccl_error_says_how_to_install():
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("CuPy is installed")
    with pytest.raises(ImportError, match=r"pip install 'tapeflow\[gpu\]'"):
        nccl_module.import_nccl()


def test_rank_0_draws_the_nccl_id_and_every_rank_gets_it(tmp_path):
    done, out = _run(tmp_path, "nccl-id", 2)
    assert done.returncode == 0, done.stderr
    with open(out + ".json") as f:
        every = json.load(f)
    assert every == [{"ids_drawn": 1, "made": [[2, [0, 100], 0]]},
                     {"ids_drawn": 0, "made": [[2, [0, 100], 1]]}]
