"""get_config completeness: every layer of ``tapeflow.keras.layers`` carries every constructor
argument in ``get_config()``, and ``from_config(get_config())`` reproduces the config (through
JSON, as a saved model holds it).  Keras 3 checks the same in ``testing.TestCase.run_layer_test``
(``run_class_serialization_test``: the config of a layer made from its config equals the
config).  Layers are made as the layer battery makes them (``tests/layers/layer_cases.py``)."""
import inspect
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import constraints, initializers, regularizers
from tapeflow.keras import layers
from tests.layers.layer_cases import CASES

# layers the battery leaves out, made here with their required arguments
EXTRA = {
    layers.InputLayer: dict(shape=(3,)),
    layers.SimpleRNNCell: dict(units=2),
    layers.LSTMCell: dict(units=2),
    layers.GRUCell: dict(units=2),
    layers.MultiHeadAttention: dict(num_heads=2, key_dim=3),
}

# constructor arguments a config need not carry, each with the reason
NOT_IN_CONFIG = {
    "activity_regularizer": "refused unless None here (the layer has no activity regularizer)",
    "lora_rank": "refused unless None (no LoRA in tapeflow)",
    "mask": "Lambda(mask=...) is refused unless None",
    "weights": "initial values: the weights themselves are saved, not the argument",
    "input_shape": "Keras 2's declaration of the model's input; the model's config holds it",
    "batch_shape": "InputLayer: another spelling of shape and batch_size, which it carries",
    "sparse": "InputLayer: Keras 3 writes it (false) into its configs; refused unless false",
    "ragged": "InputLayer: Keras 3 writes it (false) into its configs; refused unless false",
    "optional": "InputLayer: Keras 3 writes it (false) into its configs; refused unless false",
    "cell": "SimpleRNN/LSTM/GRU make their cell from its arguments, which they carry",
    "use_cudnn": "a kernel choice (same numbers), accepted so Keras configs load",
    "implementation": "Keras 2's kernel choice (same numbers), accepted so Keras configs load",
    "time_major": "refused unless False",
    "backward_layer": "Bidirectional carries it when one was given (made from layer otherwise)",
    "groups": "Conv*Transpose: a Conv argument the transposed convolutions do not take",
    "recurrent_activation": "SimpleRNNCell: a _Cell argument a simple RNN does not use",
}


def _cases():
    seen = {}
    for case in CASES:
        seen.setdefault(case.layer, (case.kwargs, case.input_shape))
    for cls, kwargs in EXTRA.items():
        seen.setdefault(cls, (kwargs, None))
    return sorted(seen.items(), key=lambda item: item[0].__name__)


def _public_layer_classes():
    return {obj for name in layers.__all__ for obj in [getattr(layers, name)]
            if isinstance(obj, type) and issubclass(obj, layers.Layer) and obj is not layers.Layer}


def _constructor_arguments(cls):
    """The named arguments of ``cls.__init__`` and, where it forwards ``**kwargs``, of the
    classes above it (up to Layer, whose arguments every config carries)."""
    names = set()
    for klass in cls.__mro__:
        if klass is layers.Layer:
            break
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters.values()
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names - {"self"}


def test_every_public_layer_class_is_covered():
    assert _public_layer_classes() <= {cls for cls, _ in _cases()}


@pytest.mark.parametrize("cls, made", _cases(), ids=lambda x: getattr(x, "__name__", ""))
def test_config_carries_every_argument_and_round_trips(cls, made):
    kwargs, input_shape = made
    layer = cls(**kwargs)
    if cls is layers.Lambda:  # a Lambda is saved as its function's graph: traced on a call
        layer(np.zeros(input_shape, np.float32))
    config = layer.get_config()
    missing = _constructor_arguments(cls) - set(config) - set(NOT_IN_CONFIG)
    assert not missing, f"{cls.__name__}.get_config() lacks {sorted(missing)}"
    restored = cls.from_config(json.loads(json.dumps(config)))
    assert restored.get_config() == config


# --- the settings the issue found lost: non-default values survive the round trip ----------------
SETTINGS = dict(initializer=initializers.RandomNormal(stddev=0.5, seed=3),
                regularizer=regularizers.L1L2(l1=0.25, l2=0.5),
                constraint=constraints.MinMaxNorm(0.5, 2.0, rate=0.7, axis=1))


@pytest.mark.parametrize("cls, args, prefixes", [
    (layers.Dense, dict(units=2), ("kernel", "bias")),
    (layers.Conv2D, dict(filters=2, kernel_size=3), ("kernel", "bias")),
    (layers.LSTM, dict(units=2), ("kernel", "recurrent", "bias")),
    (layers.BatchNormalization, {}, ("beta", "gamma")),
    (layers.LayerNormalization, {}, ("beta", "gamma")),
    (layers.Embedding, dict(input_dim=4, output_dim=2), ("embeddings",)),
])
def test_initializers_regularizers_and_constraints_round_trip(cls, args, prefixes):
    kwargs = {f"{prefix}_{what}": value for prefix in prefixes
              for what, value in SETTINGS.items()}
    config = cls(**args, **kwargs).get_config()
    for key, value in kwargs.items():
        assert config[key] == {"class_name": type(value).__name__,
                               "config": value.get_config()}, f"{cls.__name__}: {key}"
    assert cls.from_config(json.loads(json.dumps(config))).get_config() == config


def test_batch_normalization_moving_initializers_round_trip():
    layer = layers.BatchNormalization(moving_mean_initializer="ones",
                                      moving_variance_initializer=initializers.Constant(2.0))
    config = layer.get_config()
    assert config["moving_variance_initializer"] == {"class_name": "Constant",
                                                     "config": {"value": 2.0}}
    clone = layers.BatchNormalization.from_config(config)
    clone(tf.zeros((1, 2)))
    np.testing.assert_array_equal(clone.moving_variance.numpy(), [2.0, 2.0])
