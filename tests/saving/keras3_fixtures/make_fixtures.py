"""Writes the Keras 3 files that tests/saving/test_keras3_files.py loads (CI never runs this:
keras is not a test dependency).  Made with Keras 3.15.1 on jax 0.10.2, by::

    cd tests/saving/keras3_fixtures && \
        KERAS_BACKEND=jax /tmp/benchenv/bin/python make_fixtures.py

For each model: ``<name>.keras`` (``model.save``: a zip of config.json, metadata.json and
model.weights.h5, compiled and fitted one epoch so the optimizer's variables are there),
and ``<name>.npz`` holding the inputs ``x0`` (``x1``, ...) and Keras's ``pred`` for them.
``sequential_dense.weights.h5`` is the same model's ``save_weights``.
"""
import keras
import numpy as np
from keras import layers

rng = np.random.default_rng(0)


def floats(*shape):
    return rng.standard_normal(shape).astype("float32")


def sequential_dense():
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3, activation="relu"),
                              layers.Dense(1)])
    return model, [floats(6, 4)], ["mae"]


def functional_two_inputs():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    h = layers.Dense(4, activation="tanh")(layers.Concatenate()([a, b]))
    return keras.Model([a, b], layers.Dense(2)(h)), [floats(5, 3), floats(5, 2)], None


def conv_pool():
    model = keras.Sequential([keras.Input((6, 6, 1)), layers.Conv2D(2, 3, activation="relu"),
                              layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(3)])
    return model, [floats(4, 6, 6, 1)], None


def embedding_lstm():
    model = keras.Sequential([keras.Input((5,), dtype="int32"), layers.Embedding(10, 4),
                              layers.LSTM(3), layers.Dense(1)])
    return model, [rng.integers(0, 10, (4, 5)).astype("int32")], None


def batch_norm():
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3),
                              layers.BatchNormalization(), layers.Dense(1)])
    return model, [floats(6, 4)], None


def layer_norm():
    model = keras.Sequential([keras.Input((4,)), layers.Dense(3), layers.LayerNormalization(),
                              layers.Dense(1)])
    return model, [floats(6, 4)], None


def attention():
    x = keras.Input((3, 4))
    h = layers.MultiHeadAttention(num_heads=2, key_dim=2)(x, x)
    return keras.Model(x, layers.Dense(1)(layers.Flatten()(h))), [floats(2, 3, 4)], None


def main():
    for make in (sequential_dense, functional_two_inputs, conv_pool, embedding_lstm,
                 batch_norm, layer_norm, attention):
        name = make.__name__
        model, xs, metrics = make()
        inputs = xs if len(xs) > 1 else xs[0]
        if name == "sequential_dense":  # compiled and fitted: its optimizer's variables saved
            model.compile("adam", "mse", metrics=metrics)
            model.fit(inputs, floats(len(xs[0]), 1), epochs=2, batch_size=2, verbose=0)
        elif name == "batch_norm":  # moving statistics away from 0 and 1
            for _ in range(3):
                model(inputs, training=True)
        pred = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        model.save(f"{name}.keras")
        np.savez(f"{name}.npz", pred=pred, **{f"x{i}": x for i, x in enumerate(xs)})
        if name == "sequential_dense":
            model.save_weights(f"{name}.weights.h5")
    print("keras", keras.__version__, "backend", keras.backend.backend())


if __name__ == "__main__":
    main()
