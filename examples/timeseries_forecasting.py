"""Timeseries forecasting, keras.io style: predict the next value of a seasonal series from
the previous 24, with input pipelines built two ways.

The series is two seasons (periods 48 and 12) plus noise.  The training pipeline is built by
hand from ``tf.data``: ``window`` cuts the series into overlapping windows of 25 values,
``flat_map`` turns each window (a dataset) back into one tensor, and a ``map`` splits it into
24 inputs and the value to predict.  The validation pipeline is the same windows made by
``keras.utils.timeseries_dataset_from_array``.  The metric is the validation mean absolute
error, next to the naive forecast's (tomorrow is today) for scale.

    python examples/timeseries_forecasting.py [--epochs 4]
"""
import argparse

import numpy as np

import tapeflow as tf

WINDOW = 24
SPLIT = 1200


def make_series(n=1600, seed=0):
    t = np.arange(n, dtype=np.float32)
    noise = np.random.default_rng(seed).normal(0.0, 0.1, n).astype(np.float32)
    return (np.sin(2 * np.pi * t / 48) + 0.5 * np.sin(2 * np.pi * t / 12) + noise).astype(
        np.float32)


def windowed_dataset(series, batch_size=32, seed=0):
    """(24 inputs, next value) pairs made with window + flat_map, shuffled and batched."""
    dataset = tf.data.Dataset.from_tensor_slices(series)
    dataset = dataset.window(WINDOW + 1, shift=1, drop_remainder=True)
    dataset = dataset.flat_map(lambda window: window.batch(WINDOW + 1, drop_remainder=True))
    dataset = dataset.map(lambda window: (window[:-1], window[-1:])).cache()
    return dataset.shuffle(1000, seed=seed).batch(batch_size).prefetch(tf.data.AUTOTUNE)


def validation_dataset(series, batch_size=256):
    """The same pairs from keras.utils.timeseries_dataset_from_array."""
    return tf.keras.utils.timeseries_dataset_from_array(
        series[:-1], series[WINDOW:, None], sequence_length=WINDOW, batch_size=batch_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(0)

    series = make_series()
    train, val = windowed_dataset(series[:SPLIT]), validation_dataset(series[SPLIT:])
    print("train element_spec:", train.element_spec)

    model = tf.keras.Sequential([
        tf.keras.Input(shape=(WINDOW,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    model.fit(train, epochs=args.epochs, validation_data=val, verbose=2)

    _, mae = model.evaluate(val, verbose=0)
    naive = float(np.mean(np.abs(series[SPLIT + WINDOW:] - series[SPLIT + WINDOW - 1:-1])))
    print(f"validation MAE: {mae:.4f}")
    print(f"naive forecast MAE: {naive:.4f}")


if __name__ == "__main__":
    main()
