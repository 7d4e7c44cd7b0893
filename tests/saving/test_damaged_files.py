"""Damaged files get one LoadError naming them, never h5py's KeyError/RuntimeError (issue 21,
group 6): ``benchmarks/fuzz_loaders.py`` flips bytes in real saves and loads each copy in a
worker process under a memory cap."""
import importlib.util
import pathlib

import h5py
import numpy as np
import pytest

from tapeflow.saving.damaged import reading
from tapeflow.saving.format import LoadError

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_an_error_raised_inside_h5py_becomes_a_load_error(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f["a"] = np.ones(3)
    with h5py.File(path, "r") as f:
        with pytest.raises(LoadError, match=r"x\.h5: the file is damaged \(HDF5 says: "):
            with reading(path):
                f["missing"]  # h5py's own KeyError, as a damaged header gives


def test_an_error_of_tapeflows_own_keeps_its_type(tmp_path):
    with pytest.raises(KeyError, match="ours"):
        with reading(tmp_path / "x.h5"):
            raise KeyError("ours")


@pytest.mark.child_process
def test_a_hundred_damaged_saves_are_refused_or_load_never_crash_hang_or_trace():
    spec = importlib.util.spec_from_file_location("fuzz_loaders",
                                                  ROOT / "benchmarks" / "fuzz_loaders.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    counts, bad = fuzz.run(copies=100, seed=0, timeout=30, memory_gib=2, workers=1)
    assert bad == [], bad
    assert sum(counts.values()) == 100 and counts.get("refused", 0) > 30, counts
