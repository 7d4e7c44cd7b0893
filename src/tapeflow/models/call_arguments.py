"""The plain (non-tensor) arguments of a saved layer call, as JSON, and back.

A functional model's config saves each layer call's arguments.  Numbers,
strings, None, lists and dicts are JSON already; the others a call on symbolic
tensors takes (``x[:, :2]``, ``tf.cast(x, tf.int32)``, ``x * np.array(...)``)
are written in the Keras forms: ``{"class_name": "__tuple__", "items": [...]}``
(TF-Keras's JSON form; a tuple index is not a list index), ``"__slice__"`` and
``"__ellipsis__"`` (Keras 3's), ``"__numpy__"`` and ``"__tensor__"`` (Keras 3's:
the values and dtype); a DType is its name and a numpy scalar its Python value.
"""
import numpy as np

from ..core.tensor import Tensor, constant
from ..dtypes import DType

__all__ = ["encode_argument", "decoded_argument", "SPECIAL"]

SPECIAL = ("__tuple__", "__slice__", "__ellipsis__", "__numpy__", "__tensor__")


def encode_argument(value, encode):
    """``value`` as JSON; ``encode`` encodes what it holds (tensors, nested structures)."""
    if isinstance(value, tuple):
        return {"class_name": "__tuple__", "items": [encode(v) for v in value]}
    if isinstance(value, slice):
        return {"class_name": "__slice__", "config": {
            "start": encode(value.start), "stop": encode(value.stop), "step": encode(value.step)}}
    if value is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(value, Tensor):
        return {"class_name": "__tensor__", "config": {
            "value": value.numpy().tolist(), "dtype": value.dtype.name}}
    if isinstance(value, np.ndarray):
        return {"class_name": "__numpy__", "config": {
            "value": value.tolist(), "dtype": value.dtype.name}}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, DType):
        return value.name
    return value


def decoded_argument(value, decode):
    """The value ``encode_argument`` wrote as the dict ``value`` (its class_name in SPECIAL);
    ``decode`` decodes what it holds."""
    kind = value["class_name"]
    config = value.get("config") or {}
    if kind == "__tuple__":
        items = value.get("items")
        if not isinstance(items, list):
            raise ValueError(f"a saved tuple has items {items!r}, not a list")
        return tuple(decode(v) for v in items)
    if kind == "__slice__":
        return slice(decode(config.get("start")), decode(config.get("stop")),
                     decode(config.get("step")))
    if kind == "__ellipsis__":
        return Ellipsis
    try:
        dtype = np.dtype(config["dtype"])
        if dtype.kind not in "biufc":
            raise TypeError(f"{dtype.name} is not a number or bool type")
        array = np.array(config["value"], dtype=dtype)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"a saved {kind} needs a 'value' and a numeric 'dtype' ({e})") from None
    return array if kind == "__numpy__" else constant(array)
