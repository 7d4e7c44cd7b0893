"""Keras 3's dtype policies: the dtype a layer computes in and the dtype its variables hold.

``"mixed_float16"`` computes in float16 and keeps float32 variables (cast when a layer reads
them, see ``layers/autocast.py``); a plain dtype name (``"float32"``, ``"float64"``) is both.
``set_global_policy`` chooses the policy of layers made afterwards without a ``dtype``; until
one is set (or after ``set_global_policy(None)``) that is Keras's ``floatx()`` ("float32" unless
``set_floatx`` changed it), which is also the dtype losses compute in.

``"mixed_bfloat16"`` computes in bfloat16 (ml_dtypes' type, the optional ``[bfloat16]``
extra) with float32 variables, and no loss scaling (Keras uses none for bfloat16, whose range
is float32's); without ml_dtypes bfloat16 policies are refused with an error naming the extra.
"""
import numpy as np

from .dtypes import DType, as_dtype

__all__ = ["DTypePolicy", "Policy", "set_global_policy", "global_policy", "get", "floatx",
           "set_floatx"]

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


class DTypePolicy:
    """A layer's dtypes: ``name``, ``compute_dtype`` and ``variable_dtype`` (names).

    ``DTypePolicy(None)`` is the global policy's copy, as Keras's."""

    def __init__(self, name=None):
        if name is None:
            name = global_policy().name
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, such as 'mixed_float16'. "
                            f"Received: name={name!r} (of type {type(name).__name__})")
        self._name = name
        self._compute_dtype, self._variable_dtype = _parse(name)

    @property
    def name(self):
        return self._name

    @property
    def compute_dtype(self):
        return self._compute_dtype

    @property
    def variable_dtype(self):
        return self._variable_dtype

    @property
    def is_quantized(self):
        return False

    def get_config(self):
        return {"name": self._name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return type(other) is type(self) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f'<{type(self).__name__} "{self._name}">'


Policy = DTypePolicy  # Keras 2's and tf.keras's name


def _parse(name):
    """(compute dtype, variable dtype) for a policy name; ValueError naming it otherwise."""
    if name in _MIXED:
        compute = _MIXED[name]
        if compute == "bfloat16":
            _require_bfloat16(name)
        return compute, "float32"
    if name == "bfloat16":
        _require_bfloat16(name)
        return name, name
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise ValueError(f"Cannot convert '{name}' to a dtype policy: use 'mixed_float16', "
                         f"'mixed_bfloat16' or a dtype name such as 'float32'") from None
    return dtype.name, dtype.name


def _require_bfloat16(name):
    """Loads ml_dtypes' bfloat16, or refuses ``name`` naming the extra that brings it."""
    try:
        as_dtype("bfloat16")
    except TypeError as missing:
        raise ValueError(f"The dtype policy '{name}' computes in bfloat16: {missing}. Or use "
                         f"'mixed_float16' (float16 compute, float32 variables).") from None


_FLOATX_CHOICES = ("float16", "float32", "float64")
_FLOATX = ["float32"]
_GLOBAL = [None]  # None: follow floatx()


def floatx():
    """Keras's default float type, as a name: "float32" unless ``set_floatx`` changed it."""
    return _FLOATX[0]


def set_floatx(value):
    """Keras's ``set_floatx``: the dtype of new layers (while no global policy is set) and of
    losses made without a ``dtype``."""
    name = value.name if isinstance(value, DType) else value
    if name not in _FLOATX_CHOICES:
        raise ValueError(f"Unknown `floatx` value: {value!r}. Expected one of "
                         f"{list(_FLOATX_CHOICES)} (bfloat16 needs ml_dtypes, see DTypePolicy)")
    _FLOATX[0] = name


def set_global_policy(policy):
    """The policy of layers made from now on without a ``dtype`` (a policy or its name);
    None goes back to following ``floatx()``."""
    _GLOBAL[0] = None if policy is None else get(policy)


def global_policy():
    return _GLOBAL[0] if _GLOBAL[0] is not None else DTypePolicy(floatx())


def get(identifier):
    """A DTypePolicy from a policy, a policy or dtype name, a DType or numpy dtype, a config
    dict, or None (the global policy)."""
    if identifier is None:
        return global_policy()
    if isinstance(identifier, DTypePolicy):
        return identifier
    if isinstance(identifier, dict):  # Keras 3's serialized form, or its config
        config = identifier.get("config", identifier)
        return DTypePolicy.from_config(config)
    if isinstance(identifier, DType):
        return DTypePolicy(identifier.name)
    if not isinstance(identifier, str):
        try:
            identifier = np.dtype(identifier).name
        except TypeError:
            raise TypeError(f"Cannot use {identifier!r} as a dtype policy: pass a policy name "
                            f"('mixed_float16'), a dtype or a DTypePolicy") from None
    return DTypePolicy(identifier)
