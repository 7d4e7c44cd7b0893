"""``mpiexec -n 2 tapeflow train CONFIG --output DIR``: the real command on two ranks.

Rank 0 alone writes the run and prints; the 2-rank run ends with the weights of a 1-process
run of the same config (global batch = the config's batch size); its checkpoint resumes with
one process, and a 1-process checkpoint with two ranks; a user's mistake is one message and a
nonzero exit on every rank, never a hang; a rank killed mid-run is named, and the run resumes
from its last checkpoint with one process.  Skipped, saying why, without mpi4py or mpiexec.
"""
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training.preemption import PREEMPTED_STATUS

from tests.trainer.helpers import cli, small_config, write_config
from .test_mpi_strategy import ONE_THREAD, TIMEOUT_S, _mpiexec

pytestmark = pytest.mark.child_process  # mpiexec ranks, each a child process

# Two ranks sum two half-batch gradients where one process takes one full-batch mean: the
# same numbers added in another order.  Measured after 2 epochs (82 Adam steps): at most
# 5e-7 apart on weights of magnitude ~1.
TOLERANCE = dict(rtol=1e-5, atol=1e-5)
EPOCHS = 2
ENV = {**ONE_THREAD, "PYTHONUNBUFFERED": "1"}


def _config(tmp_path, **training):
    # no Dropout: its masks are drawn per shard, so they cannot match one process's
    config = small_config(model={"layers": [{"Dense": {"units": 16, "activation": "relu"}},
                                            {"Dense": {"units": 1}}]})
    config["training"] = dict(config["training"], epochs=EPOCHS, **training)
    return write_config(tmp_path / "run.yaml", config)


def _mpi(ranks, *args, cwd):
    """``mpiexec -n RANKS tapeflow ARGS...``; a CompletedProcess with text output."""
    command = [_mpiexec(), "-n", str(ranks), sys.executable, "-m", "tapeflow.cli", *map(str, args)]
    return subprocess.run(command, cwd=cwd, env={**os.environ, **ENV}, capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def _weights(run_dir, name=ckpt_io.FINAL_NAME):
    return ckpt_io.read_checkpoint(os.path.join(run_dir, name)).variables


def _files(run_dir):
    return sorted(os.path.relpath(os.path.join(d, f), run_dir)
                  for d, _, names in os.walk(run_dir) for f in names)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same tiny config trained on 2 ranks and in 1 process."""
    _mpiexec()
    where = tmp_path_factory.mktemp("mpi_train")
    config = _config(where)
    two = _mpi(2, "train", config, "--output", where / "two", cwd=where)
    assert two.returncode == 0, two.stderr
    one = cli("train", config, "--output", where / "one", cwd=where, env=ENV)
    assert one.returncode == 0, one.stderr
    return where, config, two


def test_rank_0_alone_writes_and_prints(runs):
    where, _, two = runs
    assert _files(where / "two") == _files(where / "one")
    assert "test_metrics.json" in _files(where / "two")
    # one progress line per epoch and one summary: rank 1 printed nothing
    assert two.stdout.count(f"Epoch 1/{EPOCHS}") == 1, two.stdout
    assert two.stdout.count("run directory:") == 1, two.stdout
    assert "Traceback" not in two.stderr, two.stderr


def test_two_ranks_end_with_one_process_weights(runs):
    where = runs[0]
    two, one = _weights(where / "two"), _weights(where / "one")
    assert len(two) == len(one) > 0
    for a, b in zip(one, two):
        np.testing.assert_allclose(b, a, **TOLERANCE)


def test_a_two_rank_checkpoint_resumes_with_one_process_and_back(runs):
    where, config, _ = runs
    longer = ("--set", f"training.epochs={EPOCHS + 1}")
    straight = cli("train", config, "--output", where / "straight", *longer, cwd=where, env=ENV)
    assert straight.returncode == 0, straight.stderr
    shutil.copytree(where / "two", where / "two_then_one")
    resumed = cli("train", config, "--output", where / "two_then_one", "--resume", *longer,
                  cwd=where, env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    shutil.copytree(where / "one", where / "one_then_two")
    resumed = _mpi(2, "train", config, "--output", where / "one_then_two", "--resume", *longer,
                   cwd=where)
    assert resumed.returncode == 0, resumed.stderr
    expected = _weights(where / "straight")
    for name in ("two_then_one", "one_then_two"):
        assert ckpt_io.read_checkpoint(where / name / ckpt_io.FINAL_NAME).epoch == EPOCHS + 1
        for a, b in zip(expected, _weights(where / name)):
            np.testing.assert_allclose(b, a, **TOLERANCE)


def _one_message(result, fragment):
    assert result.returncode != 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if "tapeflow train: error:" in line]
    assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_a_bad_config_is_one_message_on_every_rank(tmp_path):
    _mpiexec()
    config = _config(tmp_path)
    result = _mpi(2, "train", config, "--set", "training.epochs=-1", "--output",
                  tmp_path / "bad", cwd=tmp_path)
    _one_message(result, "training.epochs")
    assert not (tmp_path / "bad").exists()


def test_an_existing_run_directory_found_by_rank_0_stops_every_rank(tmp_path):
    _mpiexec()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    result = _mpi(2, "train", _config(tmp_path), "--output", tmp_path / "taken", cwd=tmp_path)
    _one_message(result, "already holds files")


def test_a_rank_with_another_config_is_refused_naming_the_key(tmp_path):
    config = _config(tmp_path)
    base = [sys.executable, "-m", "tapeflow.cli", "train", str(config), "--output",
            str(tmp_path / "run")]
    command = [_mpiexec(), "-n", "1", *base, ":", "-n", "1", *base, "--set", "training.epochs=3"]
    result = subprocess.run(command, cwd=tmp_path, env={**os.environ, **ENV},
                            capture_output=True, text=True, timeout=TIMEOUT_S)
    _one_message(result, "MPI rank 1's config differs from rank 0's at training.epochs")
    assert not (tmp_path / "run").exists()


def _rank_pid(tag, rank):
    """The pid of MPI rank ``rank`` of the run whose environment holds ``tag`` (None yet)."""
    wanted = {f"TAPEFLOW_TEST_RUN={tag}".encode(), f"PMI_RANK={rank}".encode()}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if wanted <= set(f.read().split(b"\0")):
                    return int(entry)
        except (OSError, ValueError):
            continue
    return None


def test_a_killed_rank_is_named_and_one_process_resumes_its_run(tmp_path):
    _mpiexec()
    if not os.path.isdir("/proc/self"):
        pytest.skip("finding rank 1's pid reads /proc")
    epochs, run = 8, tmp_path / "run"
    config, tag = _config(tmp_path), uuid.uuid4().hex
    longer = ("--set", f"training.epochs={epochs}")
    command = [_mpiexec(), "-n", "2", sys.executable, "-m", "tapeflow.cli", "train", str(config),
               "--output", str(run), *longer]
    mpi = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, **ENV,
                                                       "TAPEFLOW_TEST_RUN": tag},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not ckpt_io.epoch_checkpoints(str(run)):  # written whole (renamed into place)
            assert mpi.poll() is None and time.monotonic() < deadline, mpi.communicate()
            time.sleep(0.01)
        victim = _rank_pid(tag, 1)
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        _, stderr = mpi.communicate(timeout=TIMEOUT_S)  # a hang raises TimeoutExpired
    finally:
        if mpi.poll() is None:
            mpi.kill()
            mpi.communicate()
    assert mpi.returncode != 0
    # or, when the watch saw both ranks end at once (a loaded machine), both named together
    assert f"rank 1 of 2 (pid {victim} on host " in stderr or \
        f"ranks 0 and 1 of 2 (pids " in stderr and f", {victim} on host " in stderr, stderr
    assert "rank 0 of 2" not in stderr, stderr
    (newest, path), *_ = ckpt_io.epoch_checkpoints(str(run))
    assert 1 <= newest < epochs
    assert ckpt_io.read_checkpoint(path).epoch == newest  # reads back whole
    resumed = cli("train", config, "--output", run, "--resume", *longer, cwd=tmp_path, env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    assert f"Epoch {newest + 1}/{epochs}" in resumed.stdout, resumed.stdout  # went on from it
    assert f"Epoch {newest}/{epochs}" not in resumed.stdout, resumed.stdout
    assert ckpt_io.read_checkpoint(run / ckpt_io.FINAL_NAME).epoch == epochs


def test_sigterm_stops_both_ranks_at_one_step_and_the_same_command_goes_on(runs):
    """mpiexec passes a SIGTERM to every rank; they agree to stop at the next every_steps
    boundary, rank 0 writes the checkpoint, and all exit 75; the same command then ends with
    the weights of the 2-rank run that never stopped (every_steps changes no result)."""
    where, config, _ = runs
    run = where / "preempted"
    command = [_mpiexec(), "-n", "2", sys.executable, "-m", "tapeflow.cli", "train", str(config),
               "--output", str(run), "--resume", "--set", "checkpoint.every_steps=5"]
    mpi = subprocess.Popen(command, cwd=where, env={**os.environ, **ENV},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not ckpt_io.step_checkpoints(str(run)):  # the handlers are in place by then
            assert mpi.poll() is None and time.monotonic() < deadline, mpi.communicate()
            time.sleep(0.01)
        mpi.send_signal(signal.SIGTERM)
        out, err = mpi.communicate(timeout=TIMEOUT_S)
    finally:
        if mpi.poll() is None:
            mpi.kill()
            mpi.communicate()
    assert mpi.returncode == PREEMPTED_STATUS, (mpi.returncode, err)
    said = [line for line in err.splitlines() if "stopped by SIGTERM" in line]
    assert len(said) == 1 and "--resume goes on from it" in said[0], err  # rank 0 alone
    written = ckpt_io.read_checkpoint(said[0].split("; checkpoint ")[1].split(";")[0])
    steps = written.epoch * 46 + written.training["step"]  # 46 global batches an epoch
    assert steps % 5 == 0 or written.training["step"] == 0, steps  # a boundary, or an epoch end
    again = subprocess.run(command, cwd=where, env={**os.environ, **ENV}, capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    assert again.returncode == 0, again.stderr
    assert "--resume: going on from" in again.stdout, again.stdout
    for a, b in zip(_weights(where / "two"), _weights(run)):
        np.testing.assert_array_equal(b, a)
