"""Lambda: in Sequential and fit; saved as the traced graph of its function (data, never code),
so a saved model reloads and predicts in a process without the function; refused, with the
reason and the fix, where a graph cannot stand for the function."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers

from tests.ops.gradcheck import check_grads

X = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)


def squash(x, power):
    return tf.tanh(x) ** power + tf.constant([1.0, -2.0, 0.5], x.dtype)


def test_lambda_in_sequential_fit():
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), layers.Dense(4),
                                 layers.Lambda(lambda t: t * tf.sigmoid(t)), layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    y = X[:, :1] * 2.0
    history = model.fit(X, y, epochs=10, batch_size=6, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_training_argument_and_output_shape():
    layer = layers.Lambda(lambda t, training=None: t * (2.0 if training else 1.0),
                          output_shape=(3,))
    assert np.array_equal(layer(X, training=True).numpy(), 2 * X)
    assert np.array_equal(layer(X).numpy(), X)
    assert layer.compute_output_shape((None, 3)) == (None, 3)
    assert layers.Lambda(lambda t: t, output_shape=lambda s: s[:1]).compute_output_shape(
        (None, 3)) == (None,)


def test_config_is_a_graph_that_replays_for_any_batch_size():
    layer = layers.Lambda(squash, arguments={"power": 3})
    want = layer(X).numpy()
    config = json.loads(json.dumps(layer.get_config()))
    text = json.dumps(config)
    assert "squash" not in text and "power" not in text  # no code, arguments baked in
    assert config["function"]["format"] == "tapeflow.traced_graph.v1"
    clone = layers.Lambda.from_config(config)
    np.testing.assert_allclose(clone(X).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(clone(X[:2]).numpy(), want[:2], rtol=1e-6)
    assert clone.get_config() == config
    traced = tf.function(lambda t: clone(t))
    np.testing.assert_allclose(traced(X).numpy(), want, rtol=1e-6)


def test_a_size_that_changes_between_calls_stays_free_in_the_graph():
    layer = layers.Lambda(lambda xs: xs[0] * 2.0 + xs[1])
    short = [np.ones((2, 3, 4), np.float32)] * 2  # a list of arrays: converted
    layer(short)
    layer.get_config()  # traced for 3 steps; a call on 5 widens the types and traces again
    layer([np.ones((2, 5, 4), np.float32)] * 2)
    clone = layers.Lambda.from_config(layer.get_config())
    assert clone([np.ones((1, 7, 4), np.float32)] * 2).numpy().tolist() == [[[3.0] * 4] * 7]


def test_replayed_graph_differentiates_to_second_order():
    layer = layers.Lambda(squash, arguments={"power": 3}, dtype="float64")
    layer(X.astype(np.float64))
    clone = layers.Lambda.from_config(layer.get_config())
    check_grads(lambda t: clone(t), [X.astype(np.float64)], order=2)


def test_multi_input_lambda_in_a_functional_model(tmp_path):
    a, b = tf.keras.Input(shape=(3,)), tf.keras.Input(shape=(3,))
    product = layers.Lambda(lambda xs: xs[0] * xs[1] + 1.0)([a, b])
    model = tf.keras.Model([a, b], layers.Dense(2)(product))
    want = model.predict([X, X[::-1]], verbose=0)
    model.save(str(tmp_path / "m.keras"))
    loaded = tf.keras.models.load_model(str(tmp_path / "m.keras"))
    np.testing.assert_allclose(loaded.predict([X, X[::-1]], verbose=0), want, rtol=1e-6)


def test_a_saved_lambda_model_loads_without_its_code(tmp_path):
    """The function exists only in this process: a fresh one loads and predicts the same."""
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)),
                                 layers.Lambda(squash, arguments={"power": 2}),
                                 layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(X, np.ones((6, 2), np.float32), epochs=1, verbose=0)
    path = str(tmp_path / "lambda.keras")
    model.save(path)
    np.save(tmp_path / "x.npy", X)
    script = textwrap.dedent(f"""
        import numpy as np, tapeflow as tf
        model = tf.keras.models.load_model({path!r})
        assert type(model).__name__ == "Sequential", type(model)
        assert type(model.layers[0]).__name__ == "Lambda"
        np.save({str(tmp_path / 'y.npy')!r}, model.predict(np.load({str(tmp_path / 'x.npy')!r}),
                                                           verbose=0))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=str(tmp_path))
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), model.predict(X, verbose=0),
                               rtol=1e-6)


def test_refusals_say_why_and_what_to_do(tmp_path):
    weight = tf.Variable(2.0)
    reads_variable = layers.Lambda(lambda t: t * weight)
    reads_variable(X)
    with pytest.raises(ValueError, match="reads the Variable .* add_weight"):
        reads_variable.get_config()
    batch_bound = layers.Lambda(lambda t: tf.reshape(t, (t.shape[0], -1)))
    batch_bound(X.reshape(6, 3, 1))
    with pytest.raises(ValueError, match="batch size.*reshape with -1"):
        batch_bound.get_config()
    untraceable = layers.Lambda(lambda t: t * float(np.asarray(t).sum()))
    untraceable(X)
    with pytest.raises(ValueError, match="never as code.*tracing it failed.*register_keras"):
        untraceable.get_config()
    with pytest.raises(ValueError, match="has not been called yet"):
        layers.Lambda(lambda t: t).get_config()
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), reads_variable, layers.Dense(1)])
    with pytest.raises(ValueError, match="custom layer|layer class"):
        model.save(str(tmp_path / "refused.keras"))


def test_a_config_never_loads_code():
    with pytest.raises(ValueError, match="never loads a Lambda's function as code"):
        layers.Lambda.from_config({"function": {"class_name": "__lambda__",
                                                "config": {"code": "eval('1')"}}})
    with pytest.raises(TypeError, match="needs a function"):
        layers.Lambda("t * 2")
