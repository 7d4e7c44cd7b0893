"""A tapeflow model as plain data, for the scikit-learn wrappers.

``model_spec`` is a model's architecture and compile settings as JSON-ready data
(``serialize`` configs, no weights): the wrappers clone a model passed to them from
it at each ``fit`` (fresh weights, never the user's model trained in place) and
pickle an unfitted wrapper's model with it.  ``model_bytes`` / ``model_from_bytes``
are the HDF5 bytes of a Keras save (``saving.keras_saving``): a fitted wrapper is
pickled as those, and loading them never runs code.
"""
import math
import os
import tempfile

import numpy as np

from .. import losses, metrics, optimizers
from ..layers import weight_budget as budget
from ..models.model_classes import layer_classes
from ..saving.format import DTYPES
from ..saving.keras_saving import load_model, save_model
from ..serialization import deserialize, serialize

__all__ = ["model_spec", "model_from_spec", "model_bytes", "model_from_bytes", "loss_name",
           "weight_list", "model_from_pickled_spec"]


def model_spec(model):
    """``{"model", "optimizer", "loss", "metrics"}``: what rebuilds ``model`` with fresh weights
    and compiles it as it was compiled (None where it was not)."""
    compiled = getattr(model, "optimizer", None) is not None
    return {"model": serialize(model),
            "optimizer": optimizers.serialize(model.optimizer) if compiled else None,
            "loss": _loss_config(model.loss) if compiled else None,
            "metrics": [m if isinstance(m, str) else metrics.serialize(m)
                        for m in getattr(model, "_compiled_metrics", [])] if compiled else None}


def model_from_spec(spec):
    """A new model from ``model_spec``'s data: new weights (drawn from the random state now),
    a new optimizer, compiled when the spec's model was."""
    model = deserialize(spec["model"], layer_classes(), kind="layer")
    if spec["optimizer"] is not None:
        model.compile(optimizer=optimizers.deserialize(spec["optimizer"]),
                      loss=None if spec["loss"] is None else losses.get(spec["loss"]),
                      metrics=[m if isinstance(m, str) else metrics.get(m)
                               for m in spec["metrics"]])
    return model


def weight_list(model):
    """``[[shape, dtype name], ...]`` of the model's weights: what a pickle records beside the
    model's spec, so that unpickling makes exactly those weights and nothing larger."""
    return [[[int(d) for d in v.shape], np.dtype(v._value.dtype).name] for v in model.weights]


def model_from_pickled_spec(spec, weights, where):
    """``model_from_spec`` for a spec from a pickle (data from elsewhere): the model may make
    only the weights ``weights`` lists (``weight_list``), within the weight cap; a pickle
    without the list (written before it was recorded) is held to the cap alone."""
    if weights is None:
        with budget.weight_budget():
            return model_from_spec(spec)
    expected = _checked_weight_list(weights, where)
    nbytes = sum(math.prod(shape) * dtype.itemsize for shape, dtype in expected)
    try:
        with budget.weight_budget(nbytes, expected=expected):
            return model_from_spec(spec)
    except budget.WeightBudgetError as e:
        listed = ", ".join(f"{d.name}{list(s)}" for s, d in expected) or "none"
        raise ValueError(f"{where}: the config in model['tapeflow_model_spec'] makes other "
                         f"weights than model['weights'] lists ({listed}): {e}") from None


def _checked_weight_list(weights, where):
    what = f"{where}: model['weights']"
    if not isinstance(weights, list) or len(weights) > 100_000:
        raise ValueError(f"{what} is not a list of [shape, dtype] pairs")
    out, nbytes = [], 0
    for entry in weights:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
                and len(entry[0]) <= 32 and all(type(d) is int and d >= 0 for d in entry[0])
                and isinstance(entry[1], str) and entry[1] in DTYPES):
            raise ValueError(f"{what} holds {str(entry)[:80]}, not a [shape, dtype] pair")
        shape, dtype = tuple(entry[0]), np.dtype(entry[1])
        nbytes += math.prod(shape) * dtype.itemsize
        if nbytes > budget.DEFAULT_BYTES:
            raise ValueError(f"{what} lists weights of more than {budget.DEFAULT_BYTES / 2**30:.1f}"
                             f" GiB, past the cap on a model's weights")
        out.append((shape, dtype))
    return out


def _loss_config(loss):
    if loss is None:
        return None
    if not hasattr(loss, "get_config") and not isinstance(loss, str):
        raise ValueError(f"the model's loss {loss!r} is not a registered tapeflow loss, so the "
                         f"model cannot be cloned; pass a function building the model instead")
    return losses.serialize(loss)


def loss_name(loss):
    """``(lower-case name, from_logits)`` of a compiled loss, e.g.
    ``("sparsecategoricalcrossentropy", False)``; ``("", False)`` for none."""
    if loss is None:
        return "", False
    config = losses.serialize(loss)
    if isinstance(config, str):
        return config.replace("_", "").lower(), False
    inner = config.get("config", {})
    name = f"{config.get('class_name', '')} {inner.get('fn', '')}"
    return name.replace("_", "").lower(), bool(inner.get("from_logits", False))


def model_bytes(model):
    """The bytes of ``model.save("model.keras")``: architecture, weights, optimizer state."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        save_model(model, path)
        with open(path, "rb") as f:
            return f.read()


def model_from_bytes(data):
    """The model ``model_bytes`` saved, compiled with its saved optimizer and loss."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        with open(path, "wb") as f:
            f.write(data)
        return load_model(path)
