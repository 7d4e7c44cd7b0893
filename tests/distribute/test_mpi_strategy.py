"""MPIStrategy: data-parallel fit over real ``mpiexec -n 2`` processes launched from pytest.

Skipped, saying why, where mpi4py or mpiexec is missing (``pip install 'tapeflow[distributed]'``).
"""
import builtins
import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.distribute.mpi import oversubscription

pytestmark = pytest.mark.child_process  # mpiexec ranks, each a child process

SCRIPT = Path(__file__).with_name("mpi_script.py")
TIMEOUT_S = 120
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # 2 ranks on 2 cores
# Two ranks sum two half-batch gradients where one process takes one full-batch mean: the same
# numbers, added in another order.  After 12 Adam steps float32 rounding differs by ~1e-7.
TOLERANCE = dict(rtol=1e-5, atol=1e-6)


def _mpiexec():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install 'tapeflow[distributed]')")
    beside = Path(sys.executable).with_name("mpiexec")  # the extra's, in an unactivated venv
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec on PATH (pip install 'tapeflow[distributed]' installs MPICH's)")
    return found


def _run(tmp_path, mode, ranks):
    out = str(tmp_path / f"{mode}-{ranks}.npz")
    command = [sys.executable, str(SCRIPT), mode, out]
    if ranks:
        command = [_mpiexec(), "-n", str(ranks)] + command
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S,
                          cwd=tmp_path, env={**os.environ, **ONE_THREAD, "PYTHONUNBUFFERED": "1"})
    return done, out


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """One run of mpi_script.py on 2 ranks, shared by the tests that read it."""
    _mpiexec()
    done, out = _run(tmp_path_factory.mktemp("mpi"), "mpi", 2)
    assert done.returncode == 0, done.stderr
    return done, out


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """rank 0's weights and logs of mpi_script.py run alone, with no strategy."""
    done, out = _run(tmp_path_factory.mktemp("single"), "single", 0)
    assert done.returncode == 0, done.stderr
    return _trained(out)


def _trained(out):
    weights = np.load(out)
    with open(out + ".json") as f:
        return [weights[k] for k in weights.files], json.load(f)


def test_two_ranks_on_half_batches_end_with_one_process_weights(one_process, two_ranks):
    single, single_logs = one_process
    split, split_logs = _trained(two_ranks[1])
    assert len(single) == len(split) == 4
    for a, b in zip(single, split):
        np.testing.assert_allclose(b, a, **TOLERANCE)
    # the logs are the global batches' values (summed metric state), not rank 0's half
    for name in ("loss", "mae"):
        np.testing.assert_allclose(split_logs[name], single_logs[name], rtol=1e-5)
    # the step ran compiled on each rank: traced for 32-row shards and the last batch's 1 row
    with open(two_ranks[1] + ".traces.json") as f:
        assert json.load(f) == [2, 2]


def test_three_ranks_on_uneven_shards_end_with_one_process_weights(tmp_path, one_process):
    # batch 64 over 3 ranks: 21, 21 and 22 rows; the last batch's 1 row leaves 2 ranks none
    single, _ = one_process
    done, out = _run(tmp_path, "mpi", 3)
    assert done.returncode == 0, done.stderr
    for a, b in zip(single, _trained(out)[0]):
        np.testing.assert_allclose(b, a, **TOLERANCE)


def test_rank_0_alone_prints_and_writes_files(two_ranks):
    done, out = two_ranks
    assert Path(out + ".rank0.csv").exists() and not Path(out + ".rank1.csv").exists()
    epoch_lines = [line for line in done.stdout.splitlines() if line.startswith("Epoch ")]
    assert len(epoch_lines) == 3, done.stdout  # 3 epochs, printed by one rank


def test_collectives_on_two_ranks(tmp_path):
    done, out = _run(tmp_path, "collectives", 2)
    assert done.returncode == 0, done.stderr
    with open(out + ".json") as f:
        every = json.load(f)
    # rank r holds [[r+1, 2(r+1)], [0, 1]]: ranks 0 and 1 sum to [[3, 6], [0, 2]]
    for got in every:  # every rank gets the same answers
        assert got["size"] == 2
        assert got["sum"] == [[3.0, 6.0], [0.0, 2.0]]
        assert got["mean_axis0"] == [0.75, 2.0]  # each column over 2 rows x 2 ranks
        assert got["all_reduce"] == [[[1.5, 3.0], [0.0, 1.0]], None, 0.5]
        assert got["all_reduce_sum"] == 2.0
        assert got["broadcast"] == [0.0, 0.0]  # rank 0's values everywhere


def test_batchnorm_moving_statistics_stay_the_same_on_every_rank(tmp_path):
    done, out = _run(tmp_path, "batchnorm", 2)
    assert done.returncode == 0, done.stderr
    with open(out + ".json") as f:
        every = json.load(f)
    adapted = [np.array(w) for w in every[0][0]]
    rank0, rank1 = ([np.array(w) for w in weights[1:]] for weights in every)
    names = ["mean", "variance", "kernel", "bias", "gamma", "beta", "moving_mean",
             "moving_variance", "kernel", "bias"]
    assert len(rank0) == len(names)
    for name, a, b in zip(names, rank0, rank1):
        np.testing.assert_array_equal(b, a, err_msg=name)  # 2 ranks: a + b == b + a exactly
    assert np.abs(rank0[6]).max() > 0  # the moving mean moved
    # Normalization's statistics are summed as shares of 31 and 32 rows of 63 too: they come
    # back exactly, not an ulp off at every step
    for a, b in zip(adapted, rank0[:len(adapted)]):
        np.testing.assert_array_equal(b, a)


def test_a_rank_that_raises_aborts_every_rank_naming_it(tmp_path):
    done, _ = _run(tmp_path, "raise-on-rank-1", 2)  # a hang would raise TimeoutExpired
    assert done.returncode != 0
    assert "rank 1 of 2 raised RuntimeError" in done.stderr
    assert "was lost" not in done.stderr  # an abort on purpose: the watch stays quiet


def test_a_rank_with_other_data_is_refused_naming_it(tmp_path):
    done, _ = _run(tmp_path, "other-data-on-rank-1", 2)
    assert done.returncode != 0
    assert "rank 1's first global batch differs from rank 0's" in done.stderr


def test_a_killed_rank_ends_the_run_nonzero_naming_it(tmp_path):
    done, _ = _run(tmp_path, "kill-rank-1", 2)  # a hang would raise TimeoutExpired
    assert done.returncode != 0
    # the watch's line (mpiexec's own report names a pid, at times a survivor's); on a loaded
    # machine it may see both ranks end at once, and then says so instead of guessing
    assert "tapeflow.distribute: rank 1 of 2 (pid " in done.stderr or \
        "tapeflow.distribute: ranks 0 and 1 of 2 (pids " in done.stderr, done.stderr
    assert "rank 0 of 2" not in done.stderr, done.stderr


def test_a_normal_run_reports_no_lost_rank(two_ranks):
    assert "was lost" not in two_ranks[0].stderr


def test_oversubscription_warning_says_how_many_threads():
    assert oversubscription(local_ranks=2, threads=1, cores=2) is None
    assert oversubscription(local_ranks=4, threads=4, cores=16) is None
    message = oversubscription(local_ranks=2, threads=2, cores=2)
    assert "2 ranks x 2 BLAS threads on 2 cores" in message
    assert "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1" in message
    assert "OMP_NUM_THREADS=4 " in oversubscription(local_ranks=4, threads=16, cores=16)


def test_strategy_without_mpi4py_says_how_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_mpi4py(name, *args, **kwargs):
        if name == "mpi4py" or name.startswith("mpi4py."):
            raise ImportError("No module named 'mpi4py'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_mpi4py)
    with pytest.raises(ImportError, match=r"pip install 'tapeflow\[distributed\]'"):
        tf.distribute.MPIStrategy()


def test_one_rank_collectives_and_scope():
    _mpiexec()
    strategy = tf.distribute.MPIStrategy()
    assert strategy.num_replicas_in_sync == 1 and strategy.rank == 0
    with strategy.scope() as entered:
        assert entered is strategy and tf.distribute.current_strategy() is strategy
    assert tf.distribute.current_strategy() is None
    with tf.device("/CPU:0"):  # host collectives (a device's go through NCCL: test_nccl.py)
        value = tf.constant([[1.0, 2.0], [3.0, 5.0]])
        three = tf.constant(3.0)
    np.testing.assert_allclose(strategy.reduce("SUM", value).numpy(), value.numpy())
    np.testing.assert_allclose(strategy.reduce("MEAN", value, axis=0).numpy(), [2.0, 3.5])
    grads = strategy.all_reduce([value, None, three])
    assert grads[1] is None and float(grads[2].numpy()) == 3.0
    with pytest.raises(ValueError, match="reduce_op must be 'SUM' or 'MEAN'"):
        strategy.reduce("MAX", value)


def test_one_rank_fit_is_plain_traced_fit():
    _mpiexec()
    from tests.distribute.mpi_script import housing_like, model
    x, y = housing_like()

    def fitted(strategy):
        tf.random.set_seed(3)
        net = model()
        with strategy.scope() if strategy else contextlib.nullcontext():
            net.compile(optimizer="adam", loss="mse")
        net.fit(x, y, batch_size=64, epochs=1, verbose=0)
        return net
    plain, one_rank = fitted(None), fitted(tf.distribute.MPIStrategy())
    assert one_rank.train_function is not None  # traced, not the eager replica step
    for a, b in zip(plain.get_weights(), one_rank.get_weights()):
        np.testing.assert_array_equal(b, a)


def test_backup_and_restore_rank_0_writes_every_rank_restores(tmp_path):
    done, out = _run(tmp_path, "backup", 2)
    assert done.returncode == 0, done.stderr
    with open(out + ".json") as f:
        rank0, rank1 = json.load(f)
    assert rank0["saves"] == 2 and rank1["saves"] == 0  # one backup per epoch, by rank 0
    for rank in (rank0, rank1):
        assert rank["epochs"] == [2, 3]  # restored: went on after the backup's 2 epochs
        assert rank["left"] is None  # the restored fit ended normally: backup deleted
        for a, b in zip(rank["straight"], rank["resumed"]):
            np.testing.assert_array_equal(np.array(b), np.array(a))  # as never stopped
    assert rank0["resumed"] == rank1["resumed"]


def test_a_backup_that_rank_1_does_not_see_stops_every_rank(tmp_path):
    done, _ = _run(tmp_path, "backup-unseen-by-rank-1", 2)  # a hang raises TimeoutExpired
    assert done.returncode != 0
    assert "BackupAndRestore: MPI rank 1 found another backup" in done.stderr, done.stderr


def test_evaluate_and_predict_on_shards_equal_one_process(tmp_path):
    done, out = _run(tmp_path, "inference", 2)
    assert done.returncode == 0, done.stderr
    with open(out + ".json") as f:
        every = json.load(f)
    for got in every:  # every rank returns the whole data's figures
        assert set(got["sharded"]) == set(got["whole"]) == {"loss", "mae",
                                                            "root_mean_squared_error", "mse"}
        for name, value in got["whole"].items():
            np.testing.assert_allclose(got["sharded"][name], value, rtol=1e-6, err_msg=name)
        assert len(got["listed"]) == 4  # evaluate's list, in metrics_names order
        np.testing.assert_allclose(got["predicted"], got["predicted_whole"], rtol=1e-6)
        assert len(got["predicted"]) == 193
    # Model.evaluate and predict took one shard on each rank: 96 and 97 of the 193 rows, twice
    assert sorted(got["rows_seen"] for got in every) == [2 * 96, 2 * 97]
    assert sorted(got["local_rank"] for got in every) == [0, 1]  # both ranks on this machine


def test_each_rank_of_a_machine_takes_its_own_gpu(monkeypatch):
    _mpiexec()
    from tapeflow import backend
    from tapeflow.distribute import launch
    strategy = tf.distribute.MPIStrategy()
    assert strategy.local_rank == 0
    assert launch.device_name(None, "cpu") == launch.device_name(strategy, "cpu") == "/CPU:0"
    assert launch.device_name(None, "gpu") == "/GPU:0"
    monkeypatch.setattr(backend, "gpu_count", lambda: 4)
    for local_rank, gpu in [(0, "/GPU:0"), (3, "/GPU:3"), (5, "/GPU:1")]:  # 5 ranks share 4 GPUs
        monkeypatch.setattr(strategy._comm, "local_rank", local_rank)
        assert launch.device_name(strategy, "gpu") == strategy.gpu_device_name() == gpu
