"""The training loop's state beyond the model, in and out of a checkpoint's JSON and arrays.

- callbacks: each one's ``get_state()`` (JSON values, arrays and lists of arrays); a list of
  arrays is kept as named arrays ``NAME/KEY/i`` and ``{"$arrays": n}`` in the JSON;
- metrics (a mid-epoch checkpoint): each metric's running state as ``metrics/NAME/i``, so
  that the epoch's logs go on from the steps done before the checkpoint.
"""
import numpy as np

from .errors import CheckpointError

__all__ = ["callback_state", "restore_callback", "metric_arrays", "metric_state",
           "restore_metrics"]


def callback_state(name, callback):
    """``(JSON dict, {array name: array})`` of ``callback.get_state()``."""
    doc, arrays = {}, {}
    for key, value in callback.get_state().items():
        if isinstance(value, (list, tuple)) and all(isinstance(a, np.ndarray) for a in value):
            arrays.update({f"{name}/{key}/{i}": a for i, a in enumerate(value)})
            value = {"$arrays": len(value)}
        doc[key] = value
    return doc, arrays


def restore_callback(name, callback, doc, arrays, where):
    """``callback.set_state`` from ``callback_state``'s JSON and a checkpoint's arrays."""
    try:
        state = {}
        for key, value in doc.items():
            if key == "best_weights" and type(value) is int:  # checkpoints before $arrays
                value = {"$arrays": value} if value else None
            if isinstance(value, dict) and set(value) == {"$arrays"}:
                value = [arrays[f"{name}/{key}/{i}"] for i in range(int(value["$arrays"]))]
            state[key] = value
        callback.set_state(state)
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{where}: the state of {name} is damaged ({e})") from None


def metric_arrays(model):
    """The metrics' running state (the loss tracker's included) as named arrays."""
    return {f"metrics/{name}/{i}": v.numpy()
            for name, m in zip(model.metrics_names, model.metrics)
            for i, v in enumerate(m.variables)}


def metric_state(arrays, where):
    """``{metric name: [arrays]}`` from a checkpoint's named arrays."""
    state = {}
    for key in (k for k in arrays if k.startswith("metrics/")):
        name, _, index = key[len("metrics/"):].rpartition("/")
        if not (name and index.isdigit()):
            raise CheckpointError(f"{where}: the metrics' state is damaged ('{key}')")
        state.setdefault(name, {})[int(index)] = arrays[key]
    return {name: [values[i] for i in sorted(values)] for name, values in state.items()}


def restore_metrics(model, state, where):
    """Assign ``metric_state``'s values to the model's metrics (after fit reset them)."""
    metrics = dict(zip(model.metrics_names, model.metrics))
    if set(metrics) != set(state):
        raise CheckpointError(f"{where}: the mid-epoch checkpoint's metrics "
                              f"({', '.join(sorted(state))}) are not the model's "
                              f"({', '.join(sorted(metrics))})")
    for name, values in state.items():
        for variable, value in zip(metrics[name].variables, values):
            variable.assign(value)
