"""Run under ``mpiexec -n N`` (or alone) by tests/distribute: train a small Dense model on
housing-like data, then write rank 0's final weights and logs to ``argv[2]``.

``argv[1]`` is ``single`` (one process, no strategy) or ``mpi`` (MPIStrategy.scope()), or
``raise-on-rank-1`` / ``kill-rank-1`` (rank 1 raises, or is killed, after its first epoch;
the others must not hang), ``other-data-on-rank-1`` (refused at the first step), or
``collectives`` (reduce / all_reduce / broadcast_variables, every rank's results to rank 0),
or ``batchnorm`` (every rank's weights after fitting a model with BatchNormalization).
"""
import json
import os
import signal
import sys

import numpy as np

import tapeflow as tf


def housing_like(n=193, features=8, seed=0):
    """Standardized features and a noisy nonlinear target, as the housing data are shaped.
    193 rows at batch 64: a last batch of 1 row, shorter than the number of ranks."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    y = (np.tanh(x @ rng.normal(size=(features, 1))) + 0.1 * rng.normal(size=(n, 1)))
    return x, y.astype("float32")


def model():
    return tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(1)])


def collectives(out):
    """What a custom loop uses, on every rank; rank 0 writes what it got."""
    strategy = tf.distribute.MPIStrategy()
    rank, size = strategy.rank, strategy.num_replicas_in_sync
    mine = tf.constant([[rank + 1.0, 2.0 * (rank + 1)], [0.0, 1.0]])
    variable = tf.Variable([float(rank), 10.0 * rank])
    strategy.broadcast_variables([variable])
    got = {"sum": strategy.reduce("SUM", mine).numpy().tolist(),
           "mean_axis0": strategy.reduce("MEAN", mine, axis=0).numpy().tolist(),
           "all_reduce": [None if g is None else g.numpy().tolist() for g in
                          strategy.all_reduce([mine, None, tf.constant(float(rank))])],
           "all_reduce_sum": strategy.all_reduce([tf.constant(1.0)], "SUM")[0].numpy().tolist(),
           "broadcast": variable.numpy().tolist(), "size": size}
    every = strategy._comm.gather_objects(got)
    if rank == 0:
        with open(out + ".json", "w") as f:
            json.dump(every, f)


def batchnorm(out):
    """A model with BatchNormalization on 2 ranks: every rank's final weights to rank 0."""
    tf.random.set_seed(7)
    x, y = housing_like()
    strategy = tf.distribute.MPIStrategy()
    with strategy.scope():
        net = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16),
                                   tf.keras.layers.BatchNormalization(),
                                   tf.keras.layers.Activation("relu"), tf.keras.layers.Dense(1)])
        net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        net.fit(x, y, batch_size=64, epochs=2, verbose=0)
    every = strategy._comm.gather_objects([w.tolist() for w in net.get_weights()])
    if strategy.rank == 0:
        with open(out + ".json", "w") as f:
            json.dump(every, f)


def main(mode, out):
    if mode in ("collectives", "batchnorm"):
        return {"collectives": collectives, "batchnorm": batchnorm}[mode](out)
    tf.random.set_seed(7)
    x, y = housing_like()
    if mode == "other-data-on-rank-1" and _world_rank() == 1:
        x, y = housing_like(seed=1)
    if mode == "single":
        net = model()
        net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
        history = net.fit(x, y, batch_size=64, epochs=3, verbose=0)
        rank = 0
    else:
        strategy = tf.distribute.MPIStrategy()
        rank = strategy.rank
        if rank != 0:
            tf.random.set_seed(1000 + rank)  # rank 0's seed must win (broadcast by fit)
        with strategy.scope():
            net = model()
            net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
            fail = {"raise-on-rank-1": _raise, "kill-rank-1": _kill}.get(mode)
            stop = [tf.keras.callbacks.LambdaCallback(on_epoch_end=fail)] \
                if fail is not None and rank == 1 else []
            # a file per rank, to see which ranks write: rank 0 alone should
            writer = tf.keras.callbacks.CSVLogger(f"{out}.rank{rank}.csv")
            history = net.fit(x, y, batch_size=64, epochs=3, verbose=2,
                              callbacks=stop + [writer])
    if rank == 0:
        np.savez(out, *[w for w in net.get_weights()])
        with open(out + ".json", "w") as f:
            json.dump(history.history, f)


def _world_rank():
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()


def _raise(epoch, logs):
    raise RuntimeError("rank 1 failed on purpose")


def _kill(epoch, logs):
    os.kill(os.getpid(), signal.SIGKILL)  # dies with no Python cleanup, as an OOM kill does


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
