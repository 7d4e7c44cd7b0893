"""The ``TensorBoard`` callback: Keras 3's event files, written with the ``tensorboard``
package's own event writer (the ``[tensorboard]`` extra).

Why that writer rather than tensorboardX's: reading the files back (TensorBoard itself,
``EventAccumulator``) needs the ``tensorboard`` package anyway, so one package does both, and
its ``EventFileWriter`` and protos are what TensorBoard reads, with nothing between.

What is written, under Keras's tags: ``epoch_<name>`` for every logged value at each epoch's
end (``val_<name>`` as ``epoch_<name>`` in the ``validation`` run, beside the ``train`` run),
``epoch_learning_rate``, ``evaluation_<name>_vs_iterations`` in the ``validation`` run against
the optimizer's step count, ``batch_<name>`` every ``update_freq`` steps, ``<weight
path>/histogram`` every ``histogram_freq`` epochs, and the traced train step's graph
(``write_graph``, see ``graph_def``).
"""
import numbers
import time
import os

import numpy as np

from .base import Callback
from .tensorboard_graph import traced_graph_def

__all__ = ["TensorBoard"]

# Keras's arguments that need TensorFlow's profiler or its projector; refused by name.
_UNSUPPORTED = {
    "profile_batch": "profiling needs TensorFlow's profiler",
    "embeddings_freq": "the embedding projector reads TensorFlow checkpoints",
    "embeddings_metadata": "the embedding projector reads TensorFlow checkpoints",
    "write_images": "weight images are not written",
}


def _event_writer_module():
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as error:
        raise ImportError("TensorBoard needs the tensorboard package: pip install "
                          "'tapeflow[tensorboard]' (or pip install tensorboard)") from error
    return EventFileWriter, event_pb2, summary_pb2


class _Run:
    """One run directory's event file (``train`` or ``validation``), opened when first written."""

    def __init__(self, path):
        self.path = path
        self._writer = None

    def add(self, step, **event_fields):
        EventFileWriter, event_pb2, _ = _event_writer_module()
        if self._writer is None:
            os.makedirs(self.path, exist_ok=True)
            self._writer = EventFileWriter(self.path)
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                               **event_fields))

    def scalar(self, tag, value, step):
        _, _, summary_pb2 = _event_writer_module()
        value = summary_pb2.Summary.Value(tag=tag, simple_value=float(value))
        self.add(step, summary=summary_pb2.Summary(value=[value]))

    def histogram(self, tag, values, step):
        _, _, summary_pb2 = _event_writer_module()
        self.add(step, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=tag, histo=_histogram_proto(values))]))

    def close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _histogram_proto(values, bins=30):
    """TensorBoard's HistogramProto of ``values``: ``bins`` equal buckets over their range
    (Keras's default count), each bucket named by its right edge."""
    _, _, summary_pb2 = _event_writer_module()
    flat = np.asarray(values, dtype=np.float64).ravel()
    low, high = (float(flat.min()), float(flat.max())) if flat.size else (0.0, 0.0)
    counts, edges = np.histogram(flat, bins=bins, range=(low, high) if high > low else
                                 (low - 0.5, high + 0.5))
    return summary_pb2.HistogramProto(
        min=low, max=high, num=float(flat.size), sum=float(flat.sum()),
        sum_squares=float(np.dot(flat, flat)), bucket_limit=edges[1:].tolist(),
        bucket=counts.astype(np.float64).tolist())


class TensorBoard(Callback):
    """Keras's TensorBoard callback (see the module docstring for what it writes).

    ``update_freq``: ``"epoch"`` (default), ``"batch"`` (every step) or an integer N (every N
    steps).  ``histogram_freq``: every that many epochs a histogram of each layer's weights (0:
    none).  ``write_graph``: the traced train step's graph, once.  ``write_steps_per_second``
    is accepted and ignored (no wall-clock numbers in the logs).  ``profile_batch``,
    ``write_images`` and the embedding projector are refused by name.
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True,
                 write_images=False, write_steps_per_second=False, update_freq="epoch",
                 profile_batch=0, embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        _event_writer_module()  # a missing package is said now, not at the first epoch's end
        given = {"profile_batch": profile_batch, "embeddings_freq": embeddings_freq,
                 "embeddings_metadata": embeddings_metadata, "write_images": write_images}
        for name, value in given.items():
            if value:
                raise ValueError(f"TensorBoard: {name}={value!r} is not supported by tapeflow "
                                 f"({_UNSUPPORTED[name]}); leave it at its default")
        if update_freq == "batch":
            update_freq = 1
        if not (update_freq == "epoch" or isinstance(update_freq, numbers.Integral)
                and not isinstance(update_freq, bool) and update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"integer, got {update_freq!r}")
        if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, numbers.Integral) \
                or histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be a non-negative integer, got "
                             f"{histogram_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = int(histogram_freq)
        self.write_graph = bool(write_graph)
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = update_freq
        self._train = _Run(os.path.join(self.log_dir, "train"))
        self._validation = _Run(os.path.join(self.log_dir, "validation"))
        self._graph_written = False

    # --- hooks -------------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._graph_written = not self.write_graph

    def on_train_batch_end(self, batch, logs=None):
        if not self._graph_written:
            self._write_graph()
        if self.update_freq == "epoch" or not logs:
            return
        step = self._iterations()
        if step % self.update_freq == 0:
            for name, value in logs.items():
                self._train.scalar("batch_" + name, value, step)

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        validation = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        learning_rate = self._learning_rate()
        if learning_rate is not None:
            train.setdefault("learning_rate", learning_rate)
        for name, value in train.items():
            self._train.scalar("epoch_" + name, value, epoch)
        for name, value in validation.items():
            self._validation.scalar("epoch_" + name, value, epoch)
        # Keras writes these from the evaluation fit runs (its on_test_end): the same numbers
        step = self._iterations()
        for name, value in validation.items():
            self._validation.scalar(f"evaluation_{name}_vs_iterations", value, step)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def on_train_end(self, logs=None):
        self._train.close()
        self._validation.close()

    # --- what is written ---------------------------------------------------------------------------
    def _log_weights(self, epoch):
        for layer in self.model.layers:
            for weight in layer.weights:
                self._train.histogram(weight.path + "/histogram", weight.numpy(), epoch)

    def _write_graph(self):
        self._graph_written = True
        graph_def = traced_graph_def(self.model.train_function)
        if graph_def is not None:
            self._train.add(0, graph_def=graph_def.SerializeToString())

    def _iterations(self):
        optimizer = getattr(self.model, "optimizer", None)
        return int(optimizer.iterations.numpy()) if optimizer is not None else 0

    def _learning_rate(self):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None:
            return None
        return float(np.asarray(optimizer.learning_rate))
