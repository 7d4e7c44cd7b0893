"""The layer battery (``tests/layers/battery.py``) over every case of ``layer_cases.py``, and the
completeness test: every public layer class of ``tapeflow.keras.layers`` has a case."""
import inspect

import pytest

import tapeflow as tf
from tapeflow.layers.base import Layer

from tests.layers.battery import CHECKS
from tests.layers.layer_cases import CASES, EXEMPT


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_layer(case, check, tmp_path):
    tf.keras.backend.clear_session()
    if check == "checkpoint_round_trip":
        CHECKS[check](case, tmp_path)
    else:
        CHECKS[check](case)


def public_layer_classes():
    """Every Layer subclass exported from tapeflow.keras.layers, once (aliases are one class)."""
    found = {}
    for name, obj in vars(tf.keras.layers).items():
        if name.startswith("_") or not inspect.isclass(obj):
            continue
        if issubclass(obj, Layer) and obj is not Layer:
            found.setdefault(obj, name)
    return found


def test_every_public_layer_has_a_case():
    covered = {case.layer for case in CASES} | set(EXEMPT)
    missing = sorted(name for cls, name in public_layer_classes().items() if cls not in covered)
    assert not missing, (
        f"layers without a case in the layer battery: {missing}. Add a LayerCase for each to "
        f"CASES in tests/layers/layer_cases.py (constructor kwargs, a small input shape, and "
        f"input_builder / differentiable_inputs=False / second_order=False / "
        f"random_in_training=True where the layer needs them), or, if it computes nothing, "
        f"an EXEMPT entry with the reason.")


def test_the_table_names_only_public_layers():
    public = public_layer_classes()
    strays = [c.layer.__name__ for c in CASES if c.layer not in public]
    assert not strays, f"cases for classes not exported from tapeflow.keras.layers: {strays}"
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), "two cases share a name: give one an id="
