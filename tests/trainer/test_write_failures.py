"""A write that fails (issue 21, group 4 and 9): the file-size limit, a full disk (simulated by
the same limit), a read-only directory.

The run stops with one line naming the path and the OS error and a non-zero status; the last
good checkpoint stays whole, no temporary is left, and no HDF5 file is left open (an HDF5 file
whose close failed used to stay open and crash the interpreter at exit: status 139).  A run
directory a kill left half made (only ``checkpoints/``) takes a new run as well as --resume.
"""
import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap

import h5py
import pytest

from tapeflow import cli
from tapeflow.saving.atomic import WriteError
from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training.inference import load_checkpoint_model
from tapeflow.training.run import train

from .helpers import tiny_config, write_config

LIMIT = 8192   # bytes: a config.yaml fits, a checkpoint does not


@contextlib.contextmanager
def file_size_limit(n_bytes):
    """RLIMIT_FSIZE for this process, SIGXFSZ ignored so that a write past it raises EFBIG."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def _open_hdf5_files():
    return h5py.h5f.get_obj_count(h5py.h5f.OBJ_ALL, h5py.h5f.OBJ_FILE)


@pytest.fixture(scope="module")
def one_epoch(tmp_path_factory, tiny_csv):
    """A run of one epoch, to go on from."""
    run = tmp_path_factory.mktemp("runs") / "run"
    train(tiny_config(tiny_csv, training={"epochs": 1}), output=run, verbose=False)
    return run


def _copy_without_final_model(source, target):
    shutil.copytree(source, target)
    (target / "model.h5").unlink()
    return target


def test_a_checkpoint_past_the_file_size_limit_is_one_error_and_leaves_the_old_one(one_epoch,
                                                                                    tmp_path):
    run = _copy_without_final_model(one_epoch, tmp_path / "run")
    path = ckpt_io.epoch_path(run, 1)
    with open(path, "rb") as f:
        before = f.read()
    ckpt = ckpt_io.read_checkpoint(path)
    model = load_checkpoint_model(ckpt)
    training = {k: v for k, v in ckpt.training.items()
                if k not in ("version", "random", "arrays")}
    files = _open_hdf5_files()
    with file_size_limit(LIMIT), pytest.raises(WriteError) as raised:
        ckpt_io.write_checkpoint(path, model, training)
    assert str(raised.value) == f"cannot write {path}: File too large (EFBIG)"
    assert _open_hdf5_files() == files        # nothing left for HDF5 to close at exit
    with open(path, "rb") as f:
        assert f.read() == before
    assert sorted(os.listdir(run / "checkpoints")) == ["best.h5", "epoch-0001.h5"]


def test_train_past_the_file_size_limit_says_one_line_and_exits_1(one_epoch, tiny_csv,
                                                                  tmp_path, capsys):
    run = _copy_without_final_model(one_epoch, tmp_path / "run")
    config = write_config(tmp_path / "c.yaml", tiny_config(tiny_csv, training={"epochs": 2}))
    with file_size_limit(LIMIT):
        status = cli.main(["train", str(config), "--output", str(run), "--resume"])
    err = capsys.readouterr().err
    assert status == 1
    assert err == f"tapeflow train: error: cannot write {ckpt_io.epoch_path(run, 2)}: " \
                  f"File too large (EFBIG)\n"
    # the last good checkpoint is whole: the same command, without the limit, goes on from it
    assert cli.main(["train", str(config), "--output", str(run), "--resume"]) == 0
    assert f"going on from {ckpt_io.epoch_path(run, 1)}" in capsys.readouterr().out


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_checkpoints_directory_is_one_line(tiny_csv, tmp_path, capsys):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints").chmod(0o555)
    config = write_config(tmp_path / "c.yaml", tiny_config(tiny_csv))
    try:
        status = cli.main(["train", str(config), "--output", str(run), "--resume"])
    finally:
        (run / "checkpoints").chmod(0o755)
    assert status == 1
    assert capsys.readouterr().err == f"tapeflow train: error: cannot write " \
        f"{ckpt_io.epoch_path(run, 1)}: Permission denied (EACCES)\n"


def test_a_directory_holding_only_checkpoints_takes_a_new_run(tiny_csv, tmp_path):
    """What a kill right after making it leaves: a new run and --resume both start there."""
    for resume in (False, True):
        run = tmp_path / f"run-{resume}"
        (run / "checkpoints").mkdir(parents=True)
        done = train(tiny_config(tiny_csv), output=run, resume=resume, verbose=False)
        assert len(done.history["loss"]) == 2 and (run / "model.h5").exists()


@pytest.mark.child_process
def test_no_segfault_at_exit_after_a_failed_write(tmp_path):
    """The process ends by itself with the write's error: the HDF5 file whose write failed
    was closed (before, HDF5 crashed at interpreter exit: status 139, every time)."""
    target = tmp_path / "big.h5"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        import numpy as np
        from tapeflow.saving import format as fmt
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))
        arrays = fmt.ArrayWriter()
        arrays.add(np.ones(4 * {LIMIT}, np.float32))
        try:
            fmt.write({str(target)!r}, {{"kind": "test"}}, arrays)
        except OSError as e:
            sys.exit(str(e))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stderr == f"cannot write {target}: File too large (EFBIG)\n"
    assert os.listdir(tmp_path) == []
