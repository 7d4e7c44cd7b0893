"""A functional model with two heads, written with operators and tf functions on its symbolic
tensors, as keras.io examples write them, on sklearn's 8x8 digits.

The 64 pixels come in as one ``tf.keras.Input``; the model scales them (``pixels / 16.0``),
reshapes them into an image (``tf.reshape``), and adds hand-made features with no layer
classes at all: the mean ink of each row and column (``tf.reduce_mean``), and how much the
top half differs from the bottom half flipped (slicing ``image[:, 4:, :][:, ::-1, :]``,
``tf.abs``).  A shared Dense trunk feeds two heads: the digit (10 classes) and its parity (an
auxiliary head, weighted 0.2).  Each operator and function call is a layer of the graph
(``TFOpLambda``, named after the function in ``summary()``): the model is saved to a
``.keras`` file, loaded back without its code, and predicts the same.

    python examples/functional_ops_two_heads.py [--epochs 30]
"""
import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tapeflow as tf

layers = tf.keras.layers


def data(seed=0):
    """Train / test pixels (n, 64) in 0..16, and {"digit": (n,), "parity": (n, 1)} targets."""
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x.astype(np.float32), y, test_size=0.25, random_state=seed, stratify=y)

    def targets(y):
        return {"digit": y.astype(np.int32), "parity": (y % 2).astype(np.float32)[:, None]}
    return x_train, targets(y_train), x_test, targets(y_test)


def build():
    pixels = tf.keras.Input(shape=(64,), name="pixels")
    image = tf.reshape(pixels / 16.0, (-1, 8, 8))
    row_ink = tf.reduce_mean(image, axis=2)                     # (None, 8)
    column_ink = tf.reduce_mean(image, axis=1)                  # (None, 8)
    flipped_bottom = image[:, 4:, :][:, ::-1, :]
    asymmetry = tf.reduce_mean(tf.abs(image[:, :4, :] - flipped_bottom), axis=[1, 2])
    features = tf.concat([tf.reshape(image, (-1, 64)), row_ink, column_ink,
                          asymmetry[:, None]], axis=-1)         # (None, 81)
    trunk = layers.Dense(64, activation="relu", name="trunk")(features)
    digit = layers.Dense(10, activation="softmax", name="digit")(trunk)
    parity = layers.Dense(1, activation="sigmoid", name="parity")(tf.nn.relu(trunk) * 0.5)
    return tf.keras.Model(pixels, {"digit": digit, "parity": parity}, name="two_heads")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    x_train, y_train, x_test, y_test = data()
    model = build()
    model.summary()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.005),
                  loss={"digit": "sparse_categorical_crossentropy",
                        "parity": "binary_crossentropy"},
                  loss_weights={"digit": 1.0, "parity": 0.2},
                  metrics={"digit": ["accuracy"], "parity": ["accuracy"]})
    history = model.fit(x_train, y_train, batch_size=64, epochs=args.epochs, verbose=0)
    print(f"after {args.epochs} epochs: loss {history.history['loss'][-1]:.4f}")

    logs = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    print(f"test accuracy: {logs['digit_accuracy']:.4f} (digit), "
          f"{logs['parity_accuracy']:.4f} (parity)")

    predictions = model.predict(x_test, verbose=0)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "two_heads.keras")
        model.save(path)
        loaded = tf.keras.models.load_model(path)
    again = loaded.predict(x_test, verbose=0)
    same = all(np.array_equal(predictions[k], again[k]) for k in predictions)
    print(f"reloaded from {os.path.basename(path)} ({type(loaded).__name__}): "
          f"predictions equal: {same}")
    if not same:
        raise SystemExit("the reloaded model predicts differently")


if __name__ == "__main__":
    main()
