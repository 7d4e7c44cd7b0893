"""Batching for fit / evaluate / predict: arrays in, tensors of one batch out.

Data are converted once (to the model's float dtype for features), then each
batch is a slice (or, when shuffling, a gathered permutation) of the arrays.
Labels or sample weights that are not numbers (strings, objects) are refused
with the fix, as Keras refuses them: string labels would otherwise train while
accuracy reads 0.0.
"""
import numbers

import numpy as np

from .. import backend
from ..core.tensor import Tensor

__all__ = ["as_arrays", "split_validation", "class_sample_weight", "batches", "num_batches",
           "num_samples", "is_structure", "map_arrays"]


def _as_array(value, dtype=None):
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value._value
    if not backend.is_array(value):
        value = np.asarray(value)
    if dtype is not None and value.dtype.kind in "fiub" and value.dtype != dtype:
        if value.dtype.kind == "f" or dtype.kind == "f":
            value = value.astype(dtype)
    return value


def _kind(value):
    """The dtype kind of array data ("f", "i" ...), None for None."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value._value
    return (value if backend.is_array(value) else np.asarray(value)).dtype.kind


def as_arrays(x, y=None, sample_weight=None, dtype=np.float32, where="fit"):
    """(x, y, sample_weight) as arrays of one length; clear errors for mismatches.  Each may be
    a list or dict of arrays (a model of several inputs or outputs): arrays in the same places."""
    if x is None:
        raise ValueError(f"{where}: x is required")
    dtype = np.dtype(dtype)
    x = map_arrays(lambda v: _as_array(v, dtype), x)
    for name, arr in named_arrays(x, "x"):
        if arr is None or arr.ndim == 0:
            raise ValueError(f"{where}: {name} needs a batch axis (one row per sample), got "
                             f"{'None' if arr is None else 'a scalar'}")
    y = map_arrays(lambda v: _as_array(v, dtype if _kind(v) == "f" else None), y)
    sample_weight = map_arrays(lambda v: _as_array(v, dtype), sample_weight)
    for name, arr in named_arrays(y, "y"):
        _require_numbers(arr, name, where)
    for name, arr in named_arrays(sample_weight, "sample_weight"):
        _require_numbers(arr, name, where)
    (first, x0), *_ = named_arrays(x, "x")
    n = x0.shape[0]
    for name, arr in named_arrays((x, y, sample_weight), ("x", "y", "sample_weight")):
        if arr is not None and (arr.ndim == 0 or arr.shape[0] != n):
            raise ValueError(f"{where}: {first} has {n} samples but {name} has "
                             f"{arr.shape[0] if arr.ndim else 'none (a scalar)'}")
    # onto the current device once per call, not once per batch (no-op on the CPU)
    return tuple(map_arrays(_on_device, a) for a in (x, y, sample_weight))


def _on_device(value):
    xp = backend.device_module()
    if value is None or xp is np or backend.array_module(value) is xp:
        return value
    return xp.asarray(value)


def is_structure(value):
    """A list, tuple or dict of arrays (several inputs or outputs, as Keras reads them), not one
    array written as nested lists of numbers or a list of numpy scalars."""
    if isinstance(value, dict):
        return True
    return isinstance(value, (list, tuple)) and any(
        isinstance(v, (dict, Tensor)) or (backend.is_array(v) and v.ndim > 0)
        for v in value)


def map_arrays(fn, value):
    """``fn`` of each array in ``value`` (one array, or a list/tuple/dict of them)."""
    if isinstance(value, dict):
        return {k: fn(v) for k, v in value.items()}
    if is_structure(value):
        return type(value)(fn(v) for v in value)
    return fn(value)


def named_arrays(value, name):
    """``[(name, array), ...]`` of each array in ``value``, named as written (``x['a']``,
    ``y[1]``); ``value`` and ``name`` may be tuples of several."""
    if isinstance(name, tuple):
        return [pair for v, n in zip(value, name) for pair in named_arrays(v, n)]
    if value is None:
        return []
    if isinstance(value, dict):
        return [(f"{name}[{k!r}]", v) for k, v in value.items()]
    if is_structure(value):
        return [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    return [(name, value)]


def num_samples(x):
    """The number of samples of ``x`` (an array, or a list/dict of arrays of one length)."""
    return named_arrays(x, "x")[0][1].shape[0]


def _require_numbers(arr, name, where):
    """Refuse labels (or weights) that are not numbers: string labels would train while every
    comparison with a prediction fails, so accuracy reads 0.0 throughout.  Bool is numeric."""
    if arr is None or arr.dtype.kind in "biuf":
        return
    if arr.dtype.kind in "US" or (arr.dtype.kind == "O" and arr.size
                                   and isinstance(arr.flat[0], (str, bytes))):
        what = f"strings (dtype {arr.dtype})"
    else:
        what = f"not numbers (dtype {arr.dtype})"
    if name.startswith("y"):
        raise ValueError(
            f"{where}: the labels y are {what}; the loss and metrics need numeric labels "
            f"(with strings, accuracy would read 0.0). Encode class names as integers first, "
            f"e.g. y = sklearn.preprocessing.LabelEncoder().fit_transform(y) (or "
            f"classes, y = np.unique(y, return_inverse=True)); numbers held as objects: "
            f"y = y.astype('float32')")
    raise ValueError(f"{where}: the {name} values are {what}; weights must be numbers "
                     f"(e.g. {name} = {name}.astype('float32'))")


def split_validation(x, y, sample_weight, fraction):
    """The last ``fraction`` of the samples become validation data, as in Keras (before any
    shuffling, so the same samples are held out every epoch)."""
    if not 0 < fraction < 1:
        raise ValueError(f"validation_split must be between 0 and 1, got {fraction}")
    n = num_samples(x)
    cut = int(n * (1 - fraction))
    if cut == 0 or cut == n:
        raise ValueError(f"validation_split={fraction} leaves no training or no validation "
                         f"samples out of {n}")

    def part(a, sl):
        return None if a is None else map_arrays(lambda v: v[sl], a)
    train = (part(x, slice(0, cut)), part(y, slice(0, cut)), part(sample_weight, slice(0, cut)))
    val = (part(x, slice(cut, None)), part(y, slice(cut, None)),
           part(sample_weight, slice(cut, None)))
    return train, val


def class_sample_weight(y, sample_weight, class_weight, dtype=np.float32, where="fit"):
    """``fit(class_weight={class: weight})`` as per-sample weights, times ``sample_weight``.

    A sample's class is its label as Keras reads it: a sparse label (shape ``(n,)``
    or ``(n, 1)``, rounded, so a binary label's probability counts as its nearest
    class) or the argmax of a one-hot / probability row (``(n, classes)``).  Every
    class the labels hold needs a weight; keys are class indices (integers).
    """
    keras_says = ("Expected `class_weight` to be a dict with keys from 0 to one less than the "
                  f"number of classes, found {class_weight!r}")
    if not isinstance(class_weight, dict):
        raise ValueError(f"{where}: class_weight must be a dict {{class index: weight}}, such "
                         f"as {{0: 1.0, 1: 3.0}}; got {type(class_weight).__name__}")
    if y is None:
        raise ValueError(f"{where}: class_weight weights samples by their labels, but no y was "
                         f"given")
    if is_structure(y):
        raise ValueError(f"{where}: class_weight weights samples by the class of one label; "
                         f"for a model of several outputs give sample_weight (one array per "
                         f"output) instead")
    bad = [k for k in class_weight
           if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 0]
    if bad:
        raise ValueError(f"{where}: {keras_says}: the keys must be class indices (integers "
                         f"0, 1, ...), not {bad!r}. Map class names to their indices first "
                         f"(e.g. with the LabelEncoder that encoded y).")
    try:
        weights = {int(k): float(v) for k, v in class_weight.items()}
    except (TypeError, ValueError):
        raise ValueError(f"{where}: class_weight's values must be numbers, got "
                         f"{class_weight!r}") from None
    labels = np.asarray(backend.to_host(y))
    if labels.ndim == 2 and labels.shape[1] > 1:
        labels = labels.argmax(axis=1)
    elif labels.ndim == 2:
        labels = labels[:, 0]
    elif labels.ndim != 1:
        raise ValueError(f"{where}: class_weight needs one label per sample: sparse labels of "
                         f"shape (n,) or (n, 1), or one-hot rows (n, classes); y has shape "
                         f"{labels.shape}. Weight samples with sample_weight instead.")
    classes, index = np.unique(np.round(labels).astype(np.int64), return_inverse=True)
    missing = [int(c) for c in classes if int(c) not in weights]
    if missing:
        raise ValueError(f"{where}: {keras_says}: the labels hold class(es) {missing} that "
                         f"class_weight has no weight for. Give every class a weight.")
    per_sample = np.array([weights[int(c)] for c in classes], dtype=dtype)[index.reshape(-1)]
    if sample_weight is None:
        return backend.asarray(per_sample, like=y)  # where the labels are: moved once per run
    per_sample = per_sample.reshape((-1,) + (1,) * (sample_weight.ndim - 1))
    return sample_weight * backend.asarray(per_sample, like=sample_weight)


def num_batches(n, batch_size):
    return max(1, -(-n // batch_size)) if n else 0


def batches(x, y, sample_weight, batch_size, shuffle=False, rng=None):
    """Yield each batch as Keras packs it: ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

    A ``train_step`` written for Keras unpacks ``x, y = data`` when there are no
    sample weights, so the tuple is only as long as the data given.
    """
    n = num_samples(x)
    order = None
    if shuffle:  # drawn on the host (the same order on every device), moved once per epoch
        order = rng.permutation(n)
        (_, first), *_ = named_arrays(x, "x")
        order = backend.to_device(order, like=first)
    given = (x,) if y is None and sample_weight is None else \
        (x, y) if sample_weight is None else (x, y, sample_weight)
    plain = all(a is not None and not isinstance(a, dict) and not is_structure(a)
                for a in given)
    for start in range(0, n, batch_size):
        if order is None:
            sl = slice(start, start + batch_size)
        else:
            sl = order[start:start + batch_size]
        if plain:  # one array each (the common case): no structure to walk per batch
            yield (Tensor(x[sl]), Tensor(y[sl])) if len(given) == 2 else \
                tuple(Tensor(a[sl]) for a in given)
            continue
        def rows(a):
            return None if a is None else map_arrays(lambda v: Tensor(v[sl]), a)
        batch = (rows(x), rows(y), rows(sample_weight))
        if sample_weight is None:
            batch = batch[:1] if y is None else batch[:2]
        yield batch
