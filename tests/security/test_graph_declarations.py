"""Issue 21 groups 1-2: a saved graph's declared types and attributes are checked against what
its ops make and accept when it is loaded, before anything is allocated by what it declares."""
import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saving import graph_checks
from tapeflow.saving.format import LoadError

from .crafting import edit_saved_model

PEAK_BYTES = 50 * 2 ** 20


def _save(tmp_path, fn, *specs, change=None):
    module = tf.Module()
    module.f = tf.function(fn, input_signature=list(specs))
    path = str(tmp_path / "saved")
    tf.saved_model.save(module, path)
    if change is not None:
        edit_saved_model(path, lambda document: change(_graph(document)))
    return path


def _graph(document):
    return document["functions"]["f"][0]["graph"]


def _eqn(graph, op):
    found = [e for e in graph["eqns"] if e["op"] == op]
    assert len(found) == 1, [e["op"] for e in graph["eqns"]]
    return found[0]


def _retype(graph, vid, shape):
    for entry in graph["types"]:
        if entry[0] == vid:
            entry[1] = shape


def _refused_without_allocating(path, match):
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match=match):
            tf.saved_model.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"peak {peak / 2**20:.0f} MiB before the refusal"


def _vector(n):
    return tf.TensorSpec([n], tf.float32)


def test_the_untouched_saves_load_and_run(tmp_path):
    path = _save(tmp_path, lambda x: tf.reduce_sum(tf.tile(x, [2]) * 2.0), _vector(2))
    assert tf.saved_model.load(path).f(tf.ones(2)).numpy() == 8.0


def test_a_tile_of_400000000_declaring_an_output_of_4_is_refused(tmp_path):
    """The issue's `Tile` with `multiples: [400000000]` and a declared output of `[4]`."""
    def change(graph):
        _eqn(graph, "Tile")["attrs"]["multiples"] = [400_000_000]
    path = _save(tmp_path, lambda x: tf.tile(x, [2]), _vector(2), change=change)
    _refused_without_allocating(path, r"equation 0 \(Tile\) \(by its operand shapes \[\[2\]\] "
                                      r"and attributes\) would allocate 3.0 GiB")


def test_a_tile_whose_declared_output_is_not_what_it_makes_is_refused(tmp_path):
    def change(graph):
        _eqn(graph, "Tile")["attrs"]["multiples"] = [3]
    path = _save(tmp_path, lambda x: tf.tile(x, [2]), _vector(2), change=change)
    _refused_without_allocating(path, r"equation 0 \(Tile\) makes float32\[6\] as value 1, but "
                                      r"the graph declares float32\[4\]")


@pytest.mark.parametrize("op, fn, column, row", [
    ("BatchMatMulV2", tf.matmul, [2, 1], [1, 2]),
    ("Einsum", lambda a, b: tf.einsum("i,j->ij", a, b), [2], [2]),
])
def test_an_outer_product_past_the_cap_is_refused(tmp_path, op, fn, column, row):
    """(n, 1) @ (1, n), or einsum's i,j->ij, declared at n = 40000: 6 GiB from two 160 kB
    operands."""
    def change(graph):
        a, b = graph["inputs"]
        _retype(graph, a, [40_000 if d == 2 else d for d in column])
        _retype(graph, b, [40_000 if d == 2 else d for d in row])
        _retype(graph, _eqn(graph, op)["outputs"][0], [40_000, 40_000])
    path = _save(tmp_path, fn, tf.TensorSpec(column, tf.float32), tf.TensorSpec(row, tf.float32),
                 change=change)
    _refused_without_allocating(path, rf"\({op}\) \(by its operand shapes .* would allocate "
                                      rf"6.0 GiB")


def test_sum_changed_to_mean_over_a_wrongly_declared_input_is_refused(tmp_path):
    """The issue's last `Sum` changed to `Mean` with its input declared `[8]` instead of `[4]`
    (the specialized kernel would divide by 8: f(tf.ones(4)) 1.25 instead of 2.5)."""
    def change(graph):
        reduce = _eqn(graph, "Sum")
        reduce["op"] = "Mean"
        _retype(graph, reduce["inputs"][0], [8])
    path = _save(tmp_path, lambda x: tf.reduce_sum(x * 0.625), _vector(4), change=change)
    _refused_without_allocating(path, r"equation \d \(Mul\) makes float32\[4\] as value \d, but "
                                      r"the graph declares float32\[8\]")


@pytest.mark.parametrize("name, value, shown", [
    ("keepdims", {"$float": "nan"}, "nan"),
    ("axes", {"$float": "inf"}, "inf"),
    ("axes", 10 ** 30, "1000000000000000000000000000000"),
])
def test_attributes_of_the_wrong_kind_are_refused_naming_them(tmp_path, name, value, shown):
    """The issue's `keepdims: NaN`, `axes: inf`, `axes: 10**30`, which loaded and failed at
    the first call with a bare TypeError/OverflowError."""
    def change(graph):
        _eqn(graph, "Sum")["attrs"][name] = value
    path = _save(tmp_path, tf.reduce_sum, _vector(4), change=change)
    with pytest.raises(LoadError, match=rf"equation 0 \(Sum\): attribute '{name}' is {shown}, "
                                        rf"but Sum takes (a bool|ints or None) there"):
        tf.saved_model.load(path)


def test_the_dry_runs_cap_is_settable(tmp_path, monkeypatch):
    path = _save(tmp_path, lambda x: x * 2.0, _vector(64))
    monkeypatch.setattr(graph_checks, "BYTES", 64 * 4 + 100)  # the input, not the product too
    with pytest.raises(LoadError, match=r"equation 0 \(Mul\) .* would allocate"):
        tf.saved_model.load(path)
    monkeypatch.undo()
    np.testing.assert_array_equal(tf.saved_model.load(path).f(tf.ones(64)).numpy(), 2.0)
