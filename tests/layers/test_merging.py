"""Merging layers against numpy, their shape checks, and Keras's lower-case functions.

(The layer battery, tests/layers/layer_cases.py, runs the shared checks: config and checkpoint
round trips, traced = eager, gradients to second order, a fit step.)"""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers
from tests.ops.gradcheck import check_grads


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("layer, reference", [
    (layers.Add, lambda xs: sum(xs)),
    (layers.Multiply, lambda xs: xs[0] * xs[1] * xs[2]),
    (layers.Average, lambda xs: sum(xs) / 3),
    (layers.Maximum, lambda xs: np.maximum(np.maximum(xs[0], xs[1]), xs[2])),
    (layers.Minimum, lambda xs: np.minimum(np.minimum(xs[0], xs[1]), xs[2])),
])
def test_elementwise_merges_match_numpy(layer, reference):
    xs = _arrays((4, 3), (4, 3), (4, 3))
    np.testing.assert_allclose(layer()(xs).numpy(), reference(xs), rtol=1e-6)


def test_subtract_and_broadcasting_sizes_of_one():
    a, b, c = _arrays((4, 3), (4, 3), (4, 1))
    np.testing.assert_allclose(layers.Subtract()([a, b]).numpy(), a - b)
    np.testing.assert_allclose(layers.Multiply()([a, c]).numpy(), a * c, rtol=1e-6)
    np.testing.assert_allclose(layers.Add()([a, c]).numpy(), a + c, rtol=1e-6)
    assert layers.Add().compute_output_shape([(None, 3), (None, 1)]) == (None, 3)


def test_concatenate_on_any_axis():
    a, b = _arrays((2, 3, 4), (2, 1, 4))
    np.testing.assert_array_equal(layers.Concatenate(axis=1)([a, b]).numpy(),
                                  np.concatenate([a, b], axis=1))
    c, d = _arrays((2, 3), (2, 5))
    np.testing.assert_array_equal(layers.Concatenate()([c, d]).numpy(), np.concatenate([c, d], 1))
    assert layers.Concatenate(axis=1).compute_output_shape([(None, 3, 4), (None, None, 4)]) == \
        (None, None, 4)


@pytest.mark.parametrize("axes, shapes, spec", [
    (1, [(4, 3), (4, 3)], "bi,bi->b"),
    (2, [(4, 2, 3), (4, 5, 3)], "bij,bkj->bik"),
    ((1, 1), [(4, 3, 2), (4, 3, 5)], "bij,bik->bjk"),
    ((2, 1), [(4, 2, 3), (4, 3)], "bij,bj->bi"),
])
def test_dot_is_a_batched_dot_over_the_axes(axes, shapes, spec):
    x, y = _arrays(*shapes)
    want = np.einsum(spec, x, y)
    got = layers.Dot(axes=axes)([x, y])
    np.testing.assert_allclose(got.numpy(), want.reshape(want.shape + (1,) * (want.ndim == 1)),
                               rtol=1e-5, atol=1e-6)
    assert tuple(got.shape) == (4,) + layers.Dot(axes=axes).compute_output_shape(
        [(None,) + s[1:] for s in shapes])[1:]


def test_dot_normalize_is_the_cosine():
    x, y = _arrays((4, 3), (4, 3))
    cos = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    np.testing.assert_allclose(layers.Dot(axes=1, normalize=True)([x, y]).numpy()[:, 0], cos,
                               rtol=1e-5)


def test_gradients_to_second_order_in_float64():
    x, y = [a.astype(np.float64) for a in _arrays((3, 2, 3), (3, 4, 3))]

    def merged(x, y):
        dot = layers.Dot(axes=2, normalize=True, dtype="float64")([x, y])
        return layers.Concatenate(axis=-1, dtype="float64")([dot, layers.Maximum(
            dtype="float64")([x, tf.math.tanh(x)]) * layers.Average(dtype="float64")([x, x])])
    check_grads(merged, [x, y], order=2)


@pytest.mark.parametrize("call, words", [
    (lambda a, b: layers.Add()([a, b]), ["Add needs inputs of one shape", "(None, 3)",
                                          "(None, 4)"]),
    (lambda a, b: layers.Subtract()([a, a, a]), ["Subtract takes exactly 2 inputs, got 3"]),
    (lambda a, b: layers.Add()(a), ["Add is called on a list of tensors", "one tensor"]),
    (lambda a, b: layers.Concatenate(axis=-1)([a, tf.keras.Input((4, 3))]),
     ["needs inputs of one rank"]),
    (lambda a, b: layers.Concatenate(axis=1)([tf.keras.Input((3, 2)), tf.keras.Input((3, 4))]),
     ["sizes to agree on every other axis"]),
    (lambda a, b: layers.Dot(axes=1)([a, b]), ["their sizes differ"]),
    (lambda a, b: layers.Dot(axes=0)([a, a]), ["axes after the batch axis"]),
])
def test_bad_shapes_are_one_clear_error(call, words):
    a, b = tf.keras.Input((3,)), tf.keras.Input((4,))
    with pytest.raises(ValueError) as info:
        call(a, b)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_bad_shapes_on_data_too():
    a, b = _arrays((2, 3), (2, 4))
    with pytest.raises(ValueError, match="needs inputs of one shape"):
        layers.Average()([a, b])
    with pytest.raises(ValueError, match="axes must be an integer"):
        layers.Dot(axes="last")


def test_functional_aliases_make_and_call_the_layer():
    a, b = tf.keras.Input((3,), name="a"), tf.keras.Input((3,), name="b")
    outputs = [layers.concatenate([a, b]), layers.add([a, b]), layers.subtract([a, b]),
               layers.multiply([a, b]), layers.average([a, b]), layers.maximum([a, b]),
               layers.minimum([a, b]), layers.dot([a, b], axes=1)]
    assert [tuple(o.shape) for o in outputs] == [(None, 6)] + [(None, 3)] * 6 + [(None, 1)]
    model = tf.keras.Model([a, b], outputs)
    x, y = _arrays((2, 3), (2, 3))
    got = [o.numpy() for o in model([x, y])]
    np.testing.assert_allclose(got[0], np.concatenate([x, y], 1))
    np.testing.assert_allclose(got[2], x - y)
    np.testing.assert_allclose(got[7][:, 0], (x * y).sum(1), rtol=1e-6)


def test_configs_round_trip_through_json():
    for layer in (layers.Concatenate(axis=1, name="cat"), layers.Dot(axes=(1, 2), normalize=True),
                  layers.Add(name="plus")):
        config = json.loads(json.dumps(layer.get_config()))
        clone = type(layer).from_config(config)
        assert clone.get_config() == layer.get_config()
    assert layers.Dot.from_config(layers.Dot(axes=(1, 2)).get_config()).axes == (1, 2)
