"""A training loop written by hand: GradientTape, apply_gradients, metrics, then @tf.function.

    SCIKIT_LEARN_DATA=../shared/data/scikit_learn_data python examples/custom_training_loop.py [--epochs 2]

What ``model.fit`` does for you, written out by hand, on California housing.  The same training
step runs eagerly (each op as Python calls it) and traced once into a graph by ``tf.function``;
from the same weights and the same batches, both reach the same loss.
"""
import argparse
import os
import pathlib
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("SCIKIT_LEARN_DATA", str(ROOT.parent / "shared" / "data" / "scikit_learn_data"))

from sklearn.datasets import fetch_california_housing  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import tapeflow as tf  # noqa: E402


def load_data():
    housing = fetch_california_housing()
    x_train, x_test, y_train, y_test = train_test_split(
        housing.data, housing.target.reshape(-1, 1), random_state=42)
    scaler = StandardScaler()
    x_train, x_test = scaler.fit_transform(x_train), scaler.transform(x_test)
    return [a.astype(np.float32) for a in (x_train, x_test, y_train, y_test)]


def make_model():
    tf.random.set_seed(42)                      # the same initial weights for every run
    return tf.keras.Sequential([tf.keras.Input(shape=(8,)),
                                tf.keras.layers.Dense(30, activation="relu"),
                                tf.keras.layers.Dense(1)])


def make_train_step(model, optimizer, loss_fn, metrics):
    """One step of gradient descent on a batch; the metrics accumulate over the epoch."""
    def train_step(x, y):
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = loss_fn(y, y_pred)
            if model.losses:                    # regularization losses, if a layer has any
                loss = loss + tf.add_n(model.losses)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        metrics["loss"].update_state(loss)
        metrics["mae"].update_state(y, y_pred)
        return loss
    return train_step


def train(data, epochs, batch_size, traced):
    x_train, x_test, y_train, y_test = data
    model = make_model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)
    loss_fn = tf.keras.losses.MeanSquaredError()
    metrics = {"loss": tf.keras.metrics.Mean(name="loss"),
               "mae": tf.keras.metrics.MeanAbsoluteError(name="mae")}
    step = make_train_step(model, optimizer, loss_fn, metrics)
    if traced:
        step = tf.function(step)                # traced on the first call, then replayed

    order = np.random.default_rng(0)            # the same batches for every run
    n_steps = len(x_train) // batch_size        # whole batches only: one input shape, one trace
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        indices = order.permutation(len(x_train))
        for i in range(n_steps):
            batch = indices[i * batch_size:(i + 1) * batch_size]
            step(tf.constant(x_train[batch]), tf.constant(y_train[batch]))
        results = {name: float(m.result()) for name, m in metrics.items()}
        print(f"  epoch {epoch}/{epochs}: loss {results['loss']:.4f}, mae {results['mae']:.4f}")
        for m in metrics.values():
            m.reset_state()                     # metrics are per epoch
    seconds = time.perf_counter() - start
    test_mse = float(loss_fn(y_test, model(x_test)))
    print(f"  test MSE {test_mse:.4f}; {1e6 * seconds / (epochs * n_steps):.0f} us per step")
    return model, step, test_mse


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    data = load_data()
    print(f"California housing: {len(data[0])} training rows, {data[0].shape[1]} features")

    print("eager steps:")
    _, _, eager_mse = train(data, args.epochs, args.batch_size, traced=False)
    print("@tf.function steps:")
    _, step, traced_mse = train(data, args.epochs, args.batch_size, traced=True)
    print("same test MSE eager and traced:", np.isclose(eager_mse, traced_mse, rtol=1e-4))

    # The traced step is one graph: a jaxpr-like listing of the forward pass, the backward
    # pass, Adam's update and the metrics' state changes.
    x, y = tf.constant(data[0][:args.batch_size]), tf.constant(data[2][:args.batch_size])
    graph = step.get_concrete_function(x, y).graph
    print(f"the traced step's graph has {len(str(graph).splitlines())} lines; its first ones:")
    print("\n".join(str(graph).splitlines()[:6]))


if __name__ == "__main__":
    main()
