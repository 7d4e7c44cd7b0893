"""Issue 21 group 2: every op a saved graph may name has a size rule, so none escapes the
load-time bound; ops that cannot run on zeros (random draws, control flow) are bounded without
running, and the graphs that control flow holds are checked as the top-level graph is."""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.registry import registered_primitives
from tapeflow.saving import graph_checks
from tapeflow.saving.format import LoadError

from .test_graph_declarations import _eqn, _refused_without_allocating, _save, _vector


def test_every_registered_op_has_a_size_rule():
    missing = sorted(name for name in registered_primitives()
                     if name not in graph_checks._SIZE_RULES)
    assert not missing, f"ops without a size rule (saved graphs cannot bound them): {missing}"


def test_a_random_draw_of_a_billion_declared_as_four_is_refused_unrun(tmp_path):
    """A draw's size is its ``shape`` attribute, not its declared type."""
    def change(graph):
        _eqn(graph, "RandomUniform")["attrs"]["shape"] = {"$tuple": [1_000_000_000]}
    path = _save(tmp_path, lambda x: x + tf.random.uniform([4]), _vector(4), change=change)
    _refused_without_allocating(path, r"\(RandomUniform\) \(by its operand shapes \[\] and "
                                      r"attributes\) would allocate 3.7 GiB")


def _nested_tile(graph):
    """The ``Tile`` equation inside the graph's one ``If``'s true branch."""
    branch = _eqn(graph, "If")["attrs"]["then_branch"]["$graph"]
    return _eqn(branch, "Tile")


def test_a_tile_bomb_inside_a_branch_is_refused(tmp_path):
    def change(graph):
        _nested_tile(graph)["attrs"]["multiples"] = [400_000_000]
    path = _save(tmp_path, lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.tile(x, [2]),
                                             lambda: tf.concat([x, x], 0)),
                 _vector(2), change=change)
    _refused_without_allocating(path, r"\(If\): its then_branch: equation 0 \(Tile\) \(by its "
                                      r"operand shapes \[\[2\]\] and attributes\) would "
                                      r"allocate 3.0 GiB")


def test_the_untouched_branches_load_and_run(tmp_path):
    path = _save(tmp_path, lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.tile(x, [2]),
                                             lambda: tf.concat([x, x], 0)), _vector(2))
    out = tf.saved_model.load(path).f(tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(out.numpy(), [1.0, 2.0, 1.0, 2.0])
