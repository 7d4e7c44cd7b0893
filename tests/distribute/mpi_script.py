"""Run under ``mpiexec -n N`` (or alone) by tests/distribute: train a small Dense model on
housing-like data, then write rank 0's final weights and logs to ``argv[2]``.

``argv[1]`` is ``single`` (one process, no strategy) or ``mpi`` (MPIStrategy.scope()), or
``raise-on-rank-1`` / ``kill-rank-1`` (rank 1 raises, or is killed, after its first epoch;
the others must not hang), ``other-data-on-rank-1`` (refused at the first step), or
``collectives`` (reduce / all_reduce / broadcast_variables, every rank's results to rank 0),
or ``batchnorm`` (every rank's weights after fitting a model with BatchNormalization), or
``backup`` (BackupAndRestore: a run stopped after 2 epochs, restored on every rank, against one
never stopped), or ``backup-unseen-by-rank-1`` (refused: rank 1 finds no backup), or
``nccl-id`` (NCCL's unique id drawn by rank 0 and broadcast, on a stand-in nccl module), or
``inference`` (distribute.inference's evaluate / predict on shards against whole).
"""
import json
import os
import signal
import sys

import numpy as np

import tapeflow as tf
from tapeflow.saving import training_checkpoint


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
    """A model with Normalization (adapted: constant) and BatchNormalization on 2 ranks, on
    uneven shards (batch 63): every rank's final weights to rank 0."""
    tf.random.set_seed(7)
    x, y = housing_like()
    strategy = tf.distribute.MPIStrategy()
    with strategy.scope():
        normalize = tf.keras.layers.Normalization()
        normalize.adapt(x * 3.7 + 1.3)
        net = tf.keras.Sequential([tf.keras.Input((8,)), normalize, tf.keras.layers.Dense(16),
                                   tf.keras.layers.BatchNormalization(),
                                   tf.keras.layers.Activation("relu"), tf.keras.layers.Dense(1)])
        net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        adapted = [w.tolist() for w in normalize.get_weights()]
        net.fit(x, y, batch_size=63, epochs=2, verbose=0)
    every = strategy._comm.gather_objects([adapted] + [w.tolist() for w in net.get_weights()])
    if strategy.rank == 0:
        with open(out + ".json", "w") as f:
            json.dump(every, f)


class FakeNccl:
    """What MPIStrategy uses of ``cupy.cuda.nccl``, recording its calls."""

    def __init__(self, unique_id=(7, 8, 9)):
        self.unique_id, self.ids_drawn, self.made = unique_id, 0, []

    def get_unique_id(self):
        self.ids_drawn += 1
        return self.unique_id

    def NcclCommunicator(self, size, unique_id, rank):  # noqa: N802 - CuPy's name
        self.made.append((size, unique_id, rank))
        return object()  # one rank: never asked to all-reduce


def nccl_id(out):
    """A NCCL communicator on a stand-in nccl module whose ids differ by rank: what each
    rank drew and was given, to rank 0."""
    from tapeflow.distribute.nccl import NcclSum
    strategy = tf.distribute.MPIStrategy()
    fake = FakeNccl(unique_id=(strategy.rank, 100))
    NcclSum(strategy._comm, fake)
    every = strategy._comm.gather_objects({"ids_drawn": fake.ids_drawn, "made": fake.made})
    if strategy.rank == 0:
        with open(out + ".json", "w") as f:
            json.dump(every, f)


def inference(out):
    """A model fitted on 2 ranks, then evaluated and predicted on shards over the ranks and
    whole in each process: every rank's results to rank 0."""
    from tapeflow.distribute import inference as dist
    x, y = housing_like()
    w = np.linspace(0.5, 2.0, len(x)).astype("float32")
    strategy = tf.distribute.MPIStrategy()
    with strategy.scope():
        net = model()
        net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse",
                    metrics=["mae", tf.keras.metrics.RootMeanSquaredError()],
                    weighted_metrics=["mse"])
        net.fit(x, y, batch_size=64, epochs=1, verbose=0)
    # Model.evaluate / predict under the strategy go over the shards; each rank's own
    # evaluate / predict of the whole data is the reference
    batches = []  # the batches this rank runs (Model._build_on sees each one)
    build_on = net._build_on
    net._build_on = lambda batch: (batches.append(len(batch[0])), build_on(batch))
    sharded = net.evaluate(x, y, batch_size=32, sample_weight=w, verbose=0, return_dict=True)
    predicted = net.predict(x, batch_size=32, verbose=0)
    rows_seen = sum(batches)
    net._build_on = build_on
    with dist._OnShard(net):
        whole = net.evaluate(x, y, batch_size=32, sample_weight=w, verbose=0, return_dict=True)
        predicted_whole = net.predict(x, verbose=0)
    got = {"sharded": sharded, "whole": whole, "listed": net.evaluate(x, y, verbose=0),
           "predicted": predicted.tolist(), "predicted_whole": predicted_whole.tolist(),
           "rows_seen": rows_seen, "local_rank": strategy.local_rank}
    every = strategy._comm.gather_objects(got)
    if strategy.rank == 0:
        with open(out + ".json", "w") as f:
            json.dump(every, f)


def backup_unseen(out):
    """Rank 1 does not see rank 0's backup (another directory): refused on every rank."""
    x, y = housing_like()
    strategy = tf.distribute.MPIStrategy()
    where = os.path.abspath(f"backup{strategy.rank}")
    with strategy.scope():
        net = model()
        net.compile(optimizer="adam", loss="mse")
    net.fit(x, y, batch_size=64, epochs=1, verbose=0,
            callbacks=[tf.keras.callbacks.BackupAndRestore("backup0", delete_checkpoint=False)])
    net.fit(x, y, batch_size=64, epochs=2, verbose=0,
            callbacks=[tf.keras.callbacks.BackupAndRestore(where)])


def backup(out):
    """2 epochs backed up, then a new model restored to 4: every rank's weights, its number of
    checkpoint writes and the restored fit's epochs, against 4 epochs straight, to rank 0."""
    x, y = housing_like()
    strategy = tf.distribute.MPIStrategy()
    # rank 0 makes the directory: the same one on every rank (the test's working directory)
    where = strategy._comm.broadcast_object(os.path.abspath("backup"))

    def fitted(epochs, callbacks, initial=None):
        tf.random.set_seed(7)
        with strategy.scope():
            net = model()
            net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        saves, write = [], training_checkpoint.write
        training_checkpoint.write = lambda path, *args: (saves.append(path), write(path, *args))
        try:
            history = net.fit(x, y, batch_size=64, epochs=epochs, verbose=0, callbacks=callbacks)
        finally:
            training_checkpoint.write = write
        return net, len(saves), history.epoch
    straight, _, _ = fitted(4, [])
    _, saves, _ = fitted(2, [tf.keras.callbacks.BackupAndRestore(where, delete_checkpoint=False)])
    resumed, _, epochs = fitted(4, [tf.keras.callbacks.BackupAndRestore(where)])
    strategy._comm.gather_objects(None)  # rank 0's fit has ended (and deleted the backup)
    got = {"saves": saves, "epochs": epochs, "left": sorted(os.listdir(where)) if
           os.path.isdir(where) else None,
           "straight": [w.tolist() for w in straight.get_weights()],
           "resumed": [w.tolist() for w in resumed.get_weights()]}
    every = strategy._comm.gather_objects(got)
    if strategy.rank == 0:
        with open(out + ".json", "w") as f:
            json.dump(every, f)


def main(mode, out):
    modes = {"collectives": collectives, "batchnorm": batchnorm, "backup": backup,
             "backup-unseen-by-rank-1": backup_unseen, "nccl-id": nccl_id,
             "inference": inference}
    if mode in modes:
        return modes[mode](out)
    tf.random.set_seed(7)
    x, y = housing_like()
    if mode == "other-data-on-rank-1" and _world_rank() == 1:
        x, y = housing_like(seed=1)
    if mode == "single":
        net = model()
        net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse",
                    metrics=["mae", "accuracy"])  # accuracy: a metric made at the first batch
        history = net.fit(x, y, batch_size=64, epochs=3, verbose=0)
        rank = 0
    else:
        strategy = tf.distribute.MPIStrategy()
        rank = strategy.rank
        if rank != 0:
            tf.random.set_seed(1000 + rank)  # rank 0's seed must win (broadcast by fit)
        with strategy.scope():
            net = model()
            net.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse",
                        metrics=["mae", "accuracy"])  # accuracy: a metric made at the first batch
            fail = {"raise-on-rank-1": _raise, "kill-rank-1": _kill}.get(mode)
            stop = [tf.keras.callbacks.LambdaCallback(on_epoch_end=fail)] \
                if fail is not None and rank == 1 else []
            # a file per rank, to see which ranks write: rank 0 alone should
            writer = tf.keras.callbacks.CSVLogger(f"{out}.rank{rank}.csv")
            history = net.fit(x, y, batch_size=64, epochs=3, verbose=2,
                              callbacks=stop + [writer])
    if mode != "single":  # each rank's traced step: traced once per shard shape, for every fit
        step = net.make_train_function()
        traces = strategy._comm.gather_objects(
            None if step.traced is None else step.traced.experimental_get_tracing_count())
        if rank == 0:
            with open(out + ".traces.json", "w") as f:
                json.dump(traces, f)
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
