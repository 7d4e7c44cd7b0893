"""A functional model with two inputs and two outputs on sklearn's breast cancer data.

The 30 features come in two groups, each its own ``tf.keras.Input``: the ten "mean"
measurements of the cell nuclei and the twenty others (their standard errors and worst
values).  Each group has its own Dense branch; the branches are joined with
``Concatenate`` for the diagnosis, and the "mean" branch alone also predicts it (an
auxiliary head, weighted 0.2 in the loss, that keeps that branch useful on its own).
The model is trained with ``fit`` on a dict of inputs, saved to a ``.keras`` file, loaded
back, and the loaded model's predictions are checked to be the same.

    python examples/functional_two_inputs.py [--epochs 30]
"""
import argparse
import os
import tempfile

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

import tapeflow as tf

layers = tf.keras.layers


def data(seed=0):
    """Train / test dicts {"means": (n, 10), "others": (n, 20)} standardized with the training
    statistics, and 0/1 labels (1: benign)."""
    x, y = load_breast_cancer(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x.astype(np.float32), y.astype(np.float32), test_size=0.2, random_state=seed,
        stratify=y)
    mean, std = x_train.mean(0), x_train.std(0)
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std

    def split(x):
        return {"means": x[:, :10], "others": x[:, 10:]}
    return split(x_train), y_train[:, None], split(x_test), y_test[:, None]


def build():
    means = tf.keras.Input(shape=(10,), name="means")
    others = tf.keras.Input(shape=(20,), name="others")
    m = layers.Dense(16, activation="relu", name="means_branch")(means)
    o = layers.Dense(16, activation="relu", name="others_branch")(others)
    o = layers.Dropout(0.2, name="others_dropout")(o)
    joined = layers.Concatenate(name="joined")([m, o])
    diagnosis = layers.Dense(1, activation="sigmoid", name="diagnosis")(joined)
    from_means = layers.Dense(1, activation="sigmoid", name="from_means")(m)
    return tf.keras.Model(inputs={"means": means, "others": others},
                          outputs={"diagnosis": diagnosis, "from_means": from_means},
                          name="two_inputs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    x_train, y_train, x_test, y_test = data()
    model = build()
    model.summary()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss={"diagnosis": "binary_crossentropy", "from_means": "binary_crossentropy"},
                  loss_weights={"diagnosis": 1.0, "from_means": 0.2},
                  metrics={"diagnosis": ["accuracy"], "from_means": ["accuracy"]})
    targets = {"diagnosis": y_train, "from_means": y_train}
    history = model.fit(x_train, targets, batch_size=32, epochs=args.epochs,
                        validation_split=0.1, verbose=0)
    last = {k: round(v[-1], 4) for k, v in history.history.items()}
    print(f"after {args.epochs} epochs: {last}")

    logs = model.evaluate(x_test, {"diagnosis": y_test, "from_means": y_test}, verbose=0,
                          return_dict=True)
    print(f"test accuracy: {logs['diagnosis_accuracy']:.4f} (both groups), "
          f"{logs['from_means_accuracy']:.4f} (the means alone)")

    predictions = model.predict(x_test, verbose=0)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "two_inputs.keras")
        model.save(path)
        loaded = tf.keras.models.load_model(path)
    again = loaded.predict(x_test, verbose=0)
    same = all(np.array_equal(predictions[k], again[k]) for k in predictions)
    print(f"reloaded from {os.path.basename(path)}: predictions equal: {same}")
    if not same:
        raise SystemExit("the reloaded model predicts differently")


if __name__ == "__main__":
    main()
