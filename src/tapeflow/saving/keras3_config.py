"""A model config as Keras 3 writes it (a ``.keras`` archive's ``config.json``), in the terms
tapeflow's ``from_config`` methods read.

Keras 3 names three things differently from tapeflow's own configs:

- a layer's ``dtype`` is a ``DTypePolicy`` object (``{"class_name": "DTypePolicy",
  "config": {"name": "float32"}}``): tapeflow takes the policy's name;
- a Sequential's input shape is ``build_input_shape``, tapeflow's ``input_shape``;
- newer Keras releases add arguments whose default is what tapeflow does
  (``quantization_config=None``, an initializer's ``input_axes=None``,
  MultiHeadAttention's ``use_gate=False``, BatchNormalization's ``renorm=False``): dropped
  at that default only, so any other value reaches the layer, which refuses it by name;
- an object serialized twice carries a ``shared_object_id`` (each copy whole): dropped.

Nothing else changes: classes are still found by name only (a Lambda's bytecode or an
unknown class is refused by the layer readers, as for tapeflow's own files).
"""

__all__ = ["from_keras3"]

_POLICY_CLASSES = ("DTypePolicy", "FloatDTypePolicy")

# argument -> the Keras 3 default that is tapeflow's behaviour (added in Keras 3.x releases)
_DEFAULTS_TAPEFLOW_HAS = {
    "quantization_config": None,    # Dense, EinsumDense, Embedding: no quantization
    "input_axes": None,             # variance-scaling initializers: fan from the usual axes
    "output_axes": None,
    "sliding_window": None,         # MultiHeadAttention: attends over every position
    "use_gate": False,              # MultiHeadAttention: no output gate
    "data_format": "channels_last",  # Flatten (and the layers tapeflow has: their default)
    "renorm": False,                # BatchNormalization: no batch renormalization
    "renorm_clipping": None,
    "renorm_momentum": 0.99,        # (used only with renorm)
    "synchronized": False,          # BatchNormalization: one replica's statistics
}

# Keras's mark on an object serialized more than once; each occurrence holds the full config
_BOOKKEEPING = frozenset({"shared_object_id"})

_MAX_DEPTH = 200


def from_keras3(config, depth=0):
    """``config`` (parsed JSON) with Keras 3's spellings replaced by tapeflow's (a copy)."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"the model config nests deeper than {_MAX_DEPTH} levels")
    if isinstance(config, list):
        return [from_keras3(item, depth + 1) for item in config]
    if not isinstance(config, dict):
        return config
    if config.get("class_name") in _POLICY_CLASSES and isinstance(config.get("config"), dict) \
            and isinstance(config["config"].get("name"), str):
        return config["config"]["name"]
    out = {}
    for key, value in config.items():
        if key in _BOOKKEEPING:
            continue
        if key in _DEFAULTS_TAPEFLOW_HAS and _same(value, _DEFAULTS_TAPEFLOW_HAS[key]):
            continue
        out[key] = from_keras3(value, depth + 1)
    if out.get("class_name") == "Sequential" and isinstance(out.get("config"), dict):
        inner = dict(out["config"])
        if "build_input_shape" in inner:
            shape = inner.pop("build_input_shape")
            inner.setdefault("input_shape", shape)
        out["config"] = inner
    return out


def _same(value, default):
    return value is default or (type(value) is type(default) and value == default)
