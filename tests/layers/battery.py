"""One battery every layer passes (Keras's ``run_layer_test``), driven by a ``LayerCase``.

A case says how to make the layer and what to feed it; each ``check_*`` below is one
property, and ``run_layer_test(case)`` runs them all:

* ``check_shape_and_dtype``: the output has ``compute_output_shape``'s shape and the
  layer's dtype (float32 by default, float64 when asked);
* ``check_other_batch_sizes``: built on one batch, the layer takes a batch of one, and in
  inference an example's output does not depend on the rest of its batch;
* ``check_training_and_inference``: both modes run; a layer that does not change with
  ``training`` gives the same output in both, a random one gives the same inference output
  twice;
* ``check_config_round_trip``: ``from_config(json(get_config()))`` with the weights copied
  computes the same function;
* ``check_traced_equals_eager``: ``tf.function`` traced equals eager, in both modes where
  training is not random;
* ``check_gradients``: the tape's gradients w.r.t. the inputs (where differentiable) and the
  trainable weights against central differences in float64, and, where smooth, a Hessian-vector
  product (the gradient of ``<gradient, v>``) likewise;
* ``check_checkpoint_round_trip``: inside a model, ``model.save`` as .keras and .h5 then
  ``load_model`` predicts the same;
* ``check_training_step``: one ``fit`` step gives a finite loss and moves the layer's
  trainable weights.

Layers that take several inputs (merging layers) give ``input_shape`` as a list of shapes;
layers that take data that is not differentiated (integer ids) give an ``input_builder``
and ``differentiable_inputs=False``.
"""
import dataclasses
import json
import warnings
from typing import Callable, Optional

import numpy as np

import tapeflow as tf
from tests.training_methods.differences import central_differences

__all__ = ["LayerCase", "run_layer_test", "CHECKS"]


@dataclasses.dataclass
class LayerCase:
    """How to make one layer and what to feed it.

    ``input_shape`` includes the batch axis (small: the gradient checks step every element);
    a list of shapes for a layer taking a list of inputs. ``input_builder(rng, dtype)``
    replaces the standard-normal inputs (integer ids, inputs without ties or kinks).
    ``second_order``: the layer is smooth at the inputs given, so a Hessian-vector product is
    checked too. ``random_in_training``: training-mode outputs are random (Dropout), so they
    are not compared. ``training_changes_output``: training and inference outputs differ
    (BatchNormalization's batch statistics). ``trainable``: at least one weight must move in a
    ``fit`` step. ``id`` distinguishes two cases of one class in test names.
    """
    layer: type
    kwargs: dict = dataclasses.field(default_factory=dict)
    input_shape: object = (2, 3)
    input_builder: Optional[Callable] = None
    input_dtype: Optional[str] = None   # the Input's dtype in a model (e.g. "int32" for ids)
    differentiable_inputs: bool = True
    second_order: bool = True
    random_in_training: bool = False
    training_changes_output: bool = False
    trainable: Optional[bool] = None    # None: whatever the built layer says
    id: str = ""
    rtol: float = 1e-6
    atol: float = 1e-8

    @property
    def name(self):
        return self.id or self.layer.__name__

    @property
    def multi_input(self):
        return isinstance(self.input_shape, list)

    def make(self, dtype=None):
        kwargs = dict(self.kwargs)
        if dtype is not None:
            kwargs["dtype"] = dtype
        return self.layer(**kwargs)

    def inputs(self, dtype="float32", seed=0):
        """The arrays fed to the layer: one array, or a list of them for a multi-input layer."""
        rng = np.random.default_rng(seed)
        if self.input_builder is not None:
            return self.input_builder(rng, dtype)
        if self.multi_input:
            return [rng.standard_normal(s).astype(dtype) for s in self.input_shape]
        return rng.standard_normal(self.input_shape).astype(dtype)


# --- plumbing ---------------------------------------------------------------------------------
def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _numpy(outputs):
    return [np.asarray(o.numpy()) for o in _as_list(outputs)]


def _shapes(inputs):
    """Each input's shape with the batch axis unknown (what compute_output_shape takes)."""
    shapes = [(None,) + tuple(np.shape(a))[1:] for a in _as_list(inputs)]
    return shapes if isinstance(inputs, list) else shapes[0]


def _feed(inputs):
    """Arrays as constants (a list stays a list: a multi-input layer's one argument)."""
    if isinstance(inputs, list):
        return [tf.constant(a) for a in inputs]
    return tf.constant(inputs)


def _assert_same(got, want, what, case, rtol=0.0, atol=0.0):
    assert len(got) == len(want), f"{case.name}: {what}: {len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{case.name}: {what}: output {i} has shape {g.shape}, " \
                                   f"expected {w.shape}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                   err_msg=f"{case.name}: {what}, output {i}")


def _built(case, dtype=None, inputs=None):
    layer = case.make(dtype)
    layer(_feed(case.inputs(layer.dtype) if inputs is None else inputs), training=False)
    return layer


# --- the checks -------------------------------------------------------------------------------
def check_shape_and_dtype(case):
    for dtype in (None, "float64"):
        layer = case.make(dtype)
        x = case.inputs(layer.dtype)
        outs = _as_list(layer(_feed(x), training=False))
        expected = layer.compute_output_shape(_shapes(x))
        expected = expected if isinstance(expected, list) else [expected]
        batch = np.shape(_as_list(x)[0])[0]
        for i, (out, shape) in enumerate(zip(outs, expected, strict=True)):
            assert shape[0] is None, f"{case.name}: compute_output_shape keeps the batch axis " \
                                     f"unknown (None), got {shape}"
            assert tuple(out.shape) == (batch,) + tuple(shape[1:]), \
                f"{case.name}: output {i} has shape {tuple(out.shape)}, compute_output_shape " \
                f"says {shape}"
            assert out.dtype == layer.dtype, \
                f"{case.name}: output {i} is {out.dtype}, the layer's dtype is {layer.dtype}"


def check_other_batch_sizes(case):
    """Built on one batch, the layer takes another size; in inference each example's output
    is its own (nothing from the first batch's size is kept)."""
    layer = _built(case, "float64")
    x = case.inputs("float64")
    whole = _numpy(layer(_feed(x), training=False))
    first = [a[:1] for a in x] if isinstance(x, list) else x[:1]
    _assert_same(_numpy(layer(_feed(first), training=False)), [o[:1] for o in whole],
                 "the first example alone vs within the batch (inference)", case,
                 rtol=1e-10, atol=1e-12)


def check_training_and_inference(case):
    layer = _built(case)
    x = _feed(case.inputs())
    inference = _numpy(layer(x, training=False))
    training = _numpy(layer(x, training=True))
    for a, b in zip(training, inference, strict=True):
        assert a.shape == b.shape and np.all(np.isfinite(a)), f"{case.name}: training output"
    if case.random_in_training:
        _assert_same(_numpy(layer(x, training=False)), inference, "inference twice", case)
    elif not case.training_changes_output:
        _assert_same(training, inference, "training=True vs training=False", case)
    else:
        assert any(not np.array_equal(a, b) for a, b in zip(training, inference)), \
            f"{case.name}: the case says training changes the output, but it did not"


def check_config_round_trip(case):
    layer = _built(case)
    config = layer.get_config()
    clone = type(layer).from_config(json.loads(json.dumps(config)))  # tuples come back as lists
    x = _feed(case.inputs())
    clone(x, training=False)
    clone.set_weights(layer.get_weights())
    assert clone.get_config() == config, f"{case.name}: get_config changes in a round trip"
    _assert_same(_numpy(clone(x, training=False)), _numpy(layer(x, training=False)),
                 "from_config(get_config()) with the weights copied", case)


def check_traced_equals_eager(case):
    modes = (False,) if case.random_in_training else (False, True)
    for training in modes:
        layer = _built(case)
        x = _feed(case.inputs())
        traced = tf.function(lambda x, training=training: layer(x, training=training))
        got = _numpy(traced(x))
        want = _numpy(layer(x, training=training))
        _assert_same(got, want, f"tf.function vs eager (training={training})", case,
                     rtol=1e-6, atol=1e-7)


def _sources(case, layer, x):
    """What the gradients are taken w.r.t.: the inputs as Variables (where differentiable),
    then the layer's trainable weights; and a label for each."""
    inputs = [tf.Variable(a) for a in _as_list(x)] if case.differentiable_inputs else []
    weights = list(layer.trainable_variables)
    labels = [f"input {i}" for i in range(len(inputs))] + [f"weight {v.path}" for v in weights]
    return inputs, inputs + weights, labels


def _weighted_output(case, layer, x, inputs, ws, training):
    """sum(layer(x) * w) for fixed random cotangents w: one scalar that sees every output."""
    if inputs:
        fed = inputs if isinstance(x, list) else inputs[0]
    else:
        fed = _feed(x)
    outs = _as_list(layer(fed, training=training))
    return tf.add_n([tf.reduce_sum(o * tf.constant(w)) for o, w in zip(outs, ws, strict=True)])


def _tape_gradients(fn, sources):
    with tf.GradientTape() as tape:
        value = fn()
    return [np.asarray(g.numpy()) for g in
            tape.gradient(value, sources, unconnected_gradients="zero")]


def _assert_gradients_match_differences(fn, sources, labels, what, case, rtol, atol, eps=1e-6):
    """The tape's gradient of the scalar ``fn()`` w.r.t. Variables against central
    differences, entry by entry (unconnected sources: zero; ``differences.py`` has no such
    case, a second derivative of a linear layer has)."""
    grads = _tape_gradients(fn, sources)
    numerics = central_differences(lambda: fn().numpy(), sources, eps)
    for label, g, numeric in zip(labels, grads, numerics):
        np.testing.assert_allclose(g, numeric, rtol=rtol, atol=atol,
                                   err_msg=f"{case.name}: {what} w.r.t. {label} against "
                                           f"central differences")


def check_gradients(case):
    modes = (False,) if case.random_in_training else (False, True)
    for training in modes:
        layer = _built(case, "float64")
        x = case.inputs("float64", seed=1)
        inputs, sources, labels = _sources(case, layer, x)
        if not sources:
            continue
        rng = np.random.default_rng(2)
        ws = [rng.standard_normal(o.shape) for o in _numpy(layer(_feed(x), training=False))]

        def first():
            return _weighted_output(case, layer, x, inputs, ws, training)
        _assert_gradients_match_differences(first, sources, labels,
                                            f"gradient (training={training})", case, case.rtol,
                                            case.atol)
        if not case.second_order:
            continue
        vs = [rng.standard_normal(tuple(s.shape)) for s in sources]

        def directional():  # <gradient, v>: its gradient is a Hessian-vector product
            with tf.GradientTape() as tape:
                value = first()
            grads = tape.gradient(value, sources, unconnected_gradients="zero")
            return tf.add_n([tf.reduce_sum(g * tf.constant(v)) for g, v in zip(grads, vs)])
        _assert_gradients_match_differences(
            directional, sources, labels, f"Hessian-vector product (training={training})", case,
            case.rtol * 10, case.atol * 10)


def _model(case, layer):
    """The layer inside a model, a Dense(2) after it (tapeflow saves no model without weights):
    a Sequential, or a functional Model for several inputs."""
    x = case.inputs()
    dtype = case.input_dtype
    head = tf.keras.layers.Dense(2)
    if case.multi_input:
        ins = [tf.keras.Input(shape=np.shape(a)[1:], dtype=dtype) for a in x]
        return tf.keras.Model(ins, head(layer(ins))), x
    return tf.keras.Sequential([tf.keras.Input(shape=np.shape(x)[1:], dtype=dtype), layer,
                                head]), x


def check_checkpoint_round_trip(case, tmp_path):
    tf.keras.utils.set_random_seed(0)
    model, x = _model(case, case.make())
    model.compile(optimizer="adam", loss="mse")
    want = _numpy(model(_feed(x), training=False))
    for suffix in (".keras", ".h5"):
        path = str(tmp_path / f"{case.name}{suffix}")
        with warnings.catch_warnings():  # a graph tied to the traced batch size is a bug
            warnings.filterwarnings("error", message=".*depends on the size of an argument")
            model.save(path)
        loaded = tf.keras.models.load_model(path)
        assert type(loaded.layers[-2]) is case.layer, \
            f"{case.name}: {suffix} loaded {type(loaded.layers[-2]).__name__}"
        _assert_same(_numpy(loaded(_feed(x), training=False)), want, f"load_model({suffix})", case)


def check_training_step(case):
    tf.keras.utils.set_random_seed(0)
    layer = case.make()
    model, x = _model(case, layer)
    target = [np.random.default_rng(3).standard_normal(o.shape).astype(np.float32)
              for o in _numpy(model(_feed(x), training=False))]
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    before = [v.numpy().copy() for v in layer.trainable_variables]
    batch = np.shape(_as_list(x)[0])[0]
    history = model.fit(x, target[0] if len(target) == 1 else target, epochs=1,
                        batch_size=batch, shuffle=False, verbose=0)
    loss = history.history["loss"][-1]
    assert np.isfinite(loss), f"{case.name}: the training step's loss is {loss}"
    trainable = case.trainable if case.trainable is not None else bool(before)
    if trainable:
        moved = [not np.array_equal(b, v.numpy())
                 for b, v in zip(before, layer.trainable_variables)]
        assert any(moved), f"{case.name}: a fit step left every trainable weight unchanged"


CHECKS = {
    "shape_and_dtype": check_shape_and_dtype,
    "other_batch_sizes": check_other_batch_sizes,
    "training_and_inference": check_training_and_inference,
    "config_round_trip": check_config_round_trip,
    "traced_equals_eager": check_traced_equals_eager,
    "gradients": check_gradients,
    "checkpoint_round_trip": check_checkpoint_round_trip,
    "training_step": check_training_step,
}


def run_layer_test(case, tmp_path):
    """Every check of the battery on one case (``tmp_path``: where checkpoints go)."""
    for name, check in CHECKS.items():
        if name == "checkpoint_round_trip":
            check(case, tmp_path)
        else:
            check(case)
