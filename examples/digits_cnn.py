"""A small CNN on scikit-learn's handwritten digits, written as for Keras.

sklearn's ``load_digits`` (1,797 grey 8x8 images, bundled with scikit-learn: no download),
split 80/20 stratified with a fixed seed; Conv2D -> MaxPooling2D -> Conv2D -> MaxPooling2D ->
Flatten -> Dense, trained with ``fit`` and scored on the held-out fifth.

    python examples/digits_cnn.py [--epochs N] [--seed S]

The same file runs under Keras with its import line changed to ``import tensorflow as tf``
(``tests/test_example_digits.py`` holds the accuracy that run measured).
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tapeflow as tf


def digits(seed):
    """(x_train, x_test, y_train, y_test): images scaled to [0, 1] with a channel axis."""
    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[..., None]   # (1797, 8, 8, 1)
    return train_test_split(x, data.target, test_size=0.2, stratify=data.target,
                            random_state=seed)


def build_model():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8, 8, 1)),
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(args.seed)
    x_train, x_test, y_train, y_test = digits(args.seed)
    model = build_model()
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=32, verbose=0)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"train rows: {len(x_train)}, test rows: {len(x_test)}")
    print(f"test loss: {loss:.4f}")
    print(f"test accuracy: {accuracy:.4f}")


if __name__ == "__main__":
    main()
